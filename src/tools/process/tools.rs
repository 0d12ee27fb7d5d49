//! The four process tools: `process_output` and `process_list` (read-only: they run together and
//! are never confirmed), `process_input` (bytes to its stdin: a command's effect, confirmed like
//! `execute`) and `process_stop` (ends its tree: a change, confirmed as a write and checkpointed).
//! Each reaches only the processes of its own run (`Processes::get`).

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::read_text::read_text;
use crate::contract::ToolError;
use crate::processes::{ProcInfo, STOP_WAIT};
use crate::registry::{CallContext, Prepared, RawOutput, ToolHandler};

/// Longest `wait_ms` of `process_output`.
pub const MAX_WAIT_MS: u64 = 60_000;
/// After new output arrived during a wait, how long more is gathered.
const SETTLE: Duration = Duration::from_millis(200);
/// Bytes of one `process_input` at most.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;
/// How long `process_input` waits for the process to take its bytes.
const INPUT_WAIT: Duration = Duration::from_secs(5);

fn decode<T: for<'de> Deserialize<'de>>(tool: &str, args: &Value) -> Result<T, ToolError> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::parameters("invalid_arguments", format!("{tool}: {e}")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    process_id: String,
    #[serde(default)]
    wait_ms: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputArgs {
    process_id: String,
    #[serde(default)]
    input: String,
    #[serde(default)]
    close_stdin: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StopArgs {
    process_id: String,
}

/// The text field of a raw value (every process tool keeps its model text in `model`).
fn model_of(raw: &RawOutput) -> String {
    raw.value["model"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| raw.value.to_string())
}

fn status_line(info: &ProcInfo) -> String {
    match &info.end {
        None => format!("process {}: running ({})", info.process_id, info.command),
        Some(end) => format!(
            "process {}: {} ({})",
            info.process_id,
            end.describe(),
            info.command
        ),
    }
}

pub struct ProcessOutput;

#[async_trait]
impl ToolHandler for ProcessOutput {
    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let a: OutputArgs = decode(super::OUTPUT, args)?;
        let proc = ctx.services.processes.get(&a.process_id, &ctx.run_id)?;
        let wait = Duration::from_millis(a.wait_ms.min(MAX_WAIT_MS));
        if !wait.is_zero() {
            proc.wait_for_news(wait, SETTLE, &ctx.cancel).await;
        }
        let (read, end) = proc.read_new();
        let info = proc.info();
        let mut model = status_line(&info);
        model.push('\n');
        if read.to == read.from {
            model.push_str("no new output");
            if !wait.is_zero() && end.is_none() {
                model.push_str(&format!(" within {} ms", wait.as_millis()));
            }
        } else {
            model.push_str(&format!("new output (bytes {}..{}):\n", read.from, read.to));
            model.push_str(&read_text(&read, proc.output_id().as_deref()));
        }
        Ok(RawOutput::json(json!({
            "process_id": proc.id,
            "running": end.is_none(),
            "end": end,
            "from": read.from,
            "to": read.to,
            "dropped": read.dropped,
            "output_call_id": proc.output_id(),
            "model": model,
        })))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_of(raw)
    }
}

pub struct ProcessList;

#[async_trait]
impl ToolHandler for ProcessList {
    async fn run(&self, ctx: &CallContext, _args: &Value) -> Result<RawOutput, ToolError> {
        let infos: Vec<ProcInfo> = ctx
            .services
            .processes
            .of_run(&ctx.run_id)
            .iter()
            .map(|p| p.info())
            .collect();
        let model = if infos.is_empty() {
            "no background processes in this run".to_string()
        } else {
            infos
                .iter()
                .map(|i| {
                    format!(
                        "{}; {} bytes of output, {} unread",
                        status_line(i),
                        i.output_bytes,
                        i.unread_bytes
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        Ok(RawOutput::json(
            json!({ "processes": infos, "model": model }),
        ))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_of(raw)
    }
}

pub struct ProcessInput;

#[async_trait]
impl ToolHandler for ProcessInput {
    async fn prepare(&self, ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        let a: InputArgs = decode(super::INPUT, args)?;
        let proc = ctx.services.processes.get(&a.process_id, &ctx.run_id)?;
        let shown: String = a.input.chars().take(2_000).collect();
        let mut scope = vec![format!("process {}: {}", proc.id, proc.command)];
        if a.close_stdin {
            scope.push("its stdin is closed after the input (end of file)".into());
        }
        Ok(Prepared {
            target: shown,
            scope,
            consequence: "writes the target bytes to the background process's stdin: its effect is what the process does with them".into(),
            ..Prepared::default()
        })
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let a: InputArgs = decode(super::INPUT, args)?;
        if a.input.len() > MAX_INPUT_BYTES {
            return Err(ToolError::parameters(
                "input_too_large",
                format!(
                    "process_input takes at most {MAX_INPUT_BYTES} bytes at once, got {}",
                    a.input.len()
                ),
            ));
        }
        let proc = ctx.services.processes.get(&a.process_id, &ctx.run_id)?;
        proc.write_stdin(a.input.as_bytes(), a.close_stdin, INPUT_WAIT)
            .await?;
        let model = format!(
            "wrote {} bytes to the stdin of process {}{}; read what it answers with process_output",
            a.input.len(),
            proc.id,
            if a.close_stdin { " and closed it" } else { "" }
        );
        Ok(RawOutput::json(json!({
            "process_id": proc.id,
            "bytes": a.input.len(),
            "closed": a.close_stdin,
            "model": model,
        })))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_of(raw)
    }
}

pub struct ProcessStop;

#[async_trait]
impl ToolHandler for ProcessStop {
    async fn prepare(&self, ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        let a: StopArgs = decode(super::STOP, args)?;
        let proc = ctx.services.processes.get(&a.process_id, &ctx.run_id)?;
        Ok(Prepared {
            target: format!("{}: {}", proc.id, proc.command),
            scope: vec!["its whole process tree is ended (SIGKILL)".into()],
            consequence: "stops a background process this run started".into(),
            inside_project: true,
            ..Prepared::default()
        })
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let a: StopArgs = decode(super::STOP, args)?;
        let proc = ctx.services.processes.get(&a.process_id, &ctx.run_id)?;
        let was_running = proc.is_running();
        let settled = proc.stop_and_wait(STOP_WAIT).await;
        let (read, end) = proc.read_new();
        let info = proc.info();
        let mut model = if was_running {
            format!("stopped: {}", status_line(&info))
        } else {
            format!("it had already ended: {}", status_line(&info))
        };
        if !settled {
            model.push_str(&format!(
                "\n(its end was not recorded within {} s)",
                STOP_WAIT.as_secs()
            ));
        }
        if read.to > read.from {
            model.push_str(&format!(
                "\nunread output (bytes {}..{}):\n",
                read.from, read.to
            ));
            model.push_str(&read_text(&read, proc.output_id().as_deref()));
        }
        model.push_str(
            "\nnote: files it changed after its execute call returned are in no call's change set \
             (the change sets of execute and of this stop cover only their own moments)",
        );
        Ok(RawOutput::json(json!({
            "process_id": proc.id,
            "was_running": was_running,
            "end": end,
            "output_call_id": proc.output_id(),
            "model": model,
        })))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        model_of(raw)
    }
}
