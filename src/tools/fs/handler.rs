//! The handler shared by the six filesystem tools: decode arguments, describe the effect for
//! confirmation, call the sandbox, and keep the plan a person approved bound to the call that runs.
//!
//! Plan binding: `prepare` (before confirmation) previews a write/edit and remembers, by call id,
//! the file state it previewed; `run` passes that state to the sandbox, which refuses (Changed)
//! if the file is no longer what the person saw. A plan is consumed once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aibuddy_sandbox::{
    EditRequest, EditSpec, Expected, GlobRequest, GrepMode, GrepRequest, ListRequest, ReadRequest,
    Sandbox, SandboxError, WriteRequest,
};
use async_trait::async_trait;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::project;
use super::schema::*;
use crate::contract::{Stage, ToolError};
use crate::registry::{CallContext, Prepared, RawOutput, ToolHandler};

/// Plans remembered between `prepare` and `run` (bounded; oldest dropped).
const MAX_PLANS: usize = 256;

#[derive(Debug, Clone, Copy)]
enum Plan {
    Write(Expected),
    Edit(aibuddy_sandbox::Fingerprint),
}

#[derive(Default)]
struct Plans {
    by_call: HashMap<String, Plan>,
    order: std::collections::VecDeque<String>,
}

/// One handler per tool name, sharing the plan cache.
#[derive(Default, Clone)]
pub struct FsHandler {
    tool: &'static str,
    plans: Arc<Mutex<Plans>>,
}

impl FsHandler {
    pub fn for_tool(&self, name: &str) -> FsHandler {
        let tool = NAMES.iter().copied().find(|n| *n == name).unwrap_or(LS);
        FsHandler {
            tool,
            plans: Arc::clone(&self.plans),
        }
    }

    fn remember(&self, call_id: &str, plan: Plan) {
        if let Ok(mut p) = self.plans.lock() {
            if p.by_call.insert(call_id.to_string(), plan).is_none() {
                p.order.push_back(call_id.to_string());
            }
            while p.order.len() > MAX_PLANS {
                if let Some(old) = p.order.pop_front() {
                    p.by_call.remove(&old);
                }
            }
        }
    }

    fn take(&self, call_id: &str) -> Option<Plan> {
        let mut p = self.plans.lock().ok()?;
        p.order.retain(|c| c != call_id);
        p.by_call.remove(call_id)
    }
}

// ------------------------------------------------------------------ arguments

#[derive(Debug, Deserialize)]
struct LsArgs {
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Debug, Deserialize)]
struct EditArgs {
    path: String,
    old_string: Option<String>,
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
    edits: Option<Vec<EditSpec>>,
}

#[derive(Debug, Deserialize)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    output_mode: Option<GrepMode>,
    context: Option<u32>,
    #[serde(default)]
    case_insensitive: bool,
    head_limit: Option<usize>,
}

fn decode<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::parameters("invalid_arguments", format!("invalid arguments: {e}")))
}

