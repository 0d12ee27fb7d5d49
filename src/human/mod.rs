//! The one broker for questions to the person: `ask_user_question` from the model and MCP
//! elicitation from servers.
//!
//! ```text
//! model: ask_user_question ─┐                          ┌─ CLI: terminal prompt (bin, cli/ask.rs)
//!                           ├─> HumanBroker::ask ─────>├─ desktop: PendingQuestions + answer_ask_user
//! MCP: elicitation/create ──┘   (the run's RunHuman,   └─ nobody: NoPerson (a clear error)
//!                               found by run id or by
//!                               the MCP call in flight)
//! ```
//!
//! The host implements [`HumanBroker`]. During an agent run the agent wraps the host's broker in
//! a [`RunHuman`] (emits `ask_user` / `elicitation` run events, stores answers in `user_answers`)
//! and attaches it to the run id on the process's [`HumanDesk`], where the `ask_user_question`
//! handler finds it by `CallContext::run_id`. An MCP elicitation is routed by the call that caused
//! it: the agent runs each tool call inside `aibuddy_mcp::with_caller` with a [`CallElicitation`]
//! (that run, that call id), so the form reaches the person of that run (several runs in one
//! process included) and its answer is stored under that call, normalized into the person's text
//! on every later request (`agent::human`). Elicitations outside runs go to the plane's broker
//! ([`HumanElicitation`], e.g. `aibuddy call`). The run's cancellation token ends a pending
//! question promptly: it is answered [`HumanAnswer::Cancelled`] and the run ends `cancelled`.
//!
//! Everything in a question (the model's text, a server's message, option labels, schema field
//! names) is untrusted: a host printing it to a terminal escapes it with `aibuddy_common::term`.

mod answer;
mod bridge;
mod desk;
mod pending;
mod waits;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

pub use answer::{AnswerError, answer_json, check_answer, describe_answer, question_json};
pub use bridge::{
    Announce, CallElicitation, HumanElicitation, RunHuman, elicit_answer_json, elicit_question_json,
};
pub use desk::{DeskGuard, HumanDesk};
pub use pending::PendingQuestions;
pub use waits::{PersonWaits, WaitGuard};

/// The text the model gets when nobody can answer (no terminal, `--json` without a way to answer,
/// a host with no dialog).
pub const NO_PERSON: &str =
    "no person is available to answer; proceed with your best judgement or stop";

/// A question from the model (`ask_user_question`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AskRequest {
    /// The asking tool call's id: answers are addressed by it.
    pub id: String,
    pub run_id: String,
    pub question: String,
    /// Choices to pick from (may be empty: free text only).
    pub options: Vec<String>,
    /// Several options may be picked.
    pub multi_select: bool,
    /// Free text is accepted (always true when there are no options).
    pub allow_other: bool,
}

/// A form an MCP server asks the person to fill (`elicitation/create`, form mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ElicitRequest {
    /// `elicit_<ulid>`: answers are addressed by it.
    pub id: String,
    /// The configured name of the server asking.
    pub server: String,
    pub message: String,
    /// The requested JSON Schema (an object of primitive properties).
    #[ts(type = "unknown")]
    pub schema: Value,
    /// The defaults declared in `schema`, for pre-filling a form.
    #[ts(type = "Record<string, unknown>")]
    pub defaults: Map<String, Value>,
}

/// One question to the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum HumanQuestion {
    Ask(AskRequest),
    Elicit(ElicitRequest),
}

impl HumanQuestion {
    /// The id an answer is addressed to.
    pub fn id(&self) -> &str {
        match self {
            HumanQuestion::Ask(a) => &a.id,
            HumanQuestion::Elicit(e) => &e.id,
        }
    }
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum HumanAnswer {
    /// The answer to an [`AskRequest`]: picked options and/or free text.
    Answer {
        #[serde(default)]
        selected: Vec<String>,
        #[serde(default)]
        text: Option<String>,
    },
    /// A submitted elicitation form (omitted fields receive the schema's defaults).
    Form {
        #[ts(type = "Record<string, unknown>")]
        content: Map<String, Value>,
    },
    /// The person explicitly refused to answer.
    Declined,
    /// Dismissed, or the run was stopped while waiting.
    Cancelled,
    /// Nobody can answer here (no terminal, no dialog).
    Unavailable { reason: String },
}

/// Whoever answers the person's questions: the CLI's terminal prompt, the desktop dialog, a test.
#[async_trait]
pub trait HumanBroker: Send + Sync {
    /// Called just before `question` is announced (a run event), with [`HumanBroker::ask`]
    /// following at once: a broker answered from outside by id ([`PendingQuestions`]) makes the
    /// question answerable here, so an answer that follows the announcement at once is never
    /// refused as unknown. Nothing by default.
    fn expect(&self, _question: &HumanQuestion) {}

    /// Wait for the answer. `cancel` (run stop) must end the wait promptly with
    /// [`HumanAnswer::Cancelled`].
    async fn ask(&self, question: &HumanQuestion, cancel: &CancellationToken) -> HumanAnswer;
}

/// A host where nobody can answer: every question is [`HumanAnswer::Unavailable`].
#[derive(Debug, Clone)]
pub struct NoPerson {
    reason: String,
}

impl NoPerson {
    /// With the default reason ([`NO_PERSON`]).
    pub fn new() -> Self {
        Self {
            reason: NO_PERSON.to_string(),
        }
    }

    /// With a reason of the host's (e.g. "stdin is not a terminal"), followed by the advice.
    pub fn because(why: &str) -> Self {
        Self {
            reason: format!("{why}: {NO_PERSON}"),
        }
    }
}

impl Default for NoPerson {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl HumanBroker for NoPerson {
    async fn ask(&self, _question: &HumanQuestion, _cancel: &CancellationToken) -> HumanAnswer {
        HumanAnswer::Unavailable {
            reason: self.reason.clone(),
        }
    }
}
