//! The `execute` tool config: one tool, `execute`, that runs a shell command in the project root
//! through the run's sandbox (`Sandbox::exec`, which forwards to `aibuddy_exec::run`).
//!
//! - Arguments: `command` (required), `timeout_ms` (default from settings, 2 min; at most 10 min),
//!   `description` (shown in the confirmation and the history).
//! - Risk `high_impact`: always confirmed. The confirmation scope lists the working directory, the
//!   confinement that will apply (namespaces and the Landlock ABI inside, or "landlock only: no
//!   namespaces (reason)"; writable roots, network), the timeout and the environment variables
//!   withheld from the command. The data directory and the credential locations (minus
//!   `exec.expose_credentials`) are hidden from the command.
//! - A timed-out or stopped command is an Execution-stage error (`timed_out`, `cancelled`) that
//!   keeps the partial model text, the client projection and the spooled raw output.
//! - Three control paths: the sandbox timeout (SIGTERM, then SIGKILL after a grace, in the runner);
//!   the hard deadline here, [`HARD_DEADLINE_GRACE`] after the sandbox timeout, for a sandbox
//!   operation that never returns (an Execution-stage `hard_deadline` error naming both numbers);
//!   the call's cancellation token (the whole tree ends; the call records `cancelled` with the
//!   output so far).
//! - Live output and heartbeats go to the event sink only (`ToolOutputDelta`, `Heartbeat`); the
//!   model sees `aibuddy_exec::project_for_model`'s capped text; the complete raw output is the
//!   spool file `<data>/spool/<call id>.out` (capped at 256 MiB), handed to the store as the raw output.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::{
    ExecError, ExecOutcome, ExecRequest, ExecSink, HARD_DEADLINE_GRACE, Termination,
    confinement_support, filter_env, model_text, with_hard_deadline,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::contract::{DefineError, ToolError, define_tool};
use crate::registry::{
    CallContext, Compaction, Prepared, RawOutput, Requirement, Risk, Source, ToolConfig,
    ToolConfigMeta, ToolDef, ToolHandler,
};

// The command's request from the settings (pure): below the hooks and confined servers too.
pub use crate::exec_request::{
    ExecArgs, PROVIDER_KEYS, build_request, data_dirs, env_policy, make_read_only,
};

pub const KEY: &str = "execute";
pub const NAME: &str = "execute";

const DESCRIPTION: &str = "Run a shell command (/bin/sh -c) in the project root. stdin is closed; the command runs \
in its own process group and is ended with its whole tree on timeout or stop. Output is streamed live to \
the person; you receive at most 30,000 characters: the head, the tail, the exit code or signal, the \
duration and how many bytes were omitted. For large outputs narrow the command (grep, head, tail) or \
redirect it to a file in the project and read slices. Writes outside the project (and its private \
$TMPDIR) are refused by the kernel where supported; /tmp is private to each command and vanishes with \
it; credential locations (~/.ssh, ~/.aws, ...) are not visible. Git config, hooks and info \
(.git/config, .git/hooks, .git/info), .aibuddy, .vscode, .idea, .envrc, .mcp.json, .claude, .codex and \
.cursor are read-only to commands (the rest of .git stays writable: git add, commit and checkout work); \
changes to them are refused or undone when the command ends.";

/// The `execute` config.
#[derive(Debug, Default)]
pub struct ExecuteConfig;

/// UI metadata (the config's entry in `TOOL_CONFIG_METAS`).
pub fn meta() -> ToolConfigMeta {
    let mut names = vec![NAME];
    names.extend(crate::tools::process::NAMES);
    ToolConfigMeta::fixed(KEY, "Execute", "commands", Risk::HighImpact, false, &names)
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The shell command, run with /bin/sh -c in the project root."
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": aibuddy_sandbox::aibuddy_exec::MAX_TIMEOUT.as_millis() as u64,
                "description": "Timeout in milliseconds (default 120000, at most 600000). The whole process tree is ended when it fires."
            },
            "description": {
                "type": "string",
                "maxLength": 500,
                "description": "What the command does, in a few words; shown to the person who confirms it."
            },
            "background": {
                "type": "boolean",
                "description": "Start the command in the background and return at once with its process id (a dev server, a watcher, a database). Read its output with process_output, write to its stdin with process_input, stop it with process_stop, list them with process_list. No timeout unless timeout_ms is given; it is stopped when this run ends."
            }
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

impl ToolConfig for ExecuteConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement::SandboxExec]
    }

    fn instructions(&self) -> Option<String> {
        Some(
            "`execute` runs shell commands in the project root; each call is confirmed by the person. \
             Check the exit code and the artifacts a command should produce before treating it as done. \
             Output beyond 30,000 characters is cut in the middle (the text names the omitted byte range \
             and how to read it with view_tool_call): prefer focused commands over dumping large outputs. \
             Long-running commands (servers, watchers) go in the background (`\"background\": true`): \
             poll them with process_output and stop them with process_stop when done."
                .to_string(),
        )
    }

    fn compaction(&self) -> Compaction {
        Compaction::Trim
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let mut tools = vec![ToolDef {
            spec: define_tool(NAME, DESCRIPTION, schema())?,
            risk: Risk::HighImpact,
            source: Source::Core,
            handler: Arc::new(ExecuteHandler),
        }];
        // The background processes `execute` starts are managed by tools of this config.
        tools.extend(crate::tools::process::tools()?);
        Ok(tools)
    }
}

