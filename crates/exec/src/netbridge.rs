//! The network bridge inside a command's network namespace, run by the init (PID 1).
//!
//! Every command on the namespace path has its own network namespace: only its own loopback, no
//! host interface, no host loopback port, no host `/proc/net`. Its one way out is the proxy of
//! the app (`aibuddy_netproxy`), listening on a Unix socket whose directory is bound read-only
//! into the sandbox. The init listens on `127.0.0.1:`[`BRIDGE_PORT`] inside the namespace
//! (bringing `lo` up first if bubblewrap did not) and hands each accepted connection to the proxy
//! over that socket (`SCM_RIGHTS`): the proxy reads and writes the command's socket itself, so
//! no byte is relayed by the bridge (a relay cost 7x the direct transfer time). The listener is
//! created before the shell is forked (connections queue in its backlog) and served by threads
//! started after the fork, so the forked child never inherits a lock held by another thread.
//! Landlock (ABI <= 7) does not restrict connecting to a path Unix socket, and the socket lies
//! under a directory readable by the ruleset; `tests/all/netproxy.rs` checks it.

use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The port of the proxy inside the namespace (the namespace is the command's own).
pub(crate) const BRIDGE_PORT: u16 = 3128;

/// What the init bridges (part of the init spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BridgeSpec {
    pub(crate) port: u16,
    /// The proxy's Unix socket, at the same path inside the sandbox as on the host.
    pub(crate) socket: PathBuf,
}

/// A bound listener, not yet served.
pub(crate) struct Bridge {
    listener: TcpListener,
    socket: PathBuf,
}

/// Binds `127.0.0.1:port` inside the namespace. `None` (said on stderr, the command's) when it
/// cannot: the command then has no network.
pub(crate) fn listen(spec: &BridgeSpec) -> Option<Bridge> {
    let bind = || TcpListener::bind(("127.0.0.1", spec.port));
    let listener = match bind() {
        Ok(l) => Ok(l),
        Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
            loopback_up();
            bind()
        }
        Err(e) => Err(e),
    };
    match listener {
        Ok(listener) => Some(Bridge {
            listener,
            socket: spec.socket.clone(),
        }),
        Err(e) => {
            let msg = format!("aibuddy: the network bridge could not listen: {e}; no network\n");
            // SAFETY: writing our buffer to stderr.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            None
        }
    }
}

/// Sets `lo` up (bubblewrap normally did; needs no capability it did not keep otherwise, so a
/// failure is ignored and the bind reports it).
fn loopback_up() {
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; libc::IFNAMSIZ],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    // SAFETY: a datagram socket for the interface ioctls, and a zeroed request we own.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return;
        }
        let mut req: IfReq = std::mem::zeroed();
        for (d, s) in req.name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) == 0 {
            req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        }
        libc::close(fd);
    }
}

impl Bridge {
    /// The port it listens on (the one asked for, or the kernel's choice for port 0).
    pub(crate) fn port(&self) -> Option<u16> {
        self.listener.local_addr().ok().map(|a| a.port())
    }

    /// Serves connections on a thread of this process until it exits.
    pub(crate) fn start(self) {
        let Bridge { listener, socket } = self;
        let spawned = std::thread::Builder::new()
            .name("aibuddy-netbridge".into())
            .stack_size(128 * 1024)
            .spawn(move || {
                for conn in listener.incoming() {
                    let Ok(client) = conn else { continue };
                    hand_over(client, &socket);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "network bridge thread not started");
        }
    }
}

/// Passes the accepted connection to the proxy (`SCM_RIGHTS`, with the byte `F`) and closes this
/// copy: the proxy then reads and writes the command's socket itself, no relay in between.
fn hand_over(client: TcpStream, socket: &Path) {
    let Ok(up) = UnixStream::connect(socket) else {
        return;
    };
    if let Err(e) = send_fd(&up, client.as_raw_fd()) {
        tracing::debug!(error = %e, "could not hand the connection to the proxy");
    }
}

fn send_fd(sock: &UnixStream, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [b'F'];
    let mut cbuf = [0u64; 4];
    // SAFETY: sendmsg from buffers we own; the control message holds one descriptor.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::c_int, fd);
        if libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
