//! The filesystem tool group: ONE config (key `filesystem`) that generates `ls`, `read_file`,
//! `write_file`, `edit_file`, `glob` and `grep` over the run's sandbox, and maps them back to
//! itself for shared projection and compaction behaviour.
//!
//! One file per tool holds its whole definition: name, description, input schema, risk, typed
//! arguments and output, the sandbox call and its projections (`ls`, `read_file`, `write_file`,
//! `edit_file`, `glob`, `grep`). They share:
//! - `tool`: the [`tool::FsTool`] shape and the one adaptor to the registry's `ToolHandler`
//!   (decoding, typed projections, sandbox errors as tool errors);
//! - `plans`: the plan binding between confirmation and effect for writes and edits;
//! - `projection`: pure model/client projections; every bound that cut something is stated;
//! - `args`: schema pieces.

mod args;
mod edit_file;
mod glob;
mod grep;
mod ls;
mod plans;
mod projection;
mod read_file;
mod tool;
mod write_file;

use std::sync::Arc;

use crate::contract::{DefineError, ToolError};
use crate::registry::{
    Compaction, Requirement, Risk, ToolConfig, ToolConfigMeta, ToolDef, ToolHandler,
};

pub use edit_file::EditFile;
pub use glob::Glob;
pub use grep::Grep;
pub use ls::Ls;
pub use read_file::ReadFile;
pub use tool::FsTool;
pub use write_file::WriteFile;

pub const KEY: &str = "filesystem";

/// The six tools' names, in presentation order.
pub const NAMES: [&str; 6] = [
    Ls::NAME,
    ReadFile::NAME,
    WriteFile::NAME,
    EditFile::NAME,
    Glob::NAME,
    Grep::NAME,
];

/// The `filesystem` config.
#[derive(Debug, Default)]
pub struct FilesystemConfig;

/// The definition of the filesystem tool `name`, `None` for any other name.
fn define(name: &str) -> Option<Result<ToolDef, DefineError>> {
    Some(match name {
        Ls::NAME => tool::def(Ls),
        ReadFile::NAME => tool::def(ReadFile),
        WriteFile::NAME => tool::def(WriteFile::default()),
        EditFile::NAME => tool::def(EditFile::default()),
        Glob::NAME => tool::def(Glob),
        Grep::NAME => tool::def(Grep),
        _ => return None,
    })
}

/// The registry entry of the filesystem tool `name`; any other name is a Discovery-stage error.
pub fn tool(name: &str) -> Result<ToolDef, ToolError> {
    match define(name) {
        Some(def) => def.map_err(|e| ToolError::discovery("invalid_definition", e.to_string())),
        None => Err(ToolError::discovery(
            "unknown_tool",
            format!("`{name}` is not a filesystem tool"),
        )),
    }
}

/// The handler of the filesystem tool `name`; any other name is a Discovery-stage error.
pub fn handler(name: &str) -> Result<Arc<dyn ToolHandler>, ToolError> {
    tool(name).map(|t| t.handler)
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
        NAMES.iter().filter_map(|name| define(name)).collect()
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
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, NAMES);
    }

    #[test]
    fn an_unknown_name_is_a_discovery_error_not_ls() {
        for bad in ["", "lsx", "LS", "read", "execute", "filesystem"] {
            let err = handler(bad).err().unwrap();
            assert_eq!(
                (err.stage, err.code.as_str()),
                (crate::contract::Stage::Discovery, "unknown_tool"),
                "{bad:?}"
            );
        }
        for name in NAMES {
            assert_eq!(tool(name).unwrap().name(), name);
        }
    }

    #[test]
    fn argument_names_are_the_stable_contract() {
        let tools = FilesystemConfig.tools().unwrap();
        let props = |name: &str| -> Vec<String> {
            let t = tools.iter().find(|t| t.name() == name).unwrap();
            let mut p: Vec<String> = t.spec.input_schema()["properties"]
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
