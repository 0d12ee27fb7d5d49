//! What an `execute` call's result becomes (pure): the raw value persisted for the call, the
//! network lines, the early-end error, the client projection and the model text's trim.

use super::*;

/// The raw value persisted for a call: the outcome's facts and the model text built from it.
/// `call_id` is the stored id the output is recoverable by (`view_tool_call`), named in the
/// model text when its middle was cut.
pub fn raw_value(
    args: &ExecArgs,
    req: &ExecRequest,
    outcome: &ExecOutcome,
    call_id: &str,
) -> Value {
    let (exit_code, signal) = match outcome.termination {
        Termination::Exited { code } => (Some(code), None),
        Termination::Signaled { signal } => (None, Some(signal)),
    };
    let mut model = model_text(outcome);
    if model.omitted_bytes > 0 {
        // The recovery line fits inside the cap: the output gives up room for it.
        model = aibuddy_sandbox::aibuddy_exec::model_text_with_cap(
            outcome,
            aibuddy_sandbox::aibuddy_exec::MODEL_CHAR_CAP - RECOVERY_RESERVE,
        );
    }
    let mut model_text = model.text;
    if model.omitted_bytes > 0 {
        model_text.push_str(&recovery_line(
            call_id,
            model.omitted_from,
            model.omitted_bytes,
            outcome.spool.as_ref().map(|s| s.written_bytes),
        ));
    }
    if let Some(lines) = network_lines(outcome) {
        model_text.push_str(&lines);
    }
    if let Some(line) = sandbox_line(outcome) {
        model_text.push_str(&line);
    }
    json!({
        "command": args.command,
        "description": args.description,
        "cwd": req.cwd,
        "exit_code": exit_code,
        "signal": signal,
        "duration_ms": outcome.duration.as_millis() as u64,
        "timeout_ms": req.timeout.as_millis() as u64,
        "timed_out": outcome.timed_out,
        "cancelled": outcome.cancelled,
        "killed_leftovers": outcome.killed_leftovers,
        "stdout_bytes": outcome.stdout.total_bytes,
        "stderr_bytes": outcome.stderr.total_bytes,
        // Bytes the model text leaves out (capture gap plus the character cap); the capture gap
        // alone is kept as `capture_omitted_bytes`.
        "omitted_middle_bytes": model.omitted_bytes,
        "capture_omitted_bytes": outcome.omitted_middle_bytes,
        "spool": outcome.spool,
        "confinement": outcome.confinement,
        "confinement_label": outcome.confinement.label(),
        "writable_roots": req.writable_roots,
        "network_allowed": req.network_allowed,
        "network": outcome.network,
        "env_dropped": outcome.env_dropped,
        // Protected paths the command created (removed after it) or changed (restored after it,
        // Landlock-only path).
        "removed_protected": outcome.protected.removed,
        "restored_protected": outcome.protected.restored,
        "unguarded_protected": outcome.protected.unguarded,
        // A container with `project: "sync"`: what was copied in and brought back, and refused.
        "sync": outcome.sync,
        "model": model_text,
    })
}

/// Characters of the model text kept for [`recovery_line`] (it is at most ~400 with a 128-byte
/// call id and 20-digit numbers).
const RECOVERY_RESERVE: usize = 500;

/// The model's line saying how to read the bytes its text leaves out: `view_tool_call` with the
/// call id and the byte range (`offset`, `limit`, paged with `next_offset`). `stored` is how many
/// bytes the spool kept (it is capped): omitted bytes beyond it are said to be lost. Pure.
pub fn recovery_line(call_id: &str, from: u64, omitted: u64, stored: Option<u64>) -> String {
    let to = from + omitted;
    let limit = omitted.min(crate::tools::view_tool_call::MAX_LIMIT);
    let stored_note = match stored {
        None => " (this call kept no spool: the omitted bytes are not stored)".to_string(),
        Some(n) if n < to => {
            format!(" (the stored output ends at byte {n}: later bytes were not kept)")
        }
        Some(_) => String::new(),
    };
    format!(
        "\nomitted: output bytes {from}..{to} are not shown{stored_note}; read them with \
         view_tool_call {{\"tool_call_id\": \"{call_id}\", \"offset\": {from}, \"limit\": {limit}}} \
         and page on with its next_offset (up to {} bytes a page), or narrow the command",
        crate::tools::view_tool_call::MAX_LIMIT
    )
}

