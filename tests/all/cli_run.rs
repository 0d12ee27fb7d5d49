//! Issue 11, the CLI of agent runs through the real `aibuddy` binary: `aibuddy run` against the
//! scripted fake provider (which checks the protocol on every request), `aibuddy runs`, `runs
//! show`, `--continue`, and settings `providers` gated by the project's trust.

use crate::support;

use std::path::PathBuf;

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};

const KEY: &str = "sk-test-cli-run-5f1e";

struct Fx {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    data: PathBuf,
    server: FakeServer,
}

async fn fx(user_settings: impl Fn(&FakeServer) -> Value) -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let project = base.join("proj");
    let data = base.join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let server = FakeServer::start().await.unwrap();
    std::fs::write(
        data.join("settings.json"),
        user_settings(&server).to_string(),
    )
    .unwrap();
    Fx {
        _tmp: tmp,
        project,
        data,
        server,
    }
}

/// The user level names the anthropic entry; its base URL comes from `ANTHROPIC_BASE_URL`.
async fn anthropic_fx() -> Fx {
    let f = fx(|_| json!({"providers": {"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"}}})).await;
    f.server.expect_key(KEY);
    f
}

/// A local Chat Completions entry whose base URL is in the user-level settings.
async fn chat_fx() -> Fx {
    fx(|s| {
        json!({"providers": {"default": "local", "local": {
            "kind": "openai-chat", "base_url": s.openai_base(), "model": "qwen3:8b"}}})
    })
    .await
}

impl Fx {
    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = support::aibuddy_cmd(&self.project, &self.data);
        cmd.args(args)
            .env("ANTHROPIC_API_KEY", KEY)
            .env("ANTHROPIC_BASE_URL", self.server.anthropic_base())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env("AIBUDDY_MCP_CONNECT_WAIT_MS", "2000");
        let out = tokio::process::Command::from(cmd).output().await.unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(!o.contains(KEY) && !e.contains(KEY), "the key was printed");
        (out.status.code().unwrap_or(-1), o, e)
    }

    async fn events(&self, args: &[&str]) -> (i32, Vec<Value>, String) {
        let (code, out, err) = self.run(args).await;
        let events = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{err}")))
            .collect();
        (code, events, err)
    }
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}

fn finished(events: &[Value]) -> &Value {
    let last = events.last().expect("events");
    assert_eq!(last["type"], "run_finished", "{events:?}");
    last
}

