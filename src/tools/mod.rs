//! Built-in tool configs, one file or folder per config, and their UI metadata (the seed's
//! `TOOL_CONFIG_METAS`). `builtin_configs` and `builtin_metas` are compared by
//! `registry::assert_consistent` at every startup.

pub mod agent;
pub mod ask_user_question;
pub mod execute;
pub mod fs;
pub mod mcp;
pub mod mcp_images;
pub mod process;
pub mod tool_search;
pub mod view_skill;
pub mod view_tool_call;

use std::sync::Arc;

use crate::registry::{ToolConfig, ToolConfigMeta};

/// Every built-in config, in presentation order.
pub fn builtin_configs() -> Vec<Arc<dyn ToolConfig>> {
    vec![
        Arc::new(fs::FilesystemConfig),
        Arc::new(execute::ExecuteConfig),
        Arc::new(tool_search::ToolSearchConfig::default()),
        Arc::new(view_skill::ViewSkillConfig::default()),
        Arc::new(view_tool_call::ViewToolCallConfig),
        Arc::new(ask_user_question::AskUserConfig::default()),
        Arc::new(agent::AgentConfig::default()),
    ]
}

/// Metadata for every built-in config.
pub fn builtin_metas() -> Vec<ToolConfigMeta> {
    vec![
        fs::meta(),
        execute::meta(),
        tool_search::meta(),
        view_skill::meta(),
        view_tool_call::meta(),
        ask_user_question::meta(),
        agent::meta(),
    ]
}
