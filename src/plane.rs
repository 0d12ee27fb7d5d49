//! The capability plane of an open project: the services that decide what a run can see and keep
//! it current — the skills catalog (watched), the MCP servers (connected at open with a short
//! overall timeout, followed afterwards), the discovery service (`tool_search` index and per-run
//! activations) — and the live registry: built-in configs bound to these services plus one config
//! per MCP server, rebuilt whenever the MCP catalog changes (initialize, `list_changed`,
//! reconnects), so the gates are re-evaluated on the next tool set.
//!
//! It sits above `tools` and `discovery` (it binds the one to the other), next to `App`. The
//! `tool_search` index is rebuilt here, where the catalog changes (MCP connect, disconnect and
//! `list_changed` through [`CapabilityPlane::refresh`], the settings and host through
//! [`CapabilityPlane::set_catalog_context`]), never as a side effect of reading a tool set. Skills
//! never enter the index (only MCP tools are deferrable), so a skills change needs no rebuild.
//! "Rebuilt" means handed the new documents: the index itself (and the ranking resources it loads,
//! tens of MiB) is built by its first search, or ahead of it on a background thread for the
//! desktop ([`PlaneOptions::prewarm_search`]); a run rebuilding its context needs only the names
//! of the deferrable tools (`DiscoveryService::deferrable_names`), never the index.
//!
//! Nothing here reads the environment: the hosts (CLI, desktop) read [`MCP_CONNECT_WAIT_ENV`] and
//! pass the wait in [`PlaneOptions`].
//!
//! Which MCP servers start is decided by project trust (`crate::trust`): the project's own servers
//! (and user-level ones reaching into the project) only when the person trusts the project at its
//! current content; the others are listed absent with the reason `project not trusted`. A
//! user-level server starts in an empty directory of the data dir, never in the project.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use aibuddy_mcp::{
    ConfigError, DeclineElicitation, ElicitationBroker, ElicitationRequest, ElicitationResponse,
    McpHandlers, McpManager, McpOptions, ServerState, ServerStatus,
};

use crate::discovery::service::DiscoveryService;
use crate::discovery::{self, HostCaps, ToolSet};
use crate::human::HumanDesk;
use crate::registry::{ConsistencyProblem, Registry, ToolConfig, ToolConfigMeta};
use crate::settings::Settings;
use crate::skills::{SkillsService, default_roots};
use crate::tools;
use crate::tools::mcp::{LeftOut, McpServerConfig};
use crate::trust::{McpPlan, NOT_TRUSTED};

pub use mcp_sandbox::mcp_sandbox_host;

/// Overall time `App::open` waits for MCP servers' first connection (`tools list` stays fast);
/// servers still connecting afterwards join the tool set when they finish.
pub const DEFAULT_MCP_CONNECT_WAIT: Duration = Duration::from_secs(5);
/// What an agent run waits at open: nothing. The first request never waits for MCP servers;
/// `tool_search` waits for the ones still connecting (`tool_search.connect_wait_ms`).
pub const RUN_MCP_CONNECT_WAIT: Duration = Duration::ZERO;
/// Overrides [`DEFAULT_MCP_CONNECT_WAIT`] (milliseconds). Read by the hosts (CLI, desktop), never
/// by the library: see [`connect_wait`].
pub const MCP_CONNECT_WAIT_ENV: &str = "AIBUDDY_MCP_CONNECT_WAIT_MS";

/// The MCP connect wait given the value of [`MCP_CONNECT_WAIT_ENV`] (milliseconds), if any: a
/// missing or unparsable value gives [`DEFAULT_MCP_CONNECT_WAIT`]. Pure.
pub fn connect_wait(millis: Option<&str>) -> Duration {
    millis
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_MCP_CONNECT_WAIT, Duration::from_millis)
}

