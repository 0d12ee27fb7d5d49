//! A minimal MCP client built on aibuddy-mcp, driven by the official conformance harness
//! (`conformance client --command <this binary> --scenario <name>`): the harness passes the
//! scenario server's URL as the last argument and the scenario in `MCP_CONFORMANCE_SCENARIO`.
//!
//! It connects over streamable HTTP, lists the tools, calls each one with arguments made from
//! its schema, and accepts every elicitation with an empty form (so schema defaults apply).
//! `auth/*` scenarios go through `aibuddy_mcp::oauth` instead (see `auth.rs`).

mod auth;

use std::sync::Arc;
use std::time::Duration;

use aibuddy_mcp::{
    ElicitationBroker, ElicitationRequest, ElicitationResponse, McpHandlers, McpManager,
    McpOptions, ServerConfig, ServerState,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

struct AcceptDefaults;

#[async_trait::async_trait]
impl ElicitationBroker for AcceptDefaults {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        eprintln!("elicitation from {}: {}", request.server, request.message);
        ElicitationResponse::Accept(Map::new())
    }
}

/// Arguments for a tool: every required property gets a simple value of its type.
pub(crate) fn sample_arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = schema.get("properties").and_then(Value::as_object);
    for name in required {
        let prop = props.and_then(|p| p.get(name));
        let value = match prop.and_then(|p| p.get("default")) {
            Some(default) => default.clone(),
            None => match prop.and_then(|p| p.get("type")).and_then(Value::as_str) {
                Some("number") | Some("integer") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            },
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

async fn run(url: String) -> Result<(), String> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} against {url}");
    let mut config = ServerConfig::http("conformance", url);
    config.timeouts.connect = Duration::from_secs(10);
    config.timeouts.call = Duration::from_secs(10);
    let manager = McpManager::start(
        vec![config],
        McpHandlers {
            elicitation: Arc::new(AcceptDefaults),
        },
        McpOptions {
            client_name: "aibuddy-conformance-client".into(),
            ..McpOptions::default()
        },
    );
    let connected = manager
        .wait_for(Duration::from_secs(15), |all| {
            all.iter().all(|s| s.state == ServerState::Connected)
        })
        .await;
    if !connected {
        let status = manager.status();
        manager.shutdown().await;
        return Err(format!("not connected: {status:?}"));
    }
    if scenario == "sse-retry" {
        // rmcp opens its standalone GET stream in the background right after `initialized`.
        // The scenario's server cannot tell that GET from a reconnection: if it arrives after
        // the tool call's POST, the server answers the call on it and never sees the real
        // reconnection (seen in CI on a loaded machine). Let the standalone stream settle first.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut failures = Vec::new();
    for entry in manager.catalog() {
        let args = sample_arguments(&entry.input_schema);
        match manager
            .call(&entry.qualified_name, args, CancellationToken::new(), None)
            .await
        {
            Ok(result) => println!("{}: {}", entry.name, result.text()),
            Err(e) => {
                eprintln!("{}: {e}", entry.name);
                failures.push(e.to_string());
            }
        }
    }
    manager.shutdown().await;
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

#[tokio::main]
async fn main() {
    let Some(url) = std::env::args()
        .skip(1)
        .last()
        .filter(|u| u.starts_with("http"))
    else {
        eprintln!("usage: aibuddy-mcp-conformance-client <server-url>");
        std::process::exit(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let outcome = if scenario.starts_with("auth/") {
        auth::run(url, &scenario).await
    } else {
        run(url).await
    };
    if let Err(e) = outcome {
        eprintln!("conformance client failed: {e}");
        std::process::exit(1);
    }
}
