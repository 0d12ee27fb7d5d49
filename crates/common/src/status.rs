//! [`CallStatus`]: the lifecycle status of one tool call, shared by the core, the store and the UI.
//!
//! String forms are snake_case (`"ok"`, `"interrupted"`): they are stored in SQLite and sent to the
//! UI, so they never change. The declaration order is the order of the generated TypeScript union.

use serde::{Deserialize, Serialize};
use strum::{AsRefStr, Display, EnumString, IntoStaticStr, VariantArray};

/// Final status of a call.
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
pub enum CallStatus {
    Ok,
    Error,
    Cancelled,
    /// The person declined the confirm request.
    Rejected,
    /// The process died while the call was running; set at the next open.
    Interrupted,
    /// Row written before execution; the call has not finished (or its process died: see `Interrupted`).
    Running,
}

impl CallStatus {
    /// Every status, in lifecycle order (the order listed to people, e.g. by `history --status`).
    pub const ALL: [CallStatus; 6] = [
        CallStatus::Running,
        CallStatus::Ok,
        CallStatus::Error,
        CallStatus::Cancelled,
        CallStatus::Rejected,
        CallStatus::Interrupted,
    ];

    /// The stable string form, e.g. `"cancelled"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses an exact string form; `None` for anything else.
    pub fn parse(s: &str) -> Option<CallStatus> {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored and wire forms: changing one breaks existing databases and the UI.
    const FORMS: [(CallStatus, &str); 6] = [
        (CallStatus::Running, "running"),
        (CallStatus::Ok, "ok"),
        (CallStatus::Error, "error"),
        (CallStatus::Cancelled, "cancelled"),
        (CallStatus::Rejected, "rejected"),
        (CallStatus::Interrupted, "interrupted"),
    ];

    #[test]
    fn string_forms_are_stable_in_every_representation() {
        assert_eq!(CallStatus::ALL.len(), CallStatus::VARIANTS.len());
        for (status, form) in FORMS {
            assert!(CallStatus::ALL.contains(&status));
            assert_eq!(status.as_str(), form);
            assert_eq!(status.as_ref(), form);
            assert_eq!(status.to_string(), form);
            assert_eq!(CallStatus::parse(form), Some(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(form)
            );
            let back: CallStatus = serde_json::from_value(serde_json::json!(form)).unwrap();
            assert_eq!(back, status);
        }
    }

    #[test]
    fn parsing_is_exact() {
        for bad in ["", "OK", "Ok", "canceled", "running ", "done"] {
            assert_eq!(CallStatus::parse(bad), None, "{bad:?}");
        }
    }
}
