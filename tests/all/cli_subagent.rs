//! Issue 25, subagents, through the real `aibuddy run` against the invariant-checking fake
//! provider on all three routes: the `agent` tool starts a child run that runs its own tools and
//! whose final answer is the parent's tool result; the child's tool set is narrowed (a tool
//! outside it is absent from its requests and refused at Discovery when called); the child is
//! stored linked to its parent and browsable with `aibuddy runs` / `runs show`; Ctrl-C of the
//! parent stops the child's running command.

use crate::support;

use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{RecordedRequest, Turn};
use serde_json::{Value, json};
use support::cli_run::{CliRun, KEY};
use support::processes_with as pids_with;

/// The fixture of `aibuddy run` for `kind`, user settings extended with `extra`; a run and its
/// subagent runs are separate conversations on the one fake server.
async fn fx(kind: ProviderKind, extra: Value) -> CliRun {
    let f = CliRun::start(kind).await;
    f.server.conversations_by_first_user_text();
    f.user_settings(extra);
    f
}

/// A provider call id of the route's own shape.
fn id(kind: ProviderKind, n: &str) -> String {
    match kind {
        ProviderKind::Anthropic => format!("toolu_{n}"),
        _ => format!("call_{n}"),
    }
}

/// `aibuddy ARGS` to its end, checking the key was never printed.
async fn run(f: &CliRun, args: &[&str]) -> (i32, String, String) {
    let (code, o, e) = f.output(args).await;
    assert!(!o.contains(KEY) && !e.contains(KEY), "the key was printed");
    (code, o, e)
}

/// The tool names of a request's `tools` array.
fn tools_of(req: &RecordedRequest) -> Vec<String> {
    tool_names(&req.body)
}

fn tool_names(body: &Value) -> Vec<String> {
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
        })
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// The events of the subagent started by the parent's call `parent_call` (unwrapped).
fn child_events<'a>(events: &'a [Value], parent_call: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "subagent" && e["parent_tool_call_id"] == parent_call)
        .map(|e| &e["event"])
        .collect()
}

fn result_ending<'a>(events: &[&'a Value], call: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "tool_result"
                && e["tool_call_id"]
                    .as_str()
                    .is_some_and(|id| id.ends_with(&format!(":{call}")))
        })
        .unwrap_or_else(|| panic!("no result for {call}: {events:?}"))
}

