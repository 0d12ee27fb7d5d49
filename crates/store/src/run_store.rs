//! `Store` API of agent runs and their conversation (schema version 4).
//!
//! Ownership: a run is `running` under the instance id of the `Store` that created (or resumed)
//! it. Only that `Store` can append to it or finish it; the instance's `flock` on
//! `live/<instance>.lock` says whether the owner is alive. A run whose owner died (kill -9, crash,
//! power loss) becomes `interrupted` at the next `Store::open` (or `recover_runs`) of any
//! process; a run of a live process is never touched by another one.
//!
//! Atomicity: every write below is one writer job, i.e. one savepoint inside the writer's
//! transaction: a message and the run counters it changes commit together or not at all.

use rusqlite::Connection;

use crate::conversation::{self, merge_interactions};
use crate::error::{Result, StoreError};
use crate::ids::{new_id, now_ms, validate_id};
use crate::recovery;
use crate::run_types::{
    Conversation, MessageRole, NewMessage, NewRun, NewSummary, RunEnd, RunListRow, RunParent,
    RunRecord, RunStatus, Usage,
};
use crate::store::Store;
use crate::tables::{
    confirm_decisions, messages, projects, runs, summaries, tool_calls, user_answers,
};
use crate::types::CallStart;
use crate::writer::Durability;

impl Store {
    /// Creates a `running` run owned by this process; returns its id.
    pub async fn create_run(&self, new: NewRun) -> Result<String> {
        self.create_run_under(new, None).await
    }

    /// Creates a subagent run: like [`Store::create_run`], linked to the parent run and the
    /// parent's call that started it (the parent run must exist).
    pub async fn create_child_run(&self, new: NewRun, parent: RunParent) -> Result<String> {
        self.create_run_under(new, Some(parent)).await
    }

    /// The subagent runs `run_id` started, oldest first: `(child run id, parent call id)`.
    pub async fn child_runs(&self, run_id: &str) -> Result<Vec<(String, Option<String>)>> {
        let run = run_id.to_string();
        self.read(move |conn, _| runs::children(conn, &run)).await
    }

    async fn create_run_under(&self, new: NewRun, parent: Option<RunParent>) -> Result<String> {
        let run_id = new.run_id.clone().unwrap_or_else(new_id);
        validate_id(&run_id)?;
        let owner = self.instance_id().to_string();
        let id = run_id.clone();
        self.write(Durability::Process, move |conn| {
            let now = now_ms();
            let project_id = match &new.project_root {
                Some(root) => Some(projects::ensure(conn, root, now)?),
                None => None,
            };
            runs::create(
                conn,
                &runs::Create {
                    run_id: &id,
                    project_id,
                    title: new.title.as_deref(),
                    provider: &new.provider,
                    model: &new.model,
                    presentation: &new.presentation,
                    owner: &owner,
                    parent: parent
                        .as_ref()
                        .map(|p| (p.run_id.as_str(), p.call_id.as_str(), p.shape.as_deref())),
                },
                now,
            )
        })
        .await?;
        Ok(run_id)
    }

    /// Appends messages in order, atomically with the run's counters: `steps` grows by the
    /// assistant messages, `tool_calls` by the calls they request, usage by their usage. Fails
    /// (appending nothing) when a message breaks the protocol or the run is not running here.
    /// Returns the sequence numbers.
    pub async fn append_messages(&self, run_id: &str, msgs: Vec<NewMessage>) -> Result<Vec<i64>> {
        validate_id(run_id)?;
        for m in &msgs {
            conversation::validate_message(m).map_err(StoreError::InvalidMessage)?;
        }
        let (run, owner) = (run_id.to_string(), self.instance_id().to_string());
        self.write(Durability::Process, move |conn| {
            append_all(conn, &run, &owner, &msgs)
        })
        .await
    }

    /// One message (see `append_messages`); returns its sequence number.
    pub async fn append_message(&self, run_id: &str, msg: NewMessage) -> Result<i64> {
        let seqs = self.append_messages(run_id, vec![msg]).await?;
        seqs.first()
            .copied()
            .ok_or_else(|| StoreError::Transaction("no sequence number returned".into()))
    }

    /// Adds usage that no stored message carries (a retried or aborted step).
    pub async fn add_run_usage(&self, run_id: &str, usage: Usage) -> Result<()> {
        let (run, owner) = (run_id.to_string(), self.instance_id().to_string());
        self.write(Durability::Process, move |conn| {
            runs::add_counters(conn, &run, &owner, 0, 0, &usage)
        })
        .await
    }

