//! `read_file`: a text file with line numbers, one bounded slice at a time.

use std::sync::Arc;

use aibuddy_sandbox::{ReadOutcome, ReadRequest, Sandbox};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::path_prop;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Risk};

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
    const DESCRIPTION: &'static str = "Read a text file with line numbers. Returns up to `limit` lines (default 2000) from line `offset` (1-based), at most 256 KiB of text per call; lines longer than 2000 characters are cut with a marker. Binary files and images are described, not dumped. The result says how to read the next slice.";
    const RISK: Risk = Risk::ReadOnly;
    type Args = ReadArgs;
    type Output = ReadOutcome;

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
    ) -> Result<ReadOutcome, ToolError> {
        let req = ReadRequest {
            path: args.path,
            offset: args.offset,
            limit: args.limit,
        };
        sandbox
            .read(req, ctx.cancel.clone())
            .await
            .map_err(tool_error)
    }

    fn model(_args: &ReadArgs, out: &ReadOutcome) -> String {
        projection::read_model(out)
    }

    fn client(_args: &ReadArgs, out: &ReadOutcome, _raw: &Value) -> Value {
        projection::read_client(out)
    }
}