/// The parent delegates; the child lists the project (in its set), tries `execute` (outside it:
/// refused at Discovery, absent from its requests) and answers; the answer is the parent's tool
/// result; the child run is stored under its parent and shown by `runs` and `runs show`.
async fn delegates_and_gets_the_answer(kind: ProviderKind) {
    let f = fx(kind, json!({})).await;
    std::fs::write(f.project.join("notes.txt"), "kiwi\n").unwrap();
    let (a, l, x) = (id(kind, "agent1"), id(kind, "ls1"), id(kind, "exec1"));
    f.server.push(
        Turn::text("Delegating.")
            .call(
                &a,
                "agent",
                json!({"description": "survey the project", "prompt": "List the project root and name its files.", "tools": ["ls", "read_file"]}),
            )
            .reply(kind),
    );
    f.server.push(
        Turn::text("Looking.")
            .call(&l, "ls", json!({"path": "."}))
            .call(&x, "execute", json!({"command": "echo escaped"}))
            .reply(kind),
    );
    f.server
        .push(Turn::text("CHILD-ANSWER: the root holds notes.txt").reply(kind));
    f.server
        .push(Turn::text("The project holds notes.txt.").reply(kind));

    let (code, ev, err) = f
        .events(&["run", "--json", "--yes", "What is in here?"])
        .await;
    assert_eq!(code, 0, "{err}\n{ev:?}");
    let parent_id = ev[0]["run_id"].as_str().unwrap().to_string();
    let parent_call = format!("{parent_id}:{a}");

    // The child's events nest under the parent's `agent` call.
    let child = child_events(&ev, &parent_call);
    assert_eq!(
        child.first().map(|e| &e["type"]),
        Some(&json!("run_started")),
        "{ev:?}"
    );
    let child_id = child[0]["run_id"].as_str().unwrap().to_string();
    assert_ne!(child_id, parent_id);
    let ls = result_ending(&child, &l);
    assert_eq!(ls["status"], "ok", "{ls}");
    assert!(ls["model"].as_str().unwrap().contains("notes.txt"), "{ls}");
    let exec = result_ending(&child, &x);
    assert_eq!(exec["status"], "error", "{exec}");
    assert_eq!(exec["stage"], "Discovery", "{exec}");
    assert!(
        exec["model"].as_str().unwrap().contains("subagent"),
        "the refusal names why: {exec}"
    );
    assert_eq!(child.last().unwrap()["type"], "run_finished");
    assert_eq!(child.last().unwrap()["status"], "completed");

    // The child's answer is the parent's tool result.
    let top: Vec<&Value> = ev.iter().collect();
    let agent = result_ending(&top, &a);
    assert_eq!(agent["status"], "ok", "{agent}");
    assert_eq!(agent["model"], "CHILD-ANSWER: the root holds notes.txt");
    assert_eq!(ev.last().unwrap()["type"], "run_finished");
    assert_eq!(ev.last().unwrap()["status"], "completed");

    // Requests: parent, child, child, parent. The child starts fresh with its narrowed set.
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 4);
    let parent_tools = tools_of(&reqs[0]);
    assert!(
        parent_tools.contains(&"agent".to_string()),
        "{parent_tools:?}"
    );
    assert!(
        parent_tools.contains(&"execute".to_string()),
        "{parent_tools:?}"
    );
    assert_eq!(tools_of(&reqs[1]), vec!["ls", "read_file"]);
    assert_eq!(tools_of(&reqs[2]), vec!["ls", "read_file"]);
    let child_body = reqs[1].raw_body.as_str();
    assert!(child_body.contains("List the project root"), "{child_body}");
    assert!(
        !child_body.contains("What is in here?"),
        "the child sees only its task"
    );
    assert!(child_body.contains("You are a subagent"), "{child_body}");
    assert!(
        reqs[3]
            .raw_body
            .contains("CHILD-ANSWER: the root holds notes.txt"),
        "the parent's next request carries the answer"
    );
    f.server.assert_clean();

    // Stored and browsable: the child is listed under its parent, and `runs show` links them.
    let (code, out, err) = run(&f, &["runs", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let row = rows
        .iter()
        .find(|r| r["run_id"] == child_id.as_str())
        .unwrap();
    assert_eq!(row["parent_run_id"], parent_id.as_str());
    assert_eq!(row["parent_call_id"], parent_call.as_str());
    assert_eq!(row["status"], "completed");
    assert_eq!(row["title"], "survey the project");
    let (code, out, _) = run(&f, &["runs"]).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    let p = lines
        .iter()
        .position(|l| l.starts_with(&parent_id))
        .unwrap();
    assert!(
        lines[p + 1].starts_with(&format!("  ↳ {child_id}")),
        "the child is nested under its parent: {out}"
    );
    let (code, out, _) = run(&f, &["runs", "show", &parent_id]).await;
    assert_eq!(code, 0);
    assert!(out.contains(&format!("subagent run {child_id}")), "{out}");
    let (code, out, _) = run(&f, &["runs", "show", &child_id]).await;
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("subagent of run {parent_id}")),
        "{out}"
    );
    assert!(out.contains("CHILD-ANSWER"), "{out}");
    // Continued later, the child keeps its shape: the next request has its tools and note.
    let (code, out, err) = run(&f, &["runs", "show", &child_id, "--next-request"]).await;
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tool_names(&body), vec!["ls", "read_file"]);
    assert!(out.contains("You are a subagent"), "{out}");
    let (_, out, _) = run(&f, &["runs", "show", &parent_id, "--next-request"]).await;
    let body: Value = serde_json::from_str(&out).unwrap();
    assert!(tool_names(&body).contains(&"agent".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_answers_through_the_parent_anthropic() {
    delegates_and_gets_the_answer(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_answers_through_the_parent_responses() {
    delegates_and_gets_the_answer(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_answers_through_the_parent_chat() {
    delegates_and_gets_the_answer(ProviderKind::OpenAiChat).await;
}

/// A named profile narrows the child (with the call's `tools`) and its prompt joins the child's
/// system prompt; an unknown profile is refused at Parameters naming the known ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_narrows_the_child_and_an_unknown_one_is_refused() {
    let kind = ProviderKind::Anthropic;
    let profiles = json!({"agents": {"profiles": {"reader": {
        "description": "reads only", "tools": ["read_file", "grep", "glob"],
        "prompt": "PROFILE-TEXT: never change anything."}}}});
    let f = fx(kind, profiles).await;
    f.server.push(
        Turn::text("Two tries.")
            .call(
                "toolu_bad",
                "agent",
                json!({"description": "x", "prompt": "task one", "profile": "writer"}),
            )
            .reply(kind),
    );
    f.server.push(
        Turn::text("Now right.")
            .call(
                "toolu_good",
                "agent",
                json!({"description": "read", "prompt": "task two", "profile": "reader", "tools": ["grep", "read_file", "execute"]}),
            )
            .reply(kind),
    );
    f.server.push(Turn::text("child done").reply(kind));
    f.server.push(Turn::text("all done").reply(kind));
    let (code, ev, err) = f.events(&["run", "--json", "--yes", "profiles"]).await;
    assert_eq!(code, 0, "{err}");
    let top: Vec<&Value> = ev.iter().collect();
    let bad = result_ending(&top, "toolu_bad");
    assert_eq!(
        (&bad["status"], &bad["stage"]),
        (&json!("error"), &json!("Parameters"))
    );
    assert!(bad["model"].as_str().unwrap().contains("reader"), "{bad}");
    assert_eq!(result_ending(&top, "toolu_good")["model"], "child done");
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(tools_of(&reqs[2]), vec!["grep", "read_file"]);
    assert!(reqs[2].raw_body.contains("PROFILE-TEXT"));
    // The parent's instructions name the profiles; a child (no `agent`) gets none.
    assert!(
        reqs[0].raw_body.contains("`reader`: reads only"),
        "{}",
        reqs[0].raw_body
    );
    assert!(!reqs[2].raw_body.contains("Subagent profiles"));
    f.server.assert_clean();
}

/// A child that reaches its step bound (the parent's `--max-steps`) fails the `agent` call at
/// Execution, naming its run; the parent goes on with that error as the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_does_not_finish_fails_the_call_with_its_stage() {
    let kind = ProviderKind::OpenAiChat;
    let f = fx(kind, json!({})).await;
    f.server.push(
        Turn::text("Delegating.")
            .call(
                "call_a3",
                "agent",
                json!({"description": "loop", "prompt": "Keep listing."}),
            )
            .reply(kind),
    );
    f.server.push(
        Turn::text("Listing.")
            .call("call_l3", "ls", json!({"path": "."}))
            .reply(kind),
    );
    f.server.push(
        Turn::text("Again.")
            .call("call_l4", "ls", json!({"path": "."}))
            .reply(kind),
    );
    f.server
        .push(Turn::text("The subagent did not finish.").reply(kind));
    let (code, ev, err) = f
        .events(&[
            "run",
            "--json",
            "--yes",
            "--max-steps",
            "2",
            "delegate a loop",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let top: Vec<&Value> = ev.iter().collect();
    let agent = result_ending(&top, "call_a3");
    assert_eq!(
        (&agent["status"], &agent["stage"]),
        (&json!("error"), &json!("Execution"))
    );
    let model = agent["model"].as_str().unwrap();
    assert!(model.contains("step limit"), "{model}");
    let child_id = child_events(&ev, agent["tool_call_id"].as_str().unwrap())[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(model.contains(&child_id), "{model}");
    assert_eq!(ev.last().unwrap()["status"], "completed");
    f.server.assert_clean();
}

/// Ctrl-C of `aibuddy run` while its subagent's command runs: the command's tree is killed, the
/// child run is stored `cancelled` under its parent, the `agent` call ends `cancelled`.
async fn parent_stop_kills_the_childs_command(kind: ProviderKind) {
    let f = fx(kind, json!({})).await;
    let route = match kind {
        ProviderKind::Anthropic => 1,
        ProviderKind::OpenAiResponses => 2,
        ProviderKind::OpenAiChat => 3,
    };
    let marker = format!("7{}.{route}{}", std::process::id() % 10, std::process::id());
    let (a, x) = (id(kind, "agent2"), id(kind, "sleep2"));
    f.server.push(
        Turn::text("Delegating.")
            .call(
                &a,
                "agent",
                json!({"description": "wait", "prompt": "Run the long command."}),
            )
            .reply(kind),
    );
    f.server.push(
        Turn::text("Running.")
            .call(&x, "execute", json!({"command": format!("sleep {marker}")}))
            .reply(kind),
    );
    let child = f
        .command(&["run", "--json", "--yes", "Delegate the long wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while pids_with(&marker).is_empty() {
        assert!(Instant::now() < until, "the child's command never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = child.id().unwrap() as i32;
    // SAFETY: a signal to a pid this test spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("aibuddy ended after Ctrl-C")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let until = Instant::now() + Duration::from_secs(2);
    while !pids_with(&marker).is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        pids_with(&marker).is_empty(),
        "the subagent's command outlived the stopped parent"
    );
    let ev: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let parent_id = ev[0]["run_id"].as_str().unwrap().to_string();
    let parent_call = format!("{parent_id}:{a}");
    let child = child_events(&ev, &parent_call);
    let sleep = result_ending(&child, &x);
    assert_eq!(sleep["status"], "cancelled", "{sleep}");
    assert_eq!(child.last().unwrap()["status"], "cancelled", "{child:?}");
    let top: Vec<&Value> = ev.iter().collect();
    assert_eq!(result_ending(&top, &a)["status"], "cancelled");
    assert_eq!(ev.last().unwrap()["status"], "cancelled");
    let (_, out, _) = run(&f, &["runs", "--json"]).await;
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let child_row = rows
        .iter()
        .find(|r| r["parent_run_id"] == parent_id.as_str())
        .expect("the child run is stored");
    assert_eq!(child_row["status"], "cancelled");
    f.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_parent_kills_the_subagents_command_anthropic() {
    parent_stop_kills_the_childs_command(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_parent_kills_the_subagents_command_responses() {
    parent_stop_kills_the_childs_command(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_parent_kills_the_subagents_command_chat() {
    parent_stop_kills_the_childs_command(ProviderKind::OpenAiChat).await;
}

/// Five `agent` calls in one turn (read-only: one batch) run at most four children at once (the
/// default of settings `agents.max_concurrent`); the fifth starts when one has ended, and every
/// answer comes back as its own call's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_children_run_at_once() {
    children_at_once(json!({}), 4).await;
}

/// Settings `agents.max_concurrent` from the person's file bounds the children at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_max_concurrent_bounds_the_children_at_once() {
    children_at_once(json!({"agents": {"max_concurrent": 2}}), 2).await;
}

/// Five children of one turn under user settings `extra`: at most `want` ran at once.
async fn children_at_once(extra: Value, want: i32) {
    use aibuddy_provider::testing::{Chunk, Reply};
    let kind = ProviderKind::Anthropic;
    let f = fx(kind, extra).await;
    let mut turn = Turn::text("Five at once.");
    for n in 0..5 {
        turn = turn.call(
            &format!("toolu_p{n}"),
            "agent",
            json!({"description": format!("part {n}"), "prompt": format!("Do part {n}.")}),
        );
    }
    f.server.push(turn.reply(kind));
    for _ in 0..5 {
        // Each child answers after a while, so the children overlap.
        let mut reply = Turn::text("part done").reply(kind);
        if let Reply::Stream { chunks, .. } = &mut reply {
            chunks.insert(0, Chunk::Sleep(Duration::from_millis(400)));
        }
        f.server.push(reply);
    }
    f.server.push(Turn::text("All five done.").reply(kind));
    let (code, ev, err) = f.events(&["run", "--json", "--yes", "five parts"]).await;
    assert_eq!(code, 0, "{err}");
    let (mut running, mut most) = (0i32, 0i32);
    for e in ev.iter().filter(|e| e["type"] == "subagent") {
        match e["event"]["type"].as_str() {
            Some("run_started") => running += 1,
            Some("run_finished") => running -= 1,
            _ => {}
        }
        most = most.max(running);
    }
    assert_eq!(most, want, "{ev:?}");
    let top: Vec<&Value> = ev.iter().collect();
    for n in 0..5 {
        let r = result_ending(&top, &format!("toolu_p{n}"));
        assert_eq!(
            (&r["status"], &r["model"]),
            (&json!("ok"), &json!("part done"))
        );
    }
    f.server.assert_clean();
}

/// Ctrl-C of `aibuddy run` while its subagent's conversation is being compacted (the summary
/// request is in flight and would take a minute): the compaction stops at once, the child run is
/// stored `cancelled`, the `agent` call ends `cancelled`, and no further request reaches the
/// provider. The child compacts under the `agent` call's token, a child of the parent run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_parent_cancels_the_childs_compaction() {
    use aibuddy_provider::testing::{Chunk, Reply};
    let kind = ProviderKind::Anthropic;
    // A tiny window: the child's fourth request would pass it, so the child compacts first.
    let f = fx(
        kind,
        json!({"providers": {"default": "anthropic",
            "anthropic": {"model": "claude-sonnet-4-6", "context_window": 1}}}),
    )
    .await;
    f.server
        .summaries_start_with("Summary of the earlier conversation");
    std::fs::write(f.project.join("a.txt"), "apple\n").unwrap();
    f.server.push(
        Turn::text("Delegating.")
            .call(
                "toolu_agent3",
                "agent",
                json!({"description": "read thrice", "prompt": "Read a.txt three times."}),
            )
            .reply(kind),
    );
    for i in 0..3 {
        f.server.push(
            Turn::text(&format!("Reading {i}."))
                .call(
                    &format!("toolu_r{i}"),
                    "read_file",
                    json!({"path": "a.txt"}),
                )
                .reply(kind),
        );
    }
    // The child's summary: it would answer only after a minute.
    let mut summary = Turn::summary("CHILD-SUMMARY").reply(kind);
    if let Reply::Stream { chunks, .. } = &mut summary {
        chunks.insert(0, Chunk::Sleep(Duration::from_secs(60)));
    }
    f.server.push(summary);
    f.server.push(Turn::text("never asked").reply(kind));
    let child = f
        .command(&["run", "--json", "--yes", "Delegate the reading"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Parent, then the child's three steps, then the child's summary request.
    let until = Instant::now() + Duration::from_secs(30);
    while f.server.requests().len() < 5 {
        assert!(
            Instant::now() < until,
            "the child's compaction never started: {} request(s)",
            f.server.requests().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reqs = f.server.requests();
    assert!(
        reqs[4]
            .raw_body
            .contains(&aibuddy::agent::summarize::CONVERSATION_INSTRUCTION[..40]),
        "the fifth request is the child's summary"
    );
    // The child's earliest turns, not the parent's conversation.
    assert!(reqs[4].raw_body.contains("Reading 0."));
    assert!(!reqs[4].raw_body.contains("Delegate the reading"));
    let pid = child.id().unwrap() as i32;
    // SAFETY: a signal to a pid this test spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("aibuddy ended soon after Ctrl-C: the child's compaction was stopped")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let ev: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let parent_id = ev[0]["run_id"].as_str().unwrap().to_string();
    let child_ev = child_events(&ev, &format!("{parent_id}:toolu_agent3"));
    assert!(
        !child_ev.iter().any(|e| e["type"] == "compaction"),
        "no compaction was stored: {child_ev:?}"
    );
    assert_eq!(
        child_ev.last().unwrap()["status"],
        "cancelled",
        "{child_ev:?}"
    );
    let top: Vec<&Value> = ev.iter().collect();
    assert_eq!(result_ending(&top, "toolu_agent3")["status"], "cancelled");
    assert_eq!(ev.last().unwrap()["status"], "cancelled");
    let (_, out, _) = run(&f, &["runs", "--json"]).await;
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let child_row = rows
        .iter()
        .find(|r| r["parent_run_id"] == parent_id.as_str())
        .expect("the child run is stored");
    assert_eq!(child_row["status"], "cancelled");
    // Nothing after the stopped summary: the child did not go on without it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(f.server.requests().len(), 5);
    assert!(
        f.server.violations().is_empty(),
        "{:?}",
        f.server.violations()
    );
}
