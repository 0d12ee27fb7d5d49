//! `view_skill`: read a skill's full instructions and the list of its references, or one reference
//! with output bounds. Exists only while at least one skill is loaded (`Requirement::Skills`). The
//! catalog (names and purposes only) is this config's runtime instructions.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::contract::{DefineError, ToolError, define_tool};
use crate::registry::{
    CallContext, Compaction, RawOutput, Requirement, Risk, Source, ToolConfig, ToolConfigMeta,
    ToolDef, ToolHandler,
};
use crate::skills::catalog::ReferenceError;
use crate::skills::{SkillsService, read_reference};

pub const KEY: &str = "view_skill";
pub const TOOL_NAME: &str = "view_skill";
/// Lines of a reference returned per call unless `limit` says otherwise.
pub const DEFAULT_LINES: usize = 400;
/// Hard bound on the characters returned per call.
pub const MAX_CHARS: usize = 20_000;

/// The config. Built unbound (no skills) by `builtin_configs`; the app binds it to its service.
pub struct ViewSkillConfig {
    skills: Arc<SkillsService>,
}

impl Default for ViewSkillConfig {
    fn default() -> Self {
        Self::new(SkillsService::empty())
    }
}

impl ViewSkillConfig {
    pub fn new(skills: Arc<SkillsService>) -> Self {
        Self { skills }
    }
}

pub fn meta() -> ToolConfigMeta {
    ToolConfigMeta::fixed(KEY, "Skills", "skills", Risk::ReadOnly, false, &[TOOL_NAME])
}

impl ToolConfig for ViewSkillConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement::Skills]
    }

    fn instructions(&self) -> Option<String> {
        let cat = self.skills.catalog();
        if cat.is_empty() {
            return None;
        }
        Some(format!(
            "Skills are reusable procedures. When one fits the task, call {TOOL_NAME} with its name \
and follow the instructions it returns (read its references only when they are needed).\n\
Available skills:\n{}",
            cat.summary()
        ))
    }

    fn compaction(&self) -> Compaction {
        Compaction::Trim
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let spec = define_tool(
            TOOL_NAME,
            "Read a skill's full instructions and the list of its reference files; with `reference`, \
read one reference file (bounded: use `offset` to page through long ones).",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "description": "Skill name from the catalog"},
                    "reference": {"type": "string", "minLength": 1, "description": "A reference file path as listed by view_skill(name)"},
                    "offset": {"type": "integer", "minimum": 0, "description": "First line of the reference to return (0-based)"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": format!("Lines to return (default {DEFAULT_LINES})")}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        )?;
        Ok(vec![ToolDef {
            spec,
            risk: Risk::ReadOnly,
            source: Source::Skill,
            handler: Arc::new(ViewSkillHandler {
                skills: self.skills.clone(),
            }),
        }])
    }
}

struct ViewSkillHandler {
    skills: Arc<SkillsService>,
}

/// A bounded slice of `text`: lines `offset..offset+limit`, at most `MAX_CHARS` characters. Pure.
pub fn slice_lines(text: &str, offset: usize, limit: usize) -> (String, usize, usize, bool) {
    let total = text.lines().count();
    let mut out = String::new();
    let mut shown = 0;
    let mut cut = false;
    let mut chars = 0;
    for line in text.lines().skip(offset).take(limit) {
        let n = line.chars().count() + 1;
        if chars + n > MAX_CHARS {
            if shown == 0 {
                out.extend(line.chars().take(MAX_CHARS));
                shown = 1;
            }
            cut = true;
            break;
        }
        out.push_str(line);
        out.push('\n');
        chars += n;
        shown += 1;
    }
    let more = cut || offset + shown < total;
    (out, total, shown, more)
}

