//! The filesystem tool group: ONE config (key `filesystem`) that generates `ls`, `read_file`,
//! `write_file`, `edit_file`, `glob` and `grep` over the run's sandbox, and maps them back to
//! itself for shared projection and compaction behaviour.
//!
//! - `schema`: names, descriptions, input schemas (stable argument names).
//! - `handler`: argument decoding, the sandbox calls, confirmation descriptions (target, scope,
//!   expected consequence, diff) and the plan binding between confirmation and effect.
//! - `project`: pure model/client projections; every bound that cut something is stated.

mod handler;
mod project;
mod schema;

use std::sync::Arc;

use crate::contract::{DefineError, define_tool};
use crate::registry::{Compaction, Requirement, Risk, Source, ToolConfig, ToolConfigMeta, ToolDef};

pub use handler::FsHandler;
pub use schema::NAMES;

pub const KEY: &str = "filesystem";

/// The `filesystem` config.
#[derive(Debug, Default)]
pub struct FilesystemConfig;

pub fn risk_of(name: &str) -> Risk {
    match name {
        schema::WRITE_FILE | schema::EDIT_FILE => Risk::Writes,
        _ => Risk::ReadOnly,
    }
}

/// UI metadata (the config's entry in the seed's `TOOL_CONFIG_METAS`).
pub fn meta() -> ToolConfigMeta {
    ToolConfigMeta::fixed(KEY, "Filesystem", "files", Risk::Writes, false, &NAMES)
}

impl ToolConfig for FilesystemConfig {
    fn key(&self) -> &str {
        KEY
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![Requirement::SandboxFs]
    }

    fn instructions(&self) -> Option<String> {
        Some(
            "Filesystem tools work inside the open project only; paths are relative to the project root. \
             Results are bounded at the source and say what was left out: narrow with `path`, `glob`, \
             `offset`/`limit` or a more specific pattern instead of repeating a call. Read a file before \
             editing it; edit_file needs text that occurs exactly once (or replace_all). Writes and edits \
             are confirmed by the person and read back; check the verified region in the result."
                .to_string(),
        )
    }

    fn compaction(&self) -> Compaction {
        Compaction::Trim
    }

    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        let handler = Arc::new(FsHandler::default());
        NAMES
            .iter()
            .map(|name| {
                Ok(ToolDef {
                    spec: define_tool(*name, schema::description(name), schema::schema(name))?,
                    risk: risk_of(name),
                    source: Source::Core,
                    handler: Arc::new(handler.for_tool(name)),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_config_generates_the_six_tools_with_their_risks() {
        let tools = FilesystemConfig.tools().unwrap();
        let got: Vec<(&str, Risk)> = tools.iter().map(|t| (t.name(), t.risk)).collect();
        assert_eq!(
            got,
            vec![
                ("ls", Risk::ReadOnly),
                ("read_file", Risk::ReadOnly),
                ("write_file", Risk::Writes),
                ("edit_file", Risk::Writes),
                ("glob", Risk::ReadOnly),
                ("grep", Risk::ReadOnly),
            ]
        );
        assert!(tools.iter().all(|t| meta().names.covers(t.name())));
    }

    #[test]
    fn argument_names_are_the_stable_contract() {
        let props = |name: &str| -> Vec<String> {
            let mut p: Vec<String> = schema::schema(name)["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            p.sort();
            p
        };
        assert_eq!(props("ls"), ["path"]);
        assert_eq!(props("read_file"), ["limit", "offset", "path"]);
        assert_eq!(props("write_file"), ["content", "path"]);
        assert_eq!(
            props("edit_file"),
            ["edits", "new_string", "old_string", "path", "replace_all"]
        );
        assert_eq!(props("glob"), ["path", "pattern"]);
        assert_eq!(
            props("grep"),
            [
                "case_insensitive",
                "context",
                "glob",
                "head_limit",
                "output_mode",
                "path",
                "pattern"
            ]
        );
    }
}
