//! The `Provider` seam and its HTTP implementation for the three wire formats.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::Route;
use crate::error::ProviderError;
use crate::http::{self, EventStream};
use crate::keys::ApiKey;
use crate::kind::ProviderKind;
use crate::request::ModelRequest;
use crate::wire::{anthropic, chat, responses};

/// One model provider. `stream` sends one step and yields its events; cancelling `cancel` ends
/// the stream promptly (a final `Err(Cancelled)` when the consumer is still listening) and closes
/// the connection.
#[async_trait]
pub trait Provider: Send + Sync {
    fn route(&self) -> &Route;

    /// The exact JSON body the next `stream` call would send (key-free: keys go in headers).
    fn request_body(&self, req: &ModelRequest) -> Result<Value, ProviderError>;

    async fn stream(
        &self,
        req: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ProviderError>;
}

/// Anthropic Messages, OpenAI Responses or Chat Completions over `reqwest`, chosen by the route.
pub struct HttpProvider {
    route: Route,
    key: Option<ApiKey>,
    client: reqwest::Client,
    /// Chat Completions only: send unstreamed (configured, or learnt from a failure).
    unstreamed: AtomicBool,
    /// Chat Completions only: the server wants `max_completion_tokens`, not `max_tokens`
    /// (OpenAI's newer models refuse the old name; learnt from that refusal).
    completion_tokens: AtomicBool,
    /// OpenAI Responses only: the endpoint refused images in `function_call_output` (learnt from
    /// that refusal), so they follow the outputs as a user message of `input_image` parts.
    images_as_message: AtomicBool,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("route", &self.route)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl HttpProvider {
    /// `key` is required for Anthropic and OpenAI Responses; local Chat Completions servers may
    /// need none.
    pub fn new(route: Route, key: Option<ApiKey>) -> Result<Self, ProviderError> {
        if key.is_none() && route.kind != ProviderKind::OpenAiChat {
            return Err(ProviderError::MissingKey {
                provider: route.name.clone(),
                env_var: route.kind.key_env_var().to_string(),
            });
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|_| ProviderError::Config("the HTTP client could not be built".into()))?;
        let unstreamed = AtomicBool::new(route.stream == Some(false));
        Ok(Self {
            route,
            key,
            client,
            unstreamed,
            completion_tokens: AtomicBool::new(false),
            images_as_message: AtomicBool::new(false),
        })
    }

    fn url(&self) -> String {
        let base = &self.route.base_url;
        match self.route.kind {
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
            ProviderKind::OpenAiResponses => format!("{base}/responses"),
            ProviderKind::OpenAiChat => format!("{base}/chat/completions"),
        }
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        let secret = |v: String| {
            let mut hv = HeaderValue::from_str(&v)
                .map_err(|_| ProviderError::KeyStore("the API key is not a valid header".into()))?;
            hv.set_sensitive(true);
            Ok::<_, ProviderError>(hv)
        };
        match (self.route.kind, &self.key) {
            (ProviderKind::Anthropic, Some(k)) => {
                h.insert(
                    HeaderName::from_static("x-api-key"),
                    secret(k.expose().to_string())?,
                );
            }
            (_, Some(k)) => {
                h.insert(
                    reqwest::header::AUTHORIZATION,
                    secret(format!("Bearer {}", k.expose()))?,
                );
            }
            (_, None) => {}
        }
        if self.route.kind == ProviderKind::Anthropic {
            h.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(anthropic::API_VERSION),
            );
        }
        Ok(h)
    }

    fn body(&self, req: &ModelRequest, stream: bool) -> Result<Value, ProviderError> {
        match self.route.kind {
            ProviderKind::Anthropic => anthropic::build_request(req, stream),
            ProviderKind::OpenAiResponses => responses::build_request_images(
                req,
                stream,
                !self.images_as_message.load(Ordering::Relaxed),
            ),
            ProviderKind::OpenAiChat => {
                let mut body = chat::build_request_images(req, stream, self.route.images)?;
                if self.completion_tokens.load(Ordering::Relaxed)
                    && let Some(o) = body.as_object_mut()
                    && let Some(n) = o.remove("max_tokens")
                {
                    o.insert("max_completion_tokens".into(), n);
                }
                Ok(body)
            }
        }
    }

