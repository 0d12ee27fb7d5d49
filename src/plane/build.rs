//! The plane's registry: the built-in configs bound to the plane's services (`tool_search`,
//! `view_skill`, `ask_user_question`) and one config per MCP server with its catalog entries.

use super::*;

/// Replace the unbound `tool_search`, `view_skill`, `ask_user_question` and `agent` configs with
/// ones bound to these services.
pub fn bind(
    configs: Vec<Arc<dyn ToolConfig>>,
    discovery: &Arc<DiscoveryService>,
    skills: &Arc<SkillsService>,
    readiness: &Arc<PlaneReadiness>,
    desks: &Desks,
) -> Vec<Arc<dyn ToolConfig>> {
    configs
        .into_iter()
        .map(|c| -> Arc<dyn ToolConfig> {
            match c.key() {
                tools::tool_search::KEY => Arc::new(
                    tools::tool_search::ToolSearchConfig::new(discovery.clone())
                        .with_readiness(readiness.clone()),
                ),
                tools::view_skill::KEY => {
                    Arc::new(tools::view_skill::ViewSkillConfig::new(skills.clone()))
                }
                tools::ask_user_question::KEY => Arc::new(
                    tools::ask_user_question::AskUserConfig::new(desks.human.clone()),
                ),
                tools::agent::KEY => {
                    Arc::new(tools::agent::AgentConfig::new(desks.subagents.clone()))
                }
                _ => c,
            }
        })
        .collect()
}

/// Where the runs of a plane attach the person who answers their questions and the runner that
/// starts their subagents.
#[derive(Default)]
pub struct Desks {
    pub human: Arc<HumanDesk>,
    pub subagents: Arc<tools::agent::SubagentDesk>,
}

/// Built-in configs (bound) + one config per MCP server with its current catalog entries.
pub(super) fn build_registry(
    discovery: &Arc<DiscoveryService>,
    skills: &Arc<SkillsService>,
    readiness: &Arc<PlaneReadiness>,
    desks: &Desks,
    mcp: Option<&Arc<McpManager>>,
) -> Result<(Registry, Vec<LeftOut>), Vec<ConsistencyProblem>> {
    let mut configs = bind(
        tools::builtin_configs(),
        discovery,
        skills,
        readiness,
        desks,
    );
    let mut metas: Vec<ToolConfigMeta> = tools::builtin_metas();
    let mut left = Vec::new();
    if let Some(m) = mcp {
        let catalog = m.catalog();
        let mut by_server: BTreeMap<String, Vec<aibuddy_mcp::McpToolEntry>> = BTreeMap::new();
        for s in m.status() {
            by_server.entry(s.server).or_default();
        }
        for e in catalog {
            by_server.entry(e.server.clone()).or_default().push(e);
        }
        for (server, entries) in by_server {
            let config = McpServerConfig::new(&server, entries, m.clone());
            left.extend(config.define().1);
            metas.push(config.meta());
            configs.push(Arc::new(config));
        }
    }
    Registry::build(configs, metas).map(|r| (r, left))
}
