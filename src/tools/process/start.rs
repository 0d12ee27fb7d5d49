//! Starting a background process: `execute` with `"background": true`.
//!
//! The request is the one `execute` builds (the same confinement, environment policy, hidden
//! paths, protected paths, network lists and spool cap), with stdin a pipe and no timeout unless
//! the call gave `timeout_ms`. Process ids are `bg1`, `bg2`, ... numbered per app, so an id of
//! another run of the same app names that run's process (refused), never this run's. The process
//! gets a call record of its own, `<run id>:<process id>.<ulid>`
//! (tool `execute`, `running` until it ends), whose spool file receives its output: its complete
//! output is recoverable by that id like any call's (`view_tool_call`), the start-up recovery of
//! a dead app attaches what was spooled, and the finish moves the spool into the store. Hosts on
//! no network list are refused (no question can reach a person after the call returned).

use std::os::fd::OwnedFd;
use std::sync::Arc;

use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::{ExecRequest, ExecSink, HARD_DEADLINE_GRACE, Stream};
use serde_json::{Value, json};

use crate::call_record::{CallEnd, CallStart};
use crate::contract::ToolError;
use crate::events::CallStatus;
use crate::processes::{Proc, ProcEnd};
use crate::registry::{CallContext, RawOutput};
use crate::tools::execute::{ExecArgs, client_projection, ended_early, execute_on, raw_value};

/// Where a background process's output goes: its ring (and the spool, written by the runner).
struct ProcSink {
    proc: Arc<Proc>,
}

impl ExecSink for ProcSink {
    fn output(&self, _stream: Stream, chunk: &[u8]) {
        self.proc.push_output(chunk);
    }
    fn heartbeat(&self) {}
    fn stdin(&self, pipe: OwnedFd) {
        self.proc.set_stdin(pipe);
    }
}

/// Starts `req` in the background for the call in `ctx` and returns the call's result at once.
pub async fn start(
    ctx: &CallContext,
    args: &ExecArgs,
    mut req: ExecRequest,
    sandbox: Arc<dyn Sandbox>,
) -> Result<RawOutput, ToolError> {
    let processes = ctx.services.processes.clone();
    let id = processes.next_id();
    let recorder = processes.recorder();
    // The process's own call: unique even when a continued run in another app numbers its
    // processes from 1 again.
    let record_id = recorder.as_ref().map(|_| {
        let unique = format!("{id}.{}", aibuddy_store::new_id().to_ascii_lowercase());
        aibuddy_store::scoped_call_id(&ctx.run_id, &unique)
    });
    req.stdin_piped = true;
    req.untimed = args.timeout_ms.is_none();
    req.spool_path = record_id.as_deref().and_then(|rid| {
        aibuddy_store::DataPaths::new(&ctx.services.data_dir)
            .spool_file(rid)
            .ok()
    });
    let proc = Arc::new(Proc::new(
        id.clone(),
        ctx.run_id.clone(),
        ctx.call_id.clone(),
        record_id.clone(),
        args.command.clone(),
    ));
    processes.insert(proc.clone())?;
    if let (Some(rec), Some(rid)) = (&recorder, &record_id) {
        let begun = rec
            .begin(&CallStart {
                tool_call_id: rid.clone(),
                run_id: ctx.run_id.clone(),
                tool: crate::tools::execute::NAME.to_string(),
                config: Some(crate::tools::execute::KEY.to_string()),
                input: json!({
                    "command": args.command,
                    "description": args.description,
                    "background": true,
                    "process_id": id,
                    "started_by": ctx.call_id,
                }),
                started_at: proc.started_at_ms,
            })
            .await;
        if let Err(e) = begun {
            proc.set_end(ProcEnd {
                exit_code: None,
                signal: None,
                stopped: false,
                timed_out: false,
                error: Some(e.to_string()),
                duration_ms: 0,
            });
            proc.set_settled();
            return Err(ToolError::execution(
                "store_unavailable",
                format!(
                    "the background process was not started: its record could not be stored: {e}"
                ),
            ));
        }
    }
    let task_proc = proc.clone();
    let task_args = args.clone();
    tokio::spawn(async move {
        supervise(task_proc, task_args, req, sandbox, recorder).await;
    });
    let value = json!({
        "command": args.command,
        "description": args.description,
        "background": true,
        "process_id": id,
        "output_call_id": proc.output_id(),
        "timeout_ms": args.timeout_ms,
        "model": started_text(&id, &args.command, proc.output_id().as_deref(), args.timeout_ms),
    });
    Ok(RawOutput::json(value))
}

