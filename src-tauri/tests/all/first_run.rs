//! A first run that says what to do: `model_setup` says whether any model can run and probes
//! the local OpenAI-compatible servers' loopback ports with `GET /v1/models` (here: fake servers
//! on free ports, one answering like Ollama, one with a 404, one that never answers, one port
//! closed), bounded in time and size, model names escaped.

use crate::support;

use std::time::{Duration, Instant};

use aibuddy_desktop::local_servers::{LocalServer, Target, needs_setup, parse_models, probe_all};
use aibuddy_provider::{BaseUrlOverrides, ProvidersConfig};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback HTTP server answering every request with `status` and `body` (or, with `hang`,
/// accepting and never answering). Returns its port.
async fn serve(status: &'static str, body: String, hang: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                if hang {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    return;
                }
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

fn target(id: &'static str, port: u16) -> Target {
    Target { id, name: id, port }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_server_answering_like_an_openai_endpoint_is_offered() {
    let models = json!({"object": "list", "data": [
        {"id": "qwen3:8b", "object": "model"},
        {"id": "evil\u{1b}]0;title\u{7}", "object": "model"}
    ]})
    .to_string();
    let ok = serve("200 OK", models, false).await;
    let missing = serve("404 Not Found", "{}".into(), false).await;
    let html = serve("200 OK", "<html>a web app</html>".into(), false).await;
    let hung = serve("200 OK", String::new(), true).await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let found = probe_all(
        "127.0.0.1",
        &[
            target("ollama", ok),
            target("lmstudio", missing),
            target("web", html),
            target("llamacpp", hung),
            target("closed", closed),
        ],
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the probes run at once, each bounded: {:?}",
        started.elapsed()
    );
    assert_eq!(
        found,
        vec![LocalServer {
            id: "ollama".into(),
            name: "ollama".into(),
            base_url: format!("http://127.0.0.1:{ok}/v1"),
            models: vec!["qwen3:8b".into(), "evil\\e]0;title\\x07".into()],
        }]
    );
}

#[test]
fn models_answers_are_parsed_bounded() {
    assert_eq!(parse_models(b"not json"), None);
    assert_eq!(parse_models(br#"{"models": []}"#), None);
    let many: Vec<_> = (0..500).map(|i| json!({"id": format!("m{i}")})).collect();
    let parsed = parse_models(json!({"data": many}).to_string().as_bytes()).unwrap();
    assert_eq!(parsed.len(), 50);
}

#[test]
fn nothing_can_run_without_an_entry_a_key_or_a_local_base_url() {
    let env = BaseUrlOverrides::default();
    let cfg = |v: serde_json::Value| -> ProvidersConfig { serde_json::from_value(v).unwrap() };
    // No entry: the built-in anthropic entry runs only with a key.
    assert!(needs_setup(&cfg(json!({})), &env, |_| false));
    assert!(!needs_setup(&cfg(json!({})), &env, |_| true));
    // A vendor entry without a key, or one with a problem, cannot run.
    assert!(needs_setup(
        &cfg(json!({"openai": {"model": "gpt-5.4"}, "bad": {"model": "x"}})),
        &env,
        |_| false
    ));
    // A local base URL needs no key.
    assert!(!needs_setup(
        &cfg(
            json!({"local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:11434/v1", "model": "q"}})
        ),
        &env,
        |_| false
    ));
    // The environment's base URL makes the built-in entry a local one.
    let local_env = BaseUrlOverrides {
        anthropic: Some("http://127.0.0.1:9".into()),
        openai: None,
    };
    assert!(!needs_setup(&cfg(json!({})), &local_env, |_| false));
}

#[test]
fn model_setup_answers_for_the_open_project() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("settings.json"),
        json!({"providers": {"local": {"kind": "openai-chat",
            "base_url": "http://127.0.0.1:9/v1", "model": "q"}}})
        .to_string(),
    )
    .unwrap();
    let w = support::open(&project, &data);
    let setup = w.invoke("model_setup", json!({})).unwrap();
    assert_eq!(
        setup,
        json!({"needs_setup": false, "local_servers": []}),
        "a configured local entry can run: nothing probed"
    );
}
