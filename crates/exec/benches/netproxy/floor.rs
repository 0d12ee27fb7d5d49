//! The floor of the netproxy bench: the cheapest relays this machine can run, with no policy at
//! all and the same hops as the proxy (client -> loopback TCP -> one relay -> loopback TCP ->
//! server), so the bench can say how much of the proxy's cost any relay pays here.
//!
//! - [`splice_relay`]: blocking `splice(2)` through a 1 MiB pipe, one thread per direction (no
//!   event loop, no parsing, no decision): the cheapest relay we know how to write.
//! - [`copy_relay`]: blocking `read`/`write` through a 256 KiB buffer, one thread per direction
//!   (what a relay costs when the bytes pass through user space).
//! - [`Socat`]: `socat -b 262144 TCP-LISTEN:... TCP:...` when `socat` is installed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command, Stdio};

const PIPE: usize = 1024 * 1024;

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we own at once.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2");
    // SAFETY: just created.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: a plain fcntl on our pipe (a smaller pipe only means more calls).
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE as libc::c_int) };
    (r, w)
}

fn splice(from: RawFd, to: RawFd, len: usize) -> isize {
    // SAFETY: splice between descriptors we hold, no offsets.
    unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE,
        )
    }
}

/// `from` -> pipe -> `to` until end of file (blocking), then half-closes `to`.
fn splice_one_way(from: TcpStream, to: TcpStream) {
    let (pr, pw) = pipe();
    loop {
        let n = splice(from.as_raw_fd(), pw.as_raw_fd(), PIPE);
        if n <= 0 {
            break;
        }
        let mut left = n as usize;
        while left > 0 {
            let m = splice(pr.as_raw_fd(), to.as_raw_fd(), left);
            if m <= 0 {
                return;
            }
            left -= m as usize;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn copy_one_way(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// A relay on `127.0.0.1:<port>` to `127.0.0.1:upstream`; returns its port.
fn relay(upstream: u16, one_way: fn(TcpStream, TcpStream)) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
    let port = l.local_addr().expect("relay address").port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(client) = conn else { continue };
            let Ok(up) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let _ = (client.set_nodelay(true), up.set_nodelay(true));
            let (Ok(c2), Ok(u2)) = (client.try_clone(), up.try_clone()) else {
                continue;
            };
            std::thread::spawn(move || one_way(client, up));
            std::thread::spawn(move || one_way(u2, c2));
        }
    });
    port
}

pub fn splice_relay(upstream: u16) -> u16 {
    relay(upstream, splice_one_way)
}

pub fn copy_relay(upstream: u16) -> u16 {
    relay(upstream, copy_one_way)
}

/// A running `socat` relay (killed on drop).
pub struct Socat {
    child: Child,
    pub port: u16,
}

impl Socat {
    /// `None` when `socat` is not installed or did not start listening.
    pub fn start(upstream: u16) -> Option<Socat> {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").ok()?;
            l.local_addr().ok()?.port()
        };
        let child = Command::new("socat")
            .args([
                "-b",
                "262144",
                &format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"),
                &format!("TCP:127.0.0.1:{upstream}"),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let socat = Socat { child, port };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(socat);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// CPU seconds of process `pid` and its reaped children so far (`/proc/PID/stat`).
pub fn proc_cpu(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // After the `(comm)` field: fields 14-17 of the line are utime, stime, cutime, cstime.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: f64 = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|v| v.parse::<f64>().ok())
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks / hz
}

impl Drop for Socat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
