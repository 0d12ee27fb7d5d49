//! `fixtures/oauth_server.py` as a child process (its first stdout line names its port), its
//! `/stats`, and a "browser" that follows an authorization URL to the loopback listener.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use aibuddy_mcp::oauth::OpenUrl;
use serde_json::Value;

pub struct OAuthServer {
    child: Child,
    pub base: String,
}

impl OAuthServer {
    /// Its MCP endpoint (streamable HTTP).
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub async fn stats(&self) -> Value {
        reqwest::get(format!("{}/stats", self.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(extra: &[&str]) -> OAuthServer {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/oauth_server.py"
    );
    let mut child = Command::new("python3")
        .arg(script)
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().strip_prefix("PORT ").unwrap().parse().unwrap();
    OAuthServer {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// The browser part: follows the authorization URL (and its redirect to the loopback listener).
pub fn browser() -> OpenUrl {
    Arc::new(|url: String| {
        Box::pin(async move {
            let _ = reqwest::get(&url).await;
        })
    })
}
