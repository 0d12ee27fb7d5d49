//! A scripted conversation read from a JSON file, for the `fake-provider` binary (the desktop
//! end-to-end test points the real app at it). Pure: text in, [`Reply`]s out; the binary does the
//! I/O.
//!
//! ```json
//! {
//!   "kind": "anthropic",
//!   "key": "sk-fake-e2e",
//!   "steps": [
//!     {"text": "Let me look.", "calls": [{"id": "toolu_01", "name": "execute",
//!                                          "input": {"command": "ls"}}]},
//!     {"error": {"status": 429, "retry_after_secs": 1}},
//!     {"text": "Done."}
//!   ]
//! }
//! ```
//!
//! Each step answers one request, in order (`"conversations_by_first_user_text": true` when a run
//! and its subagent runs share the script). A step is an assistant turn (`text` and/or `calls`,
//! optional `pings` keep-alives, `stall` to stop after the first delta) or an HTTP `error`.

use serde::Deserialize;
use serde_json::Value;

use super::script::{Reply, Turn};
use crate::kind::ProviderKind;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The wire format the steps are rendered in (default `anthropic`).
    #[serde(default = "anthropic")]
    pub kind: ProviderKind,
    /// The key every request must carry in its auth header (and never in its body).
    #[serde(default)]
    pub key: Option<String>,
    /// Whether served assistant content must come back unchanged (default on).
    #[serde(default = "yes")]
    pub check_replay: bool,
    /// Whether several conversations share the script (a run and its subagent runs): replays
    /// are checked per conversation, told apart by their first user text (default off).
    #[serde(default)]
    pub conversations_by_first_user_text: bool,
    pub steps: Vec<Step>,
}

fn anthropic() -> ProviderKind {
    ProviderKind::Anthropic
}

fn yes() -> bool {
    true
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Step {
    Error { error: StepError },
    Turn(StepTurn),
}

/// An assistant turn.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepTurn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub calls: Vec<StepCall>,
    #[serde(default)]
    pub pings: bool,
    #[serde(default)]
    pub stall: bool,
}

/// A tool call in a turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepCall {
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// An HTTP error answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepError {
    pub status: u16,
    #[serde(default = "api_error")]
    pub r#type: String,
    #[serde(default)]
    pub message: String,
    /// Sent as `retry-after` (seconds).
    #[serde(default)]
    pub retry_after_secs: Option<u64>,
}

fn api_error() -> String {
    "api_error".into()
}

/// Why a scenario file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("the scenario is not valid JSON of the expected shape: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("step {step}: {problem}")]
    Step { step: usize, problem: String },
}

impl Scenario {
    /// Parses and checks a scenario file's text.
    pub fn parse(text: &str) -> Result<Self, ScenarioError> {
        let scenario: Scenario = serde_json::from_str(text)?;
        for (i, step) in scenario.steps.iter().enumerate() {
            let problem = match step {
                Step::Turn(t) if t.text.is_none() && t.calls.is_empty() => {
                    Some("a turn needs `text` or `calls`".to_string())
                }
                Step::Turn(t) => t
                    .calls
                    .iter()
                    .find(|c| !super::valid_tool_name(&c.name))
                    .map(|c| format!("`{}` is not a valid tool name", c.name)),
                Step::Error { error } if !(400..=599).contains(&error.status) => {
                    Some(format!("error status {} is not 4xx/5xx", error.status))
                }
                Step::Error { .. } => None,
            };
            if let Some(problem) = problem {
                return Err(ScenarioError::Step { step: i, problem });
            }
        }
        Ok(scenario)
    }

    /// The replies in order, rendered in the scenario's format.
    pub fn replies(&self) -> Vec<Reply> {
        self.steps.iter().map(|s| s.reply(self.kind)).collect()
    }
}

/// How a served scenario went, from the requests the server saw.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    pub steps: usize,
    pub requests: usize,
    /// Steps no request reached (the client stopped early).
    pub unanswered: usize,
    /// Requests after the last step (answered with a 500 "no scripted reply left").
    pub beyond_script: usize,
    /// `[rule] detail` of every protocol violation.
    pub violations: Vec<String>,
}

impl Verdict {
    /// Every step was answered, no request came after the script, none broke the protocol.
    pub fn clean(&self) -> bool {
        self.unanswered == 0 && self.beyond_script == 0 && self.violations.is_empty()
    }
}

impl Scenario {
    /// Judges a served scenario from the request count and the violations the server recorded.
    pub fn judge(&self, requests: usize, violations: &[super::Violation]) -> Verdict {
        let steps = self.steps.len();
        Verdict {
            steps,
            requests,
            unanswered: steps.saturating_sub(requests),
            beyond_script: requests.saturating_sub(steps),
            violations: violations
                .iter()
                .map(|v| format!("[{}] {}", v.rule, v.detail))
                .collect(),
        }
    }
}

