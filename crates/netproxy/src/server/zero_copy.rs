//! Both directions of a tunnel moved by `splice(2)` through a pipe each: the bytes stay in the
//! kernel (the proxy's copy through user space made a download 1.4-2.2x the direct one).

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
