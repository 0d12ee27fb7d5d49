//! The provider-neutral conversation: what the run loop stores and every wire format is built from.
//!
//! Assistant messages that came from a provider keep the provider's own blocks ([`RawContent`])
//! next to the parsed view, so a request in the same wire format sends them back exactly as
//! received (server-side tool blocks, thinking signatures and ids included). The parsed view is
//! what the run loop reads, and what is sent when the wire format differs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kind::ProviderKind;

/// Who wrote a message. Tool results travel in user messages (the Anthropic convention; the other
/// formats split them into their own items when the request is built).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// How a tool call reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// An ordinary function/tool call (`tool_use`, `function_call`, chat `tool_calls`).
    #[default]
    Function,
    /// An OpenAI Responses `tool_search_call` with `execution: "client"`: answered by a
    /// `tool_search_output` item carrying the found definitions.
    ToolSearch,
}

/// One block of a tool result's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultBlock {
    Text {
        text: String,
    },
    /// A tool found by our `tool_search`: on native routes the provider expands its schema.
    ToolReference {
        tool_name: String,
    },
    /// An image the tool returned, already bounded in bytes and pixels by the core: base64 of
    /// a PNG, JPEG, GIF or WebP file. Sent as image input where the route takes it (Anthropic
    /// image blocks, Responses `input_image`, Chat `image_url` parts when the endpoint takes
    /// images), else described by [`image_placeholder`].
    Image {
        media_type: String,
        data: String,
    },
}

/// The text that stands for an image on a route that cannot send it.
pub fn image_placeholder(media_type: &str, data: &str) -> String {
    format!("[image content, {media_type}, {} base64 chars]", data.len())
}

/// The `data:` URL of a base64 image (Responses `input_image`, Chat `image_url`).
pub fn image_data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    /// A tool call by the model (`tool_use` / `function_call` / chat `tool_calls[]`).
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(default)]
        kind: CallKind,
    },
    /// The answer to one tool call, in a user message.
    ToolResult {
        tool_use_id: String,
        content: Vec<ResultBlock>,
        #[serde(default)]
        is_error: bool,
    },
    /// A block the provider executes or produces itself (`server_tool_use`,
    /// `tool_search_tool_result`, `thinking`, `reasoning`, ...): kept opaque, never answered.
    Opaque {
        /// The provider's own id for it when it has one (`srvtoolu_...`), so no result names it.
        id: Option<String>,
        block: Value,
    },
}

/// The provider's own assistant content, exactly as received (after applying stream deltas).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawContent {
    /// The wire format the blocks belong to; they are only replayed to the same format.
    pub format: ProviderKind,
    /// Anthropic content blocks, Responses output items, or one Chat Completions message.
    pub blocks: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
    /// Present on assistant messages that came from a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawContent>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
            raw: None,
        }
    }

    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
            raw: None,
        }
    }

    /// A user message holding tool results.
    pub fn tool_results(results: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::User,
            content: results,
            raw: None,
        }
    }

    /// The client tool calls in this message (what the run loop must answer).
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value, CallKind)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse {
                id,
                name,
                input,
                kind,
            } => Some((id.as_str(), name.as_str(), input, *kind)),
            _ => None,
        })
    }

    /// Gives the `n`-th tool call of this message (in [`Message::tool_calls`] order) the id
    /// `new_id`, in the parsed view and in the provider's raw blocks alike, so the call and its
    /// result keep matching when the message is replayed. For servers whose ids cannot be used
    /// as they are (missing, repeated within a run). Returns whether the call exists.
    pub fn rename_tool_call(&mut self, n: usize, new_id: &str) -> bool {
        let Some(ContentBlock::ToolUse { id, .. }) = self
            .content
            .iter_mut()
            .filter(|b| matches!(b, ContentBlock::ToolUse { .. }))
            .nth(n)
        else {
            return false;
        };
        *id = new_id.to_string();
        let Some(raw) = &mut self.raw else {
            return true;
        };
        let ty = |b: &Value| {
            b.get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let slot: Option<(&mut Value, &str)> = match raw.format {
            ProviderKind::OpenAiChat => raw
                .blocks
                .first_mut()
                .and_then(|m| m.get_mut("tool_calls"))
                .and_then(Value::as_array_mut)
                .and_then(|calls| calls.get_mut(n))
                .map(|c| (c, "id")),
            ProviderKind::Anthropic => raw
                .blocks
                .iter_mut()
                .filter(|b| ty(b) == "tool_use")
                .nth(n)
                .map(|b| (b, "id")),
            ProviderKind::OpenAiResponses => raw
                .blocks
                .iter_mut()
                .filter(|b| {
                    let t = ty(b);
                    t == "function_call"
                        || (t == "tool_search_call"
                            && b.get("execution").and_then(Value::as_str) == Some("client"))
                })
                .nth(n)
                .map(|b| (b, "call_id")),
        };
        if let Some((block, key)) = slot
            && let Some(o) = block.as_object_mut()
        {
            o.insert(key.into(), Value::String(new_id.to_string()));
        }
        true
    }

    /// The concatenated text of this message.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl ContentBlock {
    /// A successful text tool result.
    pub fn tool_result_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: vec![ResultBlock::Text { text: text.into() }],
            is_error: false,
        }
    }
}

/// An ordered conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub messages: Vec<Message>,
}

impl Conversation {
    pub fn push(&mut self, m: Message) {
        self.messages.push(m);
    }
}

/// Renders result blocks as plain text (for formats with no `tool_reference`, and for the
/// activeTools presentation where the found tools are activated by the loop instead).
pub fn result_text(blocks: &[ResultBlock]) -> String {
    let mut out = String::new();
    let mut refs: Vec<&str> = Vec::new();
    for b in blocks {
        match b {
            ResultBlock::Text { text } => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
            ResultBlock::ToolReference { tool_name } => refs.push(tool_name),
            ResultBlock::Image { media_type, data } => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&image_placeholder(media_type, data));
            }
        }
    }
    if !refs.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("Tools found (now available): ");
        out.push_str(&refs.join(", "));
    }
    out
}
