//! `aibuddy-exec-run [--no-namespaces] [--quiet] [--spool PATH] <cwd> <command>`: runs one command
//! through `aibuddy_exec::run`, copying live output to stdout as it arrives (`--quiet`: no live
//! output, so the output goes straight into the spool) and printing the model projection to
//! stderr at the end; `--spool`: the raw output is spooled to PATH.
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
    while let Some(flag) = args.first().filter(|a| a.starts_with("--")).cloned() {
        args.remove(0);
        match flag.as_str() {
            "--no-namespaces" => no_namespaces = true,
            "--quiet" => quiet = true,
            "--spool" if !args.is_empty() => spool = Some(args.remove(0)),
            _ => args.clear(),
        }
    }
    let [cwd, command] = args.as_slice() else {
        eprintln!(
            "usage: aibuddy-exec-run [--no-namespaces] [--quiet] [--spool PATH] <cwd> <command>"
        );
        return std::process::ExitCode::from(2);
    };
    let mut req = ExecRequest::new(command.clone(), cwd.clone());
    if no_namespaces {
        req.namespaces = NamespacePolicy::Off;
    }
    req.spool_path = spool.map(Into::into);
    let sink: Arc<dyn ExecSink> = if quiet {
        Arc::new(NullSink)
    } else {
        Arc::new(StdoutSink)
    };
    match run(req, CancellationToken::new(), sink).await {
        Ok(outcome) => {
            eprintln!("{}", project_for_model(&outcome));
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
