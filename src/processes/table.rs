//! [`Processes`]: the background processes of a project's runs (held by `Services`, so every
//! runner of the project shares it), and [`Proc`], one of them.
//!
//! A process belongs to the run whose `execute` call started it: the process tools find it only
//! from that run (another run's id is an Authorization error, an unknown id a Parameters one).
//! At most [`MAX_LIVE_PER_RUN`] run at once per run. When the run ends, `end_run` stops the ones
//! still running (unless the person keeps them) and waits until each one's record is stored.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::ring::{Read, Ring};
use crate::call_record::CallRecorder;
use crate::contract::ToolError;

/// Background processes running at once in one run.
pub const MAX_LIVE_PER_RUN: usize = 8;
/// How long stopping a process waits for its tree to end and its record to be stored.
pub const STOP_WAIT: Duration = Duration::from_secs(10);

/// How a background process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Stopped by `process_stop`, the run's end or the app.
    pub stopped: bool,
    pub timed_out: bool,
    /// It never ran (the launch failed): the reason.
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl ProcEnd {
    /// One line for the model and the person: `exit code 0`, `stopped (signal 9)`, ...
    pub fn describe(&self) -> String {
        let how = match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "no exit status".to_string(),
        };
        if let Some(e) = &self.error {
            return format!("failed to start: {e}");
        }
        let why = if self.stopped {
            "stopped, "
        } else if self.timed_out {
            "timed out, "
        } else {
            ""
        };
        format!("ended ({why}{how}) after {} ms", self.duration_ms)
    }
}

/// What `process_list` shows of a process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcInfo {
    pub process_id: String,
    pub command: String,
    /// The `execute` call that started it.
    pub tool_call_id: String,
    /// The stored call holding its complete output (`view_tool_call`), when stored.
    pub output_call_id: Option<String>,
    pub running: bool,
    /// The person keeps it past the end of its run (`Proc::set_kept`).
    pub kept: bool,
    pub end: Option<ProcEnd>,
    pub output_bytes: u64,
    pub unread_bytes: u64,
    pub started_at_ms: i64,
}

#[derive(Debug, Default)]
struct ProcState {
    ring: Ring,
    /// The model's read position (absolute output offset).
    read: u64,
    end: Option<ProcEnd>,
    /// The end is recorded (the stored call is final) or there is no record to wait for.
    settled: bool,
    stdin: Option<OwnedFd>,
}

/// One background process.
pub struct Proc {
    pub id: String,
    pub run_id: String,
    pub call_id: String,
    /// The stored call of the process itself (its spool, later its raw output).
    pub record_id: Option<String>,
    pub command: String,
    pub started_at_ms: i64,
    started: Instant,
    stop: CancellationToken,
    /// The person keeps it past the end of its run (the window's Keep); never the model.
    kept: std::sync::atomic::AtomicBool,
    state: Mutex<ProcState>,
    /// Bumped on every change (output, end, settled): waiters watch it.
    version: watch::Sender<u64>,
    /// The stdin pipe once first written (async writes).
    stdin_writer: tokio::sync::Mutex<Option<tokio::net::unix::pipe::Sender>>,
}

