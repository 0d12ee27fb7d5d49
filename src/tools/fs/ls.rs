//! `ls`: one directory of the project, bounded.

use std::sync::Arc;

use aibuddy_sandbox::{ListRequest, Listing, Sandbox};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::path_prop;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Risk};

#[derive(Debug, Default)]
pub struct Ls;

#[derive(Debug, Deserialize)]
pub struct LsArgs {
    path: Option<String>,
}

#[async_trait]
impl FsTool for Ls {
    const NAME: &'static str = "ls";
    const DESCRIPTION: &'static str = "List one directory of the project: entries with type and size, sorted by name, bounded (1000). Heavy or gitignored folders (.git, node_modules, target/...) are summarised, not expanded.";
    const RISK: Risk = Risk::ReadOnly;
    type Args = LsArgs;
    type Output = Listing;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": { "path": path_prop("Directory to list (default: the project root).") },
            "additionalProperties": false,
        })
    }

    fn target(args: &LsArgs) -> String {
        args.path.clone().unwrap_or_default()
    }

    async fn run(
        &self,
        ctx: &CallContext,
        sandbox: Arc<dyn Sandbox>,
        args: LsArgs,
    ) -> Result<Listing, ToolError> {
        let req = ListRequest {
            path: args.path,
            limit: None,
        };
        sandbox
            .list(req, ctx.cancel.clone())
            .await
            .map_err(tool_error)
    }

    fn model(_args: &LsArgs, out: &Listing) -> String {
        projection::ls_model(out)
    }
}