#[async_trait]
impl ToolHandler for ViewSkillHandler {
    async fn run(&self, _ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let cat = self.skills.catalog();
        let name = args["name"].as_str().unwrap_or_default();
        let Some(skill) = cat.get(name) else {
            let known: Vec<&str> = cat.skills.keys().map(String::as_str).collect();
            return Err(ToolError::parameters(
                "unknown_skill",
                format!(
                    "there is no skill `{name}`; available: {}",
                    if known.is_empty() {
                        "(none)".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let Some(reference) = args["reference"].as_str() else {
            let (text, total, shown, more) = slice_lines(&skill.body, 0, usize::MAX);
            return Ok(RawOutput::json(json!({
                "name": skill.name,
                "description": skill.description,
                "instructions": text,
                "instructions_truncated": more,
                "lines": total.min(shown),
                "references": skill.references,
                "dir": skill.dir,
            })));
        };
        // Read through the skill's confined folder handle (never a path the kernel resolves
        // freely): a symlink out of the folder, the root or the project is refused.
        let (owned, wanted) = (skill.clone(), reference.to_string());
        let read = tokio::task::spawn_blocking(move || read_reference(&owned, &wanted))
            .await
            .map_err(|e| ToolError::execution("io", format!("cannot read `{reference}`: {e}")))?;
        let bytes = read.map_err(|e| match e {
            ReferenceError::Escapes(_) => ToolError::authorization("path_escape", e.to_string()),
            ReferenceError::NotFound { .. } => {
                ToolError::parameters("unknown_reference", e.to_string())
            }
            ReferenceError::TooLarge { .. } => ToolError::execution("too_large", e.to_string()),
            ReferenceError::Unreadable { .. } => ToolError::execution("io", e.to_string()),
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let offset = args["offset"].as_u64().unwrap_or(0) as usize;
        let limit = args["limit"].as_u64().map_or(DEFAULT_LINES, |l| l as usize);
        let (content, total, shown, more) = slice_lines(&text, offset, limit);
        Ok(RawOutput::json(json!({
            "name": skill.name,
            "reference": reference,
            "content": content,
            "offset": offset,
            "lines_shown": shown,
            "total_lines": total,
            "more": more,
        })))
    }

    fn model(&self, _args: &Value, raw: &RawOutput) -> String {
        let v = &raw.value;
        if let Some(content) = v["content"].as_str() {
            let offset = v["offset"].as_u64().unwrap_or(0);
            let shown = v["lines_shown"].as_u64().unwrap_or(0);
            let total = v["total_lines"].as_u64().unwrap_or(0);
            let mut s = format!(
                "Skill `{}` reference `{}` (lines {}-{} of {}):\n{}",
                v["name"].as_str().unwrap_or_default(),
                v["reference"].as_str().unwrap_or_default(),
                if shown == 0 { offset } else { offset + 1 },
                offset + shown,
                total,
                content
            );
            if v["more"].as_bool().unwrap_or(false) {
                s.push_str(&format!(
                    "\n[more: call view_skill again with offset {}]",
                    offset + shown
                ));
            }
            return s;
        }
        let refs: Vec<&str> = v["references"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut s = format!(
            "Skill `{}`: {}\n\n{}",
            v["name"].as_str().unwrap_or_default(),
            v["description"].as_str().unwrap_or_default(),
            v["instructions"].as_str().unwrap_or_default().trim_end()
        );
        if v["instructions_truncated"].as_bool().unwrap_or(false) {
            s.push_str("\n[instructions truncated at the output bound]");
        }
        if !refs.is_empty() {
            s.push_str(&format!(
                "\n\nReferences (read with view_skill(name, reference)): {}",
                refs.join(", ")
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_bounded() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (s, total, shown, more) = slice_lines(&text, 10, 5);
        assert_eq!((total, shown, more), (1000, 5, true));
        assert!(s.starts_with("line 10\n") && s.ends_with("line 14\n"));
        let (_, _, shown, more) = slice_lines(&text, 995, 400);
        assert_eq!((shown, more), (5, false));
        let long = "x".repeat(MAX_CHARS * 2);
        let (s, _, shown, more) = slice_lines(&long, 0, 10);
        assert_eq!((s.chars().count(), shown, more), (MAX_CHARS, 1, true));
    }
}
