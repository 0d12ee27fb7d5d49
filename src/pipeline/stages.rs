//! The stages of one call after its start is recorded (`Runner::run_stages` runs them in
//! order): Discovery, Authorization (the tool's checks, the approval verdict, the person's
//! confirmation), Execution between checkpoints. Parameters are the tool spec's own check.

use super::*;

impl Runner {
    /// Discovery: the tool is active in this run's tool set and registered.
    pub(super) fn discover(
        &self,
        toolset: &ToolSet,
        req: &CallRequest,
    ) -> Result<(ToolDef, ResultPolicy), Failure> {
        let err = Failure::error;
        if has_no_name(&req.name) {
            return Err(err(ToolError::discovery(
                "missing_tool_name",
                format!(
                    "the tool call had no name; call one of the listed tools: {}",
                    active_names(toolset)
                ),
            )));
        }
        match toolset.get(&req.name) {
            Some(l) if l.exposure == Exposure::Active => {}
            Some(l) if l.exposure == Exposure::Deferred => {
                return Err(err(ToolError::discovery(
                    "deferred_tool",
                    format!(
                        "`{}` is deferred in this run; call tool_search to activate it first",
                        req.name
                    ),
                )));
            }
            Some(l) => {
                return Err(err(ToolError::discovery(
                    "absent_tool",
                    format!(
                        "`{}` is not available: {}",
                        req.name,
                        l.absent_reason
                            .as_deref()
                            .unwrap_or("a dependency is missing")
                    ),
                )));
            }
            None => {
                return Err(err(ToolError::discovery(
                    "unknown_tool",
                    format!(
                        "there is no tool `{}` in this run; active tools: {}",
                        req.name,
                        active_names(toolset)
                    ),
                )));
            }
        }
        let Some((tool, rc)) = self.registry.get(&req.name) else {
            return Err(err(ToolError::discovery(
                "unknown_tool",
                format!("`{}` is listed but not registered", req.name),
            )));
        };
        let tool = tool.clone();
        let policy = ResultPolicy {
            config_key: rc.meta.key.clone(),
            compaction: rc.config.compaction(),
            disposable: rc.meta.disposable,
        };
        Ok((tool, policy))
    }

    /// Authorization: the tool's own checks, then the approval verdict (standing policy
    /// recorded, a refusal, or the person asked). The confirmation the person gave, if asked.
    /// `hook_ask`: a `pre_tool_call` hook asked for the person's confirmation (with its reason):
    /// a call that would run without asking is asked; a refusal stays a refusal.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn authorize(
        &self,
        tool: &ToolDef,
        policy: &ResultPolicy,
        ctx: &CallContext,
        req: &CallRequest,
        args: &Value,
        events: &Arc<dyn EventSink>,
        hook_ask: Option<String>,
    ) -> Result<Option<ConfirmRecord>, Stopped> {
        let err = |error: ToolError| Stopped::from(Failure::error(error));
        let (call_id, cancel) = (ctx.call_id.as_str(), &ctx.cancel);
        let prepared = tool.handler.prepare(ctx, args).await.map_err(err)?;
        let risk = prepared.risk.map_or(tool.risk, |r| r.min(tool.risk));
        let verdict = approval::verdict(
            &self.services,
            &req.name,
            tool,
            &policy.config_key,
            risk,
            &prepared,
            self.checkpoints.is_some(),
        );
        let verdict = match (verdict, hook_ask) {
            (Verdict::Refuse(why), _) => Verdict::Refuse(why),
            (v, None) => v,
            (Verdict::Ask(Some(why)), Some(hook)) => Verdict::Ask(Some(format!("{why}; {hook}"))),
            (_, Some(hook)) => Verdict::Ask(Some(hook)),
        };
        let ask_why = match verdict {
            Verdict::Run(None) => None,
            Verdict::Run(Some(why)) => {
                let request = self.confirm_request(call_id, req, args, &prepared, risk, None);
                approval::record(self.recorder.as_ref(), &request, true, &why)
                    .await
                    .map_err(err)?;
                None
            }
            Verdict::Refuse(why) => {
                let request = self.confirm_request(call_id, req, args, &prepared, risk, None);
                approval::record(self.recorder.as_ref(), &request, false, &why)
                    .await
                    .map_err(err)?;
                return Err(err(approval::refusal(&req.name, &why)));
            }
            Verdict::Ask(why) => Some(why),
        };
        if let Some(why) = ask_why {
            let request = self.confirm_request(call_id, req, args, &prepared, risk, why);
            // The request is durable before anyone is asked and before any effect.
            if let Err(e) = self.recorder.confirm_requested(&request).await {
                return Err(err(ToolError::execution(
                    "store_unavailable",
                    format!("the confirm request could not be recorded, so nothing was done: {e}"),
                )));
            }
            // Announced by the broker once it can take the answer (an answer given on the event
            // itself is never lost).
            let announce = || {
                events.emit(Event::ConfirmRequested {
                    call_id: call_id.to_string(),
                    request: request.clone(),
                })
            };
            let decision = self
                .broker
                .decide_announced(&request, cancel, &announce)
                .await;
            let approved = decision.approves(&request);
            events.emit(Event::ConfirmResolved {
                call_id: call_id.to_string(),
                approved,
            });
            let reason = match &decision {
                crate::confirm::Decision::Rejected { reason } => reason.clone(),
                crate::confirm::Decision::Approved { .. } => {
                    Some("the approval was given for a different call".to_string())
                }
            };
            let record = ConfirmRecord {
                request: request.clone(),
                decision,
                approved,
                decided_at: now_ms(),
            };
            if !approved {
                return Err(Stopped {
                    failure: Failure {
                        status: CallStatus::Rejected,
                        error: ToolError::authorization(
                            "rejected",
                            format!(
                                "the person did not approve `{}` on {}{}; nothing was done",
                                req.name,
                                request.target,
                                reason.map(|r| format!(" ({r})")).unwrap_or_default()
                            ),
                        ),
                    },
                    confirm: Some(record),
                });
            }
            return Ok(Some(record));
        }
        Ok(None)
    }

    /// Execution (and the tool's own verification), between a before- and an after-snapshot
    /// when the tool may change the project.
    pub(super) async fn execute(
        &self,
        tool: &ToolDef,
        ctx: &CallContext,
        args: &Value,
    ) -> Result<RawOutput, Failure> {
        let (call_id, cancel) = (ctx.call_id.as_str(), &ctx.cancel);
        // A failure after a stop (the wait for the project's call lock, the command) is the
        // stop's: cancelled, never an error.
        let fail = |error: ToolError| {
            let status = if cancel.is_cancelled() || error.code == "cancelled" {
                CallStatus::Cancelled
            } else {
                CallStatus::Error
            };
            Failure { status, error }
        };
        if cancel.is_cancelled() {
            return Err(fail(ToolError::execution(
                "cancelled",
                "the call was cancelled before it started",
            )));
        }
        // Checkpoint: a fresh before-snapshot, durable before any effect (so only what changes
        // during the call is its change set, and a killed call can still be rewound).
        let checkpoint = match &self.checkpoints {
            Some(c) if tool.risk != crate::registry::Risk::ReadOnly => {
                Some((c.clone(), c.before(call_id, cancel).await.map_err(fail)?))
            }
            _ => None,
        };
        // Execution (+ the tool's own verification)
        let ran = tool.handler.run(ctx, args).await;
        if let Some((c, before)) = checkpoint {
            c.after(call_id, before).await;
        }
        ran.map_err(fail)
    }
}
