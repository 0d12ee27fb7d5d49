//! Stdio child processes: spawned in their own process group (so `npx`-style launchers and their
//! children die together) with the SDKs' default environment plus the config's `env` (see
//! [`crate::server_env`]), stdout screened message by message (a line that is not a JSON-RPC object,
//! or one longer than the message limit, breaks the stdio contract and marks the connection
//! broken; neither is ever buffered beyond the limit), stderr kept as a short, redacted tail for
//! failure reasons.
//!
//! An entry with `"sandbox"` is started through `aibuddy_exec::spawn_server` instead: the same
//! confinement as commands (see [`crate::config::sandbox`]); where none can be applied, nothing
//! starts (an Execution-stage reason), never an unconfined server.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, watch};

use crate::handler::ConnEvent;
use crate::redact::Redactor;
use crate::server_env::server_environment;

/// Lines of stderr kept for failure reasons.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept (the rest of the line is dropped unread into memory).
const STDERR_LINE_BYTES: usize = 4 * 1024;
/// Default longest stdout message (one JSON-RPC line): rmcp's own stdio limit, which matches its
/// streamable HTTP event limit. A longer message is refused before it is held whole in memory.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How much of an offending line a failure reason quotes.
const QUOTE_CHARS: usize = 120;

/// Why the stdout screen broke the connection, readable by a call that failed because of it.
pub(crate) type BrokenReason = Arc<Mutex<Option<String>>>;

/// A running stdio server process.
pub(crate) struct StdioProcess {
    pub child: Child,
    /// The confinement of a sandboxed server (its drop ends the whole tree).
    confined: Option<aibuddy_exec::ConfinedServer>,
    /// How it is confined, for status: `namespaces+landlock-v7+nonet` (None: unconfined).
    pub confinement: Option<String>,
    /// Its proxy's decisions (hosts it tried), for status (None: unconfined or no network).
    pub network_watch: Option<aibuddy_exec::netproxy::NetWatch>,
    pub stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Set by the stdout screen before it ends the stream.
    pub broken: BrokenReason,
    /// Becomes true once stderr reached its end (every line is in the tail).
    stderr_done: watch::Receiver<bool>,
}

/// The top level of a JSON-RPC message; everything else is skipped without being built.
#[derive(Deserialize)]
struct Envelope {
    jsonrpc: Option<IgnoredJsonrpc>,
}

/// `"2.0"` or anything else, without allocating for other values.
#[derive(Deserialize)]
#[serde(untagged)]
enum IgnoredJsonrpc {
    Version(String),
    #[allow(dead_code)]
    Other(IgnoredAny),
}

impl Envelope {
    fn is_v2(&self) -> bool {
        matches!(&self.jsonrpc, Some(IgnoredJsonrpc::Version(v)) if v == "2.0")
    }
}

/// Whether a stdout line is acceptable protocol traffic: a JSON object (or batch array) that
/// claims `"jsonrpc": "2.0"`. Blank lines are tolerated. Checked without building the message
/// (results can be megabytes). Pure.
pub(crate) fn is_protocol_line(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii();
    match trimmed.first() {
        None => true,
        Some(b'{') => serde_json::from_slice::<Envelope>(trimmed).is_ok_and(|e| e.is_v2()),
        Some(b'[') => serde_json::from_slice::<Vec<Envelope>>(trimmed)
            .is_ok_and(|items| items.iter().all(Envelope::is_v2)),
        Some(_) => false,
    }
}

/// Shortens a line for a failure reason, with control characters escaped. Pure.
pub(crate) fn quote(line: &str) -> String {
    let mut out: String = line.trim().chars().take(QUOTE_CHARS).collect();
    if line.trim().chars().count() > QUOTE_CHARS {
        out.push_str("...");
    }
    aibuddy_common::term::line(&out).into_owned()
}

/// One line read with a bound.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Bounded {
    /// A line (with its newline, unless the stream ended) is in the buffer.
    Line,
    /// The line is longer than the bound: the buffer holds its first `max` bytes at most.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line into `buf` (cleared first) without ever holding more than
/// `max` bytes of it: `read_until` cannot be bounded, this checks before each append.
pub(crate) async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Bounded> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Bounded::Eof
            } else {
                Bounded::Line
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if buf.len() + take > max {
            let room = max.saturating_sub(buf.len());
            buf.extend_from_slice(&available[..room.min(take)]);
            return Ok(Bounded::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take);
        if newline.is_some() {
            return Ok(Bounded::Line);
        }
    }
}