impl Step {
    fn reply(&self, kind: ProviderKind) -> Reply {
        match self {
            Step::Error { error } => {
                let message = if error.message.is_empty() {
                    format!("scripted error {}", error.status)
                } else {
                    error.message.clone()
                };
                let mut reply = Reply::error(error.status, &error.r#type, &message);
                if let (Reply::Error { headers, .. }, Some(secs)) =
                    (&mut reply, error.retry_after_secs)
                {
                    headers.push(("retry-after".into(), secs.to_string()));
                }
                reply
            }
            Step::Turn(t) => {
                let mut turn = Turn {
                    text: t.text.clone(),
                    pings: t.pings,
                    stall_after_first_delta: t.stall,
                    ..Turn::default()
                };
                for c in &t.calls {
                    turn = turn.call(&c.id, &c.name, c.input.clone());
                }
                turn.reply(kind)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Chunk;
    use serde_json::json;

    #[test]
    fn a_turn_with_a_call_renders_as_the_anthropic_tool_use_stream() {
        let s = Scenario::parse(
            r#"{"key": "k", "steps": [{"text": "hi", "calls": [{"id": "toolu_1", "name": "execute", "input": {"command": "ls"}}]}]}"#,
        )
        .unwrap();
        assert_eq!(s.kind, ProviderKind::Anthropic);
        assert_eq!(s.key.as_deref(), Some("k"));
        assert!(!s.conversations_by_first_user_text);
        let want = Turn::text("hi")
            .call("toolu_1", "execute", json!({"command": "ls"}))
            .reply(ProviderKind::Anthropic);
        assert_eq!(s.replies(), vec![want]);
    }

    #[test]
    fn several_conversations_may_share_the_script() {
        let s = Scenario::parse(
            r#"{"conversations_by_first_user_text": true, "steps": [{"text": "hi"}]}"#,
        )
        .unwrap();
        assert!(s.conversations_by_first_user_text);
    }

    #[test]
    fn an_error_step_carries_its_status_and_retry_after() {
        let s = Scenario::parse(
            r#"{"kind": "openai-chat", "steps": [{"error": {"status": 429, "retry_after_secs": 2}}]}"#,
        )
        .unwrap();
        match &s.replies()[0] {
            Reply::Error {
                status, headers, ..
            } => {
                assert_eq!(*status, 429);
                assert_eq!(headers, &vec![("retry-after".to_string(), "2".to_string())]);
            }
            other => panic!("not an error reply: {other:?}"),
        }
    }

    #[test]
    fn a_stalling_step_ends_in_a_stall() {
        let s = Scenario::parse(r#"{"steps": [{"text": "abcdef", "stall": true}]}"#).unwrap();
        let Reply::Stream { chunks, served } = &s.replies()[0] else {
            panic!("not a stream");
        };
        assert_eq!(chunks.last(), Some(&Chunk::Stall));
        assert_eq!(served, &None);
    }

    #[test]
    fn the_verdict_counts_unanswered_steps_extra_requests_and_violations() {
        let s = Scenario::parse(r#"{"steps": [{"text": "a"}, {"text": "b"}]}"#).unwrap();
        assert!(s.judge(2, &[]).clean());
        let early = s.judge(1, &[]);
        assert_eq!((early.unanswered, early.clean()), (1, false));
        let extra = s.judge(3, &[]);
        assert_eq!((extra.beyond_script, extra.clean()), (1, false));
        let v = crate::testing::Violation {
            rule: "key_in_header",
            detail: "no key".into(),
            body: "{}".into(),
        };
        let broken = s.judge(2, &[v]);
        assert_eq!(
            broken.violations,
            vec!["[key_in_header] no key".to_string()]
        );
        assert!(!broken.clean());
    }

    #[test]
    fn bad_steps_are_refused_with_their_index() {
        for (text, want) in [
            (r#"{"steps": [{"text": "a"}, {}]}"#, "step 1: a turn needs"),
            (
                r#"{"steps": [{"calls": [{"id": "x", "name": "bad name"}]}]}"#,
                "step 0: `bad name` is not a valid tool name",
            ),
            (
                r#"{"steps": [{"error": {"status": 200}}]}"#,
                "step 0: error status 200",
            ),
        ] {
            let err = Scenario::parse(text).unwrap_err().to_string();
            assert!(err.starts_with(want), "{text}: {err}");
        }
        assert!(matches!(
            Scenario::parse(r#"{"steps": [{"txt": "typo"}]}"#),
            Err(ScenarioError::Parse(_))
        ));
    }
}
