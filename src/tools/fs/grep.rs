//! `grep`: file contents by regular expression (ripgrep's engine), gitignore-aware, bounded.

use std::sync::Arc;

use aibuddy_sandbox::{GrepMode, GrepOutcome, GrepRequest, Sandbox};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::path_prop;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Risk};

#[derive(Debug, Default)]
pub struct Grep;

#[derive(Debug, Deserialize)]
pub struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    output_mode: Option<GrepMode>,
    context: Option<u32>,
    #[serde(default)]
    case_insensitive: bool,
    head_limit: Option<usize>,
}

impl GrepArgs {
    fn request(self) -> GrepRequest {
        GrepRequest {
            pattern: self.pattern,
            path: self.path,
            glob: self.glob,
            mode: self.output_mode.unwrap_or_default(),
            context: self.context.unwrap_or(0),
            case_insensitive: self.case_insensitive,
            limit: self.head_limit,
        }
    }
}

#[async_trait]
impl FsTool for Grep {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents with a regular expression (ripgrep syntax and engine), gitignore-aware. output_mode: \"content\" (matching lines with line numbers, optional context), \"files_with_matches\", or \"count\". Returns at most head_limit rows (default 200) and says how many were left out.";
    const RISK: Risk = Risk::ReadOnly;
    type Args = GrepArgs;
    type Output = GrepOutcome;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "minLength": 1, "description": "Regular expression (Rust regex / ripgrep syntax)." },
                "path": path_prop("Directory or file to search (default: the project root)."),
                "glob": { "type": "string", "description": "Only files matching this glob, e.g. `*.rs` or `src/**/*.ts`." },
                "output_mode": { "type": "string", "enum": ["content", "files_with_matches", "count"], "description": "Default \"content\"." },
                "context": { "type": "integer", "minimum": 0, "maximum": 20, "description": "Lines of context before and after each match (content mode)." },
                "case_insensitive": { "type": "boolean", "description": "Ignore case (default false)." },
                "head_limit": { "type": "integer", "minimum": 1, "maximum": 5000, "description": "Rows returned (default 200)." },
            },
            "required": ["pattern"],
            "additionalProperties": false,
        })
    }

    fn target(args: &GrepArgs) -> String {
        args.path.clone().unwrap_or_default()
    }

    async fn run(
        &self,
        ctx: &CallContext,
        sandbox: Arc<dyn Sandbox>,
        args: GrepArgs,
    ) -> Result<GrepOutcome, ToolError> {
        sandbox
            .grep(args.request(), ctx.cancel.clone())
            .await
            .map_err(tool_error)
    }

    fn model(args: &GrepArgs, out: &GrepOutcome) -> String {
        projection::grep_model(&args.pattern, out)
    }
}