    /// Records a conversation summary replacing `covers_from..=covers_to` in the next requests
    /// (the originals stay); its usage is added to the run. Refused when the range would split a
    /// tool call from its result or partially overlap an earlier summary.
    pub async fn append_summary(&self, run_id: &str, summary: NewSummary) -> Result<i64> {
        let (run, owner) = (run_id.to_string(), self.instance_id().to_string());
        self.write(Durability::Process, move |conn| {
            if runs::status_and_owner(conn, &run)?
                != Some((Some("running".into()), Some(owner.clone())))
            {
                return Err(runs::not_running(conn, &run)?);
            }
            let msgs = messages::list(conn, &run)?;
            let existing = summaries::list(conn, &run)?;
            conversation::validate_summary(&msgs, &existing, &summary)
                .map_err(StoreError::InvalidMessage)?;
            let id = summaries::insert(conn, &run, &summary, now_ms())?;
            runs::add_counters(conn, &run, &owner, 0, 0, &summary.usage.unwrap_or_default())?;
            Ok(id)
        })
        .await
    }

    /// Ends a run this process owns with `completed`, `cancelled`, `error` or `max_steps`.
    /// Returns after the end is fsynced.
    pub async fn finish_run(&self, run_id: &str, end: RunEnd) -> Result<()> {
        if matches!(end.status, RunStatus::Running | RunStatus::Interrupted) {
            return Err(StoreError::InvalidMessage(format!(
                "a run cannot finish as {}",
                end.status
            )));
        }
        let (run, owner) = (run_id.to_string(), self.instance_id().to_string());
        self.write(Durability::Power, move |conn| {
            runs::finish(conn, &run, &owner, &end, now_ms())
        })
        .await
    }

    pub async fn set_run_title(&self, run_id: &str, title: &str) -> Result<bool> {
        let (run, title) = (run_id.to_string(), title.to_string());
        self.write(Durability::Process, move |conn| {
            runs::set_title(conn, &run, &title)
        })
        .await
    }

    /// Takes over a run that is not running (interrupted, finished) or whose owner died, for
    /// `--continue`: it becomes `running` under this process, and every tool call the model
    /// requested that has no result is answered: its row becomes (or is created) `interrupted`
    /// and a result message is appended. Returns the ids answered that way. Fails with
    /// `RunBusy` when a live process owns it.
    pub async fn resume_run(&self, run_id: &str) -> Result<Vec<String>> {
        validate_id(run_id)?;
        let (run, owner) = (run_id.to_string(), self.instance_id().to_string());
        let paths = self.paths().clone();
        self.write(Durability::Power, move |conn| {
            let Some((status, current)) = runs::status_and_owner(conn, &run)? else {
                return Err(StoreError::RunNotFound(run.clone()));
            };
            let running = status.as_deref() == Some("running");
            let owner_dead = running
                && current.as_deref() != Some(owner.as_str())
                && recovery::owner_is_dead(&paths, current.as_deref());
            runs::take_over(conn, &run, &owner, owner_dead)?;
            answer_dangling(conn, &run, &owner)
        })
        .await
    }

    /// Marks runs of processes that died since this `Store` opened `interrupted` (a long-lived
    /// process such as the desktop app calls it before listing); returns their ids.
    pub async fn recover_runs(&self) -> Result<Vec<String>> {
        let paths = self.paths().clone();
        self.write(Durability::Process, move |conn| {
            recovery::interrupt_dead_runs(conn, &paths)
        })
        .await
    }

    /// Marks the `running` tool calls of processes that died since this `Store` opened
    /// `interrupted`, with the output they spooled (the start-up recovery of calls run again, on
    /// the same instance-lock liveness test as `recover_runs`); calls of live processes, this one
    /// included, are left alone. A long-lived process (the desktop app) calls it before showing
    /// calls that say `running`. Returns the ids marked.
    pub async fn recover_calls(&self) -> Result<Vec<String>> {
        // A read first: the usual answer (every owner alive) takes no write lock.
        let any_dead = self
            .read(|conn, paths| {
                Ok(tool_calls::running_owners(conn)?
                    .iter()
                    .any(|owner| recovery::owner_is_dead(paths, owner.as_deref())))
            })
            .await?;
        if !any_dead {
            return Ok(Vec::new());
        }
        let paths = self.paths().clone();
        self.write(Durability::Power, move |conn| {
            recovery::interrupt_dead_calls(conn, &paths)
        })
        .await
    }

