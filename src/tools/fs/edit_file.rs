//! `edit_file`: exact-text replacements in one file, all or nothing, confirmed and read back.

use std::sync::Arc;

use aibuddy_sandbox::{EditOutcome, EditPlan, EditRequest, EditSpec, Fingerprint, Sandbox};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::path_prop;
use super::plans::Plans;
use super::projection;
use super::tool::{FsTool, tool_error};
use crate::contract::ToolError;
use crate::registry::{CallContext, Prepared, Risk};

/// The edit tool; it remembers the file state each previewed call was shown against.
#[derive(Default)]
pub struct EditFile {
    plans: Plans<Fingerprint>,
}

#[derive(Debug, Deserialize)]
pub struct EditArgs {
    path: String,
    old_string: Option<String>,
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
    edits: Option<Vec<EditSpec>>,
}

impl EditArgs {
    /// The request: either one `old_string`/`new_string` pair or a non-empty `edits` array.
    fn request(self) -> Result<EditRequest, ToolError> {
        let edits = match (self.edits, self.old_string, self.new_string) {
            (Some(edits), None, None) if !edits.is_empty() => edits,
            (None, Some(old_string), Some(new_string)) => vec![EditSpec {
                old_string,
                new_string,
                replace_all: self.replace_all,
            }],
            (Some(_), _, _) => {
                return Err(ToolError::parameters(
                    "invalid_arguments",
                    "give either old_string/new_string or a non-empty edits array, not both",
                ));
            }
            _ => {
                return Err(ToolError::parameters(
                    "invalid_arguments",
                    "edit_file needs old_string and new_string, or an edits array",
                ));
            }
        };
        Ok(EditRequest {
            path: self.path,
            edits,
            expect: None,
        })
    }
}

/// The expected consequence of a previewed edit, as the person is asked.
fn consequence(plan: &EditPlan) -> String {
    let ranges: Vec<String> = plan
        .changed_lines
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    format!(
        "edits {}: {} replacement{} at lines {} ({} -> {})",
        plan.path,
        plan.replacements,
        if plan.replacements == 1 { "" } else { "s" },
        ranges.join(", "),
        projection::lines(plan.before.lines),
        projection::lines(plan.after.lines)
    )
}

#[async_trait]
impl FsTool for EditFile {
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Replace exact text in a file: `old_string` -> `new_string` (must occur exactly once unless `replace_all`), or several `edits` applied in order, all or nothing. Returns the changed line ranges and a unified diff; the result is read back and verified.";
    const RISK: Risk = Risk::Writes;
    type Args = EditArgs;
    type Output = EditOutcome;

    fn schema() -> Value {
        let edit = json!({
            "type": "object",
            "properties": {
                "old_string": { "type": "string", "minLength": 1, "description": "Exact text to replace." },
                "new_string": { "type": "string", "description": "Replacement text." },
                "replace_all": { "type": "boolean", "description": "Replace every occurrence (default false: must be unique)." },
            },
            "required": ["old_string", "new_string"],
            "additionalProperties": false,
        });
        json!({
            "type": "object",
            "properties": {
                "path": path_prop("File to edit."),
                "old_string": { "type": "string", "minLength": 1, "description": "Exact text to replace (with new_string; or use edits)." },
                "new_string": { "type": "string", "description": "Replacement text." },
                "replace_all": { "type": "boolean", "description": "Replace every occurrence of old_string." },
                "edits": { "type": "array", "minItems": 1, "items": edit, "description": "Several replacements applied in order, all or nothing." },
            },
            "required": ["path"],
            "additionalProperties": false,
        })
    }

    fn target(args: &EditArgs) -> String {
        args.path.clone()
    }

    async fn prepare(&self, ctx: &CallContext, args: EditArgs) -> Result<Prepared, ToolError> {
        let req = args.request()?;
        let sandbox = ctx.services.sandbox().cloned()?;
        let plan = sandbox
            .preview_edit(req, ctx.cancel.clone())
            .await
            .map_err(tool_error)?;
        self.plans.remember(&ctx.call_id, plan.fingerprint);
        Ok(Prepared {
            target: plan.path.clone(),
            scope: vec![format!("writes only: {}", plan.path)],
            consequence: consequence(&plan),
            diff: Some(plan.diff),
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
        args: EditArgs,
    ) -> Result<EditOutcome, ToolError> {
        let mut req = args.request()?;
        req.expect = self.plans.take(&ctx.call_id);
        sandbox
            .edit(req, ctx.cancel.clone())
            .await
            .map_err(tool_error)
    }

    fn model(_args: &EditArgs, out: &EditOutcome) -> String {
        projection::edit_model(out)
    }

    fn client(_args: &EditArgs, out: &EditOutcome, _raw: &Value) -> Value {
        projection::edit_client(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Stage;
    use crate::tools::fs::tool::decode;

    #[test]
    fn edit_arguments_take_one_form_or_the_other() {
        let args = |v: Value| decode::<EditArgs>(&v).unwrap();
        let ok = args(json!({"path": "a", "old_string": "x", "new_string": "y"}))
            .request()
            .unwrap();
        assert_eq!(ok.edits.len(), 1);
        let ok = args(json!({"path": "a", "edits": [{"old_string": "x", "new_string": "y", "replace_all": true}]}))
            .request()
            .unwrap();
        assert!(ok.edits[0].replace_all);
        for bad in [
            json!({"path": "a"}),
            json!({"path": "a", "old_string": "x"}),
            json!({"path": "a", "old_string": "x", "new_string": "y", "edits": [{"old_string": "x", "new_string": "y"}]}),
            json!({"path": "a", "edits": []}),
        ] {
            let err = args(bad.clone()).request().unwrap_err();
            assert_eq!(err.stage, Stage::Parameters, "{bad}");
        }
    }
}
