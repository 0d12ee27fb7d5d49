//! Issue 25, images: an MCP tool's image content (the real server-everything's `get-tiny-image`)
//! and `read_file` of a large PNG reach the model as image input through the real `aibuddy run`,
//! on all three routes, against the fake provider (which checks every image block on every
//! request): Anthropic image blocks inside `tool_result`, Responses `input_image` parts of the
//! `function_call_output`, Chat `image_url` parts of a user message after the tool messages when
//! `providers.NAME.images` is set, else the text placeholder. The large image is scaled down within
//! the bounds, the model text holds no base64, and the request after the calls is rebuilt from
//! SQLite with the images.

use crate::support;

use support::cli_run::{self, CliRun};

use std::path::PathBuf;
use std::time::Duration;

use aibuddy::results::images::{MAX_EDGE, MAX_PIXELS};
use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{Chunk, Reply, Turn};
use base64::Engine;
use serde_json::{Value, json};

const TINY: &str = "mcp__everything__get-tiny-image";

fn tools_dir() -> PathBuf {
    crate::support::mcp_tools_dir()
}

struct Fx {
    run: CliRun,
}

impl std::ops::Deref for Fx {
    type Target = CliRun;
    fn deref(&self) -> &CliRun {
        &self.run
    }
}

/// A project holding `big.png` (2400x1600), the person's `mcp.json` running server-everything
/// with only its image tool, and user-level settings for `kind` (`chat_images`: the Chat entry's
/// `images`).
async fn fx(kind: ProviderKind, chat_images: Option<bool>) -> Fx {
    let run = CliRun::start(kind).await;
    let img = image::RgbImage::from_fn(2400, 1600, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x + y) % 7) as u8])
    });
    img.save(run.project.join("big.png")).unwrap();
    if let (ProviderKind::OpenAiChat, Some(images)) = (kind, chat_images) {
        let mut providers = cli_run::providers(kind, &run.server);
        providers["local"]["images"] = json!(images);
        run.user_settings(json!({ "providers": providers }));
    }
    let everything = tools_dir().join("node/node_modules/.bin/mcp-server-everything");
    std::fs::write(
        run.data.join("mcp.json"),
        json!({"mcpServers": {"everything": {"command": everything, "args": ["stdio"],
            "tools": {"allow": ["get-tiny-image"]}}}})
        .to_string(),
    )
    .unwrap();
    Fx { run }
}

impl Fx {
    /// The model reads the image file and calls the image tool in one step, then answers. The
    /// first reply waits until the MCP server is surely connected (a run does not wait for it).
    async fn image_run(&self) -> Vec<Value> {
        let k = self.kind;
        let mut first = Turn::text("Looking.")
            .call("call_r1", "read_file", json!({"path": "big.png"}))
            .call("call_m1", TINY, json!({}))
            .reply(k);
        if let Reply::Stream { chunks, .. } = &mut first {
            chunks.insert(0, Chunk::Sleep(Duration::from_secs(4)));
        }
        self.server.push(first);
        self.server
            .push(Turn::text("A gradient and a logo.").reply(k));
        let (code, ev, err) = self
            .events(&["run", "what do these look like?", "--json", "--yes"])
            .await;
        assert_eq!(code, 0, "{err}\n{ev:?}");
        let results: Vec<&Value> = ev.iter().filter(|e| e["type"] == "tool_result").collect();
        assert_eq!(results.len(), 2, "{ev:?}");
        for r in &results {
            assert_eq!(r["status"], "ok", "{r}");
            let model = r["model"].as_str().unwrap();
            assert!(
                !model.contains("iVBORw0KGgo"),
                "no base64 in the model text: {model}"
            );
        }
        let model_of = |tool: &str| {
            let id = ev
                .iter()
                .find(|e| e["type"] == "tool_call" && e["tool"] == tool)
                .map(|e| e["tool_call_id"].clone())
                .unwrap();
            results
                .iter()
                .find(|r| r["tool_call_id"] == id)
                .map(|r| r["model"].as_str().unwrap().to_string())
                .unwrap()
        };
        assert!(
            model_of("read_file").contains("scaled down from 2400x1600"),
            "{}",
            model_of("read_file")
        );
        assert!(
            model_of(TINY).contains("[image 1: image/png, 20x20]"),
            "{}",
            model_of(TINY)
        );
        self.server.assert_clean();
        ev
    }