impl std::fmt::Debug for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proc")
            .field("id", &self.id)
            .field("run_id", &self.run_id)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl Proc {
    pub fn new(
        id: String,
        run_id: String,
        call_id: String,
        record_id: Option<String>,
        command: String,
    ) -> Self {
        Self {
            id,
            run_id,
            call_id,
            record_id,
            command,
            started_at_ms: aibuddy_store::now_ms(),
            started: Instant::now(),
            stop: CancellationToken::new(),
            kept: Default::default(),
            state: Mutex::new(ProcState::default()),
            version: watch::Sender::new(0),
            stdin_writer: tokio::sync::Mutex::new(None),
        }
    }

    /// The id the run's model reads its complete output by (`view_tool_call`), when recorded.
    pub fn output_id(&self) -> Option<String> {
        self.record_id
            .as_deref()
            .map(|r| crate::call_record::model_call_id(&self.run_id, r))
    }

    fn lock(&self) -> MutexGuard<'_, ProcState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// The token that ends its whole tree (the runner's cancellation).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Whether the person keeps it past the end of its run.
    pub fn is_kept(&self) -> bool {
        self.kept.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The person's choice: keep it running after its run ends (until it exits, a Stop, or the
    /// app's end), or not.
    pub fn set_kept(&self, keep: bool) {
        self.kept.store(keep, std::sync::atomic::Ordering::Relaxed);
        self.bump();
    }

    pub fn push_output(&self, chunk: &[u8]) {
        self.lock().ring.push(chunk);
        self.bump();
    }

    pub fn set_stdin(&self, fd: OwnedFd) {
        self.lock().stdin = Some(fd);
    }

    pub fn set_end(&self, end: ProcEnd) {
        {
            let mut st = self.lock();
            st.end = Some(end);
            // Nobody will read the pipe again.
            st.stdin = None;
        }
        self.bump();
    }

    pub fn set_settled(&self) {
        self.lock().settled = true;
        self.bump();
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn end(&self) -> Option<ProcEnd> {
        self.lock().end.clone()
    }

    pub fn is_running(&self) -> bool {
        self.lock().end.is_none()
    }

    /// The output the model has not read, moving its position to the end.
    pub fn read_new(&self) -> (Read, Option<ProcEnd>) {
        let mut st = self.lock();
        let read = st.ring.read_from(st.read);
        st.read = read.to;
        (read, st.end.clone())
    }

    /// The last `max` bytes of its output, lossily decoded (the window's live view; the model's
    /// read position does not move).
    pub fn tail(&self, max: usize) -> String {
        let st = self.lock();
        let total = st.ring.total();
        let read = st.ring.read_from(total.saturating_sub(max as u64));
        String::from_utf8_lossy(&read.bytes).into_owned()
    }

    pub fn info(&self) -> ProcInfo {
        let st = self.lock();
        ProcInfo {
            process_id: self.id.clone(),
            command: self.command.clone(),
            tool_call_id: self.call_id.clone(),
            output_call_id: self.output_id(),
            running: st.end.is_none(),
            kept: self.is_kept(),
            end: st.end.clone(),
            output_bytes: st.ring.total(),
            unread_bytes: st.ring.total() - st.read.min(st.ring.total()),
            started_at_ms: self.started_at_ms,
        }
    }

    /// Waits at most `max` for new output or the end (returns at once when either is there).
    /// Output that arrives is given `settle` more to gather what follows it.
    pub async fn wait_for_news(&self, max: Duration, settle: Duration, cancel: &CancellationToken) {
        let deadline = tokio::time::Instant::now() + max;
        let mut rx = self.version.subscribe();
        let has_news = |p: &Proc| {
            let st = p.lock();
            st.end.is_some() || st.ring.total() > st.read
        };
        if has_news(self) {
            return;
        }
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep_until(deadline) => return,
                changed = rx.changed() => {
                    if changed.is_err() { return; }
                    if has_news(self) { break; }
                }
            }
        }
        if self.is_running() {
            let until = (tokio::time::Instant::now() + settle).min(deadline);
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = tokio::time::sleep_until(until) => {}
            }
        }
    }

    /// Stops the process (its whole tree) and waits, at most `max`, until its end is recorded.
    /// True when it settled in time.
    pub async fn stop_and_wait(&self, max: Duration) -> bool {
        self.stop.cancel();
        self.wait_settled(max).await
    }

    async fn wait_settled(&self, max: Duration) -> bool {
        let mut rx = self.version.subscribe();
        let settled = |p: &Proc| p.lock().settled;
        let wait = async {
            while !settled(self) {
                if rx.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::time::timeout(max, wait).await.is_ok() && settled(self)
    }

    /// Writes `bytes` to its stdin (and closes it after them when `close`). Bounded by `max`.
    pub async fn write_stdin(
        &self,
        bytes: &[u8],
        close: bool,
        max: Duration,
    ) -> Result<(), ToolError> {
        use tokio::io::AsyncWriteExt;
        let mut writer = self.stdin_writer.lock().await;
        if writer.is_none() {
            let fd = self.lock().stdin.take();
            match fd {
                Some(fd) => {
                    let sender =
                        tokio::net::unix::pipe::Sender::from_owned_fd(fd).map_err(|e| {
                            ToolError::execution(
                                "stdin_unavailable",
                                format!("its stdin cannot be written: {e}"),
                            )
                        })?;
                    *writer = Some(sender);
                }
                None => {
                    let why = if self.is_running() {
                        "its stdin was closed"
                    } else {
                        "it has ended"
                    };
                    return Err(ToolError::execution(
                        "stdin_closed",
                        format!("process {} takes no more input: {why}", self.id),
                    ));
                }
            }
        }
        let Some(pipe) = writer.as_mut() else {
            return Err(ToolError::execution("stdin_closed", "its stdin is closed"));
        };
        let write = async {
            pipe.write_all(bytes).await?;
            pipe.flush().await
        };
        match tokio::time::timeout(max, write).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                *writer = None;
                return Err(ToolError::execution(
                    "stdin_closed",
                    format!("process {} does not read its stdin any more: {e}", self.id),
                ));
            }
            Err(_) => {
                return Err(ToolError::execution(
                    "stdin_full",
                    format!(
                        "process {} did not read its input within {} ms (its stdin is full); some bytes may have been written",
                        self.id,
                        max.as_millis()
                    ),
                ));
            }
        }
        if close {
            *writer = None;
        }
        Ok(())
    }
}

