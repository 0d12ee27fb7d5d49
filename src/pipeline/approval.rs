//! The pipeline's side of approvals: the facts of one call handed to the pure table
//! (`crate::approvals::decide`), and what a decision made without asking leaves on the record.

use crate::approvals::{CallKind, Facts, Verdict, decide};
use crate::confirm::ConfirmRequest;
use crate::contract::ToolError;
use crate::registry::{Prepared, Risk, Source, ToolDef};
use crate::services::Services;

use super::record::CallRecorder;

/// The approval decision for one prepared call; `checkpointed`: its changes to the project will
/// be checkpointed (the pipeline has the project's checkpoints).
pub(super) fn verdict(
    services: &Services,
    name: &str,
    tool: &ToolDef,
    config_key: &str,
    risk: Risk,
    prepared: &Prepared,
    checkpointed: bool,
) -> Verdict {
    let settings = &services.settings;
    let kind = match (&prepared.launch, &tool.source) {
        (Some(launch), _) => CallKind::Command {
            line: &prepared.target,
            launch: *launch,
        },
        (None, Source::Mcp(_)) => CallKind::Mcp,
        (None, Source::Core) if config_key == "filesystem" => CallKind::File,
        _ => CallKind::Other,
    };
    let facts = Facts {
        tool: name,
        risk,
        kind,
        inside_project: prepared.inside_project,
        mode: settings.approvals.mode,
        auto_approve_writes: settings.confirm.auto_approve_writes,
        checkpointed,
    };
    // The settings' rules, then those the person added since the project opened.
    let mut rules = settings.approvals.rules.clone();
    rules.extend(services.session_rules.snapshot());
    decide(&facts, &rules)
}

/// Keep a decision made by the person's standing policy with the call (`aibuddy show --json`
/// lists it among `confirm_decisions`, with `policy` saying why), before any effect.
pub(super) async fn record(
    recorder: &dyn CallRecorder,
    request: &ConfirmRequest,
    approved: bool,
    why: &str,
) -> Result<(), ToolError> {
    recorder
        .policy_decided(request, approved, why)
        .await
        .map_err(|e| {
            ToolError::execution(
                "store_unavailable",
                format!("the approval decision could not be recorded, so nothing was done: {e}"),
            )
        })
}

/// The Authorization error of a call refused by a rule or the read-only mode.
pub(super) fn refusal(tool: &str, why: &str) -> ToolError {
    ToolError::authorization(
        "refused_by_approvals",
        format!("`{tool}` was refused without asking: {why}; nothing was done"),
    )
}
