//! The loopback redirect listener of RFC 8252 §7.3: `http://127.0.0.1:<random port>/callback`,
//! shared by the CLI (`aibuddy mcp login`) and the desktop (system browser). It answers every
//! request with a short fixed page and returns the first callback URL that carries a `code` or an
//! `error`; anything else (favicon, probes) is answered 404 and ignored.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::error::OAuthError;

/// The path the authorization server redirects to.
pub const CALLBACK_PATH: &str = "/callback";
/// Longest request head read from the browser.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// How long one browser connection may take to send its request line.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

const DONE_PAGE: &str = "<!doctype html><title>aibuddy</title><p>Authorization received. You can close this window.</p>";

/// A listener on 127.0.0.1, port chosen by the OS.
pub struct Loopback {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Loopback {
    /// Binds 127.0.0.1:0.
    pub async fn bind() -> Result<Loopback, OAuthError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(OAuthError::Listener)?;
        let addr = listener.local_addr().map_err(OAuthError::Listener)?;
        Ok(Loopback { listener, addr })
    }

    /// The redirect URI to register and send.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.addr.port())
    }

    /// Waits (for as long as the caller lets it) for the redirect; returns the full callback URL.
    pub async fn wait(&self) -> Result<String, OAuthError> {
        loop {
            let (stream, _) = self.listener.accept().await.map_err(OAuthError::Listener)?;
            match tokio::time::timeout(READ_TIMEOUT, answer(stream)).await {
                Ok(Ok(Some(target))) => {
                    return Ok(format!("http://127.0.0.1:{}{target}", self.addr.port()));
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => tracing::debug!("redirect listener: unreadable request: {e}"),
                Err(_) => tracing::debug!("redirect listener: request not sent in time"),
            }
        }
    }
}

/// Reads one request head; answers it; returns its target when it is the callback.
async fn answer(mut stream: TcpStream) -> std::io::Result<Option<String>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_BYTES {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let target = callback_target(&head);
    let (status, body) = match &target {
        Some(_) => ("200 OK", DONE_PAGE),
        None => ("404 Not Found", "not found"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    let _ = stream.shutdown().await;
    Ok(target)
}

/// The request target when `head` is `GET /callback?…` carrying `code` or `error` (pure).
pub fn callback_target(head: &[u8]) -> Option<String> {
    let line_end = head.iter().position(|&b| b == b'\r' || b == b'\n')?;
    let line = std::str::from_utf8(&head[..line_end]).ok()?;
    let mut parts = line.split(' ');
    if parts.next()? != "GET" {
        return None;
    }
    let target = parts.next()?;
    let (path, query) = target.split_once('?')?;
    if path != CALLBACK_PATH {
        return None;
    }
    let has_result =
        url::form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "code" || k == "error");
    has_result.then(|| target.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_callback_with_a_result_counts() {
        assert_eq!(
            callback_target(b"GET /callback?code=abc&state=x HTTP/1.1\r\nHost: a\r\n\r\n"),
            Some("/callback?code=abc&state=x".into())
        );
        assert_eq!(
            callback_target(b"GET /callback?error=access_denied HTTP/1.1\r\n\r\n"),
            Some("/callback?error=access_denied".into())
        );
        assert_eq!(callback_target(b"GET /favicon.ico HTTP/1.1\r\n\r\n"), None);
        assert_eq!(callback_target(b"GET /callback HTTP/1.1\r\n\r\n"), None);
        assert_eq!(
            callback_target(b"POST /callback?code=a HTTP/1.1\r\n\r\n"),
            None
        );
        assert_eq!(callback_target(b"\xff\xfe"), None);
    }

    #[tokio::test]
    async fn a_real_browser_request_is_answered_and_returned() {
        let loopback = Loopback::bind().await.unwrap();
        let uri = loopback.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:"));
        let fetch = async {
            let client = reqwest::Client::new();
            let miss = client
                .get(uri.replace("/callback", "/favicon.ico"))
                .send()
                .await
                .unwrap();
            assert_eq!(miss.status(), 404);
            let hit = client
                .get(format!("{uri}?code=c1&state=s1"))
                .send()
                .await
                .unwrap();
            assert_eq!(hit.status(), 200);
            hit.text().await.unwrap()
        };
        let (got, page) = tokio::join!(loopback.wait(), fetch);
        assert_eq!(got.unwrap(), format!("{uri}?code=c1&state=s1"));
        assert!(page.contains("You can close this window"));
    }
}
