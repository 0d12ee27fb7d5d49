//! The image invariants of the fake server: every image a request carries is one the API would
//! take. Pure.
//!
//! - Anthropic: `{"type":"image","source":{"type":"base64","media_type":M,"data":D}}` with `M`
//!   one of PNG, JPEG, GIF, WebP, `D` non-empty standard base64 whose bytes are that format and
//!   at most [`MAX_IMAGE_BYTES`];
//! - Responses: `{"type":"input_image","image_url":"data:M;base64,D","detail":?}` (`detail`
//!   `low`, `high` or `auto`), in a user message or a `function_call_output`'s `output` list;
//! - Chat: `{"type":"image_url","image_url":{"url":"data:M;base64,D"}}` only in user messages
//!   (a tool message takes text alone).

use base64::Engine;
use serde_json::Value;

/// The media types the three APIs take.
pub const IMAGE_MEDIA_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest decoded image the APIs take (Anthropic: 5 MB per image).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Why a base64 image of `media_type` would be refused, if it would.
pub fn image_problem(media_type: &str, data: &str) -> Option<String> {
    if !IMAGE_MEDIA_TYPES.contains(&media_type) {
        return Some(format!(
            "media type {media_type:?} is not an image type the API takes"
        ));
    }
    if data.is_empty() {
        return Some("empty image data".into());
    }
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data) {
        Ok(b) => b,
        Err(e) => return Some(format!("image data is not base64: {e}")),
    };
    if bytes.len() > MAX_IMAGE_BYTES {
        return Some(format!("image of {} bytes is over 5 MB", bytes.len()));
    }
    let magic_ok = match media_type {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(b"\xff\xd8\xff"),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        _ => bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP",
    };
    (!magic_ok).then(|| format!("image data is not a {media_type} file"))
}

/// Why a `data:` URL image would be refused, if it would (remote URLs are refused too: aibuddy
/// only ever sends the bytes it bounded).
pub fn data_url_problem(url: &str) -> Option<String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Some("an image URL that is not a data: URL".into());
    };
    let Some((media_type, data)) = rest.split_once(";base64,") else {
        return Some("a data: URL that is not base64".into());
    };
    image_problem(media_type, data)
}

/// An Anthropic `image` block.
pub fn anthropic_image_problem(block: &Value) -> Option<String> {
    let Some(source) = block.get("source") else {
        return Some("an image block without source".into());
    };
    if source.get("type").and_then(Value::as_str) != Some("base64") {
        return Some("an image block whose source is not base64".into());
    }
    let media_type = source
        .get("media_type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let data = source
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    image_problem(media_type, data)
}

/// A Responses `input_image` part.
pub fn input_image_problem(part: &Value) -> Option<String> {
    if let Some(d) = part.get("detail")
        && !matches!(d.as_str(), Some("low" | "high" | "auto"))
    {
        return Some(format!("input_image detail {d}"));
    }
    match part.get("image_url").and_then(Value::as_str) {
        Some(url) => data_url_problem(url),
        None => Some("input_image without image_url".into()),
    }
}

/// A Chat `image_url` part.
pub fn chat_image_problem(part: &Value) -> Option<String> {
    match part.pointer("/image_url/url").and_then(Value::as_str) {
        Some(url) => data_url_problem(url),
        None => Some("image_url part without image_url.url".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUg==";

    #[test]
    fn images_are_checked_by_type_encoding_and_bytes() {
        assert_eq!(image_problem("image/png", PNG), None);
        assert!(image_problem("image/svg+xml", PNG).is_some());
        assert!(image_problem("image/png", "").is_some());
        assert!(image_problem("image/png", "!!not base64").is_some());
        assert!(
            image_problem("image/jpeg", PNG).is_some(),
            "PNG bytes as JPEG"
        );
        assert_eq!(
            data_url_problem(&format!("data:image/png;base64,{PNG}")),
            None
        );
        assert!(data_url_problem("https://example.com/a.png").is_some());
        let block = json!({"type": "image", "source": {"type": "url", "url": "https://x"}});
        assert!(anthropic_image_problem(&block).is_some());
        let part = json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "huge"});
        assert!(input_image_problem(&part).is_some());
        assert!(chat_image_problem(&json!({"type": "image_url", "image_url": "x"})).is_some());
    }
}
