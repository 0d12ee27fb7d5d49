//! `read_file`: a text file with line numbers, one bounded slice at a time; an image file (PNG,
//! JPEG, GIF, WebP, BMP; SVG is text) is sent to the model as an image, bounded in bytes and
//! pixels (`crate::results::images`).

use std::sync::Arc;

use aibuddy_sandbox::{ReadContent, ReadOutcome, ReadRequest, Sandbox};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::args::path_prop;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Risk};
use crate::results::images::{self, ModelImage};

#[derive(Debug, Default)]
pub struct ReadFile;

#[derive(Debug, Deserialize)]
pub struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

#[async_trait]
impl FsTool for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file with line numbers. Returns up to `limit` lines (default 2000) from line `offset` (1-based), at most 256 KiB of text per call; lines longer than 2000 characters are cut with a marker. Images (PNG, JPEG, GIF, WebP, BMP) are returned as images, scaled down to fit; other binary files are described, not dumped. The result says how to read the next slice.";
    const RISK: Risk = Risk::ReadOnly;
    type Args = ReadArgs;
    type Output = ReadFileOutput;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": path_prop("File to read."),
                "offset": { "type": "integer", "minimum": 1, "description": "First line to return, 1-based (default 1)." },
                "limit": { "type": "integer", "minimum": 1, "maximum": 100000, "description": "Lines to return (default 2000)." },
            },
            "required": ["path"],
            "additionalProperties": false,
        })
    }

    fn target(args: &ReadArgs) -> String {
        args.path.clone()
    }

    async fn run(
        &self,
        ctx: &CallContext,
        sandbox: Arc<dyn Sandbox>,
        args: ReadArgs,
    ) -> Result<ReadFileOutput, ToolError> {
        let req = ReadRequest {
            path: args.path,
            offset: args.offset,
            limit: args.limit,
        };
        let mut read = sandbox
            .read(req, ctx.cancel.clone())
            .await
            .map_err(tool_error)?;
        let mut out = ReadFileOutput {
            image: None,
            image_refused: None,
            read: ReadOutcome {
                image_bytes: None,
                ..read.clone()
            },
        };
        match (read.image_bytes.take(), &read.content) {
            (Some(bytes), _) => {
                match tokio::task::spawn_blocking(move || images::bound_bytes(&bytes)).await {
                    Ok(Ok(img)) => out.image = Some(img),
                    Ok(Err(e)) => out.image_refused = Some(e.to_string()),
                    Err(e) => out.image_refused = Some(format!("bounding failed: {e}")),
                }
            }
            (None, ReadContent::Image { .. }) => {
                out.image_refused = Some(format!(
                    "the file is larger than {}",
                    projection::human_bytes(aibuddy_sandbox::IMAGE_BYTES_MAX)
                ));
            }
            (None, _) => {}
        }
        Ok(out)
    }

    fn model(_args: &ReadArgs, out: &ReadFileOutput) -> String {
        let text = projection::read_model(&out.read);
        match (&out.image, &out.image_refused) {
            (Some(img), _) => format!(
                "[{}: {}; sent as an image]\n{}\n",
                out.read.path,
                projection::human_bytes(out.read.size),
                img.label(1)
            ),
            (None, Some(reason)) => format!("{}[not sent as an image: {reason}]\n", text),
            (None, None) => text,
        }
    }

    fn client(_args: &ReadArgs, out: &ReadFileOutput, _raw: &Value) -> Value {
        let mut client = projection::read_client(&out.read);
        if let Some(img) = &out.image {
            client[images::CLIENT_KEY] = json!([img]);
        }
        client
    }
}

/// What `read_file` returns: the sandbox's read and, for an image file, the image bounded for
/// the model (`crate::results::images`) or why it is not sent. Results stored before images
/// were sent have neither.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadFileOutput {
    #[serde(flatten)]
    pub read: ReadOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ModelImage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_refused: Option<String>,
}