/// Options for opening the plane.
#[derive(Debug, Clone)]
pub struct PlaneOptions {
    pub mcp_connect_wait: Duration,
    /// Watch skill folders for changes.
    pub watch_skills: bool,
    /// Connect the configured MCP servers.
    pub mcp: bool,
    /// Where OAuth tokens of remote MCP servers are kept (the hosts pass [`KeyringVault`]); `None`:
    /// a server that asks for authorization is listed as `needs login`.
    pub mcp_token_vault: Option<Arc<dyn aibuddy_mcp::oauth::TokenVault>>,
    /// Build the `tool_search` index on a background thread as soon as the catalog context is
    /// set, so a first search does not wait for the ranking resources. Off by default (and for
    /// `aibuddy run`, [`PlaneOptions::for_runs`]): the index is otherwise built by its first
    /// search, and a process that never searches never loads them. The desktop, long-lived,
    /// turns it on.
    pub prewarm_search: bool,
    /// The host's part of the confinement of MCP servers with `"sandbox"` (`App::open_with`
    /// sets it from the effective settings); `None`: from the default exec settings.
    pub mcp_sandbox_host: Option<aibuddy_mcp::SandboxHost>,
    /// The bundled skills folder the host chose (`AIBUDDY_SKILLS_DIR`, the desktop's resource
    /// dir); `None`: the default search (`skills::bundled_dir_in`).
    pub bundled_skills: Option<PathBuf>,
}

impl PlaneOptions {
    /// The options of a host that starts an agent run right away (`aibuddy run`): MCP servers
    /// connect in the background and join the tool set when ready. The search resources are not
    /// prewarmed: most runs never search, and the index, the WordNet thesaurus and the sentence
    /// encoder would be most of their memory; `tool_search` loads them as it starts, while it
    /// waits for servers still connecting.
    pub fn for_runs() -> Self {
        Self {
            mcp_connect_wait: RUN_MCP_CONNECT_WAIT,
            prewarm_search: false,
            ..Self::default()
        }
    }
}

impl Default for PlaneOptions {
    fn default() -> Self {
        Self {
            mcp_connect_wait: DEFAULT_MCP_CONNECT_WAIT,
            watch_skills: true,
            mcp: true,
            mcp_token_vault: None,
            prewarm_search: false,
            mcp_sandbox_host: None,
            bundled_skills: None,
        }
    }
}

/// The elicitation broker the MCP servers reach: declines until the host installs one (the CLI
/// prompt, the desktop dialog) with [`CapabilityPlane::set_elicitation_broker`].
pub struct SwitchableElicitation {
    inner: RwLock<Arc<dyn ElicitationBroker>>,
}

impl Default for SwitchableElicitation {
    fn default() -> Self {
        Self {
            inner: RwLock::new(Arc::new(DeclineElicitation)),
        }
    }
}

#[async_trait::async_trait]
impl ElicitationBroker for SwitchableElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        let broker = self
            .inner
            .read()
            .map(|b| b.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        broker.elicit(request).await
    }
}

/// What the plane holds for one open project.
pub struct CapabilityPlane {
    pub discovery: Arc<DiscoveryService>,
    pub skills: Arc<SkillsService>,
    pub mcp: Option<Arc<McpManager>>,
    /// Problems in `mcp.json` files (the servers concerned are absent with the reason).
    pub mcp_config_errors: Vec<ConfigError>,
    /// Project MCP servers held back because the project is not trusted.
    pub mcp_untrusted: Vec<String>,
    registry: RwLock<Arc<Registry>>,
    left_out: RwLock<Vec<LeftOut>>,
    follower: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    elicitation: Arc<SwitchableElicitation>,
    /// What the tool set is computed against besides the registry (set by the host).
    context: RwLock<Option<CatalogContext>>,
    /// What `tool_search` waits on (this plane, attached once built).
    readiness: Arc<PlaneReadiness>,
    /// Serialises rebuilds (registry and index), so an older catalog never lands last.
    rebuilding: std::sync::Mutex<()>,
    /// The MCP change counter the current registry reflects (`readiness`).
    refreshed: AtomicU64,
    /// [`PlaneOptions::prewarm_search`].
    prewarm_search: bool,
    /// Which person answers the questions of which run (`ask_user_question`) and which runner
    /// starts its subagents (`agent`): the runs of this plane attach them here
    /// ([`CapabilityPlane::human_desk`], [`CapabilityPlane::subagent_desk`]).
    desks: build::Desks,
}

/// The settings and host capabilities (as far as the injected services go) a tool set is computed
/// against; the plane adds its own skill count and MCP statuses ([`CapabilityPlane::fill_host`]).
#[derive(Debug, Clone, Default)]
pub struct CatalogContext {
    pub settings: Settings,
    pub host: HostCaps,
}

impl Drop for CapabilityPlane {
    fn drop(&mut self) {
        if let Ok(mut f) = self.follower.lock()
            && let Some(h) = f.take()
        {
            h.abort();
        }
    }
}

