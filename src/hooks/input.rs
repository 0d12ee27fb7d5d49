//! The JSON a hook reads on stdin (pure). Our names first, then Claude Code's for the same facts,
//! so a hook written for Claude Code's `PreToolUse` / `PostToolUse` reads what it expects:
//!
//! | ours | Claude Code's |
//! |---|---|
//! | `event` (`pre_tool_call`, ...) | `hook_event_name` (`PreToolUse`, `PostToolUse`, `SessionStart`, `Stop`, `Notification`) |
//! | `tool` | `tool_name` |
//! | `arguments` | `tool_input` |
//! | `call_id` | `tool_use_id` |
//! | `run_id` | `session_id` |
//! | `project` | `cwd` |
//! | `result` (post: the model's text), `status` | `tool_response` |

use std::path::Path;

use serde_json::{Value, json};

/// Claude Code's name for one of our events.
pub fn claude_event_name(event: &str) -> &'static str {
    match event {
        "pre_tool_call" => "PreToolUse",
        "post_tool_call" => "PostToolUse",
        "run_start" => "SessionStart",
        "run_end" => "Stop",
        "waiting_for_person" => "Notification",
        _ => "",
    }
}

/// The facts common to every event.
pub fn base(event: &str, run_id: &str, project: &Path) -> serde_json::Map<String, Value> {
    let project = project.display().to_string();
    let v = json!({
        "event": event,
        "run_id": run_id,
        "project": project,
        "hook_event_name": claude_event_name(event),
        "session_id": run_id,
        "cwd": project,
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// The input of a tool event; `result`: the call's status and model text (post only).
pub fn tool_call(
    event: &str,
    run_id: &str,
    project: &Path,
    tool: &str,
    arguments: &Value,
    call_id: &str,
    result: Option<(&str, &str)>,
) -> Value {
    let mut m = base(event, run_id, project);
    m.insert("tool".into(), json!(tool));
    m.insert("arguments".into(), arguments.clone());
    m.insert("call_id".into(), json!(call_id));
    m.insert("tool_name".into(), json!(tool));
    m.insert("tool_input".into(), arguments.clone());
    m.insert("tool_use_id".into(), json!(call_id));
    if let Some((status, text)) = result {
        m.insert("status".into(), json!(status));
        m.insert("result".into(), json!(text));
        m.insert(
            "tool_response".into(),
            json!({"status": status, "text": text}),
        );
    }
    Value::Object(m)
}

/// The input of a run event, with its own facts (`status`, `message`, ...) added.
pub fn run_event(event: &str, run_id: &str, project: &Path, extra: Value) -> Value {
    let mut m = base(event, run_id, project);
    if let Value::Object(extra) = extra {
        m.extend(extra);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pre_call_carries_ours_and_claude_codes_names() {
        let v = tool_call(
            "pre_tool_call",
            "run_1",
            Path::new("/p"),
            "execute",
            &json!({"command": "ls"}),
            "run_1:c1",
            None,
        );
        assert_eq!(v["tool"], "execute");
        assert_eq!(v["tool_name"], "execute");
        assert_eq!(v["tool_input"]["command"], "ls");
        assert_eq!(v["arguments"], v["tool_input"]);
        assert_eq!(v["hook_event_name"], "PreToolUse");
        assert_eq!(v["session_id"], "run_1");
        assert_eq!(v["cwd"], "/p");
        assert_eq!(v["project"], "/p");
        assert_eq!(v["call_id"], "run_1:c1");
        assert!(v.get("result").is_none());
    }
}