async fn text_only(f: Fx, kind: ProviderKind) {
    f.server
        .push(Turn::text("Hello from the model.").reply(kind));
    let (code, ev, err) = f.events(&["run", "say hello", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(types(&ev).first(), Some(&"run_started"));
    assert_eq!(text(&ev), "Hello from the model.");
    assert_eq!(finished(&ev)["status"], "completed");
    assert_eq!(finished(&ev)["run_id"], ev[0]["run_id"]);
    assert_eq!(f.server.requests().len(), 1);
    f.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_text_only_anthropic() {
    let f = anthropic_fx().await;
    text_only(f, ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_text_only_openai_chat() {
    let f = chat_fx().await;
    text_only(f, ProviderKind::OpenAiChat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_read_file_call_then_runs_lists_and_shows_it() {
    let f = anthropic_fx().await;
    std::fs::write(f.project.join("notes.txt"), "the secret word is kiwi\n").unwrap();
    let k = ProviderKind::Anthropic;
    f.server.push(
        Turn::text("Reading it.")
            .call("toolu_r1", "read_file", json!({"path": "notes.txt"}))
            .reply(k),
    );
    f.server.push(Turn::text("The word is kiwi.").reply(k));
    let (code, ev, err) = f.events(&["run", "what is the word?", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let t = types(&ev);
    let call = t.iter().position(|x| *x == "tool_call").expect("tool_call");
    let result = t
        .iter()
        .position(|x| *x == "tool_result")
        .expect("tool_result");
    assert!(call < result, "{t:?}");
    assert_eq!(ev[call]["tool"], "read_file");
    assert_eq!(ev[result]["status"], "ok");
    assert!(ev[result]["model"].as_str().unwrap().contains("kiwi"));
    assert_eq!(finished(&ev)["status"], "completed");
    let second = &f.server.requests()[1].body.to_string();
    assert!(second.contains("kiwi"), "the result reaches the model");
    f.server.assert_clean();
    let run_id = ev[0]["run_id"].as_str().unwrap().to_string();

    let (code, out, err) = f.run(&["runs", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["run_id"], run_id.as_str());
    assert_eq!(rows[0]["provider"], "anthropic");
    assert_eq!(rows[0]["model"], "claude-sonnet-4-6");
    assert_eq!(rows[0]["status"], "completed");
    assert_eq!(rows[0]["steps"], 2);
    assert_eq!(rows[0]["tool_calls"], 1);

    let (code, out, err) = f.run(&["runs", "show", &run_id]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("what is the word?"), "{out}");
    assert!(out.contains("read_file"), "{out}");
    assert!(out.contains("The word is kiwi."), "{out}");
    // The assistant's messages read as their text and calls (as in the window), not as JSON.
    assert!(out.contains("[call ") && !out.contains("\"role\""), "{out}");
    // Its one call once, by its stored id.
    assert_eq!(out.matches("[call ").count(), 1, "{out}");
    assert!(out.contains(&format!("[call {run_id}:")), "{out}");
    let (code, out, _) = f.run(&["runs", "show", &run_id, "--json"]).await;
    assert_eq!(code, 0);
    let conv: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(conv["run"]["run_id"], run_id.as_str());
    assert!(conv["messages"].as_array().unwrap().len() >= 4);

    // --continue appends to the same run with a valid protocol.
    f.server.push(Turn::text("Still kiwi.").reply(k));
    let (code, ev, err) = f
        .events(&["run", "--continue", &run_id, "and again?", "--json"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(ev[0]["run_id"], run_id.as_str());
    assert_eq!(text(&ev), "Still kiwi.");
    let third = &f.server.requests()[2].body.to_string();
    assert!(
        third.contains("and again?") && third.contains("kiwi"),
        "{third}"
    );
    f.server.assert_clean();
}

async fn write_run(f: &Fx, id: &str, extra: &[&str]) -> (i32, Vec<Value>) {
    let k = ProviderKind::Anthropic;
    f.server.push(
        Turn::text("Writing.")
            .call(
                id,
                "write_file",
                json!({"path": "out.txt", "content": "written"}),
            )
            .reply(k),
    );
    f.server.push(Turn::text("Done.").reply(k));
    let mut args = vec!["run", "write out.txt", "--json"];
    args.extend_from_slice(extra);
    let (code, ev, err) = f.events(&args).await;
    assert_eq!(code, 0, "{err}");
    f.server.assert_clean();
    (code, ev)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yes_approves_a_write_and_no_terminal_rejects_it() {
    let f = anthropic_fx().await;
    let (_, ev) = write_run(&f, "toolu_w1", &[]).await;
    let r = ev.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(r["status"], "rejected", "{ev:?}");
    assert!(
        !f.project.join("out.txt").exists(),
        "rejected: nothing written"
    );

    // A fresh fake provider: it checks replays against everything it served.
    let f = anthropic_fx().await;
    let (_, ev) = write_run(&f, "toolu_w2", &["--yes"]).await;
    let r = ev.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(r["status"], "ok", "{ev:?}");
    assert_eq!(
        std::fs::read_to_string(f.project.join("out.txt")).unwrap(),
        "written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_output_streams_text_and_a_card() {
    let f = anthropic_fx().await;
    std::fs::write(f.project.join("a.txt"), "x").unwrap();
    let k = ProviderKind::Anthropic;
    f.server.push(
        Turn::text("Look\u{1b}[2J here.")
            .call("toolu_h1", "read_file", json!({"path": "a.txt"}))
            .reply(k),
    );
    f.server.push(Turn::text("Done.").reply(k));
    let (code, out, err) = f.run(&["run", "look"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Look\\e[2J here."), "escaped text: {out}");
    assert!(!out.contains('\u{1b}') && !err.contains('\u{1b}'));
    assert!(err.contains("[tool] read_file a.txt"), "{err}");
    assert!(err.contains(":toolu_h1 ok"), "{err}");
}

/// An answer cut at the output limit or refused says so: a line on stderr, `stop_reason` in the
/// `--json` `run_finished` event and in `runs show`; a finished answer has neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_or_refused_answer_is_flagged() {
    let f = chat_fx().await;
    let k = ProviderKind::OpenAiChat;
    f.server.push(
        Turn::text("The first half of it")
            .stopping("length")
            .reply(k),
    );
    let (code, out, err) = f.run(&["run", "write a lot"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("The first half of it"), "{out}");
    assert!(
        err.contains("the model's answer was cut at its output limit (max_tokens)"),
        "{err}"
    );

    f.server.push(
        Turn::text("I can't help with that.")
            .stopping("content_filter")
            .reply(k),
    );
    let (code, ev, err) = f.events(&["run", "bad", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(finished(&ev)["stop_reason"], "content_filter");
    let run_id = finished(&ev)["run_id"].as_str().unwrap().to_string();
    let (_, shown, _) = f.run(&["runs", "show", &run_id]).await;
    assert!(shown.contains("stop reason: content_filter"), "{shown}");

    f.server.push(Turn::text("Done.").reply(k));
    let (code, ev, err) = f.events(&["run", "hi", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(finished(&ev)["stop_reason"], Value::Null);
    f.server.push(Turn::text("Done again.").reply(k));
    let (code, _, err) = f.run(&["run", "hi again"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("the model"), "{err}");
    f.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_provider_or_a_missing_prompt_is_a_usage_error() {
    let f = anthropic_fx().await;
    let (code, out, err) = f.run(&["run", "hi", "--provider", "nope"]).await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("nope") && err.contains("stage Parameters"),
        "{err}"
    );
    let (code, _, err) = f.run(&["run"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(f.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_names_the_authorization_stage() {
    let f = anthropic_fx().await;
    let mut cmd = support::aibuddy_cmd(&f.project, &f.data);
    cmd.args(["run", "hi"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("ANTHROPIC_BASE_URL", f.server.anthropic_base());
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("stage Authorization"),
        "{err}"
    );
    assert!(f.server.requests().is_empty());
}

/// A project's own `providers` entry could point a keyed provider at its URL: ignored until the
/// project is trusted, with the problem shown by `tools check`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_projects_provider_entry_is_ignored() {
    let f = anthropic_fx().await;
    let evil = FakeServer::start().await.unwrap();
    std::fs::create_dir_all(f.project.join(".aibuddy")).unwrap();
    std::fs::write(
        f.project.join(".aibuddy/settings.json"),
        json!({"providers": {"default": "evil", "evil": {
            "kind": "openai-chat", "base_url": evil.openai_base(), "model": "m"}}})
        .to_string(),
    )
    .unwrap();
    let (_, out, _) = f.run(&["tools", "check", "--json"]).await;
    assert!(
        out.contains("providers.evil") && out.contains("not trusted"),
        "{out}"
    );
    f.server
        .push(Turn::text("From the person's provider.").reply(ProviderKind::Anthropic));
    let (code, ev, err) = f.events(&["run", "hi", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(ev[0]["provider"], "anthropic");
    assert!(
        evil.requests().is_empty(),
        "the project's URL got a request"
    );
    f.server.assert_clean();
}

/// Ctrl-C (SIGINT) while the model's stream stalls ends the run `cancelled` with exit 130, the
/// partial text kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_stalled_run_with_exit_130() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let f = anthropic_fx().await;
    f.server.push(
        Turn::text("Partial answer")
            .stalling()
            .reply(ProviderKind::Anthropic),
    );
    let mut cmd = support::aibuddy_cmd(&f.project, &f.data);
    cmd.args(["run", "hi", "--json"])
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", f.server.anthropic_base())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap().to_string();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<Value> = Vec::new();
    // Wait (generously) for the first text delta: the stream is then stalled mid-step.
    let wait = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&l).unwrap();
            let delta = v["type"] == "text_delta";
            events.push(v);
            if delta {
                return;
            }
        }
    });
    wait.await.expect("a text delta within 60 s");
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    while let Some(l) = lines.next_line().await.unwrap() {
        events.push(serde_json::from_str(&l).unwrap());
    }
    let status = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait())
        .await
        .expect("aibuddy exits after SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(130), "{events:?}");
    assert_eq!(finished(&events)["status"], "cancelled");
    let run_id = events[0]["run_id"].as_str().unwrap().to_string();
    let (_, out, _) = f.run(&["runs", "--json"]).await;
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["run_id"], run_id.as_str());
    assert_eq!(rows[0]["status"], "cancelled");
}

/// `runs show RUN_ID --next-request` prints the exact body the next step sends: a run stopped by
/// `--max-steps 1` after a tool call is shown, then continued, and the body the fake server
/// receives for that step equals the printed one (as JSON values). Keys never appear.
async fn next_request_is_what_is_sent(f: Fx, kind: ProviderKind) {
    std::fs::write(f.project.join("notes.txt"), "the word is fig\n").unwrap();
    f.server.push(
        Turn::text("Reading.")
            .call("call_n1", "read_file", json!({"path": "notes.txt"}))
            .reply(kind),
    );
    let (code, ev, err) = f
        .events(&["run", "what is the word?", "--max-steps", "1", "--json"])
        .await;
    assert_eq!(code, 1, "{err}");
    assert_eq!(finished(&ev)["status"], "max_steps");
    let run_id = ev[0]["run_id"].as_str().unwrap().to_string();

    let (code, out, err) = f.run(&["runs", "show", &run_id, "--next-request"]).await;
    assert_eq!(code, 0, "{err}");
    let printed: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        out.contains("the word is fig"),
        "the stored result is in it: {out}"
    );
    assert!(!out.to_lowercase().contains("authorization") && !out.contains("x-api-key"));

    f.server.push(Turn::text("The word is fig.").reply(kind));
    let (code, ev, err) = f.events(&["run", "--continue", &run_id, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(finished(&ev)["status"], "completed");
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(printed, reqs[1].body, "printed vs sent");
    f.server.assert_clean();

    let (code, _, err) = f
        .run(&["runs", "show", "no-such-run", "--next-request"])
        .await;
    assert_eq!(code, 2, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_show_next_request_is_what_is_sent_anthropic() {
    let f = anthropic_fx().await;
    next_request_is_what_is_sent(f, ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_show_next_request_is_what_is_sent_openai_chat() {
    let f = chat_fx().await;
    next_request_is_what_is_sent(f, ProviderKind::OpenAiChat).await;
}

/// Compaction through the CLI: a tiny `providers.anthropic.context_window` makes the fourth
/// request a summary; `--json` prints a `compaction` event, and `runs show` still lists every
/// original message beside the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_context_window_compacts_and_runs_show_keeps_the_originals() {
    let f = fx(|_| {
        json!({"providers": {"default": "anthropic",
            "anthropic": {"model": "claude-sonnet-4-6", "context_window": 1}}})
    })
    .await;
    f.server.expect_key(KEY);
    f.server
        .summaries_start_with("Summary of the earlier conversation");
    std::fs::write(f.project.join("a.txt"), "apple\n").unwrap();
    let k = ProviderKind::Anthropic;
    for i in 0..3 {
        f.server.push(
            Turn::text(&format!("Reading {i}."))
                .call(
                    &format!("toolu_c{i}"),
                    "read_file",
                    json!({"path": "a.txt"}),
                )
                .reply(k),
        );
    }
    f.server.push(Turn::summary("CLI-SUMMARY-91").reply(k));
    f.server.push(Turn::text("Finished.").reply(k));
    let (code, ev, err) = f.events(&["run", "read a thrice", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let compaction = ev
        .iter()
        .find(|e| e["type"] == "compaction")
        .unwrap_or_else(|| panic!("{ev:?}"));
    assert_eq!(
        (
            compaction["covers_from"].as_i64(),
            compaction["covers_to"].as_i64()
        ),
        (Some(1), Some(3))
    );
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[4].raw_body.contains("CLI-SUMMARY-91"));
    assert!(!reqs[4].raw_body.contains("toolu_c0"));
    f.server.assert_clean();

    let run_id = ev[0]["run_id"].as_str().unwrap().to_string();
    let (code, out, err) = f.run(&["runs", "show", &run_id]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("summary of messages 1..3") && out.contains("CLI-SUMMARY-91"),
        "{out}"
    );
    assert!(
        out.contains("read a thrice") && out.contains("Reading 0."),
        "{out}"
    );
    let (_, out, _) = f.run(&["runs", "show", &run_id, "--json"]).await;
    let conv: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(conv["messages"].as_array().unwrap().len(), 8);
    assert_eq!(conv["summaries"].as_array().unwrap().len(), 1);
}

/// `agent.step_timeout_secs` from the person's settings file bounds `aibuddy run`: a provider
/// trickling a token every 100 ms for a minute ends at the 1 s limit, the run `error` at
/// Execution with the reason, the text streamed so far kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_step_time_limit_ends_a_trickling_run() {
    use aibuddy_provider::testing::Reply;
    let f = fx(|_| {
        json!({"providers": {"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"}},
            "agent": {"step_timeout_secs": 1}})
    })
    .await;
    f.server.expect_key(KEY);
    f.server.push(Reply::anthropic_trickle(
        "tok ",
        600,
        std::time::Duration::from_millis(100),
    ));
    let mut cmd = support::aibuddy_cmd(&f.project, &f.data);
    cmd.args(["run", "tell me"])
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", f.server.anthropic_base())
        .env("AIBUDDY_MCP_CONNECT_WAIT_MS", "2000");
    let child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child)
        .await
        .expect("the 1 s step limit from settings.json ends the run")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stderr.contains(
            "error, stage Execution: the model's response passed the step time limit of 1 s \
             (step timeout); the text streamed so far is kept"
        ),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.starts_with("tok tok "), "{stdout}");
    assert_eq!(f.server.requests().len(), 1, "not retried");
    f.server.assert_clean();
}

/// A loopback package registry on the host serving one tarball at `/tinypkg-0.1.0.tar.gz`, on
/// 127.0.0.2: a loopback address commands reach only through the allow-list proxy (`NO_PROXY`
/// names 127.0.0.1 and localhost).
fn tarball_registry(tarball: Vec<u8>) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            let body = tarball.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let ok = String::from_utf8_lossy(&got).contains("/tinypkg-0.1.0.tar.gz ");
                let (status, body) = if ok {
                    ("200 OK", body)
                } else {
                    ("404 Not Found", b"no\n".to_vec())
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&body);
            });
        }
    });
    port
}

fn sh(dir: &std::path::Path, line: &str) {
    let out = std::process::Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The calls of a short coding session: listing, reading, grep, make build and test, edits,
/// git status, diff, commit and push, a package install from the allowed loopback registry.
fn coding_session(port: u16) -> Vec<(&'static str, Value)> {
    let x = |c: &str| ("execute", json!({ "command": c }));
    vec![
        ("ls", json!({"path": "."})),
        x("git status --short"),
        ("read_file", json!({"path": "Makefile"})),
        ("grep", json!({"pattern": "expr"})),
        x("make build"),
        x("make test 2>&1 | tail -2"),
        (
            "edit_file",
            json!({"path": "src/add.sh", "old_string": "expr \"$1\" + \"$2\"",
                "new_string": "expr \"$1\" + \"$2\" + 0"}),
        ),
        (
            "write_file",
            json!({"path": "NOTES.md", "content": "sums\n"}),
        ),
        x("git diff --stat"),
        x(&format!(
            "mkdir -p vendor && curl -fsS http://127.0.0.2:{port}/tinypkg-0.1.0.tar.gz | tar xz -C vendor && ls vendor"
        )),
        x("git add -A && git commit -qm sums"),
        x("git push -q origin main"),
    ]
}

/// One session in `mode` through `aibuddy run --json --yes` in a fresh git project: the
/// fixture, the run's events, the `confirm_request` events (each an ask) and the tool results.
async fn run_session(mode: &str) -> (Fx, Vec<Value>, Vec<Value>, Vec<Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("tinypkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("VERSION"), "0.1.0\n").unwrap();
    sh(tmp.path(), "tar czf t.tar.gz tinypkg");
    let port = tarball_registry(std::fs::read(tmp.path().join("t.tar.gz")).unwrap());
    let f = fx(move |_| {
        json!({"providers": {"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"}},
            "exec": {"network": {"allow": [format!("127.0.0.2:{port}")]}},
            "approvals": {"rules": [{"command": "git push *", "decision": "ask"}]}})
    })
    .await;
    f.server.expect_key(KEY);
    std::fs::create_dir_all(f.project.join("src")).unwrap();
    std::fs::write(
        f.project.join("Makefile"),
        "build:\n\tmkdir -p out && cp src/add.sh out/add && chmod +x out/add\n\
         test: build\n\ttest \"$$(./out/add 2 3)\" = 5 && echo tests-pass\n",
    )
    .unwrap();
    std::fs::write(
        f.project.join("src/add.sh"),
        "#!/bin/sh\nexpr \"$1\" + \"$2\"\n",
    )
    .unwrap();
    std::fs::write(f.project.join(".gitignore"), "/out\n/vendor\n/remote.git\n").unwrap();
    sh(
        &f.project,
        "git init -q -b main . && git config user.email t@example.com && git config user.name t \
         && git add -A && git commit -qm init && git init -q --bare remote.git \
         && git remote add origin ./remote.git",
    );
    let k = ProviderKind::Anthropic;
    for (i, (tool, input)) in coding_session(port).into_iter().enumerate() {
        f.server.push(
            Turn::text("Next.")
                .call(&format!("toolu_s{i:02}"), tool, input)
                .reply(k),
        );
    }
    f.server.push(Turn::text("Done.").reply(k));
    let (code, ev, err) = f
        .events(&["run", "--json", "--yes", "--approvals", mode, "work on it"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(finished(&ev)["status"], "completed", "{ev:?}");
    f.server.assert_clean();
    let asks: Vec<Value> = ev
        .iter()
        .filter(|e| e["type"] == "confirm_request")
        .map(|e| e["request"].clone())
        .collect();
    let results: Vec<Value> = ev
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .cloned()
        .collect();
    drop(tmp);
    (f, ev, asks, results)
}

/// The reason the approvals gave for asking (the request's `approvals: ...` scope line).
fn ask_reason(request: &Value) -> String {
    request["scope"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find_map(|s| s.strip_prefix("approvals: "))
        .unwrap_or("")
        .to_string()
}

/// Issue 23, measured: a scripted coding session asks at most 3 times in `auto` mode, each ask a
/// case the issue still asks about (here the person's own `ask` rule for `git push`), against
/// every command and write in `ask` mode; the package install reaches the allowed registry
/// without a network question; each call run without asking says why on its record.
/// (`benches/approvals_bench.sh` runs the full 30-call session.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_asks_at_most_three_times_in_a_coding_session() {
    let (f, _, asks, results) = run_session("ask").await;
    let (_, tools, _) = f.run(&["tools", "list", "--json"]).await;
    let full = tools.contains("\"confinement\": \"namespaces+landlock")
        || tools.contains("\"confinement\":\"namespaces+landlock");
    let changing = coding_session(0)
        .iter()
        .filter(|(t, _)| ["execute", "write_file", "edit_file"].contains(t))
        .count();
    assert_eq!(
        asks.len(),
        changing,
        "ask mode asks for every command and write"
    );
    assert!(results.iter().all(|r| r["status"] == "ok"), "{results:?}");

    let (f, _, asks, results) = run_session("auto").await;
    for r in &results {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["exit_code"].is_null() || r["exit_code"] == 0, "{r}");
    }
    assert!(
        f.project.join("vendor/tinypkg/VERSION").exists(),
        "the package was installed"
    );
    if !full {
        // A weaker launch path: auto asks for every command, and says why.
        for a in asks.iter().filter(|a| a["tool"] == "execute") {
            assert!(
                ask_reason(a).contains("auto mode asks for commands here")
                    || ask_reason(a).contains("your rule `ask git push *`"),
                "{a}"
            );
        }
        return;
    }
    let shown: Vec<String> = asks
        .iter()
        .map(|a| {
            let (tool, target) = (a["tool"].as_str().unwrap(), a["target"].as_str().unwrap());
            format!("{tool} `{target}`: {}", ask_reason(a))
        })
        .collect();
    assert!(
        asks.len() <= 3,
        "auto asked {} times: {shown:#?}",
        asks.len()
    );
    assert_eq!(
        shown,
        vec![
            "execute `git push -q origin main`: your rule `ask git push *` matches \
             `git push -q origin main`"
                .to_string()
        ]
    );
    // Every call's record says why it ran without asking.
    let id = |i: usize| results[i]["tool_call_id"].as_str().unwrap().to_string();
    let policy = |id: String| {
        let f = &f;
        async move {
            let (_, out, _) = f.run(&["show", &id, "--json"]).await;
            let v: Value = serde_json::from_str(&out).unwrap();
            (
                v["confirm_decisions"][0]["policy"].clone(),
                v["client_projection"]["network"]["events"].clone(),
            )
        }
    };
    assert_eq!(
        policy(id(1)).await.0,
        "ran without asking: auto mode, confined, checkpointed"
    );
    assert_eq!(
        policy(id(6)).await.0,
        "ran without asking: auto mode, a write inside the project, checkpointed"
    );
    let (p, network) = policy(id(9)).await;
    assert_eq!(p, "ran without asking: auto mode, confined, checkpointed");
    let network = network.as_array().unwrap();
    assert!(!network.is_empty(), "the install used the registry");
    for n in network {
        assert_eq!(n["allowed"], true, "{n}");
        assert!(n["rule"].as_str().unwrap().starts_with("127.0.0.2:"), "{n}");
    }
    assert_eq!(
        policy(id(0)).await.0,
        Value::Null,
        "a read-only tool has none"
    );
    let (_, human, _) = f.run(&["show", &id(1)]).await;
    assert!(
        human
            .contains("approval: ran without asking: auto mode, confined, checkpointed (approved)"),
        "{human}"
    );
    let (_, human, _) = f.run(&["show", &id(11)]).await;
    assert!(human.contains("approval: asked, approved"), "{human}");
    assert!(
        f.project.join("remote.git/refs/heads/main").exists(),
        "pushed"
    );
}