    pub async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>> {
        let run = run_id.to_string();
        self.read(move |conn, _| runs::get(conn, &run)).await
    }

    /// Agent runs newest first (at most `limit`, capped at 10,000); `before`: only runs older
    /// than that run (the last id of the previous page).
    pub async fn list_runs(&self, limit: usize, before: Option<&str>) -> Result<Vec<RunListRow>> {
        let before = before.map(str::to_string);
        self.read(move |conn, _| runs::list(conn, limit, before.as_deref()))
            .await
    }

    /// The run's stored conversation, read in one snapshot: run row, every message in order
    /// with its requested calls and linked results, summaries, completed interactions.
    pub async fn conversation(&self, run_id: &str) -> Result<Conversation> {
        let run = run_id.to_string();
        self.read(move |conn, _| {
            let tx = rusqlite::Transaction::new_unchecked(
                conn,
                rusqlite::TransactionBehavior::Deferred,
            )?;
            let record =
                runs::get(&tx, &run)?.ok_or_else(|| StoreError::RunNotFound(run.clone()))?;
            let conv = Conversation {
                messages: messages::list(&tx, &run)?,
                summaries: summaries::list(&tx, &run)?,
                interactions: merge_interactions(
                    user_answers::for_run(&tx, &run)?,
                    confirm_decisions::decided_for_run(&tx, &run)?,
                ),
                run: record,
            };
            tx.finish()?;
            Ok(conv)
        })
        .await
    }
}

fn append_all(conn: &Connection, run: &str, owner: &str, msgs: &[NewMessage]) -> Result<Vec<i64>> {
    if runs::status_and_owner(conn, run)? != Some((Some("running".into()), Some(owner.into()))) {
        return Err(runs::not_running(conn, run)?);
    }
    let now = now_ms();
    let (mut steps, mut calls, mut usage) = (0i64, 0i64, Usage::default());
    let mut seqs = Vec::with_capacity(msgs.len());
    for m in msgs {
        if let Some(id) = &m.tool_call_id {
            if !messages::is_requested(conn, run, id)? {
                return Err(StoreError::InvalidMessage(format!(
                    "result for {id}, which the model did not request in this run"
                )));
            }
            if messages::is_answered(conn, run, id)? {
                return Err(StoreError::InvalidMessage(format!(
                    "tool call {id} already has a result"
                )));
            }
        }
        for c in &m.requested_calls {
            if messages::is_requested(conn, run, &c.tool_call_id)? {
                return Err(StoreError::InvalidMessage(format!(
                    "tool call id {} is already used in this run",
                    c.tool_call_id
                )));
            }
        }
        seqs.push(messages::append(conn, &new_id(), run, m, now)?);
        if m.role == MessageRole::Assistant {
            steps += 1;
            calls += i64::try_from(m.requested_calls.len()).unwrap_or(i64::MAX);
        }
        if let Some(u) = &m.usage {
            usage.add(u);
        }
    }
    runs::add_counters(conn, run, owner, steps, calls, &usage)?;
    Ok(seqs)
}

/// Answers every requested call without a result: a missing row is created `interrupted`, a
/// row left `running` becomes `interrupted`, and a result message is appended for each.
fn answer_dangling(conn: &Connection, run: &str, owner: &str) -> Result<Vec<String>> {
    let dangling = messages::dangling(conn, run)?;
    let now = now_ms();
    let mut msgs = Vec::with_capacity(dangling.len());
    for call in &dangling {
        match tool_calls::status_of(conn, &call.tool_call_id)? {
            None => {
                let start = CallStart {
                    tool_call_id: call.tool_call_id.clone(),
                    run_id: run.to_string(),
                    project_root: None,
                    tool: call.tool.clone(),
                    config: String::new(),
                    input: String::new(),
                    started_at_ms: Some(now),
                };
                crate::store::insert_start(conn, &start, owner)?;
                tool_calls::interrupt(conn, &call.tool_call_id, None, now)?;
            }
            Some(s) if s == "running" => {
                tool_calls::interrupt(conn, &call.tool_call_id, None, now)?;
            }
            Some(_) => {}
        }
        msgs.push(NewMessage::tool_result(&call.tool_call_id));
    }
    append_all(conn, run, owner, &msgs)?;
    Ok(dangling.into_iter().map(|c| c.tool_call_id).collect())
}
