//! `glob`: files by glob pattern, gitignore-aware, bounded.

use std::sync::Arc;

use aibuddy_sandbox::{GlobOutcome, GlobRequest, Sandbox};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::path_prop;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Risk};

#[derive(Debug, Default)]
pub struct Glob;

#[derive(Debug, Deserialize)]
pub struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

#[async_trait]
impl FsTool for Glob {
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files by glob pattern, gitignore-aware (hidden and ignored files skipped). A pattern without `/` matches file names at any depth (`*.rs`); with `/` it matches the path relative to `path` (`src/**/*.ts`). Returns up to 1000 paths in path order and how many were left out.";
    const RISK: Risk = Risk::ReadOnly;
    type Args = GlobArgs;
    type Output = GlobOutcome;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "minLength": 1, "description": "Glob, e.g. `*.rs`, `src/**/*.ts`, `Cargo.toml`." },
                "path": path_prop("Directory to search (default: the project root)."),
            },
            "required": ["pattern"],
            "additionalProperties": false,
        })
    }

    fn target(args: &GlobArgs) -> String {
        args.path.clone().unwrap_or_default()
    }

    async fn run(
        &self,
        ctx: &CallContext,
        sandbox: Arc<dyn Sandbox>,
        args: GlobArgs,
    ) -> Result<GlobOutcome, ToolError> {
        let req = GlobRequest {
            pattern: args.pattern,
            path: args.path,
            limit: None,
        };
        sandbox
            .glob(req, ctx.cancel.clone())
            .await
            .map_err(tool_error)
    }

    fn model(args: &GlobArgs, out: &GlobOutcome) -> String {
        projection::glob_model(&args.pattern, out)
    }
}
