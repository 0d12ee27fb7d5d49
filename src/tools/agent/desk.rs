//! [`SubagentDesk`]: which run can start child runs. The agent loop attaches a [`ChildRunner`]
//! for the length of each top-level run; the `agent` handler looks it up by the call's run id. A
//! call outside an attached run (`aibuddy call agent`, or a child run: children get no runner,
//! which bounds the depth at one) finds none and gets a clear Execution error.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::contract::ToolError;
use crate::events::EventSink;
use crate::settings::{AgentProfile, AgentsSettings, DEFAULT_MAX_CONCURRENT, MAX_MAX_CONCURRENT};

/// What a child run is asked to do, resolved from the call's arguments and its profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildTask {
    /// Short label (the card, the child run's title).
    pub description: String,
    /// The task: the child's first (and only) user message.
    pub prompt: String,
    /// The tools the call and its profile narrow to (`None`: no narrowing asked); the runner
    /// intersects them with the parent's tool set.
    pub tools: Option<BTreeSet<String>>,
    /// The profile's text that joins the child's system prompt.
    pub system: Option<String>,
    /// The profile used, if any.
    pub profile: Option<String>,
}

/// How a child run that completed answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildAnswer {
    pub run_id: String,
    /// The child's final answer text (its last assistant message), unbounded.
    pub answer: String,
    /// Model steps the child took.
    pub steps: u32,
    /// The child's tool set (names it could call).
    pub tools: Vec<String>,
    /// Why the child's last step stopped when not "finished" (`max_tokens`, ...).
    pub stop_reason: Option<String>,
}

/// Starts a child run of one parent run.
#[async_trait]
pub trait ChildRunner: Send + Sync {
    /// Runs the child to its end. `parent_call_id` is the stored id of the `agent` call;
    /// `cancel` is that call's token (stopping the parent or the call stops the child);
    /// `call_events` is the call's event sink (heartbeats keep the parent's watchdog armed).
    /// A child that did not complete is an error with its stage (`cancelled` when stopped).
    async fn run_child(
        &self,
        parent_call_id: &str,
        task: ChildTask,
        cancel: CancellationToken,
        call_events: Arc<dyn EventSink>,
    ) -> Result<ChildAnswer, ToolError>;
}

pub struct SubagentDesk {
    runs: Mutex<HashMap<String, Arc<dyn ChildRunner>>>,
    /// The profiles of the current settings: `(name, description, from the project)`.
    profiles: Mutex<Vec<(String, String, bool)>>,
    /// Settings `agents.max_concurrent`: children of one run at once.
    max_concurrent: AtomicUsize,
}

impl Default for SubagentDesk {
    fn default() -> Self {
        Self {
            runs: Mutex::default(),
            profiles: Mutex::default(),
            max_concurrent: AtomicUsize::new(DEFAULT_MAX_CONCURRENT as usize),
        }
    }
}

impl SubagentDesk {
    /// The `agents` settings the desk follows (set with the plane's settings, again after a
    /// reload): the profiles the `agent` tool's instructions name, and how many children of one
    /// run may run at once (for runs started from now on).
    pub fn set_settings(&self, agents: &AgentsSettings) {
        self.set_profiles(&agents.profiles);
        let n = agents.max_concurrent.clamp(1, MAX_MAX_CONCURRENT);
        self.max_concurrent.store(n as usize, Ordering::Relaxed);
    }

    /// The profiles the `agent` tool's instructions name.
    pub fn set_profiles(&self, profiles: &BTreeMap<String, AgentProfile>) {
        if let Ok(mut p) = self.profiles.lock() {
            *p = profiles
                .iter()
                .map(|(n, p)| (n.clone(), p.description.clone(), p.from_project))
                .collect();
        }
    }

    /// Children of one run at once (settings `agents.max_concurrent`, 1 to 16).
    pub fn max_concurrent(&self) -> usize {
        self.max_concurrent.load(Ordering::Relaxed)
    }

    /// See [`SubagentDesk::set_profiles`].
    pub fn profiles(&self) -> Vec<(String, String, bool)> {
        self.profiles.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Let run `run_id` start children through `runner` until the guard is dropped.
    pub fn attach(self: &Arc<Self>, run_id: &str, runner: Arc<dyn ChildRunner>) -> SubagentGuard {
        if let Ok(mut r) = self.runs.lock() {
            r.insert(run_id.to_string(), runner);
        }
        SubagentGuard {
            desk: self.clone(),
            run_id: run_id.to_string(),
        }
    }

    /// The runner of `run_id`, if one is attached.
    pub fn runner(&self, run_id: &str) -> Option<Arc<dyn ChildRunner>> {
        self.runs.lock().ok().and_then(|r| r.get(run_id).cloned())
    }
}

/// Detaches its run's runner when dropped.
pub struct SubagentGuard {
    desk: Arc<SubagentDesk>,
    run_id: String,
}

impl Drop for SubagentGuard {
    fn drop(&mut self) {
        if let Ok(mut r) = self.desk.runs.lock() {
            r.remove(&self.run_id);
        }
    }
}
