//! The proxy server of one command (tokio).
//!
//! One listener (a Unix socket, or a loopback TCP port for the Landlock-only path); each
//! connection is sniffed: a first byte `0x05` is SOCKS5, anything else an HTTP request head
//! (at most [`MAX_HEAD`] bytes). Only two HTTP forms are served: `CONNECT host:port` (a tunnel)
//! and absolute-form requests (`GET http://host[:port]/path`, any method), forwarded in
//! origin-form with the proxy's hop-by-hop headers removed and `Connection: close`. SOCKS5 serves
//! `CONNECT` with no authentication (names resolved here, `socks5h`); `BIND` and
//! `UDP ASSOCIATE` are refused. Every connection is decided ([`crate::policy`]), resolved here,
//! connected only to checked addresses, and recorded ([`crate::log`]). A refusal is an HTTP 403
//! (body: `aibuddy: refused connection to host:port (reason)`) or SOCKS5 reply 2.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::log::{Log, NetEvent, NetWatch, Protocol};
use crate::policy::{Policy, Verdict, normalize_host};
use crate::{Answer, Ask, Decider};

/// Largest HTTP request head the proxy reads.
pub const MAX_HEAD: usize = 64 * 1024;
/// How long name resolution and each connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Buffer of each direction of a tunnel.
const COPY_BUF: usize = 256 * 1024;

/// What a proxy enforces and whom it asks.
#[derive(Clone)]
pub struct ProxyConfig {
    pub policy: Policy,
    pub decider: Arc<dyn Decider>,
}

/// The answer about one host and port, set once by the first connection that asks.
type AnswerCell = Arc<tokio::sync::OnceCell<Answer>>;

struct Shared {
    policy: Policy,
    decider: Arc<dyn Decider>,
    log: Arc<Log>,
    /// One answer per host and port: the first connection asks, the others wait for its answer.
    answers: Mutex<HashMap<(String, u16), AnswerCell>>,
    stop: CancellationToken,
}

/// A running proxy; [`Proxy::stop`] ends it and every connection and returns its decisions.
pub struct Proxy {
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Proxy {
    fn shared(cfg: ProxyConfig) -> Arc<Shared> {
        Arc::new(Shared {
            policy: cfg.policy,
            decider: cfg.decider,
            log: Arc::new(Log::new()),
            answers: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
        })
    }

    /// Listens on a new Unix socket at `path` (call inside a tokio runtime).
    pub fn serve_unix(path: &Path, cfg: ProxyConfig) -> std::io::Result<Proxy> {
        let std = std::os::unix::net::UnixListener::bind(path)?;
        std.set_nonblocking(true)?;
        let listener = tokio::net::UnixListener::from_std(std)?;
        let shared = Self::shared(cfg);
        let sh = shared.clone();
        let accept = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = sh.stop.cancelled() => break,
                    r = listener.accept() => match r {
                        Ok((s, _)) => {
                            let sh = sh.clone();
                            tokio::spawn(async move { adopt(s, sh).await });
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "proxy accept failed");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    },
                }
            }
        });
        Ok(Proxy { shared, accept })
    }

    /// Listens on `127.0.0.1:<free port>` (call inside a tokio runtime); returns the port.
    pub fn serve_tcp_loopback(cfg: ProxyConfig) -> std::io::Result<(Proxy, u16)> {
        let std = std::net::TcpListener::bind("127.0.0.1:0")?;
        std.set_nonblocking(true)?;
        let port = std.local_addr()?.port();
        let listener = tokio::net::TcpListener::from_std(std)?;
        let shared = Self::shared(cfg);
        let sh = shared.clone();
        let accept = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = sh.stop.cancelled() => break,
                    r = listener.accept() => match r {
                        Ok((s, _)) => {
                            let _ = s.set_nodelay(true);
                            spawn_conn(s, sh.clone(), Vec::new())
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "proxy accept failed");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    },
                }
            }
        });
        Ok((Proxy { shared, accept }, port))
    }

    /// The decisions so far and how many distinct ones did not fit.
    pub fn events(&self) -> (Vec<NetEvent>, u64) {
        self.shared.log.snapshot()
    }

    /// A view of the decisions that stays readable after the proxy stopped.
    pub fn watch(&self) -> NetWatch {
        NetWatch(self.shared.log.clone())
    }

    /// Stops listening, ends every connection, returns the decisions.
    pub fn stop(self) -> (Vec<NetEvent>, u64) {
        self.shared.stop.cancel();
        self.accept.abort();
        self.shared.log.snapshot()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.cancel();
        self.accept.abort();
    }
}

