//! The person's answer to a confirm request ([`Decision`]) and the state of a recorded request
//! ([`DecisionState`]), shared by the core, the store and the desktop shell.
//!
//! A `Decision` is what a broker returns: an approval bound to one call by its digest, or a
//! rejection. A `DecisionState` is what the store keeps for a request over its life: pending until
//! answered, then approved or rejected, or cancelled when it was withdrawn before an answer.

use serde::{Deserialize, Serialize};
use strum::{AsRefStr, Display, EnumString, IntoStaticStr, VariantArray};

/// The answer to a confirm request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[cfg_attr(feature = "ts-rs", derive(ts_rs::TS))]
pub enum Decision {
    /// Approves the call whose digest this is, once.
    Approved {
        digest: String,
    },
    Rejected {
        reason: Option<String>,
    },
}

impl Decision {
    /// Whether this decision approves the request with this digest (the digests must match).
    pub fn approves_digest(&self, digest: &str) -> bool {
        matches!(self, Decision::Approved { digest: d } if d == digest)
    }

    /// The state a request is in after this answer to the request with `digest`: an approval of
    /// another digest does not approve, it rejects.
    pub fn state_for(&self, digest: &str) -> DecisionState {
        if self.approves_digest(digest) {
            DecisionState::Approved
        } else {
            DecisionState::Rejected
        }
    }
}

/// Where a recorded confirm request is: its stored string forms are snake_case and never change.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    Display,
    AsRefStr,
    IntoStaticStr,
    EnumString,
    VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(feature = "ts-rs", derive(ts_rs::TS))]
pub enum DecisionState {
    Pending,
    Approved,
    Rejected,
    /// The request was withdrawn (stop, cancellation) before an answer.
    Cancelled,
}

impl DecisionState {
    /// The stable string form, e.g. `"pending"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses an exact string form; `None` for anything else.
    pub fn parse(s: &str) -> Option<DecisionState> {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_approves_only_its_own_digest() {
        let d = Decision::Approved {
            digest: "abc".into(),
        };
        assert!(d.approves_digest("abc"));
        assert!(!d.approves_digest("abd"));
        assert!(!d.approves_digest(""));
        assert_eq!(d.state_for("abc"), DecisionState::Approved);
        assert_eq!(d.state_for("other"), DecisionState::Rejected);
        let r = Decision::Rejected { reason: None };
        assert!(!r.approves_digest("abc"));
        assert_eq!(r.state_for("abc"), DecisionState::Rejected);
    }

    #[test]
    fn the_answer_keeps_its_wire_shape() {
        let d = Decision::Approved {
            digest: "abc".into(),
        };
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            serde_json::json!({"decision": "approved", "digest": "abc"})
        );
        let r: Decision =
            serde_json::from_value(serde_json::json!({"decision": "rejected", "reason": "no"}))
                .unwrap();
        assert_eq!(
            r,
            Decision::Rejected {
                reason: Some("no".into())
            }
        );
    }

    #[test]
    fn stored_states_keep_their_strings() {
        let forms = [
            (DecisionState::Pending, "pending"),
            (DecisionState::Approved, "approved"),
            (DecisionState::Rejected, "rejected"),
            (DecisionState::Cancelled, "cancelled"),
        ];
        assert_eq!(forms.len(), DecisionState::VARIANTS.len());
        for (state, form) in forms {
            assert_eq!(state.as_str(), form);
            assert_eq!(state.to_string(), form);
            assert_eq!(DecisionState::parse(form), Some(state));
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                serde_json::json!(form)
            );
        }
        for bad in ["", "Pending", "approve", "canceled"] {
            assert_eq!(DecisionState::parse(bad), None, "{bad:?}");
        }
    }
}