    /// The images of the request after the calls, as (media type, base64), in order.
    fn sent_images(&self) -> Vec<(String, String)> {
        let reqs = self.server.requests();
        assert_eq!(reqs.len(), 2);
        let body = &reqs[1].body;
        let mut out = Vec::new();
        let from_url = |u: &str| {
            let rest = u.strip_prefix("data:").expect("a data: URL");
            let (mt, d) = rest.split_once(";base64,").unwrap();
            (mt.to_string(), d.to_string())
        };
        match self.kind {
            ProviderKind::Anthropic => {
                for m in body["messages"].as_array().unwrap() {
                    for b in m["content"].as_array().into_iter().flatten() {
                        for c in b["content"].as_array().into_iter().flatten() {
                            if c["type"] == "image" {
                                assert_eq!(b["type"], "tool_result", "{b}");
                                out.push((
                                    c["source"]["media_type"].as_str().unwrap().to_string(),
                                    c["source"]["data"].as_str().unwrap().to_string(),
                                ));
                            }
                        }
                    }
                }
            }
            ProviderKind::OpenAiResponses => {
                for it in body["input"].as_array().unwrap() {
                    for p in it["output"].as_array().into_iter().flatten() {
                        if p["type"] == "input_image" {
                            assert_eq!(it["type"], "function_call_output", "{it}");
                            out.push(from_url(p["image_url"].as_str().unwrap()));
                        }
                    }
                }
            }
            ProviderKind::OpenAiChat => {
                for m in body["messages"].as_array().unwrap() {
                    for p in m["content"].as_array().into_iter().flatten() {
                        if p["type"] == "image_url" {
                            assert_eq!(m["role"], "user", "{m}");
                            out.push(from_url(p["image_url"]["url"].as_str().unwrap()));
                        }
                    }
                }
            }
        }
        out
    }
}

fn dims(data: &str) -> (u32, u32) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let img = image::load_from_memory(&bytes).unwrap();
    (img.width(), img.height())
}

async fn images_reach_the_model(kind: ProviderKind) -> Fx {
    let f = fx(kind, Some(true)).await;
    f.image_run().await;
    let sent = f.sent_images();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let (w, h) = dims(&sent[0].1);
    assert!(
        w <= MAX_EDGE && h <= MAX_EDGE && u64::from(w) * u64::from(h) <= MAX_PIXELS,
        "{w}x{h}"
    );
    assert!((w * 2).abs_diff(h * 3) <= 3, "aspect kept: {w}x{h}");
    assert_eq!(sent[1].0, "image/png");
    assert_eq!(dims(&sent[1].1), (20, 20), "the tiny image passes as it is");
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_reach_the_model_anthropic() {
    images_reach_the_model(ProviderKind::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_reach_the_model_responses() {
    images_reach_the_model(ProviderKind::OpenAiResponses).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_reach_the_model_chat_when_the_endpoint_takes_them() {
    let f = images_reach_the_model(ProviderKind::OpenAiChat).await;
    // Tool messages name the images; the parts follow in one user message.
    let body = &f.server.requests()[1].body;
    let tools: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tools.len(), 2);
    for t in tools {
        assert!(
            t["content"]
                .as_str()
                .unwrap()
                .contains("attached in the next user message"),
            "{t}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_endpoint_without_images_gets_the_placeholder() {
    let f = fx(ProviderKind::OpenAiChat, None).await;
    f.image_run().await;
    assert!(f.sent_images().is_empty());
    let body = f.server.requests()[1].body.to_string();
    assert!(
        body.contains("[image content, image/png, "),
        "the placeholder: {body}"
    );
    assert!(!body.contains("iVBORw0KGgo"), "no image bytes as text");
}

/// A Responses endpoint that takes only text as a `function_call_output` refuses the image there
/// (400): `aibuddy run` sends the step again with the image as a user message of `input_image`
/// parts after the outputs (the output naming it), and the run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_images_follow_as_a_message_when_the_endpoint_refuses_them_in_outputs() {
    let kind = ProviderKind::OpenAiResponses;
    let f = CliRun::start(kind).await;
    image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8, y as u8, 7]))
        .save(f.project.join("small.png"))
        .unwrap();
    f.server.push(
        Turn::text("Looking.")
            .call("call_r1", "read_file", json!({"path": "small.png"}))
            .reply(kind),
    );
    f.server.push(Reply::Error {
        status: 400,
        headers: vec![],
        body: json!({"error": {"message": "Invalid type for 'input[2].output': expected a string, but got an array instead.", "type": "invalid_request_error"}}),
    });
    f.server.push(Turn::text("A small gradient.").reply(kind));
    let (code, ev, err) = f
        .events(&["run", "what is in small.png?", "--json", "--yes"])
        .await;
    assert_eq!(code, 0, "{err}\n{ev:?}");
    assert_eq!(ev.last().unwrap()["status"], "completed", "{ev:?}");
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 3);
    let output_of = |i: usize| {
        reqs[i].body["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|it| it["type"] == "function_call_output")
            .map(|it| it["output"].clone())
            .unwrap()
    };
    // Refused: the image in the output. Sent again: named there, attached after it.
    assert!(output_of(1).is_array(), "{}", output_of(1));
    let text = output_of(2);
    assert!(
        text.as_str()
            .unwrap()
            .contains("attached in the next user message"),
        "{text}"
    );
    let input = reqs[2].body["input"].as_array().unwrap();
    let last = input.last().unwrap();
    assert_eq!(
        (&last["type"], &last["role"]),
        (&json!("message"), &json!("user"))
    );
    let image = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "input_image")
        .expect("the image follows the output");
    assert!(
        image["image_url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
    f.server.assert_clean();
}