// ------------------------------------------------------------------ arguments and request (pure)

fn decode(args: &Value) -> Result<ExecArgs, ToolError> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::parameters("invalid_arguments", format!("execute: {e}")))
}

/// The call's spool file, as the store maps it (`spool/<id>.out`, the id unchanged): the finish
/// then moves it instead of copying, and crash recovery finds it. `None` for an id the store
/// cannot key (the call then runs without a spool).
fn spool_path(data_dir: &Path, call_id: &str) -> Option<PathBuf> {
    aibuddy_store::DataPaths::new(data_dir)
        .spool_file(call_id)
        .ok()
}

/// Runs `req` on `sandbox` under the caller-side hard deadline (`req.timeout + grace`).
/// When the deadline fires, the call's token is cancelled too, so a sandbox that still holds the
/// command ends it, and the error says which deadline fired.
pub async fn execute_on(
    sandbox: &dyn Sandbox,
    req: ExecRequest,
    cancel: &CancellationToken,
    sink: Arc<dyn ExecSink>,
    grace: Duration,
) -> Result<ExecOutcome, ToolError> {
    let timeout = req.timeout;
    // A child token: firing it on the hard deadline does not cancel the caller's whole run.
    let token = cancel.child_token();
    let fut = sandbox.exec(req, token.clone(), sink);
    match with_hard_deadline(fut, timeout, grace).await {
        Ok(result) => result.map_err(ToolError::from),
        Err(e @ ExecError::HardDeadline { .. }) => {
            token.cancel();
            Err(ToolError::execution("hard_deadline", e.to_string()))
        }
        Err(e) => Err(ToolError::execution(e.code(), e.to_string())),
    }
}

/// The app's own consequence line for `execute`: the command is the only statement of what runs.
pub const EXECUTE_CONSEQUENCE: &str =
    "runs the target command in the project root: its effect is what the command does";

/// The handler of `execute`.
#[derive(Debug, Default)]
pub struct ExecuteHandler;

impl ExecuteHandler {
    fn request(&self, ctx: &CallContext, args: &ExecArgs) -> Result<ExecRequest, ToolError> {
        let home = dirs::home_dir();
        let mut req = build_request(
            args,
            &ctx.services.settings.exec,
            &ctx.services.project_root,
            home.as_deref(),
            spool_path(&ctx.services.data_dir, &ctx.call_id),
        )?;
        // History, trust records, keys: never visible to a command. Both data directories: the
        // one in use and the default one (its `mcp.json` and trust records when another is used).
        req.hidden_paths = data_dirs(&ctx.services.data_dir, &crate::data_dir::default_data_dir());
        // Credentials the app's environment names (`GOOGLE_APPLICATION_CREDENTIALS`, ...).
        req.credential_paths = aibuddy_sandbox::aibuddy_exec::hide::env_credential_paths(
            |n| std::env::var_os(n),
            home.as_deref(),
        );
        if ctx.services.settings.approvals.mode == crate::approvals::ApprovalMode::ReadOnly {
            make_read_only(&mut req);
        }
        Ok(req)
    }
}

/// How a command would be launched, for the approval mode (`auto` runs only the full path).
pub fn launch_of(
    confinement: &aibuddy_sandbox::aibuddy_exec::Confinement,
) -> crate::approvals::Launch {
    use crate::approvals::Launch;
    match confinement {
        aibuddy_sandbox::aibuddy_exec::Confinement::Namespaces {
            landlock_abi: Some(_),
            ..
        } => Launch::Full,
        // A container holds what the full local path holds: its own namespaces, egress only
        // through the allow-list proxy, protected paths read-only and absent ones held by
        // placeholders, none of this machine's environment (docs/security.md).
        aibuddy_sandbox::aibuddy_exec::Confinement::Container { .. } => Launch::Full,
        aibuddy_sandbox::aibuddy_exec::Confinement::Namespaces { .. }
        | aibuddy_sandbox::aibuddy_exec::Confinement::Landlock { .. } => Launch::Degraded,
        aibuddy_sandbox::aibuddy_exec::Confinement::Unavailable { .. }
        | aibuddy_sandbox::aibuddy_exec::Confinement::Disabled => Launch::Unconfined,
    }
}

