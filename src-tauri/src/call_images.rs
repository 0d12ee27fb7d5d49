//! The images of a stored call, for its card: the bounded images the core kept in the call's
//! client projection (`aibuddy::results::images`, key `model_images`), handed to the window as
//! `data:` URLs. Only the four image types the providers take pass, with base64 data only; the
//! window never loads an image from a URL that a tool, a server or the model wrote.

use aibuddy::results::images::{MAX_IMAGES_PER_RESULT, ModelImage, from_client};
use serde::Serialize;
use serde_json::Value;
use tauri::State;
use ts_rs::TS;

use crate::error::CommandError;
use crate::history_browser::{ensure_visible, record, scope_of};
use crate::state::ShellState;

/// One image of a call as its card shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct CallImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    pub width: u32,
    pub height: u32,
    /// `data:<media_type>;base64,<data>`.
    pub data_url: String,
}

const TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

fn is_base64(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// The images a client projection holds, as `data:` URLs; anything else is left out. Pure.
pub fn images_of(client: Option<&Value>) -> Vec<CallImage> {
    let Some(client) = client else {
        return Vec::new();
    };
    from_client(client)
        .into_iter()
        .filter(|i: &ModelImage| TYPES.contains(&i.media_type.as_str()) && is_base64(&i.data))
        .take(MAX_IMAGES_PER_RESULT)
        .map(|i| CallImage {
            data_url: format!("data:{};base64,{}", i.media_type, i.data),
            media_type: i.media_type,
            width: i.width,
            height: i.height,
        })
        .collect()
}

/// The images a stored call of the open project sent to the model (none for most calls).
#[tauri::command]
pub async fn call_images(
    state: State<'_, ShellState>,
    tool_call_id: String,
) -> Result<Vec<CallImage>, CommandError> {
    let (store, root) = scope_of(&state)?;
    ensure_visible(&store, &root, &tool_call_id).await?;
    let rec = record(&store, &tool_call_id).await?;
    Ok(images_of(rec.client_projection.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_base64_images_of_the_four_types_become_data_urls() {
        let img = |mt: &str, data: &str| {
            json!({"media_type": mt, "data": data, "width": 2, "height": 1,
                "source_width": 2, "source_height": 1})
        };
        let client = json!({"model_images": [
            img("image/png", "iVBORw0KGgo="),
            img("image/svg+xml", "PHN2Zz4="),
            img("image/png", "\"><script>"),
        ]});
        assert_eq!(
            images_of(Some(&client)),
            vec![CallImage {
                media_type: "image/png".into(),
                width: 2,
                height: 1,
                data_url: "data:image/png;base64,iVBORw0KGgo=".into(),
            }]
        );
        assert!(images_of(Some(&json!({"summary": "x"}))).is_empty());
        assert!(images_of(None).is_empty());
    }
}
