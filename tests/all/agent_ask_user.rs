//! `ask_user_question` and MCP elicitation in agent runs, against the fake provider over real
//! HTTP with real SQLite (and a real MCP server for elicitation). The person is a
//! `PendingQuestions` broker answered by the test. Every test ends with the fake server's protocol
//! check (`assert_clean`).

use crate::agent_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_common::*;
use aibuddy::agent::human::ANSWERED_RESULT;
use aibuddy::agent::{RunEvent, RunOutcome, RunStart, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy::contract::Stage;
use aibuddy::events::CallStatus;
use aibuddy::human::{HumanAnswer, HumanQuestion, PendingQuestions};
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

/// Starts a run whose person is `person` (None: nobody can answer).
fn spawn_run(
    h: &Harness,
    person: Option<PendingQuestions>,
    prompt: &str,
    cancel: CancellationToken,
) -> (
    JoinHandle<RunOutcome>,
    Arc<aibuddy::agent::CollectingRunSink>,
) {
    let mut agent = h.agent(Arc::new(ApproveAll), fast_options());
    if let Some(p) = person {
        agent = agent.with_human(Arc::new(p));
    }
    let events = sink();
    let e2 = events.clone();
    let prompt = prompt.to_string();
    let task = tokio::spawn(async move { agent.run(start(&prompt), cancel, e2).await.unwrap() });
    (task, events)
}

async fn pending_one(person: &PendingQuestions) -> HumanQuestion {
    tokio::time::timeout(Duration::from_secs(30), person.wait_pending())
        .await
        .expect("a question is asked");
    let mut p = person.pending();
    assert_eq!(p.len(), 1, "{p:?}");
    p.remove(0)
}

async fn ask_and_answer(kind: ProviderKind) {
    let h = harness(kind, None).await;
    let ask = json!({"question": "Which color?", "options": ["Blue", "Green"]});
    h.push(Turn::text("Let me ask.").call("call_q1", "ask_user_question", ask));
    h.push(Turn::text("Blue it is."));
    let person = PendingQuestions::new();
    let (task, events) = spawn_run(
        &h,
        Some(person.clone()),
        "paint it",
        CancellationToken::new(),
    );
    let HumanQuestion::Ask(q) = pending_one(&person).await else {
        panic!("not a question")
    };
    // Asked under the run-scoped stored id; the model keeps its own `call_q1`.
    assert!(q.id.ends_with(":call_q1"), "{}", q.id);
    assert_eq!(q.question, "Which color?");
    assert_eq!(q.options, vec!["Blue", "Green"]);
    assert!(!q.multi_select && q.allow_other);
    let blue = HumanAnswer::Answer {
        selected: vec!["Blue".into()],
        text: None,
    };
    assert!(person.answer(&q.id, blue));
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert!(ev.iter().any(|e| matches!(e, RunEvent::AskUser { tool_call_id, question, options, multi_select: false, .. }
        if tool_call_id == &q.id && question == "Which color?" && options.len() == 2)));
    assert!(ev.iter().any(
        |e| matches!(e, RunEvent::ToolResult { status: CallStatus::Ok, model, .. }
        if model == "The person answered: Blue")
    ));
    // Stored: the answer row (question, answer, run, call) and the result as usual.
    let store = h.store();
    let answers = store.user_answers(&q.id).await.unwrap();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].run_id.as_deref(), Some(out.run_id.as_str()));
    assert_eq!(answers[0].question["question"], "Which color?");
    assert_eq!(
        answers[0].answer,
        json!({"selected": ["Blue"], "text": null})
    );
    // The next request carries the normalized interaction: the result points at the person's
    // message, which holds the question and the answer.
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    let body = &reqs[1].raw_body;
    assert!(body.contains(ANSWERED_RESULT), "{body}");
    let expected =
        serde_json::to_string("[Question] Which color?\n[Options] Blue | Green\n[Answer] Blue")
            .unwrap();
    assert!(body.contains(expected.trim_matches('"')), "{body}");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_and_answer_anthropic() {
    ask_and_answer(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_and_answer_chat() {
    ask_and_answer(ProviderKind::OpenAiChat).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_and_answer_responses() {
    ask_and_answer(ProviderKind::OpenAiResponses).await;
}

async fn multi_select(kind: ProviderKind) {
    let h = harness(kind, None).await;
    let ask = json!({"question": "Which files?", "options": ["a.txt", "b.txt", "c.txt"],
        "multi_select": true, "allow_other": false});
    h.push(Turn::text("Calling.").call("call_m1", "ask_user_question", ask));
    h.push(Turn::text("Noted."));
    let person = PendingQuestions::new();
    let (task, _events) = spawn_run(&h, Some(person.clone()), "pick", CancellationToken::new());
    let HumanQuestion::Ask(q) = pending_one(&person).await else {
        panic!("not a question")
    };
    assert!(q.multi_select && !q.allow_other);
    // Answers that do not fit are refused and the question stays pending.
    let other = HumanAnswer::Answer {
        selected: vec![],
        text: Some("d.txt".into()),
    };
    assert!(!person.answer(&q.id, other));
    let unknown = HumanAnswer::Answer {
        selected: vec!["z.txt".into()],
        text: None,
    };
    assert!(!person.answer(&q.id, unknown));
    let two = HumanAnswer::Answer {
        selected: vec!["c.txt".into(), "a.txt".into()],
        text: None,
    };
    assert!(person.answer(&q.id, two));
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let body = &h.server.requests()[1].raw_body;
    let expected = serde_json::to_string(
        "[Options, several allowed] a.txt | b.txt | c.txt\n[Answer] c.txt, a.txt",
    )
    .unwrap();
    assert!(body.contains(expected.trim_matches('"')), "{body}");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_select_anthropic() {
    multi_select(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_select_chat() {
    multi_select(ProviderKind::OpenAiChat).await;
}

async fn nobody_to_ask(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("Calling.").call(
        "call_n1",
        "ask_user_question",
        json!({"question": "Proceed?"}),
    ));
    h.push(Turn::text("I will proceed on my own judgement."));
    let (task, events) = spawn_run(&h, None, "do it", CancellationToken::new());
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert!(
        ev.iter().any(|e| matches!(e, RunEvent::ToolResult { status: CallStatus::Error, stage: Some(Stage::Execution), model, .. }
            if model.contains("no person is available to answer; proceed with your best judgement or stop"))),
        "{ev:?}"
    );
    // The model reads the error and the run goes on; nothing is stored as an answer.
    let body = &h.server.requests()[1].raw_body;
    assert!(body.contains("no person is available to answer"), "{body}");
    assert!(!body.contains("[Question]"), "{body}");
    assert!(
        h.store()
            .user_answers(&format!("{}:call_n1", out.run_id))
            .await
            .unwrap()
            .is_empty()
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_to_ask_anthropic() {
    nobody_to_ask(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_to_ask_chat() {
    nobody_to_ask(ProviderKind::OpenAiChat).await;
}

async fn stop_while_asking(kind: ProviderKind) {
    let h = harness(kind, None).await;
    h.push(Turn::text("Calling.").call(
        "call_s1",
        "ask_user_question",
        json!({"question": "Wait for me?"}),
    ));
    let person = PendingQuestions::new();
    let cancel = CancellationToken::new();
    let (task, _events) = spawn_run(&h, Some(person.clone()), "ask", cancel.clone());
    pending_one(&person).await;
    let stopped = Instant::now();
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the run ends promptly after stop")
        .unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    assert!(person.pending().is_empty(), "the question was withdrawn");
    eprintln!("stop -> run ended in {:?}", stopped.elapsed());
    let conv = h.store().conversation(&out.run_id).await.unwrap();
    let result = conv
        .messages
        .iter()
        .find_map(|m| m.result.as_ref())
        .expect("the call has a stored result");
    assert_eq!(result.status, aibuddy_store::CallStatus::Cancelled);
    assert_eq!(h.server.requests().len(), 1, "no step after the stop");
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_asking_anthropic() {
    stop_while_asking(ProviderKind::Anthropic).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_asking_chat() {
    stop_while_asking(ProviderKind::OpenAiChat).await;
}

/// A real MCP server (the fixture's `elicit` tool) asks the person during a run: the request
/// reaches the run's broker as an elicitation, is announced as a run event, and the answer (with
/// the schema's defaults for fields left out) goes back to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_elicitation_goes_through_the_same_broker() {
    let h = harness(ProviderKind::OpenAiChat, Some(&["--tools", "5"])).await;
    h.wait_deferred("mcp__fx__elicit").await;
    h.push(Turn::text("Calling.").call(
        "call_t1",
        "tool_search",
        json!({"query": "select:mcp__fx__elicit"}),
    ));
    h.push(Turn::text("Calling.").call("call_e1", "mcp__fx__elicit", json!({})));
    h.push(Turn::text("Thanks."));
    let person = PendingQuestions::new();
    let (task, events) = spawn_run(
        &h,
        Some(person.clone()),
        "who am I",
        CancellationToken::new(),
    );
    let HumanQuestion::Elicit(e) = pending_one(&person).await else {
        panic!("not an elicitation")
    };
    assert_eq!(
        (e.server.as_str(), e.message.as_str()),
        ("fx", "Who are you?")
    );
    assert_eq!(e.defaults.get("age"), Some(&json!(36)));
    // A question's answer does not answer a form.
    let wrong = HumanAnswer::Answer {
        selected: vec![],
        text: Some("x".into()),
    };
    assert!(!person.answer(&e.id, wrong));
    let mut content = serde_json::Map::new();
    content.insert("name".into(), json!("Grace"));
    assert!(person.answer(&e.id, HumanAnswer::Form { content }));
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert!(ev.iter().any(
        |x| matches!(x, RunEvent::Elicitation { server, elicitation_id, .. }
        if server == "fx" && *elicitation_id == e.id)
    ));
    let model = ev
        .iter()
        .find_map(|x| match x {
            RunEvent::ToolResult {
                tool_call_id,
                model,
                ..
            } if tool_call_id.ends_with(":call_e1") => Some(model.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        model.contains("accept") && model.contains("Grace") && model.contains("36"),
        "{model}"
    );
    h.server.assert_clean();
}

/// Nobody to ask: the server's elicitation is declined, the call still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_elicitation_with_nobody_is_declined() {
    let h = harness(ProviderKind::OpenAiChat, Some(&["--tools", "5"])).await;
    h.wait_deferred("mcp__fx__elicit").await;
    h.push(Turn::text("Calling.").call(
        "call_t1",
        "tool_search",
        json!({"query": "select:mcp__fx__elicit"}),
    ));
    h.push(Turn::text("Calling.").call("call_e1", "mcp__fx__elicit", json!({})));
    h.push(Turn::text("Ok."));
    let (task, events) = spawn_run(&h, None, "who am I", CancellationToken::new());
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(events.events().iter().any(
        |x| matches!(x, RunEvent::ToolResult { tool_call_id, status: CallStatus::Ok, model, .. }
        if tool_call_id.ends_with(":call_e1") && model.contains("decline"))
    ));
    h.server.assert_clean();
}

/// A person who takes longer than the idle timeout to answer does not get the question's call
/// stopped: a pending question pauses the watchdog, and the timer restarts from the answer.
#[tokio::test]
async fn a_slow_answer_outlasts_the_idle_timeout() {
    let h = harness(ProviderKind::Anthropic, None).await;
    let ask = json!({"question": "Ready?", "options": ["Yes", "No"]});
    h.push(Turn::text("Asking.").call("call_w1", "ask_user_question", ask));
    h.push(Turn::text("Going on."));
    let person = PendingQuestions::new();
    let mut opts = fast_options();
    opts.idle_timeout = Duration::from_millis(600);
    let agent = h
        .agent(Arc::new(ApproveAll), opts)
        .with_human(Arc::new(person.clone()));
    let events = sink();
    let e2 = events.clone();
    let task = tokio::spawn(async move {
        agent
            .run(start("ask me"), CancellationToken::new(), e2)
            .await
            .unwrap()
    });
    let HumanQuestion::Ask(q) = pending_one(&person).await else {
        panic!("not a question")
    };
    // Three idle timeouts of silence while the person thinks.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let yes = HumanAnswer::Answer {
        selected: vec!["Yes".into()],
        text: None,
    };
    assert!(person.answer(&q.id, yes), "the question was withdrawn");
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let ev = events.events();
    assert!(
        ev.iter().any(
            |e| matches!(e, RunEvent::ToolResult { status: CallStatus::Ok, model, .. }
            if model == "The person answered: Yes")
        ),
        "{ev:?}"
    );
    h.server.assert_clean();
}