impl std::fmt::Debug for CapabilityPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapabilityPlane").finish_non_exhaustive()
    }
}

/// Why a server's tools are not in the tool set, or None when it is connected.
pub fn server_absence(status: &ServerStatus) -> Option<String> {
    match &status.state {
        ServerState::Connected => None,
        ServerState::Disabled => Some("disabled in its configuration".to_string()),
        ServerState::Connecting => Some("still connecting".to_string()),
        ServerState::Failed { reason, .. } => Some(reason.clone()),
        ServerState::NeedsLogin => Some(aibuddy_mcp::status::NEEDS_LOGIN.to_string()),
        ServerState::Reconnecting {
            attempt,
            last_reason,
        } => Some(format!(
            "reconnecting (attempt {attempt}) after: {last_reason}"
        )),
    }
}

/// Before every (re)start of a project server, or of a user-level one that reaches into the
/// project (`trust::mcp::user_reach`, evaluated again at each start): the project's trust-relevant
/// files (and the files its command lines name) must still have the digest the person approved.
/// A command that rewrote a pinned script mid-session, then crashed the server to get it
/// restarted, gets nothing started; without an approved digest, such a server never starts.
fn spawn_gate(
    project_root: &Path,
    data_dir: &Path,
    approved_digest: Option<String>,
) -> aibuddy_mcp::SpawnGate {
    let project =
        std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf());
    let data = data_dir.to_path_buf();
    aibuddy_mcp::SpawnGate(Arc::new(move |cfg| {
        let gated = match cfg.scope {
            aibuddy_mcp::ConfigScope::Project => true,
            aibuddy_mcp::ConfigScope::User => {
                !crate::trust::mcp::user_reach(&project, &data, cfg).is_empty()
            }
            aibuddy_mcp::ConfigScope::Inline => false,
        };
        if !gated {
            return Ok(());
        }
        let Some(approved) = &approved_digest else {
            return Err(format!(
                "{NOT_TRUSTED}: it reaches into the project (run `aibuddy trust`)"
            ));
        };
        crate::trust::verify_unchanged(&project, &data, approved).map_err(|_| {
            format!(
                "{NOT_TRUSTED}: its files changed since the person trusted it (run `aibuddy trust`)"
            )
        })
    }))
}

impl CapabilityPlane {
    /// Where this plane's runs attach the broker that answers their questions.
    pub fn human_desk(&self) -> Arc<HumanDesk> {
        self.desks.human.clone()
    }

    /// Where this plane's runs attach the runner that starts their subagents (`agent`).
    pub fn subagent_desk(&self) -> Arc<crate::tools::agent::SubagentDesk> {
        self.desks.subagents.clone()
    }

    /// Load skills, connect the MCP servers the project's trust allows (waiting at most
    /// `mcp_connect_wait`), build the registry.
    pub async fn open(
        project_root: &Path,
        data_dir: &Path,
        opts: PlaneOptions,
    ) -> Result<Arc<CapabilityPlane>, Vec<ConsistencyProblem>> {
        let plan = crate::trust::load_project(project_root, data_dir).mcp;
        Self::open_with_plan(project_root, data_dir, opts, plan).await
    }