/// The background processes of a project's runs.
#[derive(Default, Clone)]
pub struct Processes {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    procs: Mutex<HashMap<String, Arc<Proc>>>,
    /// The number of the next process (`bg1`, `bg2`, ...).
    next: std::sync::atomic::AtomicU64,
    /// Where each process's own call is recorded (the app's store); none: output in memory only.
    recorder: OnceLock<Arc<dyn CallRecorder>>,
}

impl std::fmt::Debug for Processes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processes")
            .field("count", &self.lock().len())
            .finish()
    }
}

impl Processes {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Proc>>> {
        self.inner.procs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh process id: `bg1`, `bg2`, ... (never reused in this app).
    pub fn next_id(&self) -> String {
        let n = self
            .inner
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("bg{}", n + 1)
    }

    /// Records each process as a call of its own from now on (set once, by `App::open`).
    pub fn attach_recorder(&self, recorder: Arc<dyn CallRecorder>) {
        let _ = self.inner.recorder.set(recorder);
    }

    pub fn recorder(&self) -> Option<Arc<dyn CallRecorder>> {
        self.inner.recorder.get().cloned()
    }

    /// Adds `proc` unless its run already has [`MAX_LIVE_PER_RUN`] running.
    pub fn insert(&self, proc: Arc<Proc>) -> Result<(), ToolError> {
        let mut procs = self.lock();
        let live = procs
            .values()
            .filter(|p| p.run_id == proc.run_id && p.is_running())
            .count();
        if live >= MAX_LIVE_PER_RUN {
            return Err(ToolError::execution(
                "process_limit",
                format!(
                    "this run already has {live} background processes running (at most \
                     {MAX_LIVE_PER_RUN}); stop one with process_stop first"
                ),
            ));
        }
        procs.insert(proc.id.clone(), proc);
        Ok(())
    }

    /// Process `id` for a call of run `run_id`: an unknown id is a Parameters error, a process
    /// of another run an Authorization error.
    pub fn get(&self, id: &str, run_id: &str) -> Result<Arc<Proc>, ToolError> {
        match self.lock().get(id) {
            None => Err(ToolError::parameters(
                "unknown_process",
                format!("no background process has the id `{id}` (process_list shows this run's)"),
            )),
            Some(p) if p.run_id != run_id => Err(ToolError::authorization(
                "other_run",
                format!(
                    "process `{id}` belongs to another run: only the run that started a process may use it"
                ),
            )),
            Some(p) => Ok(p.clone()),
        }
    }