/// A Unix connection: either a bridge handing over the command's TCP connection (one byte `F`
/// with the socket as `SCM_RIGHTS`: the proxy then talks to the command's socket directly, one
/// copy less than relaying) or a client speaking the proxy protocols on the Unix stream itself.
async fn adopt(s: tokio::net::UnixStream, sh: Arc<Shared>) {
    match recv_fd(&s).await {
        Ok((bytes, Some(fd))) if bytes == b"F" => {
            let std = std::net::TcpStream::from(fd);
            let tcp = std
                .set_nonblocking(true)
                .and_then(|_| TcpStream::from_std(std));
            match tcp {
                Ok(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    spawn_conn(tcp, sh, Vec::new());
                }
                Err(e) => tracing::debug!(error = %e, "handed-over socket unusable"),
            }
        }
        Ok((bytes, None)) if !bytes.is_empty() => spawn_conn(s, sh, bytes),
        Ok(_) => {}
        Err(e) => tracing::debug!(error = %e, "proxy connection ended"),
    }
}

/// Reads the first message of a Unix stream with at most one passed descriptor.
async fn recv_fd(
    s: &tokio::net::UnixStream,
) -> std::io::Result<(Vec<u8>, Option<std::os::fd::OwnedFd>)> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    loop {
        s.readable().await?;
        let r = s.try_io(tokio::io::Interest::READABLE, || {
            let mut buf = [0u8; 4096];
            let mut cbuf = [0u64; 8];
            // SAFETY: recvmsg into buffers we own; a received descriptor is owned at once.
            unsafe {
                let mut iov = libc::iovec {
                    iov_base: buf.as_mut_ptr().cast(),
                    iov_len: buf.len(),
                };
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                msg.msg_control = cbuf.as_mut_ptr().cast();
                msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
                let n = libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
                if n < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let mut fd = None;
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                        let data = libc::CMSG_DATA(c) as *const libc::c_int;
                        let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                            / std::mem::size_of::<libc::c_int>();
                        for i in 0..count {
                            let raw = std::ptr::read_unaligned(data.add(i));
                            let owned = OwnedFd::from_raw_fd(raw);
                            if fd.is_none() {
                                fd = Some(owned);
                            }
                        }
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
                Ok((buf[..n as usize].to_vec(), fd))
            }
        });
        match r {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

fn spawn_conn<S>(s: S, sh: Arc<Shared>, prefix: Vec<u8>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd + 'static,
{
    tokio::spawn(async move {
        let stop = sh.stop.clone();
        tokio::select! {
            _ = stop.cancelled() => {}
            r = handle(s, sh, prefix) => if let Err(e) = r {
                tracing::debug!(error = %e, "proxy connection ended");
            },
        }
    });
}

/// A client stream with the bytes read ahead of what was parsed.
struct Conn<S> {
    s: S,
    pending: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    async fn fill(&mut self) -> std::io::Result<usize> {
        let mut tmp = [0u8; 8192];
        let n = self.s.read(&mut tmp).await?;
        self.pending.extend_from_slice(&tmp[..n]);
        Ok(n)
    }

    async fn take(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        while self.pending.len() < n {
            if self.fill().await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(self.pending.drain(..n).collect())
    }
}

async fn handle<S>(s: S, sh: Arc<Shared>, prefix: Vec<u8>) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd,
{
    let mut c = Conn { s, pending: prefix };
    if c.pending.is_empty() && c.fill().await? == 0 {
        return Ok(());
    }
    if c.pending[0] == 0x05 {
        socks5(c, &sh).await
    } else {
        http(c, &sh).await
    }
}

/// A refusal: its text for the person and the model.
struct Refused(String);

/// Decides, resolves and checks `host:port`; records a refusal. Returns the addresses to try and
/// the deciding rule.
async fn admit(
    sh: &Shared,
    host: &str,
    port: u16,
    proto: Protocol,
) -> Result<(Vec<SocketAddr>, String), Refused> {
    let refuse = |rule: Option<String>, reason: String| {
        sh.log
            .record(host, port, proto, false, rule, Some(reason.clone()));
        Refused(reason)
    };
    let (rule, names_host) = match sh.policy.verdict(host, port) {
        Verdict::Denied { rule } => {
            return Err(refuse(
                Some(format!("deny: {rule}")),
                format!("denied by the exec.network.deny entry `{rule}`"),
            ));
        }
        Verdict::Allowed { rule, names_host } => (rule, names_host),
        Verdict::NotListed => {
            let cell = sh
                .answers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry((host.to_string(), port))
                .or_default()
                .clone();
            let answer = cell
                .get_or_init(|| {
                    sh.decider.decide(Ask {
                        host: host.to_string(),
                        port,
                    })
                })
                .await
                .clone();
            match answer {
                // What the person saw is what is reached: a name must resolve to public
                // addresses; an IP literal or `localhost` was shown as what it is.
                Answer::Allow { rule } => (rule, shown_as_is(host)),
                Answer::Deny { rule, reason } => return Err(refuse(rule, reason)),
            }
        }
    };
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port))).await
            {
                Ok(Ok(a)) => a.collect(),
                Ok(Err(_)) | Err(_) => {
                    return Err(refuse(Some(rule), "the name did not resolve".to_string()));
                }
            }
        }
    };
    match sh.policy.usable(names_host, &addrs) {
        Ok(ok) => Ok((ok, rule)),
        Err(ip) => Err(refuse(
            Some(rule),
            format!(
                "resolves to a non-public address ({ip}); only an exec.network.allow entry naming \
                 the host (`{host}:{port}`) allows that"
            ),
        )),
    }
}

