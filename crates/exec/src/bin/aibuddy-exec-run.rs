//! `aibuddy-exec-run [--no-namespaces] <cwd> <command>`: runs one command through `aibuddy_exec::run`, copying live
//! output to stdout as it arrives and printing the model projection to stderr at the end.
//!
//! A debugging aid and the helper process of the parent-death test (which `kill -9`s it).

use std::io::Write;
use std::sync::Arc;

use aibuddy_exec::{ExecRequest, ExecSink, NamespacePolicy, Stream, project_for_model, run};
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
    let no_namespaces = args.first().is_some_and(|a| a == "--no-namespaces");
    if no_namespaces {
        args.remove(0);
    }
    let [cwd, command] = args.as_slice() else {
        eprintln!("usage: aibuddy-exec-run [--no-namespaces] <cwd> <command>");
        return std::process::ExitCode::from(2);
    };
    let mut req = ExecRequest::new(command.clone(), cwd.clone());
    if no_namespaces {
        req.namespaces = NamespacePolicy::Off;
    }
    match run(req, CancellationToken::new(), Arc::new(StdoutSink)).await {
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
