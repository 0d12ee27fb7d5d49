//! The images of an MCP result: each `image` content block's data bounded for the model
//! (`crate::results::images`) once, when the call returns, off the async threads. The outcome is
//! kept in the stored raw value beside the server's content (`bounded_images`: per image block
//! its index and either the bounded image or why it is not sent), so the projections stay pure:
//! the model text names each image in place, and the client projection carries the sent images
//! under `model_images` for the request rebuild and the window.

use serde_json::{Value, json};

use crate::results::images::{self, MAX_IMAGES_PER_RESULT, ModelImage};

/// The key of the raw value holding the bounded images.
pub const RAW_KEY: &str = "bounded_images";

/// Bounds the image blocks of `content` (at most [`MAX_IMAGES_PER_RESULT`] are sent; later ones
/// are refused by count). Runs the decoding on the blocking pool.
pub async fn bound_content_images(content: &Value) -> Value {
    let blocks: Vec<(usize, String)> = content
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, b)| b["type"].as_str() == Some("image"))
        .map(|(i, b)| (i, b["data"].as_str().unwrap_or_default().to_string()))
        .collect();
    if blocks.is_empty() {
        return Value::Null;
    }
    let work = move || {
        blocks
            .iter()
            .enumerate()
            .map(|(n, (i, data))| {
                if n >= MAX_IMAGES_PER_RESULT {
                    return json!({"block": i,
                        "refused": format!("more than {MAX_IMAGES_PER_RESULT} images in one result")});
                }
                match images::bound_base64(data) {
                    Ok(img) => json!({"block": i, "image": img}),
                    Err(e) => json!({"block": i, "refused": e.to_string()}),
                }
            })
            .collect::<Vec<Value>>()
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(v) => Value::Array(v),
        Err(e) => {
            tracing::warn!("bounding the images of an MCP result failed (Projection): {e}");
            Value::Null
        }
    }
}

/// What the raw value says about the image block at `index`: the image sent, or why not.
pub fn entry(raw: &Value, index: usize) -> Option<Result<ModelImage, String>> {
    let e = raw[RAW_KEY]
        .as_array()?
        .iter()
        .find(|e| e["block"].as_u64() == Some(index as u64))?;
    if let Some(reason) = e["refused"].as_str() {
        return Some(Err(reason.to_string()));
    }
    serde_json::from_value(e["image"].clone()).ok().map(Ok)
}

/// The images sent to the model, in block order.
pub fn sent(raw: &Value) -> Vec<ModelImage> {
    raw[RAW_KEY]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| serde_json::from_value(e["image"].clone()).ok())
        .collect()
}