    async fn chat_unstreamed(
        &self,
        req: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<EventStream, ProviderError> {
        let body = self.body(req, false)?;
        let resp = http::send(&self.client, &self.url(), self.headers()?, &body, cancel).await?;
        let v = http::read_json(resp, cancel).await?;
        if let Some(e) = crate::wire::error_in_body(&v) {
            return Err(e);
        }
        Ok(http::ready_stream(chat::events_from_response(&v)?))
    }
}

/// A non-streamed answer must carry its content (`content` / `output`): a JSON body without it
/// is not an empty answer.
fn require_array(v: &Value, key: &str) -> Result<(), ProviderError> {
    if v.get(key).is_some_and(Value::is_array) {
        Ok(())
    } else {
        Err(ProviderError::Protocol(format!(
            "the JSON response has no `{key}` array"
        )))
    }
}

/// A 400 that asks for `max_completion_tokens` instead of `max_tokens` ("Unsupported parameter:
/// 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.").
fn wants_completion_tokens(e: &ProviderError) -> bool {
    matches!(e, ProviderError::Http { status: 400, message, .. }
        if message.contains("max_completion_tokens"))
}

/// A 400 of a Responses endpoint that takes only text as a `function_call_output` (asked only
/// when the request had images there): OpenAI-compatible servers say so in their own words
/// ("Invalid type for 'input[2].output': expected a string, but got an array instead.", "image
/// input is not supported in function_call_output", ...).
fn images_in_outputs_refused(e: &ProviderError) -> bool {
    let ProviderError::Http {
        status: 400,
        message,
        ..
    } = e
    else {
        return false;
    };
    let m = message.to_ascii_lowercase();
    m.contains("image")
        || m.contains("function_call_output")
        || (m.contains("output") && (m.contains("string") || m.contains("array")))
}

/// A failure that says the endpoint cannot stream (with tools): llama.cpp, some proxies.
fn streaming_refused(e: &ProviderError) -> bool {
    match e {
        ProviderError::Http {
            status, message, ..
        } if (400..600).contains(status) && *status != 429 => {
            // "upstream" (a proxy's 502/503: "upstream connect error") says nothing about
            // streaming.
            message
                .to_ascii_lowercase()
                .replace("upstream", "")
                .contains("stream")
        }
        _ => false,
    }
}

#[async_trait]
impl Provider for HttpProvider {
    fn route(&self) -> &Route {
        &self.route
    }

    fn request_body(&self, req: &ModelRequest) -> Result<Value, ProviderError> {
        let stream = !(self.route.kind == ProviderKind::OpenAiChat
            && self.unstreamed.load(Ordering::Relaxed));
        self.body(req, stream)
    }

    async fn stream(
        &self,
        req: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ProviderError> {
        match self.stream_once(req, cancel.clone()).await {
            Err(e)
                if self.route.kind == ProviderKind::OpenAiChat
                    && wants_completion_tokens(&e)
                    && !self.completion_tokens.swap(true, Ordering::Relaxed) =>
            {
                tracing::warn!(provider = %self.route.name, "max_tokens refused; sending max_completion_tokens");
                self.stream_once(req, cancel).await
            }
            Err(e)
                if self.route.kind == ProviderKind::OpenAiResponses
                    && images_in_outputs_refused(&e)
                    && responses::has_result_images(req)
                    && !self.images_as_message.swap(true, Ordering::Relaxed) =>
            {
                tracing::warn!(provider = %self.route.name, "images in function_call_output refused; sending them as a user message");
                self.stream_once(req, cancel).await
            }
            r => r,
        }
    }
}

impl HttpProvider {
    async fn stream_once(
        &self,
        req: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ProviderError> {
        let kind = self.route.kind;
        if kind == ProviderKind::OpenAiChat && self.unstreamed.load(Ordering::Relaxed) {
            return self.chat_unstreamed(req, &cancel).await;
        }
        let body = self.body(req, true)?;
        let url = self.url();
        // The URL is not logged: a configured base URL may carry credentials.
        tracing::debug!(provider = %self.route.name, kind = kind.as_str(), model = %req.model, "provider request");
        let resp = match http::send(&self.client, &url, self.headers()?, &body, &cancel).await {
            Ok(r) => r,
            Err(e) if kind == ProviderKind::OpenAiChat && streaming_refused(&e) => {
                tracing::warn!(provider = %self.route.name, "streaming refused; falling back to unstreamed requests");
                self.unstreamed.store(true, Ordering::Relaxed);
                return self.chat_unstreamed(req, &cancel).await;
            }
            Err(e) => return Err(e),
        };
        match kind {
            ProviderKind::Anthropic => {
                http::events(
                    resp,
                    anthropic::Parser::new(),
                    |v| {
                        require_array(v, "content")?;
                        Ok(anthropic::events_from_response(v))
                    },
                    cancel,
                )
                .await
            }
            ProviderKind::OpenAiResponses => {
                http::events(
                    resp,
                    responses::Parser::new(),
                    |v| {
                        require_array(v, "output")?;
                        Ok(responses::events_from_response(v))
                    },
                    cancel,
                )
                .await
            }
            ProviderKind::OpenAiChat => {
                http::events(
                    resp,
                    chat::Parser::new(),
                    chat::events_from_response,
                    cancel,
                )
                .await
            }
        }
    }
}
