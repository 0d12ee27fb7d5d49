//! `write_file`: create or overwrite a file atomically, confirmed by the person, read back.

use std::sync::Arc;

use aibuddy_sandbox::{Expected, Sandbox, WriteOutcome, WritePlan, WriteRequest};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::path_prop;
use super::plans::Plans;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Prepared, Risk};

/// The write tool; it remembers what each previewed call would overwrite.
#[derive(Default)]
pub struct WriteFile {
    plans: Plans<Expected>,
}

#[derive(Debug, Deserialize)]
pub struct WriteArgs {
    path: String,
    content: String,
}

impl WriteArgs {
    fn request(self, expect: Option<Expected>) -> WriteRequest {
        WriteRequest {
            path: self.path,
            content: self.content,
            expect,
        }
    }
}

/// The expected consequence of a previewed write, as the person is asked.
fn consequence(plan: &WritePlan) -> String {
    match &plan.existing {
        Some(old) => format!(
            "overwrites {}: {} -> {} ({} -> {})",
            plan.path,
            projection::lines(old.lines),
            projection::lines(plan.new.lines),
            projection::human_bytes(old.bytes),
            projection::human_bytes(plan.new.bytes)
        ),
        None => format!(
            "creates {}: {} ({}){}",
            plan.path,
            projection::lines(plan.new.lines),
            projection::human_bytes(plan.new.bytes),
            if plan.creates_dirs.is_empty() {
                String::new()
            } else {
                format!(", creating directories {}", plan.creates_dirs.join(", "))
            }
        ),
    }
}

#[async_trait]
impl FsTool for WriteFile {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create or overwrite a file with `content` (atomic: temp file, fsync, rename; keeps the existing file's permissions; creates parent directories). The file is read back and compared. Prefer edit_file for changes to an existing file.";
    const RISK: Risk = Risk::Writes;
    type Args = WriteArgs;
    type Output = WriteOutcome;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": path_prop("File to create or overwrite."),
                "content": { "type": "string", "description": "The complete new content." },
            },
            "required": ["path", "content"],
            "additionalProperties": false,
        })
    }

    fn target(args: &WriteArgs) -> String {
        args.path.clone()
    }

    async fn prepare(&self, ctx: &CallContext, args: WriteArgs) -> Result<Prepared, ToolError> {
        let sandbox = ctx.services.sandbox().cloned()?;
        let plan = sandbox
            .preview_write(args.request(None), ctx.cancel.clone())
            .await
            .map_err(tool_error)?;
        self.plans.remember(
            &ctx.call_id,
            plan.fingerprint.map_or(Expected::Absent, Expected::Content),
        );
        Ok(Prepared {
            target: plan.path.clone(),
            scope: vec![format!("writes only: {}", plan.path)],
            consequence: consequence(&plan),
            diff: plan.diff,
            model_says: None,
            inside_project: true,
            risk: None,
            launch: None,
        })
    }

    async fn run(
        &self,
        ctx: &CallContext,
        sandbox: Arc<dyn Sandbox>,
        args: WriteArgs,
    ) -> Result<WriteOutcome, ToolError> {
        let expect = self.plans.take(&ctx.call_id);
        sandbox
            .write(args.request(expect), ctx.cancel.clone())
            .await
            .map_err(tool_error)
    }

    fn model(_args: &WriteArgs, out: &WriteOutcome) -> String {
        projection::write_model(out)
    }

    fn client(_args: &WriteArgs, out: &WriteOutcome, _raw: &Value) -> Value {
        projection::write_client(out)
    }
}