/// Drops the rest of an over-long line; returns false at the end of the stream.
async fn skip_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> bool {
    loop {
        let Ok(available) = reader.fill_buf().await else {
            return false;
        };
        if available.is_empty() {
            return false;
        }
        match available.iter().position(|b| *b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return true;
            }
            None => {
                let n = available.len();
                reader.consume(n);
            }
        }
    }
}

impl StdioProcess {
    /// Waits, up to `max`, until stderr has been read to its end.
    pub async fn stderr_drained(&mut self, max: std::time::Duration) {
        let _ = tokio::time::timeout(max, self.stderr_done.wait_for(|done| *done)).await;
    }

    pub fn stderr_tail(&self) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Kills the whole process group (SIGKILL) and reaps the child.
    pub async fn kill(&mut self) {
        if let Some(confined) = self.confined.as_mut() {
            // The init's `K` and the launcher tree: everything in the server's namespace.
            confined.kill();
        }
        #[cfg(unix)]
        if let Some(pid) = self.child.id()
            && let Ok(pgid) = i32::try_from(pid)
        {
            // SAFETY: killpg only sends a signal; the group id is the child's own pid because it
            // was spawned with process_group(0), so this cannot reach unrelated processes.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill().await;
    }

    /// Describes how the process ended (if it has), with the stderr tail.
    pub fn exit_reason(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok().flatten()?;
        let tail = self.stderr_tail();
        Some(if tail.is_empty() {
            format!("process exited ({status})")
        } else {
            format!("process exited ({status}); stderr: {}", quote_tail(&tail))
        })
    }
}

fn quote_tail(tail: &str) -> String {
    let lines: Vec<&str> = tail.lines().rev().take(3).collect();
    lines
        .into_iter()
        .rev()
        .map(quote)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Keeps the last stderr lines (redacted, escaped) and logs them; `done` turns true at EOF.
async fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    name: String,
    redactor: Redactor,
    tail: Arc<Mutex<VecDeque<String>>>,
    done: watch::Sender<bool>,
) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        let read = read_line_bounded(&mut reader, &mut buf, STDERR_LINE_BYTES).await;
        let cut = match read {
            Ok(Bounded::Line) => false,
            Ok(Bounded::TooLong) => true,
            Ok(Bounded::Eof) | Err(_) => break,
        };
        let line = redactor.apply(String::from_utf8_lossy(&buf).trim_end());
        let line = aibuddy_common::term::line(&line).into_owned();
        tracing::debug!(server = %name, "stderr: {line}");
        {
            let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        if cut && !skip_line(&mut reader).await {
            break;
        }
    }
    let _ = done.send(true);
}

/// The stdout screen: passes JSON-RPC lines on, breaks the connection (with a reason) on an
/// oversized message, a read error or non-protocol output.
struct Screen {
    name: String,
    max: usize,
    redactor: Redactor,
    broken: BrokenReason,
    events: mpsc::UnboundedSender<ConnEvent>,
}

impl Screen {
    fn fail(&self, reason: String) {
        let reason = self.redactor.apply(&reason);
        tracing::warn!(server = %self.name, "stdio contract broken: {reason}");
        *self.broken.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
        let _ = self.events.send(ConnEvent::Broken(reason));
    }

    async fn run(self, stdout: tokio::process::ChildStdout, mut screened_tx: DuplexStream) {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        let max = self.max;
        loop {
            match read_line_bounded(&mut reader, &mut buf, max).await {
                Ok(Bounded::Line) => {}
                Ok(Bounded::Eof) => break,
                Ok(Bounded::TooLong) => {
                    self.fail(format!(
                        "sent a message larger than {max} bytes (the limit for one result); \
                         it was refused unread"
                    ));
                    break;
                }
                Err(e) => {
                    self.fail(format!("reading stdout failed: {e}"));
                    break;
                }
            }
            if !is_protocol_line(&buf) {
                let line = String::from_utf8_lossy(&buf[..buf.len().min(4 * QUOTE_CHARS)]);
                self.fail(format!(
                    "wrote non-JSON-RPC output to stdout: \"{}\"",
                    quote(&line)
                ));
                break;
            }
            if screened_tx.write_all(&buf).await.is_err() {
                break;
            }
            if !buf.ends_with(b"\n") && screened_tx.write_all(b"\n").await.is_err() {
                break;
            }
        }
        let _ = screened_tx.shutdown().await;
    }
}

/// What [`spawn`] needs to start one server.
pub(crate) struct SpawnSpec<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub cwd: Option<&'a Path>,
    pub default_cwd: Option<&'a PathBuf>,
    pub max_message_bytes: usize,
    pub redactor: &'a Redactor,
    /// The entry's `"sandbox"`, and the host's part of it.
    pub sandbox: Option<&'a crate::config::SandboxConfig>,
    pub sandbox_host: &'a crate::sandbox_host::SandboxHost,
}

