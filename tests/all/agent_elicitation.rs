//! MCP elicitation in agent runs, with a real MCP server (the fixture's `elicit` tool asks for a
//! name and an age), the fake provider over real HTTP and real SQLite:
//! - the answer is stored in `user_answers` under the MCP call it arrived during, and every later
//!   request (a `--continue` included) carries it as the person's normalized text next to the
//!   call's own result;
//! - with two runs live in one process, an elicitation goes to the person of the run whose call
//!   caused it, not to the run started last.

use crate::agent_common;

use std::sync::Arc;
use std::time::Duration;

use agent_common::*;
use aibuddy::agent::{Agent, RunOutcome, RunStart, RunStatus};
use aibuddy::confirm::ApproveAll;
use aibuddy::human::{HumanAnswer, HumanQuestion, PendingQuestions};
use aibuddy_provider::testing::{FakeServer, Turn};
use aibuddy_provider::{ApiKey, HttpProvider, ProviderKind, Route};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

fn start(prompt: &str) -> RunStart {
    RunStart {
        prompt: prompt.into(),
        ..RunStart::default()
    }
}

/// The person's text the next requests must carry for the fixture's form answered with `Grace`
/// (the age is the schema's default), as it appears JSON-escaped in a request body.
fn normalized_in_body() -> String {
    let text = "[The MCP server \"fx\" asked the person, during that call: \"Who are you?\"]\n\
[Answer] \"age\": 36, \"name\": \"Grace\"";
    let quoted = serde_json::to_string(text).unwrap();
    quoted[1..quoted.len() - 1].to_string()
}

/// Turns that find the deferred `elicit` tool, then call it.
fn elicit_turns(server: &FakeServer, kind: ProviderKind, call: &str) {
    server.push(
        Turn::text("Finding it.")
            .call(
                &format!("{call}_s"),
                "tool_search",
                json!({"query": "select:mcp__fx__elicit"}),
            )
            .reply(kind),
    );
    server.push(
        Turn::text("Asking the server.")
            .call(call, "mcp__fx__elicit", json!({}))
            .reply(kind),
    );
}

async fn wait_question(person: &PendingQuestions) -> HumanQuestion {
    tokio::time::timeout(Duration::from_secs(30), person.wait_pending())
        .await
        .expect("a question reaches this person");
    let mut p = person.pending();
    assert_eq!(p.len(), 1, "{p:?}");
    p.remove(0)
}

fn grace() -> HumanAnswer {
    let mut content = serde_json::Map::new();
    content.insert("name".into(), json!("Grace"));
    HumanAnswer::Form { content }
}

fn spawn(agent: Agent, prompt: &str) -> JoinHandle<RunOutcome> {
    let prompt = prompt.to_string();
    tokio::spawn(async move {
        agent
            .run(start(&prompt), CancellationToken::new(), sink())
            .await
            .unwrap()
    })
}

