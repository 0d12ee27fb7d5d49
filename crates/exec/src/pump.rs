//! The output pump: one thread that reads both pipes of a command and feeds the capture (head,
//! tail, spool, counters) and the live sink.
//!
//! Why a thread and not the async loop: a pipe wakes its reader on every write of the command
//! (4 KiB at a time for stdio-buffered programs), and the per-wakeup work (reactor, read, spool
//! write, sink call) is what made the output path cost more than the command. The pump instead:
//! - reads 256 KiB at a time into one reused buffer, from pipes enlarged to 1 MiB;
//! - after a read round that found little, sleeps 1 ms without watching the pipes, so the command
//!   fills the (large) pipe without waking anyone and the next round reads it in one go;
//! - writes each read once to the spool and copies only what the head and tail keep;
//! - coalesces live output ([`Coalescer`]) and skips it when the sink does not listen.
//!
//! The thread ends at end of file on both pipes or when stopped (the async side's post-exit drain
//! limit, or the `run` future dropped); it always delivers the pending live output before ending.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::capture::Capture;
use crate::coalesce::Coalescer;
use crate::sink::{ExecSink, Stream};

/// Bytes per read.
const READ_BUF: usize = 256 * 1024;
/// Pipe size asked for (the unprivileged maximum by default, `/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: libc::c_int = 1024 * 1024;
/// Reads per stream per round before the other stream gets its turn.
const READS_PER_ROUND: usize = 4;
/// A round that read less than this sleeps [`BATCH_PAUSE`] before the next one ...
const BATCH_BYTES: usize = 128 * 1024;
/// ... but only when the pipes hold at least this much (otherwise the pause would stall a fast
/// writer on a full pipe).
const BATCH_MIN_PIPE: libc::c_int = 512 * 1024;
const BATCH_PAUSE: Duration = Duration::from_millis(1);

/// Live-output settings of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveConfig {
    pub(crate) max_bytes: usize,
    pub(crate) interval: Duration,
}

/// A running pump; dropping it stops the thread (its pending live output is still delivered).
pub(crate) struct Pump {
    stop: OwnedFd,
    done: Option<oneshot::Receiver<Capture>>,
}

impl Pump {
    /// Starts the thread on the two pipes (either may be missing: already closed).
    pub(crate) fn start(
        stdout: Option<OwnedFd>,
        stderr: Option<OwnedFd>,
        capture: Capture,
        sink: Arc<dyn ExecSink>,
        live: LiveConfig,
    ) -> std::io::Result<Self> {
        let (stop_read, stop_write) = crate::launch::pipe()?;
        set_nonblocking(&stop_read)?;
        for fd in [&stdout, &stderr].into_iter().flatten() {
            set_nonblocking(fd)?;
        }
        let (tx, rx) = oneshot::channel();
        let mut state = PumpThread {
            pipes: [stdout, stderr],
            stop: stop_read,
            capture,
            sink,
            coalescer: Coalescer::new(live.max_bytes, live.interval),
        };
        std::thread::Builder::new()
            .name("aibuddy-exec-pump".into())
            .spawn(move || {
                // A panicking sink must not lose the capture: it is still reported.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| state.run())).is_err() {
                    tracing::error!("the output pump panicked; output after the panic is lost");
                }
                let _ = tx.send(state.capture);
            })?;
        Ok(Self {
            stop: stop_write,
            done: Some(rx),
        })
    }

    /// Asks the thread to stop reading (pipes held open by an escaped daemon).
    pub(crate) fn stop(&self) {
        // SAFETY: writing one byte from a valid buffer to a descriptor we own.
        let _ = unsafe { libc::write(self.stop.as_raw_fd(), b"s".as_ptr().cast(), 1) };
    }

    /// Resolves with the capture once both pipes are closed (or the pump was stopped). A pump
    /// thread that died (it never panics on output, but a sink might) resolves with `None`.
    pub(crate) async fn finished(&mut self) -> Option<Capture> {
        match self.done.as_mut() {
            Some(rx) => {
                let r = rx.await.ok();
                self.done = None;
                r
            }
            None => std::future::pending().await,
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        if self.done.is_some() {
            self.stop();
        }
    }
}

