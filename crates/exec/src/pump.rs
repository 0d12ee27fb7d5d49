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
//! With the spool as the command's stdout ([`FileSpool`]) there is no stdout pipe: the pump reads
//! the stderr pipe and appends it to the spool, watches the file every few ms to keep its cap
//! (holes punched) and, only for a listening sink, reads the new bytes back from the file (page
//! cache) for live output.
//!
//! The thread ends at end of file on every pipe (on the spool path: and once the runner says the
//! command's whole tree is gone, [`Pump::command_gone`]) or when stopped (the async side's
//! post-exit drain limit, or the `run` future dropped); it always delivers the pending live output
//! before ending.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::capture::{Capture, Captured};
use crate::coalesce::Coalescer;
use crate::sink::{ExecSink, Stream};
use crate::spool_file::{FileSpool, Range};

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
/// Spool path: how often the file is watched without a listener (the cap's punching; a command
/// writing 1 GB/s overshoots the cap by ~25 MB before a punch).
const WATCH_TICK: Duration = Duration::from_millis(25);
/// Spool path with a listener: how often the file is read for new output, at most.
const LIVE_TICK: Duration = Duration::from_millis(8);
/// Spool path with a listener that fell this far behind the end beyond the cap (a terminal slower
/// than the command): the bytes it has not read are skipped, so the disk stays bounded.
const LIVE_LAG_MIN: u64 = 64 * 1024 * 1024;

/// Stop-pipe messages.
const MSG_STOP: u8 = b's';
const MSG_GONE: u8 = b'x';

/// Live-output settings of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveConfig {
    pub(crate) max_bytes: usize,
    pub(crate) interval: Duration,
}

/// Where the command's output goes.
pub(crate) enum Output {
    /// Both streams are pipes the pump reads into the capture.
    Pipes(Capture),
    /// stdout is the spool file; stderr a pipe the pump appends to it.
    File(FileSpool),
}

/// A running pump; dropping it stops the thread (its pending live output is still delivered).
pub(crate) struct Pump {
    stop: OwnedFd,
    done: Option<oneshot::Receiver<Captured>>,
}

impl Pump {
    /// Starts the thread on the pipes (either may be missing: closed, or stdout is the spool).
    pub(crate) fn start(
        stdout: Option<OwnedFd>,
        stderr: Option<OwnedFd>,
        output: Output,
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
            gone: false,
            output: Some(output),
            sink,
            coalescer: Coalescer::new(live.max_bytes, live.interval),
            live_interval: live.interval,
            live_pos: 0,
            stderr_ranges: VecDeque::new(),
        };
        std::thread::Builder::new()
            .name("aibuddy-exec-pump".into())
            .spawn(move || {
                // A panicking sink must not lose the capture: it is still reported.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| state.run())).is_err() {
                    tracing::error!("the output pump panicked; output after the panic is lost");
                }
                let captured = match state.output.take() {
                    Some(Output::Pipes(c)) => c.finish(),
                    Some(Output::File(f)) => f.finish(),
                    None => Captured::default(),
                };
                let _ = tx.send(captured);
            })?;
        Ok(Self {
            stop: stop_write,
            done: Some(rx),
        })
    }

    /// Asks the thread to stop reading (pipes held open by an escaped daemon).
    pub(crate) fn stop(&self) {
        self.send(MSG_STOP);
    }

    /// The command's whole tree is gone: nothing writes the spool any more (the spool path ends
    /// once stderr is at its end too; the pipe path ignores it).
    pub(crate) fn command_gone(&self) {
        self.send(MSG_GONE);
    }

    fn send(&self, msg: u8) {
        // SAFETY: writing one byte from a valid buffer to a descriptor we own.
        let _ = unsafe { libc::write(self.stop.as_raw_fd(), [msg].as_ptr().cast(), 1) };
    }

    /// Resolves with the capture once the output ended (or the pump was stopped). A pump thread
    /// that died (it never panics on output, but a sink might) resolves with `None`.
    pub(crate) async fn finished(&mut self) -> Option<Captured> {
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
    /// The runner said the command's tree is gone.
    gone: bool,
    output: Option<Output>,
    sink: Arc<dyn ExecSink>,
    coalescer: Coalescer,
    live_interval: Duration,
    /// Spool path, listening: the file offset read so far.
    live_pos: u64,
    /// Spool path, listening: stderr appends at or after `live_pos`, in file order.
    stderr_ranges: VecDeque<Range>,
}

enum ReadResult {
    Data(usize),
    Again,
    Closed,
}

/// What the stop pipe said.
enum Poll {
    Ready([bool; 2]),
    Stop,
}

impl PumpThread {
    fn run(&mut self) {
        match self.output {
            Some(Output::Pipes(_)) => self.run_pipes(),
            Some(Output::File(_)) => self.run_file(),
            None => {}
        }
    }

