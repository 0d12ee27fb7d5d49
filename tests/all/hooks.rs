//! Issue 25, hooks: the person's commands around tool calls and runs (`docs/hooks.md`), through
//! the real `aibuddy run` against the protocol-checking fake provider: a `pre_tool_call` hook
//! blocking with exit 2 (the model reads its stderr), `ask` making the person confirm, `allow`
//! not skipping a confirmation, a `post_tool_call` note, `run_start` / `run_end`, a project's
//! hooks only once trusted (and again untrusted when their script changes), and a timeout that
//! kills the hook's process group without blocking.

use crate::support;

use support::cli_run::CliRun;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::{Value, json};

const K: ProviderKind = ProviderKind::Anthropic;

/// A CLI run with hooks; `side`, outside the project, holds hook scripts and what they write.
struct Fx {
    run: CliRun,
    side: PathBuf,
}

impl std::ops::Deref for Fx {
    type Target = CliRun;
    fn deref(&self) -> &CliRun {
        &self.run
    }
}

/// A script in the side folder; returns the command running it.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    format!("sh {}", p.display())
}

async fn fx(hooks: impl Fn(&Path) -> Value) -> Fx {
    fx_on(K, hooks).await
}

async fn fx_on(kind: ProviderKind, hooks: impl Fn(&Path) -> Value) -> Fx {
    let run = CliRun::start(kind).await;
    let side = run.base.join("side");
    std::fs::create_dir_all(&side).unwrap();
    run.user_settings(json!({ "hooks": hooks(&side) }));
    Fx { run, side }
}

impl Fx {
    /// One call of `tool`, then a final answer; the run's events.
    async fn one_call(&self, id: &str, tool: &str, input: Value, extra: &[&str]) -> Vec<Value> {
        let k = self.kind;
        self.server
            .push(Turn::text("Calling.").call(id, tool, input).reply(k));
        self.server.push(Turn::text("Done.").reply(k));
        let mut args = vec!["run", "do it", "--json"];
        args.extend_from_slice(extra);
        let (code, ev, err) = self.events(&args).await;
        assert_eq!(code, 0, "{err}");
        self.server.assert_clean();
        ev
    }

    async fn show(&self, call_id: &str) -> Value {
        let (code, out, err) = self.output(&["show", call_id, "--json"]).await;
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    }
}

fn result(ev: &[Value]) -> &Value {
    ev.iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result: {ev:?}"))
}