async fn answer_is_stored_and_normalized(kind: ProviderKind) {
    let h = harness(kind, Some(&["--tools", "5"])).await;
    h.wait_deferred("mcp__fx__elicit").await;
    elicit_turns(&h.server, kind, "call_e1");
    h.push(Turn::text("Hello Grace."));
    let person = PendingQuestions::new();
    let agent = h
        .agent(Arc::new(ApproveAll), fast_options())
        .with_human(Arc::new(person.clone()));
    let task = spawn(agent, "who am I?");
    let HumanQuestion::Elicit(e) = wait_question(&person).await else {
        panic!("not an elicitation")
    };
    assert!(person.answer(&e.id, grace()));
    let out = task.await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");

    // Stored under the MCP call it arrived during, as the server received it (defaults filled).
    let call_id = format!("{}:call_e1", out.run_id);
    let rows = h.store().user_answers(&call_id).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].run_id.as_deref(), Some(out.run_id.as_str()));
    assert_eq!(rows[0].question["kind"], "elicitation");
    assert_eq!(rows[0].question["server"], "fx");
    assert_eq!(
        rows[0].answer,
        json!({"form": {"name": "Grace", "age": 36}})
    );

    // The request after the call: the call's own result (the server's answer) and the person's
    // normalized text.
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    let body = &reqs[2].raw_body;
    assert!(body.contains(&normalized_in_body()), "{body}");
    assert!(body.contains("accept") && body.contains("Grace"), "{body}");

    // Continued: the rebuilt context still carries it.
    h.push(Turn::text("Still Grace."));
    let out2 = h
        .agent(Arc::new(ApproveAll), fast_options())
        .run(
            RunStart {
                prompt: "and now?".into(),
                continue_run: Some(out.run_id.clone()),
                ..RunStart::default()
            },
            CancellationToken::new(),
            sink(),
        )
        .await
        .unwrap();
    assert_eq!(out2.status, RunStatus::Completed, "{out2:?}");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 4);
    assert!(
        reqs[3].raw_body.contains(&normalized_in_body()),
        "{}",
        reqs[3].raw_body
    );
    h.server.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_answer_is_stored_and_normalized_anthropic() {
    answer_is_stored_and_normalized(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_answer_is_stored_and_normalized_chat() {
    answer_is_stored_and_normalized(ProviderKind::OpenAiChat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_answer_is_stored_and_normalized_responses() {
    answer_is_stored_and_normalized(ProviderKind::OpenAiResponses).await;
}

/// Two runs live in one process (one project, one MCP server), each with its own person and its
/// own fake provider. Run A starts first, run B last; both wait on a question. Then A's call makes
/// the server elicit: the form reaches A's person, never B's, and is stored under A's call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_goes_to_the_run_whose_call_caused_it() {
    let kind = ProviderKind::OpenAiChat;
    let h = harness(kind, Some(&["--tools", "5"])).await;
    h.wait_deferred("mcp__fx__elicit").await;
    let server_b = FakeServer::start().await.unwrap();
    server_b.expect_key(KEY);
    let ask = |q: &str| json!({"question": q});

    // A: ask its person, then find and call `elicit`.
    h.push(Turn::text("First a question.").call("call_qa", "ask_user_question", ask("A?")));
    let person_a = PendingQuestions::new();
    let run_a = spawn(
        h.agent(Arc::new(ApproveAll), fast_options())
            .with_human(Arc::new(person_a.clone())),
        "run A",
    );
    let HumanQuestion::Ask(qa) = wait_question(&person_a).await else {
        panic!("A's question")
    };

    // B starts last and waits on its own question.
    server_b.push(
        Turn::text("A question.")
            .call("call_qb", "ask_user_question", ask("B?"))
            .reply(kind),
    );
    server_b.push(Turn::text("B done.").reply(kind));
    let route_b = Route {
        base_url: server_b.base_url(kind),
        ..h.route()
    };
    let provider_b = HttpProvider::new(route_b, ApiKey::new(KEY)).unwrap();
    let person_b = PendingQuestions::new();
    let agent_b = Agent::new(
        h.app.clone(),
        Arc::new(provider_b),
        Arc::new(ApproveAll),
        fast_options(),
    )
    .with_human(Arc::new(person_b.clone()));
    let run_b = spawn(agent_b, "run B");
    let HumanQuestion::Ask(qb) = wait_question(&person_b).await else {
        panic!("B's question")
    };

    // A goes on: its call elicits while B is live.
    elicit_turns(&h.server, kind, "call_ea");
    h.push(Turn::text("A done."));
    let yes = |t: &str| HumanAnswer::Answer {
        selected: vec![],
        text: Some(t.into()),
    };
    assert!(person_a.answer(&qa.id, yes("go")));
    let HumanQuestion::Elicit(e) = wait_question(&person_a).await else {
        panic!("A's person gets the form")
    };
    assert_eq!(e.message, "Who are you?");
    let b_pending = person_b.pending();
    assert!(
        matches!(&b_pending[..], [HumanQuestion::Ask(q)] if q.id == qb.id),
        "B's person sees only B's question: {b_pending:?}"
    );
    assert!(person_a.answer(&e.id, grace()));
    let out_a = run_a.await.unwrap();
    assert_eq!(out_a.status, RunStatus::Completed, "{out_a:?}");
    assert!(person_b.answer(&qb.id, yes("fine")));
    let out_b = run_b.await.unwrap();
    assert_eq!(out_b.status, RunStatus::Completed, "{out_b:?}");

    let store = h.store();
    let rows = store
        .user_answers(&format!("{}:call_ea", out_a.run_id))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].run_id.as_deref(), Some(out_a.run_id.as_str()));
    let a_last = h.server.requests().last().unwrap().raw_body.clone();
    assert!(a_last.contains(&normalized_in_body()), "{a_last}");
    for r in server_b.requests() {
        assert!(!r.raw_body.contains("Who are you"), "{}", r.raw_body);
    }
    h.server.assert_clean();
    server_b.assert_clean();
}