    fn run_pipes(&mut self) {
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
            let timeout = self.coalescer.deadline().map(until);
            let Poll::Ready(ready) = self.poll(timeout) else {
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

    /// The spool path: stderr appended to the file, the file watched, live output read from it.
    fn run_file(&mut self) {
        let live = self.sink.wants_output();
        let tick = if live {
            LIVE_TICK
                .min(self.live_interval)
                .max(Duration::from_millis(1))
        } else {
            WATCH_TICK
        };
        let mut buf = vec![0u8; READ_BUF];
        loop {
            let next = Instant::now() + tick;
            let due = self.coalescer.deadline().map_or(next, |d| d.min(next));
            let stopped = match self.poll(Some(until(due))) {
                Poll::Stop => true,
                Poll::Ready(ready) => {
                    if ready[1] {
                        self.append_stderr(&mut buf);
                    }
                    false
                }
            };
            let Some(Output::File(spool)) = self.output.as_mut() else {
                return;
            };
            let size = spool.size();
            if live {
                self.stream_file(size, &mut buf);
                let sink = &self.sink;
                self.coalescer
                    .flush_due(Instant::now(), &mut |s, b| sink.output(s, b));
            }
            if let Some(Output::File(spool)) = self.output.as_mut() {
                spool.maintain(size, live.then_some(self.live_pos));
            }
            let ended = self.gone && self.pipes[1].is_none();
            if stopped || ended {
                break;
            }
        }
        if live {
            let size = match self.output.as_ref() {
                Some(Output::File(spool)) => spool.size(),
                _ => 0,
            };
            self.stream_file(size, &mut buf);
            let sink = &self.sink;
            self.coalescer.flush(&mut |s, b| sink.output(s, b));
        }
    }

    /// Reads the stderr pipe (a few reads at most) and appends it to the spool.
    fn append_stderr(&mut self, buf: &mut [u8]) {
        let live = self.sink.wants_output();
        for _ in 0..READS_PER_ROUND {
            match self.read(1, buf) {
                ReadResult::Data(n) => {
                    if let Some(Output::File(spool)) = self.output.as_mut()
                        && let Some(range) = spool.append_stderr(&buf[..n])
                        && live
                    {
                        self.stderr_ranges.push_back(range);
                    }
                    if n < buf.len() {
                        break;
                    }
                }
                ReadResult::Again => break,
                ReadResult::Closed => {
                    self.pipes[1] = None;
                    break;
                }
            }
        }
    }

    /// Delivers the spool's bytes from `live_pos` to `size` to the coalescer, each labelled by the
    /// stderr ranges. A listener that fell too far behind skips ahead (said to the sink).
    fn stream_file(&mut self, size: u64, buf: &mut [u8]) {
        let Some(Output::File(spool)) = self.output.as_ref() else {
            return;
        };
        let lag_limit = spool_cap_lag(spool);
        if size.saturating_sub(self.live_pos) > lag_limit {
            let to = size.saturating_sub(READ_BUF as u64);
            let sink = &self.sink;
            self.coalescer.flush(&mut |s, b| sink.output(s, b));
            sink.output_skipped(to - self.live_pos);
            tracing::debug!(
                skipped = to - self.live_pos,
                "live output listener fell behind"
            );
            self.live_pos = to;
        }
        while self.live_pos < size {
            while self
                .stderr_ranges
                .front()
                .is_some_and(|r| r.1 <= self.live_pos)
            {
                self.stderr_ranges.pop_front();
            }
            let (stream, limit) = match self.stderr_ranges.front() {
                Some(&(start, end)) if start <= self.live_pos => (Stream::Stderr, end),
                Some(&(start, _)) => (Stream::Stdout, start),
                None => (Stream::Stdout, size),
            };
            let want = (limit.min(size) - self.live_pos).min(buf.len() as u64) as usize;
            let n = spool.read_at(&mut buf[..want], self.live_pos);
            if n == 0 {
                // Truncated by the command (`> /dev/stdout`): continue from its new end.
                self.live_pos = size.min(spool.size());
                self.stderr_ranges.clear();
                break;
            }
            self.live_pos += n as u64;
            let sink = &self.sink;
            self.coalescer
                .push(stream, &buf[..n], Instant::now(), &mut |s, b| {
                    sink.output(s, b)
                });
        }
    }

    /// Which pipes are readable (or closed); `Stop` when the pump was asked to stop. `timeout`:
    /// `None` waits for a pipe.
    fn poll(&mut self, timeout: Option<i32>) -> Poll {
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
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 3, timeout.unwrap_or(-1)) };
            if rc >= 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::warn!(error = %e, "poll on the output pipes failed");
                return Poll::Stop;
            }
        }
        if fds[2].revents != 0 && self.read_stop() {
            tracing::debug!("output pump stopped");
            return Poll::Stop;
        }
        let ready =
            |p: &libc::pollfd| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        Poll::Ready([ready(&fds[0]), ready(&fds[1])])
    }

    /// Reads the stop pipe; `true` when the pump must stop (asked to, or the runner is gone).
    fn read_stop(&mut self) -> bool {
        let mut msgs = [0u8; 16];
        // SAFETY: reading into a valid buffer from a non-blocking descriptor we own.
        let n = unsafe { libc::read(self.stop.as_raw_fd(), msgs.as_mut_ptr().cast(), msgs.len()) };
        if n == 0 {
            return true;
        }
        let Ok(n) = usize::try_from(n) else {
            // EAGAIN: a spurious wake-up.
            return false;
        };
        if msgs[..n].contains(&MSG_GONE) {
            self.gone = true;
        }
        msgs[..n].iter().any(|&m| m != MSG_GONE)
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
        if let Some(Output::Pipes(capture)) = self.output.as_mut() {
            capture.push(stream, chunk);
        }
    }
}

/// How far a listener may fall behind the end of the spool before it skips ahead.
fn spool_cap_lag(spool: &FileSpool) -> u64 {
    spool.cap().max(LIVE_LAG_MIN)
}

/// Milliseconds until `deadline`, rounded up: waking a little late is fine, spinning on 0 ms is
/// not.
fn until(deadline: Instant) -> i32 {
    let left = deadline.saturating_duration_since(Instant::now());
    i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
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
