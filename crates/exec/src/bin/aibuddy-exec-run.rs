//! `aibuddy-exec-run [--no-namespaces] [--quiet] [--spool PATH] [--max-processes N]
//! [--timeout-ms N] <cwd> <command>`: runs one command through `aibuddy_exec::run`, copying live
//! output to stdout as it arrives (`--quiet`: no live output, so the output goes straight into the
//! spool) and printing the model projection to stderr at the end, then `pgid: <n>` and, when this
//! process could still start `/bin/true` afterwards, `spawn after: ok`; `--spool`: the raw output
//! is spooled to PATH.
//!
//! A debugging aid and the helper process of the parent-death and spool-recovery tests (which
//! `kill -9` it).

use std::io::Write;
use std::sync::Arc;

use aibuddy_exec::{
    ExecRequest, ExecSink, NamespacePolicy, NullSink, Stream, project_for_model, run,
};
use tokio_util::sync::CancellationToken;

struct StdoutSink;

impl ExecSink for StdoutSink {
    fn output(&self, _stream: Stream, chunk: &[u8]) {
        let mut out = std::io::stdout().lock();
        // A closed stdout must not stop the command: ignore write errors.
        let _ = out.write_all(chunk);
        let _ = out.flush();
    }
    fn heartbeat(&self) {}
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let (mut no_namespaces, mut quiet, mut spool) = (false, false, None);
    let (mut max_processes, mut timeout_ms) = (None, None);
    while let Some(flag) = args.first().filter(|a| a.starts_with("--")).cloned() {
        args.remove(0);
        match flag.as_str() {
            "--no-namespaces" => no_namespaces = true,
            "--quiet" => quiet = true,
            "--spool" if !args.is_empty() => spool = Some(args.remove(0)),
            "--max-processes" if !args.is_empty() => max_processes = args.remove(0).parse().ok(),
            "--timeout-ms" if !args.is_empty() => timeout_ms = args.remove(0).parse().ok(),
            _ => args.clear(),
        }
    }
    let [cwd, command] = args.as_slice() else {
        eprintln!(
            "usage: aibuddy-exec-run [--no-namespaces] [--quiet] [--spool PATH] [--max-processes N] [--timeout-ms N] <cwd> <command>"
        );
        return std::process::ExitCode::from(2);
    };
    let mut req = ExecRequest::new(command.clone(), cwd.clone());
    if no_namespaces {
        req.namespaces = NamespacePolicy::Off;
    }
    req.spool_path = spool.map(Into::into);
    if let Some(n) = max_processes {
        req.max_processes = n;
    }
    if let Some(ms) = timeout_ms {
        req.timeout = std::time::Duration::from_millis(ms);
    }
    let sink: Arc<dyn ExecSink> = if quiet {
        Arc::new(NullSink)
    } else {
        Arc::new(StdoutSink)
    };
    match run(req, CancellationToken::new(), sink).await {
        Ok(outcome) => {
            eprintln!("{}", project_for_model(&outcome));
            eprintln!("pgid: {}", outcome.pgid);
            if std::process::Command::new("/bin/true")
                .status()
                .is_ok_and(|s| s.success())
            {
                eprintln!("spawn after: ok");
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