/// The model's line saying where a command ran when it was not this machine (a container: its
/// paths are the container's; its network was the proxy's or none). `None` for a local run. Pure.
pub fn sandbox_line(outcome: &ExecOutcome) -> Option<String> {
    use aibuddy_common::term::line as safe;
    match &outcome.confinement {
        aibuddy_sandbox::aibuddy_exec::Confinement::Container {
            image, container, ..
        } => Some(format!(
            "\nsandbox: ran in container {} (image `{}`), {}{}",
            safe(container),
            safe(image),
            if outcome
                .network
                .as_ref()
                .is_some_and(|n| n.mode.starts_with("proxy"))
            {
                "network only through the allow-list proxy"
            } else {
                "without network"
            },
            // Names come from the container: escaped as one line.
            outcome
                .sync
                .as_ref()
                .map(|r| format!("\n{}", safe(&r.summary())))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

/// The key of an `execute` client projection that describes where the command ran (the
/// stored projection's `$.confinement_detail`, which the store's rows carry on their own).
pub const CONFINEMENT_DETAIL: &str = "confinement_detail";

/// Where a finished `execute` call ran when it was not this machine, from its client projection
/// (`confinement_detail`): `container 0123456789ab (image `debian:12`) on unix:///…`; `None` for
/// a local run or another tool's projection. One line, terminal-safe. Pure.
pub fn sandbox_of(client: &Value) -> Option<String> {
    sandbox_of_detail(client.get(CONFINEMENT_DETAIL)?)
}

/// Where a call of tool `tool` ran when it was not this machine, from its client projection's
/// `confinement_detail` alone: only an `execute` call names one (another tool's projection, an
/// MCP server's included, says nothing about where it ran, whatever it holds). The one rule of
/// the live card, a reopened run's card and the History rows and detail. Pure.
pub fn call_sandbox(tool: &str, confinement_detail: &Value) -> Option<String> {
    (tool == super::NAME)
        .then(|| sandbox_of_detail(confinement_detail))
        .flatten()
}

/// [`call_sandbox`] of a stored call, from the store's `confinement_detail` JSON text (what its
/// history rows and linked results carry); `None` without one or for text that is not JSON. Pure.
pub fn stored_call_sandbox(tool: &str, confinement_detail: Option<&str>) -> Option<String> {
    let detail: Value = serde_json::from_str(confinement_detail?).ok()?;
    call_sandbox(tool, &detail)
}

fn sandbox_of_detail(c: &Value) -> Option<String> {
    use aibuddy_common::term::line as safe;
    if c.get("kind")?.as_str()? != "container" {
        return None;
    }
    let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
    let which = match text("container") {
        "" => "a container".to_string(),
        id => format!("container {}", safe(id)),
    };
    let synced = if c.get("synced").and_then(Value::as_bool) == Some(true) {
        ", project synced (copied in, changes brought back)"
    } else {
        ""
    };
    Some(format!(
        "{which} (image `{}`) on {}{synced}",
        safe(text("image")),
        safe(text("engine"))
    ))
}

/// Refused hosts shown to the model at most.
const MAX_REFUSAL_LINES: usize = 20;

/// The model's lines about refused connections: which host, why, and how the person can allow
/// it (`None` when nothing was refused). Host names come from the command: escaped as one line.
pub fn network_lines(outcome: &ExecOutcome) -> Option<String> {
    use aibuddy_common::term::line as safe;
    let net = outcome.network.as_ref()?;
    let refused: Vec<_> = net.refused().collect();
    if refused.is_empty() {
        return None;
    }
    let mut out = String::new();
    for e in refused.iter().take(MAX_REFUSAL_LINES) {
        let host = safe(&e.host);
        let reason = safe(e.reason.as_deref().unwrap_or("refused"));
        let how = if e.rule.as_deref().is_some_and(|r| r.starts_with("deny: ")) {
            "the person can remove the entry from exec.network.deny in settings.json"
        } else {
            "the person can add it to exec.network.allow in settings.json"
        };
        let times = if e.connections > 1 {
            format!(", {} connections", e.connections)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\nnetwork: refused connection to {host}:{} ({reason}{times}); {how}",
            e.port
        ));
    }
    if refused.len() > MAX_REFUSAL_LINES || net.events_dropped > 0 {
        out.push_str(&format!(
            "\nnetwork: ... {} more refused or unrecorded hosts",
            refused.len().saturating_sub(MAX_REFUSAL_LINES) as u64 + net.events_dropped
        ));
    }
    out.push('\n');
    Some(out)
}

/// A cancelled or timed-out command as an Execution-stage error (`cancelled`, `timed_out`) that
/// keeps what it produced: the partial model text, the client projection and the spool.
pub fn ended_early(req: &ExecRequest, outcome: &ExecOutcome, value: &Value) -> Option<ToolError> {
    let (code, message) = if outcome.cancelled {
        (
            "cancelled",
            format!(
                "the command was stopped after {} ms; its process tree was ended. Output so far:",
                outcome.duration.as_millis()
            ),
        )
    } else if outcome.timed_out {
        (
            "timed_out",
            format!(
                "the command timed out after {} ms (SIGTERM, then SIGKILL after a grace); its process \
                 tree was ended. Output so far:",
                req.timeout.as_millis()
            ),
        )
    } else {
        return None;
    };
    let partial = value["model"].as_str().unwrap_or_default().to_string();
    Some(ToolError::execution(code, message).with_details(json!({
        "partial_model": partial,
        "client": client_projection(value),
        "spool": outcome.spool,
    })))
}

/// Display fields for the UI and the CLI.
pub fn client_projection(raw: &Value) -> Value {
    let field = |k: &str| raw.get(k).cloned().unwrap_or(Value::Null);
    let omitted = raw["omitted_middle_bytes"].as_u64().unwrap_or(0);
    let spool_omitted = raw["spool"]["omitted_bytes"].as_u64().unwrap_or(0);
    json!({
        "command": field("command"),
        "description": field("description"),
        "cwd": field("cwd"),
        "exit_code": field("exit_code"),
        "signal": field("signal"),
        "duration_ms": field("duration_ms"),
        "timed_out": field("timed_out"),
        "cancelled": field("cancelled"),
        "cut": omitted > 0,
        "omitted_middle_bytes": omitted,
        "stdout_bytes": field("stdout_bytes"),
        "stderr_bytes": field("stderr_bytes"),
        "spool_cut": spool_omitted > 0,
        "confinement": field("confinement_label"),
        "confined": matches!(
            raw["confinement"]["kind"].as_str(),
            Some("landlock" | "namespaces" | "container")
        ),
        "confinement_detail": field("confinement"), // CONFINEMENT_DETAIL
        "env_dropped": field("env_dropped"),
        "network": field("network"),
        "removed_protected": field("removed_protected"),
        "restored_protected": field("restored_protected"),
        "unguarded_protected": field("unguarded_protected"),
        "sync": field("sync"),
    })
}

/// Structural trim of the model text to about `max_chars`: the header lines stay, the output body
/// keeps its head and tail.
pub fn trim_model(model: &str, max_chars: usize) -> String {
    if model.chars().count() <= max_chars {
        return model.to_string();
    }
    let (header, body) = match model.find("--- output ---\n") {
        Some(i) => model.split_at(i),
        None => ("", model),
    };
    let room = max_chars.saturating_sub(header.chars().count() + 40);
    let chars: Vec<char> = body.chars().collect();
    let half = room / 2;
    let head: String = chars.iter().take(half).collect();
    let tail: String = chars[chars.len().saturating_sub(half)..].iter().collect();
    let cut = chars.len().saturating_sub(2 * half);
    format!("{header}{head}\n[... {cut} more characters trimmed ...]\n{tail}")
}

// ------------------------------------------------------------------ execution