/// Whether a host is shown as what it is: an IP literal or `localhost` (an allowed name otherwise
/// must resolve to public addresses).
fn shown_as_is(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok() || host == "localhost"
}

/// Connects to the first address that answers; records the connection.
async fn connect(
    sh: &Shared,
    host: &str,
    port: u16,
    proto: Protocol,
    addrs: &[SocketAddr],
    rule: String,
) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no address");
    for a in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(a)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                sh.log.record(host, port, proto, true, Some(rule), None);
                return Ok(s);
            }
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::ErrorKind::TimedOut.into(),
        }
    }
    sh.log.record(
        host,
        port,
        proto,
        true,
        Some(rule),
        Some(format!("connection failed: {last}")),
    );
    Err(last)
}

async fn tunnel<S>(mut c: Conn<S>, mut up: TcpStream) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + std::os::fd::AsRawFd,
{
    if !c.pending.is_empty() {
        up.write_all(&c.pending).await?;
        c.pending.clear();
    }
    match threaded::Tunnel::start(c.s.as_raw_fd(), std::os::fd::AsRawFd::as_raw_fd(&up)) {
        Ok(t) => {
            // The runtime lets go of both sockets (their edge-triggered registrations would
            // wake its I/O driver for every segment that arrives, ~700 context switches per
            // 100 MB); the threads hold duplicates.
            drop(c);
            drop(up);
            t.wait().await
        }
        Err(e) => {
            tracing::debug!(error = %e, "tunnel threads unavailable; copying on the runtime");
            tokio::io::copy_bidirectional_with_sizes(&mut c.s, &mut up, COPY_BUF, COPY_BUF).await?;
            Ok(())
        }
    }
}

mod http;
mod socks5;
#[cfg(test)]
mod tests;
mod threaded;

use http::*;
use socks5::*;