/// Starts the process of `spec`: plain, or confined when the entry asks for a sandbox.
fn start(spec: &SpawnSpec<'_>) -> std::io::Result<(Child, Option<aibuddy_exec::ConfinedServer>)> {
    let env = server_environment(std::env::vars_os(), spec.env);
    let cwd = spec
        .cwd
        .map(Path::to_path_buf)
        .or_else(|| spec.default_cwd.cloned());
    if let Some(sandbox) = spec.sandbox {
        let cwd = cwd
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let req = spec
            .sandbox_host
            .request(sandbox, spec.command, spec.args, &cwd)
            .map_err(|e| std::io::Error::other(format!("sandbox (Parameters stage): {e}")))?;
        return match aibuddy_exec::spawn_server(&req, env.into_iter().collect()) {
            Ok((child, confined)) => Ok((child, Some(confined))),
            Err(e) => Err(std::io::Error::other(format!(
                "sandbox ({:?} stage): {e}; not started unconfined",
                e.stage()
            ))),
        };
    }
    let mut cmd = Command::new(spec.command);
    cmd.args(spec.args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    Ok((cmd.spawn()?, None))
}

/// Spawns the server. Returns the process, the screened stdout (read side) and stdin.
pub(crate) fn spawn(
    spec: &SpawnSpec<'_>,
    events: mpsc::UnboundedSender<ConnEvent>,
) -> std::io::Result<(StdioProcess, DuplexStream, ChildStdin)> {
    let (mut child, confined) = start(spec)?;
    let confinement = confined.as_ref().map(|c| c.confinement.label());
    let network_watch = confined.as_ref().and_then(|c| c.network_watch.clone());
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("child process has no stdio pipes"));
    };

    let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_LINES)));
    let (stderr_done_tx, stderr_done) = watch::channel(false);
    tokio::spawn(drain_stderr(
        stderr,
        spec.server.to_owned(),
        spec.redactor.clone(),
        stderr_tail.clone(),
        stderr_done_tx,
    ));
    let broken: BrokenReason = Arc::new(Mutex::new(None));
    let (screened_tx, screened_rx) = tokio::io::duplex(256 * 1024);
    let screen = Screen {
        name: spec.server.to_owned(),
        max: spec.max_message_bytes,
        redactor: spec.redactor.clone(),
        broken: broken.clone(),
        events,
    };
    tokio::spawn(screen.run(stdout, screened_tx));

    Ok((
        StdioProcess {
            child,
            confined,
            confinement,
            network_watch,
            stderr_tail,
            broken,
            stderr_done,
        },
        screened_rx,
        stdin,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_lines() {
        assert!(is_protocol_line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(is_protocol_line(b"   \n"));
        assert!(is_protocol_line(br#"[{"jsonrpc":"2.0","method":"x"}]"#));
        assert!(!is_protocol_line(b"Server started on stdio"));
        assert!(!is_protocol_line(br#"{"hello": 1}"#));
        assert!(!is_protocol_line(br#"{"jsonrpc": 2}"#));
        assert!(!is_protocol_line(br#"{"jsonrpc":"1.0","id":1}"#));
        assert!(!is_protocol_line(br#"{"jsonrpc":"2.0","id":1,"result":"#));
        assert!(!is_protocol_line(br#"[{"jsonrpc":"2.0"},{"x":1}]"#));
        assert!(!is_protocol_line(b"42"));
        assert!(!is_protocol_line(b"\xff\xfe"));
    }

    #[test]
    fn quotes_are_bounded_and_escaped() {
        assert_eq!(quote("  short \n"), "short");
        let long = "x".repeat(500);
        assert_eq!(quote(&long).len(), QUOTE_CHARS + 3);
        assert!(!quote("a\u{1b}[2Kb").contains('\u{1b}'));
    }

    #[tokio::test]
    async fn lines_are_read_with_a_bound() {
        let data = b"short\n0123456789abcdef\nlast".to_vec();
        let mut reader = BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 8).await.unwrap(),
            Bounded::Line
        );
        assert_eq!(buf, b"short\n");
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 8).await.unwrap(),
            Bounded::TooLong
        );
        assert!(buf.len() <= 8, "{}", buf.len());
        assert!(skip_line(&mut reader).await);
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 8).await.unwrap(),
            Bounded::Line
        );
        assert_eq!(buf, b"last");
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 8).await.unwrap(),
            Bounded::Eof
        );
    }
}
