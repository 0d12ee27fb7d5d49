//! Tool configuration metadata for the UI (the seed's `TOOL_CONFIG_METAS`): display name, category,
//! risk, disposability, and the tool names each config declares. Kept as data apart from the configs so
//! that `assert_consistent` can compare the two at startup.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::contract::Risk;

/// Which names a config declares it generates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
#[ts(export)]
pub enum DeclaredNames {
    /// A fixed list, known at build time (built-in configs).
    Fixed(Vec<String>),
    /// Names discovered at run time that all start with this prefix (MCP servers, e.g. `mcp__github__`).
    Prefix(String),
}

impl DeclaredNames {
    pub fn covers(&self, name: &str) -> bool {
        match self {
            DeclaredNames::Fixed(names) => names.iter().any(|n| n == name),
            DeclaredNames::Prefix(p) => name.starts_with(p.as_str()),
        }
    }
}

/// UI metadata of one tool config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ToolConfigMeta {
    pub key: String,
    pub display_name: String,
    pub category: String,
    /// The highest risk of any tool the config generates.
    pub risk: Risk,
    /// Output may be dropped by precompaction without a recovery pointer.
    pub disposable: bool,
    pub names: DeclaredNames,
}

impl ToolConfigMeta {
    pub fn fixed(
        key: &str,
        display_name: &str,
        category: &str,
        risk: Risk,
        disposable: bool,
        names: &[&str],
    ) -> Self {
        Self {
            key: key.to_string(),
            display_name: display_name.to_string(),
            category: category.to_string(),
            risk,
            disposable,
            names: DeclaredNames::Fixed(names.iter().map(|s| s.to_string()).collect()),
        }
    }
}