fn edit_request(a: EditArgs) -> Result<EditRequest, ToolError> {
    let edits = match (a.edits, a.old_string, a.new_string) {
        (Some(edits), None, None) if !edits.is_empty() => edits,
        (None, Some(old_string), Some(new_string)) => vec![EditSpec {
            old_string,
            new_string,
            replace_all: a.replace_all,
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
        path: a.path,
        edits,
        expect: None,
    })
}

fn grep_request(a: GrepArgs) -> GrepRequest {
    GrepRequest {
        pattern: a.pattern,
        path: a.path,
        glob: a.glob,
        mode: a.output_mode.unwrap_or_default(),
        context: a.context.unwrap_or(0),
        case_insensitive: a.case_insensitive,
        limit: a.head_limit,
    }
}

// ------------------------------------------------------------------ errors

pub fn stage(s: aibuddy_sandbox::Stage) -> Stage {
    match s {
        aibuddy_sandbox::Stage::Discovery => Stage::Discovery,
        aibuddy_sandbox::Stage::Parameters => Stage::Parameters,
        aibuddy_sandbox::Stage::Authorization => Stage::Authorization,
        aibuddy_sandbox::Stage::Execution => Stage::Execution,
        aibuddy_sandbox::Stage::Projection => Stage::Projection,
        aibuddy_sandbox::Stage::Verification => Stage::Verification,
    }
}

/// A sandbox failure as the typed tool error (stage and stable code from the sandbox).
pub fn tool_error(e: SandboxError) -> ToolError {
    let mut message = e.to_string();
    if e.is_escape() {
        message.push_str(" (only paths inside the project are accessible; nothing was touched)");
    }
    ToolError::new(stage(e.stage()), e.code(), message)
}

fn sandbox(ctx: &CallContext) -> Result<Arc<dyn Sandbox>, ToolError> {
    ctx.services.sandbox().cloned()
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<RawOutput, ToolError> {
    serde_json::to_value(v).map(RawOutput::json).map_err(|e| {
        ToolError::projection("serialize", format!("could not serialise the result: {e}"))
    })
}

fn arg_str<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

// ------------------------------------------------------------------ the handler

#[async_trait]
impl ToolHandler for FsHandler {
    async fn prepare(&self, ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        match self.tool {
            WRITE_FILE => {
                let a: WriteArgs = decode(args)?;
                let sb = sandbox(ctx)?;
                let req = WriteRequest {
                    path: a.path,
                    content: a.content,
                    expect: None,
                };
                let plan = sb
                    .preview_write(req, ctx.cancel.clone())
                    .await
                    .map_err(tool_error)?;
                self.remember(
                    &ctx.call_id,
                    Plan::Write(plan.fingerprint.map_or(Expected::Absent, Expected::Content)),
                );
                let consequence = match &plan.existing {
                    Some(old) => format!(
                        "overwrites {}: {} -> {} ({} -> {})",
                        plan.path,
                        project::lines(old.lines),
                        project::lines(plan.new.lines),
                        project::human_bytes(old.bytes),
                        project::human_bytes(plan.new.bytes)
                    ),
                    None => format!(
                        "creates {}: {} ({}){}",
                        plan.path,
                        project::lines(plan.new.lines),
                        project::human_bytes(plan.new.bytes),
                        if plan.creates_dirs.is_empty() {
                            String::new()
                        } else {
                            format!(", creating directories {}", plan.creates_dirs.join(", "))
                        }
                    ),
                };
                Ok(Prepared {
                    target: plan.path.clone(),
                    scope: vec![format!("writes only: {}", plan.path)],
                    consequence,
                    diff: plan.diff,
                    inside_project: true,
                    risk: None,
                })
            }
            EDIT_FILE => {
                let req = edit_request(decode(args)?)?;
                let sb = sandbox(ctx)?;
                let plan = sb
                    .preview_edit(req, ctx.cancel.clone())
                    .await
                    .map_err(tool_error)?;
                self.remember(&ctx.call_id, Plan::Edit(plan.fingerprint));
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
                Ok(Prepared {
                    target: plan.path.clone(),
                    scope: vec![format!("writes only: {}", plan.path)],
                    consequence: format!(
                        "edits {}: {} replacement{} at lines {} ({} -> {})",
                        plan.path,
                        plan.replacements,
                        if plan.replacements == 1 { "" } else { "s" },
                        ranges.join(", "),
                        project::lines(plan.before.lines),
                        project::lines(plan.after.lines)
                    ),
                    diff: Some(plan.diff),
                    inside_project: true,
                    risk: None,
                })
            }
            _ => Ok(Prepared {
                target: arg_str(args, "path").to_string(),
                inside_project: true,
                ..Prepared::default()
            }),
        }
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let sb = sandbox(ctx)?;
        let cancel = ctx.cancel.clone();
        match self.tool {
            LS => {
                let a: LsArgs = decode(args)?;
                let out = sb
                    .list(
                        ListRequest {
                            path: a.path,
                            limit: None,
                        },
                        cancel,
                    )
                    .await;
                to_value(&out.map_err(tool_error)?)
            }
            READ_FILE => {
                let a: ReadArgs = decode(args)?;
                let req = ReadRequest {
                    path: a.path,
                    offset: a.offset,
                    limit: a.limit,
                };
                to_value(&sb.read(req, cancel).await.map_err(tool_error)?)
            }
            WRITE_FILE => {
                let a: WriteArgs = decode(args)?;
                let expect = match self.take(&ctx.call_id) {
                    Some(Plan::Write(e)) => Some(e),
                    _ => None,
                };
                let req = WriteRequest {
                    path: a.path,
                    content: a.content,
                    expect,
                };
                to_value(&sb.write(req, cancel).await.map_err(tool_error)?)
            }
            EDIT_FILE => {
                let mut req = edit_request(decode(args)?)?;
                if let Some(Plan::Edit(fp)) = self.take(&ctx.call_id) {
                    req.expect = Some(fp);
                }
                to_value(&sb.edit(req, cancel).await.map_err(tool_error)?)
            }
            GLOB => {
                let a: GlobArgs = decode(args)?;
                let req = GlobRequest {
                    pattern: a.pattern,
                    path: a.path,
                    limit: None,
                };
                to_value(&sb.glob(req, cancel).await.map_err(tool_error)?)
            }
            GREP => {
                let a: GrepArgs = decode(args)?;
                to_value(&sb.grep(grep_request(a), cancel).await.map_err(tool_error)?)
            }
            other => Err(ToolError::discovery(
                "unknown_tool",
                format!("`{other}` is not a filesystem tool"),
            )),
        }
    }

    fn client(&self, _args: &Value, raw: &RawOutput) -> Value {
        let v = &raw.value;
        let typed = match self.tool {
            READ_FILE => serde_json::from_value(v.clone())
                .ok()
                .map(|r| project::read_client(&r)),
            WRITE_FILE => serde_json::from_value(v.clone())
                .ok()
                .map(|w| project::write_client(&w)),
            EDIT_FILE => serde_json::from_value(v.clone())
                .ok()
                .map(|e| project::edit_client(&e)),
            _ => None,
        };
        typed.unwrap_or_else(|| json!({ "summary": self.model(_args, raw).lines().last().unwrap_or_default(), "result": v }))
    }

    fn model(&self, args: &Value, raw: &RawOutput) -> String {
        let v = raw.value.clone();
        let text = match self.tool {
            LS => serde_json::from_value(v)
                .ok()
                .map(|l| project::ls_model(&l)),
            READ_FILE => serde_json::from_value(v)
                .ok()
                .map(|r| project::read_model(&r)),
            WRITE_FILE => serde_json::from_value(v)
                .ok()
                .map(|w| project::write_model(&w)),
            EDIT_FILE => serde_json::from_value(v)
                .ok()
                .map(|e| project::edit_model(&e)),
            GLOB => serde_json::from_value(v)
                .ok()
                .map(|g| project::glob_model(arg_str(args, "pattern"), &g)),
            GREP => serde_json::from_value(v)
                .ok()
                .map(|g| project::grep_model(arg_str(args, "pattern"), &g)),
            _ => None,
        };
        text.unwrap_or_else(|| raw.value.to_string())
    }

    fn trim(&self, args: &Value, raw: &RawOutput, max_chars: usize) -> Option<String> {
        project::trim_lines(&self.model(args, raw), max_chars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_arguments_take_one_form_or_the_other() {
        let ok = edit_request(
            decode(&json!({"path": "a", "old_string": "x", "new_string": "y"})).unwrap(),
        )
        .unwrap();
        assert_eq!(ok.edits.len(), 1);
        let ok = edit_request(
            decode(&json!({"path": "a", "edits": [{"old_string": "x", "new_string": "y", "replace_all": true}]})).unwrap(),
        )
        .unwrap();
        assert!(ok.edits[0].replace_all);
        for bad in [
            json!({"path": "a"}),
            json!({"path": "a", "old_string": "x"}),
            json!({"path": "a", "old_string": "x", "new_string": "y", "edits": [{"old_string": "x", "new_string": "y"}]}),
            json!({"path": "a", "edits": []}),
        ] {
            let err = edit_request(decode(&bad).unwrap()).unwrap_err();
            assert_eq!(err.stage, Stage::Parameters, "{bad}");
        }
    }

    #[test]
    fn sandbox_errors_keep_stage_and_code() {
        let e = tool_error(SandboxError::Escape {
            path: "../x".into(),
        });
        assert_eq!(
            (e.stage, e.code.as_str()),
            (Stage::Authorization, "path_escape")
        );
        assert!(e.message.contains("../x"));
        let e = tool_error(SandboxError::Verification {
            path: "a".into(),
            detail: "d".into(),
        });
        assert_eq!(e.stage, Stage::Verification);
    }
}
