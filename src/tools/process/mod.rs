//! Background processes: `execute` with `"background": true` starts one and returns at once with
//! its process id; `process_output`, `process_input`, `process_stop` and `process_list` manage
//! it. They are tools of the `execute` config (enabled with it, needing the sandbox like it).
//!
//! - `start.rs`: the launch (the same request as `execute`: confinement, environment, hidden and
//!   protected paths, network lists, spool cap; stdin a pipe; no timeout unless given) and the
//!   process's own call record `<run id>:<process id>`, whose spool receives its output;
//! - `crate::processes`'s `table.rs`: [`Processes`] (per project, in `Services`): at most
//!   [`MAX_LIVE_PER_RUN`] running per run, reachable only from the run that started them,
//!   stopped when the run ends (`Processes::end_run`, called by `Agent::run`) unless kept;
//! - `crate::processes`'s `ring.rs`: the in-memory output ring of each process; `read_text.rs`: the
//!   bounded text of a read;
//! - `tools.rs`: the four handlers.
//!
//! A dead app leaves no process behind: each runs under `aibuddy_exec`'s supervisor (parent-death
//! signal, own process group, the init's control pipe on the namespace path), as every command.
//!
//! Checkpoints: the `execute` call that starts a process is checkpointed like any command, but its
//! after-snapshot is taken right after the launch, and `process_stop` (a write, checkpointed) has
//! its before-snapshot when it is called: what the process changes in between is in no call's
//! change set (the model is told so when it stops one). Documented in `docs/checkpoints.md`.

mod read_text;
mod start;
mod tools;

use std::sync::Arc;

use serde_json::json;

use crate::contract::{DefineError, define_tool};
use crate::registry::{Risk, Source, ToolDef};

// The table and the output ring live below `services`, which holds the table.
pub use crate::processes::{
    MAX_LIVE_PER_RUN, Proc, ProcEnd, ProcInfo, Processes, RING_BYTES, Read, Ring, STOP_WAIT,
};
pub use read_text::{READ_SHOW_BYTES, read_text};
pub use start::{start, started_text};
pub use tools::{MAX_INPUT_BYTES, MAX_WAIT_MS};

pub const OUTPUT: &str = "process_output";
pub const INPUT: &str = "process_input";
pub const STOP: &str = "process_stop";
pub const LIST: &str = "process_list";
/// The tools of this module, in presentation order.
pub const NAMES: [&str; 4] = [OUTPUT, INPUT, STOP, LIST];

fn id_schema() -> serde_json::Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "description": "The process id execute returned (bg1, bg2, ...)."
    })
}

/// The tool definitions (added to the `execute` config's tools).
pub fn tools() -> Result<Vec<ToolDef>, DefineError> {
    Ok(vec![
        ToolDef {
            spec: define_tool(
                OUTPUT,
                "Read the new output of a background process started by execute with \
                 \"background\": true: what it wrote since your last read (head and tail when \
                 long, with the byte range of the rest and how to read it), and its exit status \
                 once it ended. wait_ms waits (at most 60000 ms) for new output or its end.",
                json!({
                    "type": "object",
                    "properties": {
                        "process_id": id_schema(),
                        "wait_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS,
                                    "description": "Wait up to this long for new output or the end (default 0: return at once)."}
                    },
                    "required": ["process_id"],
                    "additionalProperties": false
                }),
            )?,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(tools::ProcessOutput),
        },
        ToolDef {
            spec: define_tool(
                INPUT,
                "Write text to the stdin of a background process of this run (include \"\\n\" to \
                 end a line); close_stdin sends end of file after it.",
                json!({
                    "type": "object",
                    "properties": {
                        "process_id": id_schema(),
                        "input": {"type": "string", "maxLength": MAX_INPUT_BYTES},
                        "close_stdin": {"type": "boolean"}
                    },
                    "required": ["process_id"],
                    "additionalProperties": false
                }),
            )?,
            risk: Risk::HighImpact,
            source: Source::Core,
            handler: Arc::new(tools::ProcessInput),
        },
        ToolDef {
            spec: define_tool(
                STOP,
                "Stop a background process of this run (its whole process tree) and read its \
                 last output and exit status.",
                json!({
                    "type": "object",
                    "properties": {"process_id": id_schema()},
                    "required": ["process_id"],
                    "additionalProperties": false
                }),
            )?,
            risk: Risk::Writes,
            source: Source::Core,
            handler: Arc::new(tools::ProcessStop),
        },
        ToolDef {
            spec: define_tool(
                LIST,
                "List the background processes of this run: id, command, running or how it \
                 ended, output bytes and unread bytes.",
                json!({
                    "type": "object",
                    "properties": {},
                    "additionalProperties": false
                }),
            )?,
            risk: Risk::ReadOnly,
            source: Source::Core,
            handler: Arc::new(tools::ProcessList),
        },
    ])
}
