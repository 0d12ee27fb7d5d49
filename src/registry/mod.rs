//! The tool registry: configs, their metadata, the name map, and the startup consistency check.
//!
//! Registration does not grant authority: which of these tools a run may use is decided by
//! `crate::discovery` from settings, host services and run state.

mod config;
mod consistency;
mod meta;
mod tool;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::contract::Risk;
pub use config::{Compaction, Requirement, ToolConfig};
pub use consistency::{ConfigFacts, ConsistencyProblem, assert_consistent};
pub use meta::{DeclaredNames, ToolConfigMeta};
pub use tool::{CallContext, Prepared, RawOutput, Source, ToolDef, ToolHandler};

/// A registered config with the tools it created.
pub struct RegisteredConfig {
    pub config: Arc<dyn ToolConfig>,
    pub meta: ToolConfigMeta,
    pub tools: Vec<ToolDef>,
}

/// Registered configs and the name -> config map. Built only when consistent.
pub struct Registry {
    configs: Vec<RegisteredConfig>,
    by_name: BTreeMap<String, (usize, usize)>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// Create every config's tools and check consistency. Any problem stops startup: all of them are
    /// returned together.
    pub fn build(
        configs: Vec<Arc<dyn ToolConfig>>,
        metas: Vec<ToolConfigMeta>,
    ) -> Result<Registry, Vec<ConsistencyProblem>> {
        let mut created = Vec::new();
        let mut facts = Vec::new();
        for c in &configs {
            let tools = c.tools();
            facts.push(ConfigFacts {
                key: c.key().to_string(),
                compaction: c.compaction(),
                tools: tools
                    .as_ref()
                    .map(|t| t.iter().map(|d| (d.name().to_string(), d.risk)).collect())
                    .map_err(|e| e.to_string()),
            });
            created.push(tools.unwrap_or_default());
        }
        let problems = assert_consistent(&facts, &metas);
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut registered = Vec::new();
        let mut by_name = BTreeMap::new();
        for (ci, (config, tools)) in configs.into_iter().zip(created).enumerate() {
            let Some(meta) = metas.iter().find(|m| m.key == config.key()).cloned() else {
                // Unreachable after a clean consistency check; reported rather than panicking.
                return Err(vec![ConsistencyProblem::MissingMeta {
                    config: config.key().to_string(),
                }]);
            };
            for (ti, t) in tools.iter().enumerate() {
                by_name.insert(t.name().to_string(), (ci, ti));
            }
            registered.push(RegisteredConfig {
                config,
                meta,
                tools,
            });
        }
        Ok(Registry {
            configs: registered,
            by_name,
        })
    }

    pub fn configs(&self) -> &[RegisteredConfig] {
        &self.configs
    }

    /// Look a tool up by name: the tool and its owning config.
    pub fn get(&self, name: &str) -> Option<(&ToolDef, &RegisteredConfig)> {
        let (ci, ti) = *self.by_name.get(name)?;
        let rc = self.configs.get(ci)?;
        Some((rc.tools.get(ti)?, rc))
    }

    /// The config key that owns a generated tool name.
    pub fn config_of(&self, name: &str) -> Option<&str> {
        self.get(name).map(|(_, rc)| rc.meta.key.as_str())
    }

    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}