    /// The processes of run `run_id`, oldest first.
    pub fn of_run(&self, run_id: &str) -> Vec<Arc<Proc>> {
        let mut v: Vec<Arc<Proc>> = self
            .lock()
            .values()
            .filter(|p| p.run_id == run_id)
            .cloned()
            .collect();
        v.sort_by_key(|p| (p.started_at_ms, p.id.clone()));
        v
    }

    /// Every process of every run, oldest first (the window's panel).
    pub fn all(&self) -> Vec<Arc<Proc>> {
        let mut v: Vec<Arc<Proc>> = self.lock().values().cloned().collect();
        v.sort_by_key(|p| (p.started_at_ms, p.id.clone()));
        v
    }

    /// Stops process `id` whatever its run (the person's Stop in the window).
    pub async fn stop_any(&self, id: &str) -> bool {
        let proc = self.lock().get(id).cloned();
        match proc {
            Some(p) => p.stop_and_wait(STOP_WAIT).await,
            None => false,
        }
    }

    /// Starts stopping every process still running (a host closing from a thread that cannot
    /// wait asynchronously; see [`Processes::all_settled`]). Returns how many.
    pub fn cancel_all(&self) -> usize {
        let running: Vec<Arc<Proc>> = self.all().into_iter().filter(|p| p.is_running()).collect();
        for p in &running {
            p.stop.cancel();
        }
        running.len()
    }

    /// Whether every process has ended and its end is recorded.
    pub fn all_settled(&self) -> bool {
        self.all().iter().all(|p| p.lock().settled)
    }

    /// Stops every process still running, whatever its run (a host that exits: `aibuddy call`),
    /// and waits for their records. Returns what was stopped.
    pub async fn stop_all(&self) -> Vec<ProcInfo> {
        let running: Vec<Arc<Proc>> = self.all().into_iter().filter(|p| p.is_running()).collect();
        futures::future::join_all(running.iter().map(|p| p.stop_and_wait(STOP_WAIT))).await;
        running.iter().map(|p| p.info()).collect()
    }

    /// The end of run `run_id`: its processes still running are stopped (their whole trees), each
    /// one's record is awaited, and the run's processes leave the table. Those the person keeps
    /// (`Proc::set_kept`), and all running ones with `keep`, stay (they end when they exit, on a
    /// Stop, or with the app). Returns what was stopped.
    pub async fn end_run(&self, run_id: &str, keep: bool) -> Vec<ProcInfo> {
        // Processes the person keeps stay, running, in the table (the window still lists them).
        let procs: Vec<Arc<Proc>> = self
            .of_run(run_id)
            .into_iter()
            .filter(|p| !(p.is_kept() && p.is_running()))
            .collect();
        let running: Vec<Arc<Proc>> = procs.iter().filter(|p| p.is_running()).cloned().collect();
        if keep && !running.is_empty() {
            tracing::info!(run = %run_id, kept = running.len(), "background processes kept after the run");
            return Vec::new();
        }
        let stops = running.iter().map(|p| p.stop_and_wait(STOP_WAIT));
        let settled = futures::future::join_all(stops).await;
        for (p, ok) in running.iter().zip(settled) {
            if !ok {
                tracing::warn!(process = %p.id, "background process did not settle in time");
            }
        }
        // Ended ones wait for their record too (a process that ended a moment ago).
        for p in procs
            .iter()
            .filter(|p| !running.iter().any(|r| Arc::ptr_eq(r, p)))
        {
            p.wait_settled(STOP_WAIT).await;
        }
        let mut table = self.lock();
        for p in &procs {
            table.remove(&p.id);
        }
        running.iter().map(|p| p.info()).collect()
    }
}