struct PumpThread {
    pipes: [Option<OwnedFd>; 2],
    stop: OwnedFd,
    capture: Capture,
    sink: Arc<dyn ExecSink>,
    coalescer: Coalescer,
}

enum ReadResult {
    Data(usize),
    Again,
    Closed,
}

impl PumpThread {
    fn run(&mut self) {
        let live = self.sink.wants_output();
        let capacity = self
            .pipes
            .iter()
            .flatten()
            .map(enlarge_pipe)
            .min()
            .unwrap_or(0);
        let pause = capacity >= BATCH_MIN_PIPE;
        let mut buf = vec![0u8; READ_BUF];
        while self.pipes.iter().any(Option::is_some) {
            let timeout = match self.coalescer.deadline() {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    // Rounded up: waking a little late is fine, spinning on 0 ms is not.
                    i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
                }
                None => -1,
            };
            let Some(ready) = self.poll(timeout) else {
                break;
            };
            let mut round = 0usize;
            for (idx, stream) in [(0, Stream::Stdout), (1, Stream::Stderr)] {
                if !ready[idx] {
                    continue;
                }
                for _ in 0..READS_PER_ROUND {
                    match self.read(idx, &mut buf) {
                        ReadResult::Data(n) => {
                            round += n;
                            self.take(stream, &buf[..n], live);
                            if n < buf.len() {
                                break;
                            }
                        }
                        ReadResult::Again => break,
                        ReadResult::Closed => {
                            self.pipes[idx] = None;
                            break;
                        }
                    }
                }
            }
            if live {
                let sink = &self.sink;
                self.coalescer
                    .flush_due(Instant::now(), &mut |s, b| sink.output(s, b));
            }
            if pause && round > 0 && round < BATCH_BYTES {
                std::thread::sleep(BATCH_PAUSE);
            }
        }
        if live {
            let sink = &self.sink;
            self.coalescer.flush(&mut |s, b| sink.output(s, b));
        }
    }

    /// Which pipes are readable (or closed); `None` when the pump was asked to stop.
    fn poll(&self, timeout_ms: i32) -> Option<[bool; 2]> {
        let fd = |p: &Option<OwnedFd>| p.as_ref().map_or(-1, |f| f.as_raw_fd());
        let mut fds = [
            libc::pollfd {
                fd: fd(&self.pipes[0]),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: fd(&self.pipes[1]),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // SAFETY: `fds` is a valid array of 3 pollfd; negative fds are ignored by poll(2).
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 3, timeout_ms) };
            if rc >= 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::warn!(error = %e, "poll on the output pipes failed");
                return None;
            }
        }
        if fds[2].revents != 0 {
            tracing::debug!("output pump stopped");
            return None;
        }
        let ready =
            |p: &libc::pollfd| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        Some([ready(&fds[0]), ready(&fds[1])])
    }

    fn read(&mut self, idx: usize, buf: &mut [u8]) -> ReadResult {
        let Some(fd) = self.pipes[idx].as_ref() else {
            return ReadResult::Closed;
        };
        loop {
            // SAFETY: reading into a valid, writable buffer of `buf.len()` bytes.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                return ReadResult::Data(n as usize);
            }
            if n == 0 {
                return ReadResult::Closed;
            }
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock => return ReadResult::Again,
                _ => {
                    tracing::warn!(stream = idx, error = %e, "reading output failed");
                    return ReadResult::Closed;
                }
            }
        }
    }

    fn take(&mut self, stream: Stream, chunk: &[u8], live: bool) {
        if live {
            let sink = &self.sink;
            self.coalescer
                .push(stream, chunk, Instant::now(), &mut |s, b| sink.output(s, b));
        }
        self.capture.push(stream, chunk);
    }
}

fn set_nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Asks for a 1 MiB pipe (best effort: a user over the kernel's pipe budget keeps the default);
/// returns the pipe's size.
fn enlarge_pipe(fd: &OwnedFd) -> libc::c_int {
    // SAFETY: fcntl on a descriptor we own.
    let size = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
    if size >= 0 {
        return size;
    }
    // SAFETY: as above.
    let size = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) };
    tracing::debug!(size, "could not enlarge the output pipe");
    size.max(0)
}