fn stored_id(ev: &[Value]) -> String {
    result(ev)["tool_call_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_hook_exiting_2_blocks_the_call_and_the_model_reads_why() {
    let guard = |side: &Path| {
        let cmd = script(
            side,
            "guard.sh",
            &format!(
                "cat > {}/input.json\necho 'secrets stay unread' >&2\nexit 2",
                side.display()
            ),
        );
        json!({"pre_tool_call": [{"match": "read_*|grep", "command": cmd}]})
    };
    let f = fx(guard).await;
    std::fs::write(f.project.join("secret.txt"), "kiwi").unwrap();
    let ev = f
        .one_call("toolu_b1", "read_file", json!({"path": "secret.txt"}), &[])
        .await;
    let r = result(&ev);
    assert_eq!(r["status"], "rejected", "{r}");
    assert_eq!(r["stage"], "Authorization", "{r}");
    assert!(r["model"].as_str().unwrap().contains("secrets stay unread"));
    assert!(!r["model"].as_str().unwrap().contains("kiwi"));
    assert_eq!(r["hooks"][0]["outcome"], "blocked");
    assert_eq!(r["hooks"][0]["exit_code"], 2);
    let second = f.server.requests()[1].body.to_string();
    assert!(
        second.contains("secrets stay unread"),
        "the model reads the reason"
    );
    // The hook read the call on stdin, with Claude Code's names too.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(f.side.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["event"], "pre_tool_call");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool"], "read_file");
    assert_eq!(input["tool_name"], "read_file");
    assert_eq!(input["tool_input"]["path"], "secret.txt");
    assert_eq!(input["arguments"]["path"], "secret.txt");
    assert_eq!(input["run_id"], ev[0]["run_id"]);
    assert_eq!(input["session_id"], ev[0]["run_id"]);
    assert_eq!(input["cwd"], f.project.display().to_string());
    assert_eq!(input["call_id"], stored_id(&ev));
    // Kept with the call.
    let shown = f.show(&stored_id(&ev)).await;
    assert_eq!(shown["hooks"][0]["outcome"], "blocked", "{shown}");
    assert_eq!(shown["hooks"][0]["reason"], "secrets stay unread");
    assert!(shown["hooks"][0]["duration_ms"].as_u64().is_some());
    let (code, out, err) = f.output(&["history", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool_call_id"] == stored_id(&ev).as_str())
        .unwrap();
    assert_eq!(row["hooks"][0]["outcome"], "blocked", "{row}");
    // A tool the match does not name runs as before (a fresh provider: it checks replays).
    let f = fx(guard).await;
    std::fs::write(f.project.join("a.txt"), "x").unwrap();
    let ev = f
        .one_call("toolu_b2", "ls", json!({"path": "."}), &[])
        .await;
    assert_eq!(result(&ev)["status"], "ok");
    assert_eq!(result(&ev)["hooks"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_ask_makes_the_person_confirm_a_call_that_would_run_without_asking() {
    let asks = |side: &Path| {
        let cmd = script(
            side,
            "ask.sh",
            r#"echo '{"decision": "ask", "reason": "look at this read first"}'"#,
        );
        json!({"pre_tool_call": [{"match": "read_file", "command": cmd}]})
    };
    let f = fx(asks).await;
    std::fs::write(f.project.join("a.txt"), "apple").unwrap();
    // No terminal and no --yes: a confirmation is rejected.
    let ev = f
        .one_call("toolu_a1", "read_file", json!({"path": "a.txt"}), &[])
        .await;
    let confirm = ev
        .iter()
        .find(|e| e["type"] == "confirm_request")
        .expect("the person was asked");
    assert!(
        confirm.to_string().contains("look at this read first"),
        "{confirm}"
    );
    assert_eq!(result(&ev)["status"], "rejected");
    assert!(!result(&ev)["model"].as_str().unwrap().contains("apple"));
    // Approved (--yes): it runs.
    let f = fx(asks).await;
    std::fs::write(f.project.join("a.txt"), "apple").unwrap();
    let ev = f
        .one_call(
            "toolu_a2",
            "read_file",
            json!({"path": "a.txt"}),
            &["--yes"],
        )
        .await;
    assert_eq!(result(&ev)["status"], "ok");
    assert!(result(&ev)["model"].as_str().unwrap().contains("apple"));
    assert_eq!(result(&ev)["hooks"][0]["decision"], "ask");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_never_skips_a_confirmation_the_mode_requires() {
    let f = fx(|side| {
        let cmd = script(side, "allow.sh", r#"echo '{"decision": "allow"}'"#);
        let waiting = script(
            side,
            "waiting.sh",
            &format!("cat > {}/waiting.json", side.display()),
        );
        json!({
            "pre_tool_call": [{"match": "write_file", "command": cmd}],
            "waiting_for_person": [{"command": waiting}],
        })
    })
    .await;
    let ev = f
        .one_call(
            "toolu_w1",
            "write_file",
            json!({"path": "out.txt", "content": "x"}),
            &[],
        )
        .await;
    assert!(ev.iter().any(|e| e["type"] == "confirm_request"), "asked");
    assert_eq!(result(&ev)["status"], "rejected");
    assert_eq!(result(&ev)["hooks"][0]["decision"], "allow");
    assert!(!f.project.join("out.txt").exists());
    // The confirmation started the `waiting_for_person` hooks.
    let waiting: Value =
        serde_json::from_str(&std::fs::read_to_string(f.side.join("waiting.json")).unwrap())
            .unwrap();
    assert_eq!(waiting["event"], "waiting_for_person");
    assert_eq!(waiting["hook_event_name"], "Notification");
    assert_eq!(waiting["waiting_for"], "confirmation");
    assert_eq!(waiting["call_id"], stored_id(&ev));
    let hook = ev
        .iter()
        .find(|e| e["type"] == "hook")
        .expect("a hook event");
    assert_eq!(hook["hook"]["event"], "waiting_for_person");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_hook_adds_a_note_to_the_models_text() {
    let f = fx(|side| {
        let cmd = script(
            side,
            "post.sh",
            &format!(
                "cat > {}/post.json\necho '{{\"note\": \"linted: 0 warnings\"}}'",
                side.display()
            ),
        );
        json!({"post_tool_call": [{"match": "read_file", "command": cmd}]})
    })
    .await;
    std::fs::write(f.project.join("a.txt"), "pear").unwrap();
    let ev = f
        .one_call("toolu_p1", "read_file", json!({"path": "a.txt"}), &[])
        .await;
    let model = result(&ev)["model"].as_str().unwrap();
    assert!(
        model.contains("pear") && model.contains("linted: 0 warnings"),
        "{model}"
    );
    let second = f.server.requests()[1].body.to_string();
    assert!(
        second.contains("linted: 0 warnings"),
        "the model reads the note"
    );
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(f.side.join("post.json")).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert!(input["result"].as_str().unwrap().contains("pear"));
    let shown = f.show(&stored_id(&ev)).await;
    assert_eq!(shown["hooks"][0]["note"], "linted: 0 warnings");
    // `runs show` prints the hook run after the call's result.
    let run_id = ev[0]["run_id"].as_str().unwrap();
    let (code, text, err) = f.output(&["runs", "show", run_id]).await;
    assert_eq!(code, 0, "{err}");
    let result_at = text.find("read_file ok]").expect(&text);
    let hook_at = text.find("[hook] post_tool_call").expect(&text);
    assert!(
        hook_at > result_at && text.contains("note: linted: 0 warnings"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_start_and_run_end_hooks_run_and_are_reported() {
    let f = fx(|side| {
        let log = side.join("log");
        let start = script(
            side,
            "start.sh",
            &format!("echo start >> {}", log.display()),
        );
        let end = script(
            side,
            "end.sh",
            &format!(
                "cat > {}/end.json\necho end >> {}",
                side.display(),
                log.display()
            ),
        );
        json!({"run_start": [{"command": start}], "run_end": [{"command": end}]})
    })
    .await;
    f.server.push(Turn::text("Hi.").reply(K));
    let (code, ev, err) = f.events(&["run", "hello", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(f.side.join("log")).unwrap(),
        "start\nend\n"
    );
    let hooks: Vec<&Value> = ev.iter().filter(|e| e["type"] == "hook").collect();
    assert_eq!(hooks.len(), 2, "{ev:?}");
    assert_eq!(hooks[0]["hook"]["event"], "run_start");
    assert_eq!(hooks[1]["hook"]["event"], "run_end");
    let end: Value =
        serde_json::from_str(&std::fs::read_to_string(f.side.join("end.json")).unwrap()).unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["run_id"], ev[0]["run_id"]);
    // `runs show`: run_start before the first message, run_end after the last.
    let run_id = ev[0]["run_id"].as_str().unwrap();
    let (code, text, err) = f.output(&["runs", "show", run_id]).await;
    assert_eq!(code, 0, "{err}");
    let start_at = text.find("[hook] run_start").expect(&text);
    let first_message = text.find("\n── ").expect(&text);
    let end_at = text.find("[hook] run_end").expect(&text);
    let answer_at = text.find("Hi.").expect(&text);
    assert!(start_at < first_message && end_at > answer_at, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_hook_runs_only_once_trusted_confined_and_stops_when_its_script_changes() {
    let f = fx(|_| json!({})).await;
    // The hook's marker is in the project: a project hook runs confined, as a command would.
    let marker = f.project.join("ran.txt");
    let escape = f.side.join("escape");
    std::fs::create_dir_all(f.project.join(".aibuddy")).unwrap();
    // What it runs in turn is project content a command may have rewritten: it must gain nothing
    // (no write outside the project, no data directory, no key).
    std::fs::write(
        f.project.join("hook.sh"),
        format!(
            "echo ran >> ran.txt\n\
             echo out > {} 2>/dev/null\n\
             cat {} > leak.txt 2>/dev/null\n\
             echo \"key=$ANTHROPIC_API_KEY\" > key.txt\n",
            escape.display(),
            f.data.join("settings.json").display()
        ),
    )
    .unwrap();
    std::fs::write(
        f.project.join(".aibuddy/settings.json"),
        json!({"hooks": {"run_start": [{"command": "sh hook.sh"}]}}).to_string(),
    )
    .unwrap();
    let hello = |f: &Fx| f.server.push(Turn::text("Hi.").reply(K));
    hello(&f);
    let (code, _, err) = f.events(&["run", "hello", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists(), "an untrusted project's hook ran");
    // Trusting shows the hook and its pinned script.
    let (code, out, err) = f.output(&["trust"]).await;
    assert!(
        out.contains("hook run_start[0]") && out.contains("hook.sh: file sha256:"),
        "{code} {out} {err}"
    );
    let (code, _, err) = f.output(&["trust", "--yes"]).await;
    assert_eq!(code, 0, "{err}");
    hello(&f);
    let (code, ev, err) = f.events(&["run", "hello", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
    let hook = ev.iter().find(|e| e["type"] == "hook").unwrap();
    assert_eq!(hook["hook"]["level"], "project");
    assert!(!escape.exists(), "a project hook wrote outside the project");
    assert_eq!(
        std::fs::read_to_string(f.project.join("leak.txt")).unwrap(),
        "",
        "a project hook read the data directory"
    );
    assert_eq!(
        std::fs::read_to_string(f.project.join("key.txt")).unwrap(),
        "key=\n",
        "a project hook saw the provider key"
    );
    // A command rewrites the pinned script: the project is untrusted again, the hook not run.
    std::fs::write(f.project.join("hook.sh"), "echo changed >> ran.txt\n").unwrap();
    hello(&f);
    let (code, _, err) = f.events(&["run", "hello", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_read_only_mode_a_project_hook_cannot_write_the_project() {
    let f = fx(|_| json!({})).await;
    std::fs::create_dir_all(f.project.join(".aibuddy")).unwrap();
    std::fs::write(
        f.project.join("hook.sh"),
        "echo ran >> ran.txt || echo refused > /dev/stderr\n",
    )
    .unwrap();
    std::fs::write(
        f.project.join(".aibuddy/settings.json"),
        json!({"hooks": {"run_start": [{"command": "sh hook.sh"}]}}).to_string(),
    )
    .unwrap();
    let (code, _, err) = f.output(&["trust", "--yes"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = f.output(&["trust", "--approvals", "read-only"]).await;
    assert_eq!(code, 0, "{err}");
    f.server.push(Turn::text("Hi.").reply(K));
    let (code, ev, err) = f.events(&["run", "hello", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let hook = ev
        .iter()
        .find(|e| e["type"] == "hook")
        .expect("the hook ran");
    assert!(
        hook["hook"]["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("refused"),
        "{hook}"
    );
    assert!(
        !f.project.join("ran.txt").exists(),
        "a read-only project was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_hook_past_its_timeout_is_killed_with_its_group_and_does_not_block() {
    let f = fx(|side| {
        let cmd = script(
            side,
            "slow.sh",
            &format!("sleep 30 &\necho $! > {}/pid\nwait", side.display()),
        );
        json!({"pre_tool_call": [{"match": "read_file", "command": cmd, "timeout_secs": 1}]})
    })
    .await;
    std::fs::write(f.project.join("a.txt"), "plum").unwrap();
    let t = Instant::now();
    let ev = f
        .one_call("toolu_t1", "read_file", json!({"path": "a.txt"}), &[])
        .await;
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    let r = result(&ev);
    assert_eq!(r["status"], "ok", "a timed-out hook does not block: {r}");
    assert!(r["model"].as_str().unwrap().contains("plum"));
    assert_eq!(r["hooks"][0]["outcome"], "timed_out");
    assert!(
        r["hooks"][0]["problem"]
            .as_str()
            .unwrap()
            .contains("timed out after 1 s")
    );
    let pid: i32 = std::fs::read_to_string(f.side.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The hook's background `sleep` went with its group.
    let gone = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
    assert!(gone, "the hook's child {pid} still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_call_reads_the_same_on_every_route() {
    for kind in [
        ProviderKind::Anthropic,
        ProviderKind::OpenAiResponses,
        ProviderKind::OpenAiChat,
    ] {
        let f = fx_on(kind, |side| {
            let cmd = script(
                side,
                "guard.sh",
                "echo 'not on this route either' >&2\nexit 2",
            );
            json!({"pre_tool_call": [{"match": "read_file", "command": cmd}]})
        })
        .await;
        std::fs::write(f.project.join("a.txt"), "kumquat").unwrap();
        let ev = f
            .one_call("call_r1", "read_file", json!({"path": "a.txt"}), &[])
            .await;
        let r = result(&ev);
        assert_eq!(r["status"], "rejected", "{kind:?}: {r}");
        assert_eq!(r["stage"], "Authorization", "{kind:?}");
        let second = f.server.requests()[1].body.to_string();
        assert!(
            second.contains("not on this route either") && !second.contains("kumquat"),
            "{kind:?}: {second}"
        );
    }
}
