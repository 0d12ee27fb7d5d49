//! Both directions of a tunnel copied by a blocking thread each (`read`/`send` through a
//! 256 KiB buffer): no event loop, no wake-up of the runtime per chunk.
//!
//! Why not `splice(2)`: measured on loopback (kernel 6.18, 2 cores; `perf stat`, CPU per 100 MB
//! download, `crates/exec/README.md`), a relay through a pipe costs more CPU than a copy through
//! user space: direct ~65 ms; relays with the same hops and no policy: splice ~100-107 ms, copy
//! ~92 ms; this proxy with its former splice loop ~104-112 ms, with these threads ~92-96 ms. The
//! receiver's copy of spliced pages costs more than the relay's copy saves, and a loopback
//! transfer is CPU-bound. The runtime lets go of both sockets while the threads run (the caller
//! drops its streams): their edge-triggered registrations woke its I/O driver per segment.
//!
//! A stop (the proxy's, or the connection's task being dropped) shuts both sockets down
//! (`SHUT_RDWR`): the threads' blocked calls return at once, they end, and the last holder of
//! each duplicate closes it. The first error in either direction ends both.
//!
//! A command decides how many connections it opens: at most [`MAX_TUNNELS`] tunnels of the
//! process run on threads at once; the others are copied on the runtime (`start` refuses, the
//! caller falls back), so a command cannot exhaust the app's threads.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use tokio::sync::oneshot;

/// Bytes per `read` at most (one buffer per direction).
const BUF: usize = 256 * 1024;
/// Stack of each copying thread (a few frames; the buffer is on the heap).
const STACK: usize = 64 * 1024;
/// The name of the copying threads (tests count them).
pub(super) const THREAD_NAME: &str = "aibuddy-tunnel";
/// Tunnels of this process on threads at once (two threads each).
pub(super) const MAX_TUNNELS: usize = 128;

/// A bounded count of tunnels on threads.
pub(super) struct Slots {
    max: usize,
    used: AtomicUsize,
}

/// One tunnel's place in [`Slots`], given back when the last of its threads drops it.
pub(super) struct Slot(&'static Slots);

impl Slots {
    pub(super) const fn new(max: usize) -> Slots {
        Slots {
            max,
            used: AtomicUsize::new(0),
        }
    }

    /// A place, or `None` when `max` tunnels hold one.
    pub(super) fn take(&'static self) -> Option<Slot> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self))
    }

    #[cfg(test)]
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

static SLOTS: Slots = Slots::new(MAX_TUNNELS);

/// A place of this process's bound (tests hold them all to see the fallback).
#[cfg(test)]
pub(super) fn take_slot() -> Option<Slot> {
    SLOTS.take()
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

/// Clears `O_NONBLOCK` on the open file description (shared with the caller's descriptor,
/// which does no I/O while the tunnel runs and is closed after it).
fn set_blocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: plain fcntls on a descriptor we hold.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Shuts both sockets down when dropped (the tunnel ended, or its task was cancelled).
struct Stop([Arc<OwnedFd>; 2]);

impl Drop for Stop {
    fn drop(&mut self) {
        for fd in &self.0 {
            // SAFETY: shutdown of a socket we hold; wakes any thread blocked on it.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
        }
    }
}

/// A tunnel whose threads run.
pub(super) struct Tunnel {
    stop: Stop,
    done: [oneshot::Receiver<std::io::Result<()>>; 2],
}

impl Tunnel {
    /// Starts copying `a` <-> `b` (duplicates are used; the caller's descriptors stay open and
    /// owned by it). On an error nothing was changed or moved: the caller may relay otherwise.
    pub(super) fn start(a: RawFd, b: RawFd) -> std::io::Result<Tunnel> {
        let slot = Arc::new(SLOTS.take().ok_or_else(|| {
            std::io::Error::other(format!("{MAX_TUNNELS} tunnels already run on threads"))
        })?);
        let a = Arc::new(dup(a)?);
        let b = Arc::new(dup(b)?);
        // The threads wait for `go`: if the second cannot be started, the first ends without
        // touching the sockets (its sender is dropped), which are still non-blocking.
        let (go1, done1) = spawn(a.clone(), b.clone(), slot.clone())?;
        let (go2, done2) = spawn(b.clone(), a.clone(), slot)?;
        set_blocking(a.as_raw_fd())?;
        if let Err(e) = set_blocking(b.as_raw_fd()) {
            // Undo, so the caller's fallback does not block its runtime.
            // SAFETY: plain fcntls on a descriptor we hold.
            unsafe {
                let flags = libc::fcntl(a.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(a.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
            return Err(e);
        }
        let _ = (go1.send(()), go2.send(()));
        Ok(Tunnel {
            stop: Stop([a, b]),
            done: [done1, done2],
        })
    }

    /// Waits until both directions ended (or the first error); then both sockets are shut down.
    pub(super) async fn wait(self) -> std::io::Result<()> {
        let Tunnel { stop, done } = self;
        let [d1, d2] = done;
        let gone = |_| std::io::Error::other("tunnel thread ended without a result");
        let r = tokio::try_join!(async { d1.await.map_err(gone)? }, async {
            d2.await.map_err(gone)?
        });
        drop(stop);
        r.map(|_| ())
    }
}

type Started = (mpsc::Sender<()>, oneshot::Receiver<std::io::Result<()>>);

fn spawn(from: Arc<OwnedFd>, to: Arc<OwnedFd>, slot: Arc<Slot>) -> std::io::Result<Started> {
    let (go, wait) = mpsc::channel::<()>();
    let (done, done_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .stack_size(STACK)
        .spawn(move || {
            if wait.recv().is_ok() {
                let r = one_way(from.as_raw_fd(), to.as_raw_fd());
                // The place is given back before the result is told (a test that waits for
                // the result finds the count already lowered).
                drop(slot);
                let _ = done.send(r);
            }
        })?;
    Ok((go, done_rx))
}

/// `from` -> `to` until end of file, then half-closes `to` (the peer sees end of file).
fn one_way(from: RawFd, to: RawFd) -> std::io::Result<()> {
    let mut buf = vec![0u8; BUF];
    let interrupted = |e: &std::io::Error| e.kind() == std::io::ErrorKind::Interrupted;
    loop {
        // SAFETY: read into our buffer.
        let n = unsafe { libc::read(from, buf.as_mut_ptr().cast(), buf.len()) };
        let n = match usize::try_from(n) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => match std::io::Error::last_os_error() {
                e if interrupted(&e) => continue,
                e => return Err(e),
            },
        };
        let mut sent = 0;
        while sent < n {
            let rest = &buf[sent..n];
            // SAFETY: send from our buffer; MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
            let m = unsafe { libc::send(to, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
            match usize::try_from(m) {
                Ok(m) => sent += m,
                Err(_) => match std::io::Error::last_os_error() {
                    e if interrupted(&e) => continue,
                    e => return Err(e),
                },
            }
        }
    }
    // SAFETY: half-close of our duplicate of a socket.
    unsafe { libc::shutdown(to, libc::SHUT_WR) };
    Ok(())
}
