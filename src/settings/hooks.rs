//! `hooks`: commands the person runs around tool calls and runs (`crate::hooks`,
//! `docs/hooks.md`). Five events, each a list of entries `{"match", "command", "timeout_secs"}`.
//!
//! Layering (pure) is not field by field: the user file's hooks all run, and a project file's hooks
//! are added after them, never replacing one. A project's hooks run commands with the person's
//! authority, so every non-empty list widens ([`super::authority`]): it applies only when the
//! project is trusted, and each project hook's script files are pinned into the trust digest like
//! a server's (`crate::trust::pins`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use super::parse::Cleaned;

/// The longest a hook may run (seconds); a larger `timeout_secs` is lowered to it.
pub const MAX_HOOK_TIMEOUT_SECS: u64 = 600;
/// `timeout_secs` when an entry names none (Claude Code's default too).
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;

/// Whose file a hook comes from: the person's own (runs with their environment) or the
/// project's (only when trusted; runs with the filtered environment commands get).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum HookLevel {
    #[default]
    User,
    Project,
}

fn any_tool() -> String {
    "*".to_string()
}

fn default_timeout() -> u64 {
    DEFAULT_HOOK_TIMEOUT_SECS
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
#[ts(export)]
pub struct HookEntry {
    /// The tools it runs for: a name or a glob (`*`, `?`), alternatives separated by `|`
    /// (`write_file|edit_file`, `mcp__github__*`). Default `*`; ignored by run events.
    #[serde(rename = "match", default = "any_tool")]
    pub matcher: String,
    /// A shell command line (`sh -c`), run in the project root.
    pub command: String,
    /// Seconds before the hook's process group is killed (1 to 600, default 60).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Set by layering, never read from a file.
    #[serde(skip)]
    #[ts(skip)]
    pub level: HookLevel,
}

/// `hooks`: the five events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
#[ts(export)]
pub struct HooksSettings {
    /// Before a call is authorized: exit 2 or `{"decision": "block"}` blocks it, `"ask"` asks the
    /// person.
    pub pre_tool_call: Vec<HookEntry>,
    /// After a call ran: may add a note to the model's text.
    pub post_tool_call: Vec<HookEntry>,
    pub run_start: Vec<HookEntry>,
    pub run_end: Vec<HookEntry>,
    /// A run waits for the person (a confirmation or a question).
    pub waiting_for_person: Vec<HookEntry>,
}

/// The event names, as in settings.
pub const HOOK_EVENTS: [&str; 5] = [
    "pre_tool_call",
    "post_tool_call",
    "run_start",
    "run_end",
    "waiting_for_person",
];

impl HooksSettings {
    /// The entries of `event` (by its settings name); empty for an unknown name.
    pub fn of(&self, event: &str) -> &[HookEntry] {
        match event {
            "pre_tool_call" => &self.pre_tool_call,
            "post_tool_call" => &self.post_tool_call,
            "run_start" => &self.run_start,
            "run_end" => &self.run_end,
            "waiting_for_person" => &self.waiting_for_person,
            _ => &[],
        }
    }

    fn lists_mut(&mut self) -> [&mut Vec<HookEntry>; 5] {
        [
            &mut self.pre_tool_call,
            &mut self.post_tool_call,
            &mut self.run_start,
            &mut self.run_end,
            &mut self.waiting_for_person,
        ]
    }

    pub fn is_empty(&self) -> bool {
        HOOK_EVENTS.iter().all(|e| self.of(e).is_empty())
    }

    /// Every entry with its event name, in settings order.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &HookEntry)> {
        HOOK_EVENTS
            .iter()
            .flat_map(move |e| self.of(e).iter().map(move |h| (*e, h)))
    }

    /// `other`'s entries added after this one's, each marked `level`.
    pub fn extend_with(&mut self, mut other: HooksSettings, level: HookLevel) {
        for (mine, theirs) in self.lists_mut().into_iter().zip(other.lists_mut()) {
            for mut h in theirs.drain(..) {
                h.level = level;
                mine.push(h);
            }
        }
    }
}

/// The `hooks` section of one cleaned file, taken out of its map (each field was already decoded
/// on its own, so this decodes).
pub(super) fn take(cleaned: &mut Cleaned) -> Option<HooksSettings> {
    match cleaned.map.remove("hooks") {
        Some(Value::Object(map)) => Some(decode(map)),
        _ => None,
    }
}

/// The `hooks` section of one cleaned file, left in place.
pub(super) fn peek(cleaned: &Cleaned) -> Option<HooksSettings> {
    match cleaned.map.get("hooks") {
        Some(Value::Object(map)) => Some(decode(map.clone())),
        _ => None,
    }
}

fn decode(map: Map<String, Value>) -> HooksSettings {
    serde_json::from_value(Value::Object(map)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_take_defaults() {
        let h: HooksSettings = serde_json::from_value(json!({
            "pre_tool_call": [{"command": "a"}, {"match": "execute", "command": "b", "timeout_secs": 5}]
        }))
        .unwrap();
        assert_eq!(h.pre_tool_call[0].matcher, "*");
        assert_eq!(h.pre_tool_call[0].timeout_secs, 60);
        assert_eq!(h.pre_tool_call[1].matcher, "execute");
        assert_eq!(h.pre_tool_call[1].timeout_secs, 5);
        assert!(serde_json::from_value::<HooksSettings>(json!({"PreToolUse": []})).is_err());
        assert!(
            serde_json::from_value::<HookEntry>(json!({"command": "a", "matcher": "x"})).is_err()
        );
    }

    #[test]
    fn project_entries_come_after_the_users() {
        let mut user: HooksSettings =
            serde_json::from_value(json!({"run_end": [{"command": "u"}]})).unwrap();
        let project: HooksSettings =
            serde_json::from_value(json!({"run_end": [{"command": "p"}]})).unwrap();
        user.extend_with(project, HookLevel::Project);
        let got: Vec<_> = user
            .entries()
            .map(|(e, h)| (e, h.command.as_str(), h.level))
            .collect();
        assert_eq!(
            got,
            vec![
                ("run_end", "u", HookLevel::User),
                ("run_end", "p", HookLevel::Project)
            ]
        );
    }
}