    /// [`CapabilityPlane::open`] with the MCP servers already decided by
    /// `crate::trust::load_project` (so the host evaluates trust once, from one read of the files).
    pub async fn open_with_plan(
        project_root: &Path,
        data_dir: &Path,
        opts: PlaneOptions,
        plan: McpPlan,
    ) -> Result<Arc<CapabilityPlane>, Vec<ConsistencyProblem>> {
        let roots = default_roots(project_root, data_dir, opts.bundled_skills.as_deref());
        let skills = if opts.watch_skills {
            SkillsService::watched(roots)
        } else {
            SkillsService::load(roots)
        };
        let elicitation = Arc::new(SwitchableElicitation::default());
        let mcp_untrusted = if opts.mcp {
            plan.untrusted.clone()
        } else {
            Vec::new()
        };
        for name in &mcp_untrusted {
            tracing::warn!(
                "MCP server `{}` is not started: {NOT_TRUSTED} (run `aibuddy trust`)",
                aibuddy_common::term::line(name)
            );
        }
        let before_spawn = Some(spawn_gate(
            project_root,
            data_dir,
            plan.approved_digest.clone(),
        ));
        let (mcp, mcp_config_errors) = if opts.mcp {
            let loaded = plan;
            for e in &loaded.errors {
                tracing::warn!("mcp config: {}", aibuddy_common::term::line(&e.to_string()));
            }
            if loaded.servers.is_empty() {
                (None, loaded.errors)
            } else {
                let manager = McpManager::start(
                    loaded.servers,
                    McpHandlers {
                        elicitation: elicitation.clone(),
                    },
                    McpOptions {
                        // The plan sets every stdio server's directory; this is the fallback.
                        default_cwd: Some(crate::trust::mcp::neutral_cwd(data_dir)),
                        before_spawn,
                        token_vault: opts.mcp_token_vault.clone(),
                        sandbox_host: opts.mcp_sandbox_host.clone().unwrap_or_else(|| {
                            mcp_sandbox_host(
                                project_root,
                                data_dir,
                                &crate::settings::ExecSettings::default(),
                            )
                        }),
                        ..McpOptions::default()
                    },
                );
                if !manager.wait_until_settled(opts.mcp_connect_wait).await {
                    tracing::info!(
                        "some MCP servers are still connecting after {:?}; they join when ready",
                        opts.mcp_connect_wait
                    );
                }
                (Some(Arc::new(manager)), loaded.errors)
            }
        } else {
            (None, Vec::new())
        };
        let discovery = Arc::new(DiscoveryService::new());
        let readiness = Arc::new(PlaneReadiness::default());
        let changes = mcp.as_ref().map_or(0, |m| *m.subscribe().borrow());
        let desks = build::Desks::default();
        let (registry, left) =
            build_registry(&discovery, &skills, &readiness, &desks, mcp.as_ref())?;
        let plane = Arc::new(CapabilityPlane {
            desks,
            discovery,
            skills,
            mcp,
            mcp_config_errors,
            mcp_untrusted,
            registry: RwLock::new(Arc::new(registry)),
            left_out: RwLock::new(left),
            follower: std::sync::Mutex::new(None),
            elicitation,
            context: RwLock::new(None),
            rebuilding: std::sync::Mutex::new(()),
            refreshed: AtomicU64::new(changes),
            readiness,
            prewarm_search: opts.prewarm_search,
        });
        plane.readiness.attach(Arc::downgrade(&plane));
        plane.follow_mcp();
        Ok(plane)
    }

    /// A plane without MCP servers or watching (tests, `check`).
    pub fn offline(
        project_root: &Path,
        data_dir: &Path,
    ) -> Result<Arc<CapabilityPlane>, Vec<ConsistencyProblem>> {
        let skills = SkillsService::load(default_roots(project_root, data_dir, None));
        let discovery = Arc::new(DiscoveryService::new());
        let readiness = Arc::new(PlaneReadiness::default());
        let desks = build::Desks::default();
        let (registry, left) = build_registry(&discovery, &skills, &readiness, &desks, None)?;
        Ok(Arc::new(CapabilityPlane {
            desks,
            discovery,
            skills,
            mcp: None,
            mcp_config_errors: Vec::new(),
            mcp_untrusted: Vec::new(),
            registry: RwLock::new(Arc::new(registry)),
            left_out: RwLock::new(left),
            follower: std::sync::Mutex::new(None),
            elicitation: Arc::new(SwitchableElicitation::default()),
            context: RwLock::new(None),
            rebuilding: std::sync::Mutex::new(()),
            refreshed: AtomicU64::new(0),
            readiness,
            prewarm_search: false,
        }))
    }

    /// Route MCP servers' elicitation requests to `broker` (the one that asks the person).
    pub fn set_elicitation_broker(&self, broker: Arc<dyn ElicitationBroker>) {
        if let Ok(mut b) = self.elicitation.inner.write() {
            *b = broker;
        }
    }

    /// Rebuild the registry whenever the MCP manager reports a change.
    fn follow_mcp(self: &Arc<Self>) {
        let Some(mcp) = &self.mcp else { return };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut rx = mcp.subscribe();
        let weak: Weak<CapabilityPlane> = Arc::downgrade(self);
        let task = handle.spawn(async move {
            while rx.changed().await.is_ok() {
                // Let a burst of changes settle.
                tokio::time::sleep(Duration::from_millis(50)).await;
                rx.borrow_and_update();
                let Some(plane) = weak.upgrade() else { break };
                plane.refresh();
            }
        });
        if let Ok(mut f) = self.follower.lock() {
            *f = Some(task);
        }
    }