#[async_trait]
impl ToolHandler for ExecuteHandler {
    async fn prepare(&self, ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        let a = decode(args)?;
        let req = self.request(ctx, &a)?;
        let (_, dropped) = filter_env(std::env::vars_os(), &req.env);
        // The model's description is its claim, not the app's assessment: shown apart, labelled.
        let model_says = a
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        // Where the command runs: this machine's runner, or the sandbox's own (a container).
        let sandbox = ctx.services.sandbox.as_ref().ok();
        let confinement = sandbox
            .and_then(|s| s.exec_confinement())
            .unwrap_or_else(|| confinement_for(&req, confinement_support()));
        let mut scope = scope_lines(&req, &dropped, &confinement);
        if let Some(s) = sandbox.filter(|s| s.kind() != aibuddy_sandbox::SandboxKind::Local) {
            scope.insert(0, format!("runs in the sandbox {}", s.location()));
        }
        if req.network_allowed {
            let recorded = project_hosts::load(&ctx.services.data_dir, &ctx.services.project_root);
            if !recorded.is_empty() {
                let list: Vec<String> = recorded.iter().map(ToString::to_string).collect();
                scope.push(format!(
                    "network also allowed for this project (answered earlier, kept at the user \
                     level): {}",
                    list.join(", ")
                ));
            }
        }
        // Nested repositories are looked for again at launch; said here when the walk is capped.
        scope.extend(nested_repositories_line(&nested_search(&req)));
        if req.read_only {
            scope.push(
                "approval mode read-only: the project and the writable roots are read-only, no network"
                    .to_string(),
            );
        }
        if a.background {
            scope.push(match a.timeout_ms {
                Some(ms) => format!(
                    "in the background: the call returns at once; the command is ended after {ms} ms \
                     or when the run ends; hosts on no network list are refused"
                ),
                None => "in the background: the call returns at once; no timeout, the command runs \
                         until it exits, is stopped, or the run ends; hosts on no network list are \
                         refused"
                    .to_string(),
            });
        }
        Ok(Prepared {
            target: a.command.clone(),
            scope,
            consequence: EXECUTE_CONSEQUENCE.to_string(),
            model_says,
            diff: None,
            inside_project: false,
            risk: None,
            launch: Some(launch_of(&confinement)),
        })
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let a = decode(args)?;
        let req = self.request(ctx, &a)?;
        let sandbox = ctx.services.sandbox()?.clone();
        if a.background {
            return crate::tools::process::start(ctx, &a, req, sandbox).await;
        }
        // Hosts on no list: asked through the run's broker (or refused without a person); the
        // questions end with the command (`_asks` dropped when this returns).
        let (decider, _asks) = netask::decider(ctx, &a.command, req.timeout + HARD_DEADLINE_GRACE);
        let bridge =
            Arc::new(EventBridge::new(&ctx.call_id, ctx.events.clone()).with_decider(decider));
        let spool = req.spool_path.clone();
        let result = execute_on(
            sandbox.as_ref(),
            req.clone(),
            &ctx.cancel,
            bridge.clone(),
            HARD_DEADLINE_GRACE,
        )
        .await;
        bridge.flush();
        let outcome = result?;
        let own_id = crate::tools::view_tool_call::model_call_id(&ctx.run_id, &ctx.call_id);
        let value = raw_value(&a, &req, &outcome, &own_id);
        if let Some(err) = ended_early(&req, &outcome, &value) {
            return Err(err);
        }
        Ok(RawOutput {
            value,
            spool: spool.filter(|p| p.exists()),
        })
    }

    fn client(&self, _args: &Value, raw: &RawOutput) -> Value {
        client_projection(&raw.value)
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        raw.value["model"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| raw.value.to_string())
    }

    fn trim(&self, _args: &Value, raw: &RawOutput, max_chars: usize) -> Option<String> {
        raw.value["model"]
            .as_str()
            .map(|m| trim_model(m, max_chars))
    }
}

mod live;
mod netask;
mod projection;
pub use projection::{
    CONFINEMENT_DETAIL, call_sandbox, client_projection, ended_early, network_lines, raw_value,
    recovery_line, sandbox_line, sandbox_of, stored_call_sandbox, trim_model,
};
pub mod project_hosts;
mod scope;
mod sync_view;
pub use aibuddy_sandbox::aibuddy_exec::SyncReport;
pub use sync_view::{SYNC, SyncNoteView, SyncView, call_sync, stored_call_sync};

use live::EventBridge;
pub use live::decode_carrying;
pub use netask::{RULE_DENIED, RULE_ONCE, RULE_PROJECT, RULE_RECORDED};
pub use scope::{
    confinement_for, expected_confinement, nested_repositories_line, protected_line,
    protected_paths_refused, scope_lines,
};

/// The search for nested repositories the launch will do (the project and each writable root),
/// unless every git entry is unprotected.
fn nested_search(req: &ExecRequest) -> aibuddy_sandbox::aibuddy_exec::protect::NestedSearch {
    use aibuddy_sandbox::aibuddy_exec::protect;
    let list = protect::effective_list(&req.protected_paths, &req.unprotected_paths);
    if !list.iter().any(|(p, _)| p.starts_with(".git/")) {
        return Default::default();
    }
    let roots: Vec<std::path::PathBuf> = std::iter::once(&req.cwd)
        .chain(&req.writable_roots)
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    protect::nested_repositories(&roots)
}

#[cfg(test)]
mod tests;
