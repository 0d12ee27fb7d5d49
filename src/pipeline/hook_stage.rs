//! The pipeline's side of hooks (`crate::hooks`): `pre_tool_call` before Authorization and
//! `post_tool_call` after a call ran, each run kept with the call (`CallRecorder::hook_ran`)
//! before the call goes on.

use super::*;
use crate::hooks::{self, HookScope, PreDecision};

impl Runner {
    fn hook_scope<'a>(&'a self, cancel: &'a CancellationToken) -> HookScope<'a> {
        let settings = &self.services.settings;
        HookScope {
            hooks: &settings.hooks,
            exec: &settings.exec,
            project: &self.services.project_root,
            data_dir: &self.services.data_dir,
            read_only: settings.approvals.mode == crate::approvals::ApprovalMode::ReadOnly,
            run_id: &self.run_id,
            cancel,
        }
    }

    /// Keep each hook run with the call (a record that cannot be stored is logged: the hook ran).
    async fn keep_hook_runs(&self, call_id: &str, runs: &[HookRun]) {
        for run in runs {
            if let Err(e) = self
                .recorder
                .hook_ran(&self.run_id, Some(call_id), run)
                .await
            {
                tracing::error!(call = %call_id, "could not record a hook run: {e}");
            }
        }
    }

    /// The `pre_tool_call` hooks: `Err` when one blocked the call (Authorization), else the
    /// reason to ask the person when one asked.
    pub(super) async fn pre_hooks(
        &self,
        req: &CallRequest,
        args: &Value,
        call_id: &str,
        cancel: &CancellationToken,
        kept: &mut Vec<HookRun>,
    ) -> Result<Option<String>, Stopped> {
        if self.services.settings.hooks.pre_tool_call.is_empty() {
            return Ok(None);
        }
        let pre = hooks::pre_tool_call(self.hook_scope(cancel), &req.name, args, call_id).await;
        self.keep_hook_runs(call_id, &pre.runs).await;
        kept.extend(pre.runs);
        let reason = pre.reason.unwrap_or_default();
        match pre.decision {
            PreDecision::Block => Err(Stopped::from(Failure {
                status: CallStatus::Rejected,
                error: ToolError::authorization(
                    "blocked_by_hook",
                    format!("a hook blocked `{}`; nothing was done: {reason}", req.name),
                ),
            })),
            PreDecision::Ask => Ok(Some(if reason.is_empty() {
                "a hook asks to confirm".to_string()
            } else {
                format!("a hook asks to confirm: {reason}")
            })),
            PreDecision::Allow | PreDecision::None => {
                if cancel.is_cancelled() {
                    return Err(Stopped::from(Failure {
                        status: CallStatus::Cancelled,
                        error: ToolError::execution(
                            "cancelled",
                            "the call was cancelled while its hooks ran",
                        ),
                    }));
                }
                Ok(None)
            }
        }
    }

    /// The `post_tool_call` hooks of a call that ran: the model's text with their notes.
    pub(super) async fn post_hooks(
        &self,
        tool: &str,
        args: &Value,
        call_id: &str,
        model: &str,
        cancel: &CancellationToken,
        kept: &mut Vec<HookRun>,
    ) -> String {
        if self.services.settings.hooks.post_tool_call.is_empty() {
            return model.to_string();
        }
        let (notes, runs) =
            hooks::post_tool_call(self.hook_scope(cancel), tool, args, call_id, ("ok", model))
                .await;
        self.keep_hook_runs(call_id, &runs).await;
        kept.extend(runs);
        hooks::with_notes(model, &notes)
    }
}