/// The model's text of a start.
pub fn started_text(
    id: &str,
    command: &str,
    record_id: Option<&str>,
    timeout_ms: Option<u64>,
) -> String {
    let lifetime = match timeout_ms {
        Some(ms) => format!("it is ended after {ms} ms, when you stop it, or when this run ends"),
        None => "it runs until it exits, you stop it, or this run ends".to_string(),
    };
    let stored = match record_id {
        Some(rid) => format!(
            " Its complete output is stored as tool call \"{rid}\" (view_tool_call with offset/limit)."
        ),
        None => String::new(),
    };
    format!(
        "started background process {id}: {command}\n{lifetime}. Read its new output (and its exit \
         status once it ended) with process_output {{\"process_id\": \"{id}\", \"wait_ms\": 2000}}; \
         send input with process_input; stop it with process_stop; list processes with \
         process_list.{stored}"
    )
}

/// Runs the process to its end, then records it.
async fn supervise(
    proc: Arc<Proc>,
    args: ExecArgs,
    req: ExecRequest,
    sandbox: Arc<dyn Sandbox>,
    recorder: Option<Arc<dyn crate::call_record::CallRecorder>>,
) {
    let sink = Arc::new(ProcSink { proc: proc.clone() });
    let token = proc.stop_token();
    let spool = req.spool_path.clone();
    let result = if req.untimed {
        sandbox
            .exec(req.clone(), token.clone(), sink)
            .await
            .map_err(ToolError::from)
    } else {
        execute_on(
            sandbox.as_ref(),
            req.clone(),
            &token,
            sink,
            HARD_DEADLINE_GRACE,
        )
        .await
    };
    let duration_ms = proc.elapsed().as_millis() as u64;
    let record_id = proc.record_id.clone();
    let (end, call_end) = match result {
        Ok(outcome) => {
            use aibuddy_sandbox::aibuddy_exec::Termination;
            let (exit_code, signal) = match outcome.termination {
                Termination::Exited { code } => (Some(code), None),
                Termination::Signaled { signal } => (None, Some(signal)),
            };
            let end = ProcEnd {
                exit_code,
                signal,
                stopped: outcome.cancelled,
                timed_out: outcome.timed_out,
                error: None,
                duration_ms,
            };
            let own = proc.output_id().unwrap_or_default();
            let value = raw_value(&args, &req, &outcome, &own);
            let early = ended_early(&req, &outcome, &value);
            let model = value["model"].as_str().unwrap_or_default().to_string();
            let client = client_projection(&value);
            let status = match &early {
                Some(e) if e.code == "cancelled" => CallStatus::Cancelled,
                Some(_) => CallStatus::Error,
                None => CallStatus::Ok,
            };
            (
                end,
                (
                    status,
                    early,
                    value,
                    model,
                    client,
                    spool.filter(|p| p.exists()),
                ),
            )
        }
        Err(e) => {
            let end = ProcEnd {
                exit_code: None,
                signal: None,
                stopped: false,
                timed_out: false,
                error: Some(e.message.clone()),
                duration_ms,
            };
            let model = e.model_text();
            (
                end,
                (
                    CallStatus::Error,
                    Some(e),
                    Value::Null,
                    model,
                    Value::Null,
                    spool.filter(|p| p.exists()),
                ),
            )
        }
    };
    tracing::debug!(process = %proc.id, end = %end.describe(), "background process ended");
    proc.set_end(end);
    if let (Some(rec), Some(rid)) = (recorder, record_id) {
        let (status, error, output, model, client, spool) = call_end;
        let end = CallEnd {
            tool_call_id: rid.clone(),
            status,
            stage: error.as_ref().map(|e| e.stage),
            error,
            output,
            spool,
            model,
            client,
            finished_at: aibuddy_store::now_ms(),
            duration_ms,
            confirm: None,
        };
        if let Err(e) = rec.finish(&end).await {
            tracing::error!(call = %rid, "could not record the end of a background process: {e}");
        }
    }
    proc.set_settled();
}