    /// Rebuild now when the MCP catalog changed since the registry was last built (the follower
    /// debounces by 50 ms; a listing shown to the person or a search must not lag behind it).
    pub fn refresh_if_stale(&self) {
        if self.mcp_changes() != self.refreshed.load(Ordering::Acquire) {
            self.refresh();
        }
    }

    /// Rebuild the registry from the current MCP catalog (keeps the previous one on failure),
    /// then the `tool_search` index.
    pub fn refresh(&self) {
        let _serial = self.rebuilding.lock().unwrap_or_else(|p| p.into_inner());
        let changes = self.mcp_changes();
        let built = build_registry(
            &self.discovery,
            &self.skills,
            &self.readiness,
            &self.desks,
            self.mcp.as_ref(),
        );
        match built {
            Ok((registry, left)) => {
                self.refreshed.store(changes, Ordering::Release);
                if let Ok(mut r) = self.registry.write() {
                    *r = Arc::new(registry);
                }
                if let Ok(mut l) = self.left_out.write() {
                    *l = left;
                }
            }
            Err(problems) => {
                for p in problems {
                    tracing::error!("registry rebuild after an MCP change failed: {p}");
                }
            }
        }
        self.rebuild_index();
    }

    /// Set (or, after a settings reload, replace) the settings and host capabilities tool sets are
    /// computed against, and rebuild the `tool_search` index for them (its first reader builds
    /// it, or a background thread with [`PlaneOptions::prewarm_search`]).
    pub fn set_catalog_context(&self, context: CatalogContext) {
        let _serial = self.rebuilding.lock().unwrap_or_else(|p| p.into_inner());
        // The `agent` tool's instructions name the profiles of these settings; its bound of
        // children at once is theirs.
        self.desks.subagents.set_settings(&context.settings.agents);
        if let Ok(mut c) = self.context.write() {
            *c = Some(context);
        }
        self.rebuild_index();
        if self.prewarm_search {
            let discovery = self.discovery.clone();
            let spawned = std::thread::Builder::new()
                .name("tool-search-index".into())
                .spawn(move || {
                    discovery.index();
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "tool_search index not prewarmed; built on first search");
            }
        }
    }

    /// Hand the `tool_search` index the current registry, MCP statuses and context (nothing to do
    /// when they did not change); the index is built by its first reader
    /// ([`DiscoveryService::index`]), so a process that never searches never pays for the ranking
    /// resources. Without a context yet, there is nothing to index.
    fn rebuild_index(&self) {
        let context = self
            .context
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        let Some(context) = context else { return };
        let registry = self.registry();
        let toolset = self.toolset(
            &registry,
            &context.settings,
            &context.host,
            &BTreeSet::new(),
        );
        self.discovery.observe(&registry, &toolset);
    }

    /// The effective tool set against `registry` for a run that activated `activated` (pure
    /// but for reading the current skill count and MCP statuses); the index is not touched.
    pub fn toolset(
        &self,
        registry: &Registry,
        settings: &Settings,
        base: &HostCaps,
        activated: &BTreeSet<String>,
    ) -> ToolSet {
        let mut host = base.clone();
        self.fill_host(&mut host);
        discovery::effective(registry, settings, &host, activated)
    }

    /// The current registry.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry
            .read()
            .map(|r| r.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Fill the parts of the host caps this plane knows: skill count and MCP server statuses.
    pub fn fill_host(&self, host: &mut HostCaps) {
        host.skills = self.skills.catalog().len();
        let mut mcp = BTreeMap::new();
        for e in &self.mcp_config_errors {
            if let Some(server) = &e.server {
                mcp.insert(server.clone(), Err(format!("bad configuration: {e}")));
            }
        }
        let mut pending = BTreeSet::new();
        if let Some(m) = &self.mcp {
            for s in m.status() {
                if s.state == ServerState::Connecting {
                    pending.insert(s.server.clone());
                }
                mcp.insert(
                    s.server.clone(),
                    match server_absence(&s) {
                        None => Ok(()),
                        Some(reason) => Err(reason),
                    },
                );
            }
        }
        host.mcp = mcp;
        host.mcp_pending = pending;
    }
}

mod absent;
mod build;
mod mcp_sandbox;
mod readiness;
mod tokens;
use build::build_registry;
pub use build::{Desks, bind};
pub use readiness::{PlaneReadiness, unavailable};
pub use tokens::KeyringVault;

#[cfg(test)]
mod tests;
