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
    match zero_copy::Splice::new(c.s.as_raw_fd(), std::os::fd::AsRawFd::as_raw_fd(&up)) {
        Ok(splice) => splice.run().await,
        Err(e) => {
            tracing::debug!(error = %e, "splice unavailable; copying");
            tokio::io::copy_bidirectional_with_sizes(&mut c.s, &mut up, COPY_BUF, COPY_BUF).await?;
            Ok(())
        }
    }
}

/// Both directions of a tunnel moved by `splice(2)` through a pipe each: the bytes stay in the
/// kernel (the proxy's copy through user space made a download 1.4-2.2x the direct one).
mod zero_copy {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;

    /// Bytes moved per `splice` call at most (the pipe is enlarged to this where allowed).
    const CHUNK: usize = 1024 * 1024;

    pub(super) struct Splice {
        a: AsyncFd<OwnedFd>,
        b: AsyncFd<OwnedFd>,
        pipes: [(OwnedFd, OwnedFd); 2],
    }

    fn dup(fd: RawFd) -> std::io::Result<OwnedFd> {
        // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor we own.
        let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if d < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: just created.
        Ok(unsafe { OwnedFd::from_raw_fd(d) })
    }

    fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors we own at once.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: just created.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: a plain fcntl on our pipe; a smaller pipe only means more calls.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
        Ok((r, w))
    }

    /// One non-blocking `splice(2)` of at most `len` bytes.
    fn splice(from: RawFd, to: RawFd, len: usize) -> std::io::Result<usize> {
        // SAFETY: splice between descriptors we hold, no offsets.
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    impl Splice {
        /// Duplicates both sockets (the originals stay owned, and open, by the caller).
        pub(super) fn new(a: RawFd, b: RawFd) -> std::io::Result<Splice> {
            let both = Interest::READABLE | Interest::WRITABLE;
            let register = |fd: OwnedFd| {
                // SAFETY: an `OwnedFd` is an open descriptor that stays open and the same
                // while the `AsyncFd` owns it, and `as_raw_fd` returns it.
                unsafe { AsyncFd::register_with_interest(fd, both) }.map_err(std::io::Error::from)
            };
            Ok(Splice {
                a: register(dup(a)?)?,
                b: register(dup(b)?)?,
                pipes: [pipe()?, pipe()?],
            })
        }

        pub(super) async fn run(self) -> std::io::Result<()> {
            let Splice { a, b, pipes } = self;
            let [p1, p2] = pipes;
            tokio::try_join!(one_way(&a, &b, &p1), one_way(&b, &a, &p2))?;
            Ok(())
        }
    }

    /// `from` -> pipe -> `to` until end of file, then half-closes `to`.
    ///
    /// Pipelined: bytes enter the pipe while earlier ones leave it, so neither socket waits for
    /// the other (a read-then-drain loop left the receiving side idle while it drained). Each
    /// turn tries both moves without waiting; only when neither moved does it wait, for `from`
    /// to become readable (room in the pipe) or `to` writable (bytes in the pipe). A splice
    /// that would block clears only the readiness it waited for (`try_io`), so a wake-up is
    /// never lost: a pipe full by its slots while `from` holds data leaves bytes queued, and
    /// `to` becoming writable drains them and the next turn reads again.
    async fn one_way(
        from: &AsyncFd<OwnedFd>,
        to: &AsyncFd<OwnedFd>,
        (pr, pw): &(OwnedFd, OwnedFd),
    ) -> std::io::Result<()> {
        let (from_fd, to_fd) = (from.get_ref().as_raw_fd(), to.get_ref().as_raw_fd());
        let (pr, pw) = (pr.as_raw_fd(), pw.as_raw_fd());
        // Bytes in the pipe, and whether `from` reached its end.
        let (mut queued, mut eof) = (0usize, false);
        let would_block = |e: &std::io::Error| e.kind() == std::io::ErrorKind::WouldBlock;
        loop {
            let mut moved = false;
            if !eof && queued < CHUNK {
                match splice(from_fd, pw, CHUNK - queued) {
                    Ok(0) => (eof, moved) = (true, true),
                    Ok(n) => (queued, moved) = (queued + n, true),
                    Err(e) if would_block(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            if queued > 0 {
                // No SPLICE_F_MORE: it corks the socket, and a peer waiting for the last bytes
                // of a message (a TLS handshake) would wait for the cork's timer.
                match splice(pr, to_fd, queued) {
                    Ok(n) => (queued, moved) = (queued - n, moved || n > 0),
                    Err(e) if would_block(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            if eof && queued == 0 {
                break;
            }
            if moved {
                continue;
            }
            // At least one branch is enabled: `eof && queued == 0` ended the loop above, and
            // otherwise either there is room to read or bytes to write.
            let can_read = !eof && queued < CHUNK;
            tokio::select! {
                r = from.readable(), if can_read => {
                    let mut ready = r?;
                    if let Ok(r) = ready.try_io(|_| splice(from_fd, pw, CHUNK - queued)) {
                        match r? {
                            0 => eof = true,
                            n => queued += n,
                        }
                    }
                }
                w = to.writable(), if queued > 0 => {
                    let mut ready = w?;
                    if let Ok(r) = ready.try_io(|_| splice(pr, to_fd, queued)) {
                        queued -= r?;
                    }
                }
            }
        }
        // SAFETY: half-close of our duplicate (shared socket): the peer sees end of file.
        unsafe { libc::shutdown(to_fd, libc::SHUT_WR) };
        Ok(())
    }
}

// ------------------------------------------------------------------ HTTP

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// `host:port`, `[v6]:port` or `host` (with `default` port).
pub(crate) fn split_authority(auth: &str, default: Option<u16>) -> Option<(String, u16)> {
    let auth = auth.rsplit_once('@').map_or(auth, |(_, a)| a);
    let (host, port) = if let Some(rest) = auth.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return None,
        }
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (auth, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0)?,
        None => default?,
    };
    let host = normalize_host(host);
    (!host.is_empty()).then_some((host, port))
}

/// `http://authority/path?q` -> (host, port, origin-form target).
pub(crate) fn split_absolute(url: &str) -> Option<(String, u16, String)> {
    let lower = url.get(..7)?.to_ascii_lowercase();
    if lower != "http://" {
        return None;
    }
    let rest = &url[7..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, path) = rest.split_at(end);
    let (host, port) = split_authority(auth, Some(80))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    Some((host, port, path))
}

async fn respond<S: AsyncWrite + Unpin>(s: &mut S, status: &str, body: &str) {
    let msg = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.write_all(msg.as_bytes()).await;
    let _ = s.shutdown().await;
}

async fn http<S>(mut c: Conn<S>, sh: &Shared) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd,
{
    let end = loop {
        if let Some(end) = find_head_end(&c.pending) {
            break end;
        }
        if c.pending.len() > MAX_HEAD {
            respond(
                &mut c.s,
                "431 Request Header Fields Too Large",
                "aibuddy: request head too large\n",
            )
            .await;
            return Ok(());
        }
        if c.fill().await? == 0 {
            return Ok(());
        }
    };
    let head: Vec<u8> = c.pending.drain(..end).collect();
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if !m.is_empty() => (m, t, v),
        _ => {
            respond(
                &mut c.s,
                "400 Bad Request",
                "aibuddy: not an HTTP proxy request\n",
            )
            .await;
            return Ok(());
        }
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(target, None) else {
            respond(
                &mut c.s,
                "400 Bad Request",
                "aibuddy: CONNECT needs host:port\n",
            )
            .await;
            return Ok(());
        };
        let (addrs, rule) = match admit(sh, &host, port, Protocol::Connect).await {
            Ok(x) => x,
            Err(Refused(reason)) => {
                let body = format!("aibuddy: refused connection to {host}:{port} ({reason})\n");
                respond(&mut c.s, "403 Forbidden", &body).await;
                return Ok(());
            }
        };
        let up = match connect(sh, &host, port, Protocol::Connect, &addrs, rule).await {
            Ok(up) => up,
            Err(e) => {
                respond(
                    &mut c.s,
                    "502 Bad Gateway",
                    &format!("aibuddy: {host}:{port}: {e}\n"),
                )
                .await;
                return Ok(());
            }
        };
        c.s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
        return tunnel(c, up).await;
    }
    let Some((host, port, path)) = split_absolute(target) else {
        respond(
            &mut c.s,
            "400 Bad Request",
            "aibuddy: the proxy serves CONNECT host:port and http:// absolute-form requests\n",
        )
        .await;
        return Ok(());
    };
    let (addrs, rule) = match admit(sh, &host, port, Protocol::Http).await {
        Ok(x) => x,
        Err(Refused(reason)) => {
            let body = format!("aibuddy: refused connection to {host}:{port} ({reason})\n");
            respond(&mut c.s, "403 Forbidden", &body).await;
            return Ok(());
        }
    };
    let mut up = match connect(sh, &host, port, Protocol::Http, &addrs, rule).await {
        Ok(up) => up,
        Err(e) => {
            respond(
                &mut c.s,
                "502 Bad Gateway",
                &format!("aibuddy: {host}:{port}: {e}\n"),
            )
            .await;
            return Ok(());
        }
    };
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if [
            "proxy-connection",
            "proxy-authorization",
            "connection",
            "keep-alive",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    up.write_all(out.as_bytes()).await?;
    tunnel(c, up).await
}

// ------------------------------------------------------------------ SOCKS5

async fn socks5<S>(mut c: Conn<S>, sh: &Shared) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd,
{
    let hello = c.take(2).await?;
    let methods = c.take(usize::from(hello[1])).await?;
    if !methods.contains(&0) {
        c.s.write_all(&[5, 0xff]).await?;
        return Ok(());
    }
    c.s.write_all(&[5, 0]).await?;
    let req = c.take(4).await?;
    let host = match req[3] {
        1 => {
            let a = c.take(4).await?;
            IpAddr::from([a[0], a[1], a[2], a[3]]).to_string()
        }
        3 => {
            let n = c.take(1).await?[0];
            let name = c.take(usize::from(n)).await?;
            normalize_host(&String::from_utf8_lossy(&name))
        }
        4 => {
            let a = c.take(16).await?;
            let mut b = [0u8; 16];
            b.copy_from_slice(&a);
            IpAddr::from(b).to_string()
        }
        _ => {
            c.s.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Ok(());
        }
    };
    let p = c.take(2).await?;
    let port = u16::from_be_bytes([p[0], p[1]]);
    if req[1] != 1 {
        // BIND and UDP ASSOCIATE: not supported.
        c.s.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        return Ok(());
    }
    let (addrs, rule) = match admit(sh, &host, port, Protocol::Socks5).await {
        Ok(x) => x,
        Err(Refused(_)) => {
            c.s.write_all(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Ok(());
        }
    };
    let up = match connect(sh, &host, port, Protocol::Socks5, &addrs, rule).await {
        Ok(up) => up,
        Err(_) => {
            c.s.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Ok(());
        }
    };
    c.s.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    tunnel(c, up).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its questions; answers after a delay (a person thinking).
    struct Slow(Arc<AtomicUsize>, Answer);

    impl Decider for Slow {
        fn decide(&self, _ask: Ask) -> Pin<Box<dyn Future<Output = Answer> + Send + 'static>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let answer = self.1.clone();
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                answer
            })
        }
    }

    async fn connect_through(port: u16, target: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = vec![0u8; 512];
        let n = s.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// Issue 22: the same host asked by several connections at once is asked about once; a
    /// refusal carries the decider's reason; another port is another question.
    #[tokio::test]
    async fn concurrent_connections_to_one_host_ask_once() {
        let asked = Arc::new(AtomicUsize::new(0));
        let deny = Answer::Deny {
            rule: Some("asked: denied".into()),
            reason: "refused by the person".into(),
        };
        let cfg = ProxyConfig {
            policy: Policy::from_lists(&["crates.io".to_string()], &[]).0,
            decider: Arc::new(Slow(asked.clone(), deny)),
        };
        let (proxy, port) = Proxy::serve_tcp_loopback(cfg).unwrap();
        let (a, b, c) = tokio::join!(
            connect_through(port, "unlisted.example:443"),
            connect_through(port, "unlisted.example:443"),
            connect_through(port, "unlisted.example:443"),
        );
        for r in [&a, &b, &c] {
            assert!(
                r.starts_with("HTTP/1.1 403")
                    && r.contains(
                        "refused connection to unlisted.example:443 (refused by the person)"
                    ),
                "{r}"
            );
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        connect_through(port, "unlisted.example:80").await;
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        let (events, _) = proxy.stop();
        let e = events.iter().find(|e| e.port == 443).unwrap();
        assert_eq!(
            (e.allowed, e.connections, e.rule.as_deref()),
            (false, 3, Some("asked: denied"))
        );
    }

    /// A name the person allowed must still resolve to public addresses (what was shown is what
    /// is reached); `localhost` and IP literals are shown as what they are.
    #[tokio::test]
    async fn an_allowed_name_that_resolves_to_loopback_is_refused() {
        let allow = Answer::Allow {
            rule: "asked: allowed once".into(),
        };
        let cfg = ProxyConfig {
            policy: Policy::from_lists(&[], &[]).0,
            decider: Arc::new(Slow(Arc::new(AtomicUsize::new(0)), allow)),
        };
        let (proxy, port) = Proxy::serve_tcp_loopback(cfg).unwrap();
        assert!(!shown_as_is("intranet.example") && !shown_as_is("localtest.me"));
        assert!(shown_as_is("localhost") && shown_as_is("::1") && shown_as_is("10.0.0.5"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let r = connect_through(port, &target).await;
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        drop(proxy);
    }

    /// The tunnel moves bytes both ways at once, in order and complete, and passes a half-close
    /// on: 24 MB echoed back while still being sent (both pipes full and draining at the same
    /// time, where a lost wake-up would hang), then the client's end of file ends the echo.
    #[tokio::test]
    async fn a_tunnel_echoes_a_large_stream_both_ways_at_once_and_passes_the_half_close() {
        let allow = Answer::Allow {
            rule: "asked: allowed once".into(),
        };
        let cfg = ProxyConfig {
            policy: Policy::from_lists(&[], &[]).0,
            decider: Arc::new(Slow(Arc::new(AtomicUsize::new(0)), allow)),
        };
        let (proxy, port) = Proxy::serve_tcp_loopback(cfg).unwrap();
        let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = format!("127.0.0.1:{}", echo.local_addr().unwrap().port());
        tokio::spawn(async move {
            let (s, _) = echo.accept().await.unwrap();
            let (mut r, mut w) = s.into_split();
            tokio::io::copy(&mut r, &mut w).await.unwrap();
            w.shutdown().await.unwrap();
        });
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            s.read_exact(&mut b).await.unwrap();
            head.push(b[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
        let data: Vec<u8> = (0..24 * 1024 * 1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let (mut r, mut w) = s.into_split();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            for chunk in sent.chunks(100_003) {
                w.write_all(chunk).await.unwrap();
            }
            w.shutdown().await.unwrap();
        });
        let mut back = Vec::with_capacity(data.len());
        let got = tokio::time::timeout(Duration::from_secs(60), r.read_to_end(&mut back)).await;
        assert!(got.is_ok(), "the tunnel stalled after {} bytes", back.len());
        writer.await.unwrap();
        assert_eq!(back.len(), data.len());
        assert!(back == data, "the echoed bytes differ");
        drop(proxy);
    }

    #[test]
    fn authorities_and_absolute_targets() {
        assert_eq!(
            split_authority("crates.io:443", None),
            Some(("crates.io".into(), 443))
        );
        assert_eq!(split_authority("[::1]:80", None), Some(("::1".into(), 80)));
        assert_eq!(split_authority("x.org", None), None);
        assert_eq!(
            split_authority("u:p@X.org", Some(80)),
            Some(("x.org".into(), 80))
        );
        assert_eq!(
            split_absolute("http://Example.com:8080/a?b"),
            Some(("example.com".into(), 8080, "/a?b".into()))
        );
        assert_eq!(
            split_absolute("http://example.com"),
            Some(("example.com".into(), 80, "/".into()))
        );
        assert_eq!(split_absolute("https://example.com/"), None);
        assert_eq!(split_absolute("/relative"), None);
    }
}
