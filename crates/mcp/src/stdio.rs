//! Stdio child processes: spawned in their own process group (so `npx`-style launchers and their
//! children die together), stdout screened line by line (a line that is not a JSON-RPC object
//! breaks the stdio contract and marks the connection broken), stderr kept as a short tail for
//! failure reasons.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::handler::ConnEvent;

/// Lines of stderr kept for failure reasons.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stdout line accepted (one JSON-RPC message); tool results can be large.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
/// How much of an offending line a failure reason quotes.
const QUOTE_CHARS: usize = 120;

/// A running stdio server process.
pub(crate) struct StdioProcess {
    pub child: Child,
    pub stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

/// Whether a stdout line is acceptable protocol traffic: a JSON object (or batch array) that
/// claims `"jsonrpc": "2.0"`. Blank lines are tolerated. Pure.
pub(crate) fn is_protocol_line(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return true;
    }
    match serde_json::from_str::<serde_json::Value>(trimmed) {
        Ok(serde_json::Value::Object(obj)) => {
            obj.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0")
        }
        Ok(serde_json::Value::Array(items)) => items
            .iter()
            .all(|item| item.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0")),
        _ => false,
    }
}

/// Shortens a line for a failure reason. Pure.
pub(crate) fn quote(line: &str) -> String {
    let mut out: String = line.trim().chars().take(QUOTE_CHARS).collect();
    if line.trim().chars().count() > QUOTE_CHARS {
        out.push_str("...");
    }
    out
}

impl StdioProcess {
    pub fn stderr_tail(&self) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Kills the whole process group (SIGKILL) and reaps the child.
    pub async fn kill(&mut self) {
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

/// Spawns the server. Returns the process, the screened stdout (read side) and stdin.
pub(crate) fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    default_cwd: Option<&PathBuf>,
    events: mpsc::UnboundedSender<ConnEvent>,
) -> std::io::Result<(StdioProcess, DuplexStream, ChildStdin)> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd.map(Path::to_path_buf).or_else(|| default_cwd.cloned()) {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("child process has no stdio pipes"));
    };

    let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_LINES)));
    let tail = stderr_tail.clone();
    let name = server.to_owned();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %name, "stderr: {line}");
            let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    });

    let (mut screened_tx, screened_rx) = tokio::io::duplex(256 * 1024);
    let name = server.to_owned();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let read = reader.read_until(b'\n', &mut buf).await;
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    let _ = events.send(ConnEvent::Broken(format!("reading stdout failed: {e}")));
                    break;
                }
            }
            if buf.len() > MAX_LINE_BYTES {
                let _ = events.send(ConnEvent::Broken(format!(
                    "stdout line longer than {MAX_LINE_BYTES} bytes"
                )));
                break;
            }
            let line = String::from_utf8_lossy(&buf);
            if !is_protocol_line(&line) {
                tracing::warn!(server = %name, "non-JSON-RPC output on stdout: {}", quote(&line));
                let _ = events.send(ConnEvent::Broken(format!(
                    "wrote non-JSON-RPC output to stdout: \"{}\"",
                    quote(&line)
                )));
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
    });

    Ok((StdioProcess { child, stderr_tail }, screened_rx, stdin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_lines() {
        assert!(is_protocol_line(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(is_protocol_line("   "));
        assert!(is_protocol_line(r#"[{"jsonrpc":"2.0","method":"x"}]"#));
        assert!(!is_protocol_line("Server started on stdio"));
        assert!(!is_protocol_line(r#"{"hello": 1}"#));
        assert!(!is_protocol_line("42"));
    }

    #[test]
    fn quotes_are_bounded() {
        assert_eq!(quote("  short \n"), "short");
        let long = "x".repeat(500);
        assert_eq!(quote(&long).len(), QUOTE_CHARS + 3);
    }
}
