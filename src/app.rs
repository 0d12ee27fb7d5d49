//! `App`: one open project. Shared by the CLI and the desktop shell: it loads settings, builds and
//! checks the registry, injects host services, and hands out runners for calls.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use crate::confirm::ConfirmBroker;
use crate::discovery::{self, HostCaps, ToolListing, ToolSet};
use crate::pipeline::{CallRecorder, Runner};
use crate::plane::{CapabilityPlane, CatalogContext, PlaneOptions};
use crate::registry::{ConsistencyProblem, Registry};
use crate::services::{Services, open_sandbox};
use crate::settings::{self, LoadedSettings, SettingsProblem};
use crate::tools;
use crate::trust::{self, NOT_TRUSTED, TrustError, TrustStatus};

pub use crate::data_dir::{DATA_DIR_ENV, default_data_dir};

#[derive(Debug, Clone)]
pub struct AppOptions {
    pub project: PathBuf,
    pub data_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("project folder `{path}` cannot be opened: {reason}")]
    Project { path: PathBuf, reason: String },
    #[error("data directory `{path}` cannot be used: {reason}")]
    DataDir { path: PathBuf, reason: String },
    #[error("the tool registry is inconsistent; startup stopped:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Inconsistent(Vec<ConsistencyProblem>),
}

/// Everything `aibuddy tools check` reports.
#[derive(Debug, Clone, Default, Serialize, TS)]
#[ts(export)]
pub struct CheckReport {
    pub consistency: Vec<ConsistencyProblem>,
    pub settings: Vec<SettingsProblem>,
    /// Skills left out of the catalog (`file:line: message`).
    pub skills: Vec<String>,
    /// Problems in `mcp.json` files (file, server, field), and project servers not started
    /// because the project is not trusted.
    pub mcp: Vec<String>,
    /// Problems with the trust records.
    pub trust: Vec<String>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.consistency.is_empty()
            && self.settings.is_empty()
            && self.skills.is_empty()
            && self.mcp.is_empty()
            && self.trust.is_empty()
    }
}

/// An open project.
pub struct App {
    pub project_root: PathBuf,
    pub data_dir: PathBuf,
    pub settings: LoadedSettings,
    pub services: Arc<Services>,
    pub host: HostCaps,
    pub recorder: Arc<dyn CallRecorder>,
    /// The SQLite store, its recorder and the background precompaction (`crate::results`).
    pub persistence: Option<crate::results::Persistence>,
    /// Skills, MCP servers, `tool_search` and per-run discovery; owns the live registry (MCP
    /// tools come and go): read it with `capabilities.registry()`.
    pub capabilities: Arc<CapabilityPlane>,
    /// The project's trust when it was opened (what applied: settings and MCP servers above).
    pub trust: TrustStatus,
    /// Checkpoints of the calls that may change the project (`None` when they could not be
    /// opened: calls then run without them, and a warning is logged).
    pub checkpoints: Option<Arc<crate::checkpoints::Checkpoints>>,
    /// The running calls of this project's runs, each stoppable alone by its id (a window's
    /// card Stop).
    pub call_stops: Arc<crate::pipeline::call_stops::CallStops>,
    /// The tool sets and system text of the subagent runs running now, by run id.
    pub child_shapes: Arc<crate::discovery::child_shapes::ChildShapes>,
}

fn resolve_project(path: &Path) -> Result<PathBuf, AppError> {
    let canonical = std::fs::canonicalize(path).map_err(|e| AppError::Project {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if !canonical.is_dir() {
        return Err(AppError::Project {
            path: path.to_path_buf(),
            reason: "not a directory".to_string(),
        });
    }
    Ok(canonical)
}

/// What the injected services provide, for the capability plane.
pub fn host_caps(services: &Services) -> HostCaps {
    let mut host = HostCaps::default();
    match &services.sandbox {
        Ok(sb) => {
            let caps = sb.capabilities();
            host.fs = Some(if caps.fs_read && caps.fs_write {
                Ok(())
            } else {
                Err(format!(
                    "the `{}` sandbox has no filesystem access",
                    caps.kind
                ))
            });
            host.exec_confinement = caps.exec.then(|| {
                // A sandbox with its own runner (a container) says what commands get there.
                if let Some(own) = sb.exec_confinement() {
                    return discovery::LazyLabel::ready(format!(
                        "{} ({}; protected paths: only those that exist are read-only)",
                        own.label(),
                        sb.location()
                    ));
                }
                let exec = services.settings.exec.clone();
                discovery::LazyLabel::new(move || {
                    let mut probe = aibuddy_sandbox::aibuddy_exec::ExecRequest::new("true", "/");
                    if !exec.namespaces {
                        probe.namespaces = aibuddy_sandbox::aibuddy_exec::NamespacePolicy::Off;
                    }
                    let support = crate::tools::execute::confinement_for(
                        &probe,
                        aibuddy_sandbox::aibuddy_exec::confinement_support(),
                    );
                    let mut label = support.label();
                    if !exec.network.is_on() {
                        label.push_str(" (network off)");
                    }
                    if !crate::tools::execute::protected_paths_refused(&support) {
                        label
                            .push_str(" (protected paths not refused: restored after the command)");
                    }
                    label
                })
            });
            host.exec = Some(if caps.exec {
                Ok(())
            } else {
                Err(format!(
                    "the `{}` sandbox cannot execute commands",
                    caps.kind
                ))
            });
        }
        Err(reason) => {
            host.fs = Some(Err(reason.clone()));
            host.exec = Some(Err(reason.clone()));
        }
    }
    host
}

/// Add the problems only the registry can see (tool keys naming no config).
fn with_tool_key_problems(mut loaded: LoadedSettings) -> LoadedSettings {
    let metas = tools::builtin_metas();
    let known: Vec<&str> = metas.iter().map(|m| m.key.as_str()).collect();
    let mut unknown = settings::unknown_tool_keys(&loaded, &known);
    loaded.problems.append(&mut unknown);
    loaded
}

/// The `mcp` problem line of a project server held back because the project is not trusted.
pub fn untrusted_server_problem(file: &str, server: &str) -> String {
    format!("{file}: server \"{server}\": not started: {NOT_TRUSTED} (run `aibuddy trust`)")
}

/// Run the startup checks without opening anything else; `bundled_skills`: the host's bundled
/// skills folder (`PlaneOptions::bundled_skills`).
pub fn check(opts: &AppOptions, bundled_skills: Option<&Path>) -> Result<CheckReport, AppError> {
    let project = resolve_project(&opts.project)?;
    let config = trust::load_project(&project, &opts.data_dir);
    let loaded = with_tool_key_problems(config.settings);
    let consistency = match Registry::build(tools::builtin_configs(), tools::builtin_metas()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    };
    let skills = crate::skills::skills_catalog_problems(&project, &opts.data_dir, bundled_skills);
    let mut mcp: Vec<String> = config.mcp.errors.iter().map(ToString::to_string).collect();
    mcp.extend(config.mcp.untrusted.iter().map(|s| {
        let file = config
            .mcp
            .untrusted_user
            .iter()
            .find(|(name, _)| name == s)
            .map_or(config.mcp.project_file.as_str(), |(_, file)| file.as_str());
        untrusted_server_problem(file, s)
    }));
    // Refused files are reported with their settings and MCP problems; unusable trust records here.
    let trust = config.records_problem.into_iter().collect();
    Ok(CheckReport {
        consistency,
        settings: loaded.problems,
        skills,
        mcp,
        trust,
    })
}

impl App {
    /// Open a project: settings, registry (stops on inconsistency), services. The plane's options
    /// are the defaults (no environment is read): hosts that honour overrides use [`App::open_with`].
    pub async fn open(opts: AppOptions) -> Result<App, AppError> {
        Self::open_with(opts, PlaneOptions::default()).await
    }

    /// [`App::open`] with the capability plane's options (e.g. the MCP connect wait a host read
    /// from its environment).
    pub async fn open_with(opts: AppOptions, mut plane: PlaneOptions) -> Result<App, AppError> {
        let project_root = resolve_project(&opts.project)?;
        std::fs::create_dir_all(&opts.data_dir).map_err(|e| AppError::DataDir {
            path: opts.data_dir.clone(),
            reason: e.to_string(),
        })?;
        // One read of the project's trust-relevant files decides settings and MCP servers.
        let config = trust::load_project(&project_root, &opts.data_dir);
        let loaded = with_tool_key_problems(config.settings);
        for p in &loaded.problems {
            tracing::warn!("settings: {}", aibuddy_common::term::line(&p.to_string()));
        }
        // Sandboxed MCP servers get the confinement of commands under these settings.
        if plane.mcp_sandbox_host.is_none() {
            plane.mcp_sandbox_host = Some(crate::plane::mcp_sandbox_host(
                &project_root,
                &opts.data_dir,
                &loaded.settings.exec,
            ));
        }
        // The capability plane: skills, MCP servers, discovery; its registry is live.
        let capabilities =
            CapabilityPlane::open_with_plan(&project_root, &opts.data_dir, plane, config.mcp)
                .await
                .map_err(AppError::Inconsistent)?;
        let sandbox = open_sandbox(&loaded.settings.sandbox, &project_root);
        if let Err(reason) = &sandbox {
            tracing::warn!("{reason}");
        }
        let services = Arc::new(Services {
            project_root: project_root.clone(),
            data_dir: opts.data_dir.clone(),
            settings: loaded.settings.clone(),
            sandbox,
            session_rules: Default::default(),
            processes: Default::default(),
        });
        let mut host = host_caps(&services);
        capabilities.fill_host(&mut host);
        let persistence = crate::results::Persistence::open(&opts.data_dir, &project_root, None)
            .await
            .map_err(|e| AppError::DataDir {
                path: opts.data_dir.clone(),
                reason: e.to_string(),
            })?;
        host.store = true;
        // Each background process is recorded as a call of its own (its output by call id).
        services
            .processes
            .attach_recorder(persistence.call_recorder());
        let checkpoints = match crate::checkpoints::Checkpoints::open(
            &opts.data_dir,
            &project_root,
            persistence.store.clone(),
            loaded.settings.checkpoints.max_file_bytes,
        ) {
            Ok(c) => Some(Arc::new(c)),
            Err(e) => {
                tracing::warn!("checkpoints unavailable: {e}");
                None
            }
        };
        // The tool set is computed against these from now on; this builds the search index.
        capabilities.set_catalog_context(CatalogContext {
            settings: services.settings.clone(),
            host: host.clone(),
        });
        Ok(App {
            project_root,
            data_dir: opts.data_dir,
            settings: loaded,
            services,
            host,
            recorder: persistence.call_recorder(),
            persistence: Some(persistence),
            capabilities,
            trust: config.status,
            checkpoints,
            call_stops: Default::default(),
            child_shapes: Default::default(),
        })
    }

    /// The project's trust now (the files are read again: a change since open shows here).
    /// Settings and MCP servers of this `App` stay as opened; reopen the project to apply a grant.
    pub fn trust_status(&self) -> TrustStatus {
        trust::load_project(&self.project_root, &self.data_dir).status
    }

    /// Trust the project at the content whose digest the person was shown
    /// (see [`trust::grant`]). Reopen the project to start its servers and apply its settings.
    pub fn grant_trust(&self, shown_digest: &str) -> Result<TrustStatus, TrustError> {
        trust::grant(&self.project_root, &self.data_dir, shown_digest)
    }

    /// Forget the project's trust (see [`trust::revoke`]).
    pub fn revoke_trust(&self) -> Result<TrustStatus, TrustError> {
        trust::revoke(&self.project_root, &self.data_dir)
    }

    /// Where the person's offered rules are stored for this project: the user-level record, and
    /// this session (the next identical call of the same run is not asked again).
    pub fn rule_book(&self) -> crate::approvals::RuleBook {
        crate::approvals::RuleBook {
            data_dir: self.data_dir.clone(),
            project: self.project_root.clone(),
            session: self.services.session_rules.clone(),
        }
    }

    /// The approval mode of this invocation, given by the person (`--approvals MODE`): it takes
    /// the place of the user level's, and the project's own settings file still narrows it.
    pub fn set_approval_mode(&mut self, mode: crate::approvals::ApprovalMode) {
        let mut settings = self.services.settings.clone();
        settings.approvals.with_flag(mode);
        self.settings.settings.approvals = settings.approvals.clone();
        self.services = Arc::new(Services {
            project_root: self.services.project_root.clone(),
            data_dir: self.services.data_dir.clone(),
            settings,
            sandbox: self.services.sandbox.clone(),
            session_rules: self.services.session_rules.clone(),
            processes: self.services.processes.clone(),
        });
        self.capabilities.set_catalog_context(CatalogContext {
            settings: self.services.settings.clone(),
            host: self.host.clone(),
        });
    }

    /// The effective tool set for a run that has activated `activated` deferred tools. A pure
    /// read: the search index is rebuilt by the plane where the catalog changes.
    pub fn toolset(&self, activated: &BTreeSet<String>) -> ToolSet {
        self.capabilities.toolset(
            &self.capabilities.registry(),
            &self.services.settings,
            &self.host,
            activated,
        )
    }

    /// The tool set for the next step of run `run_id` (with what its `tool_search` calls
    /// activated).
    pub fn run_toolset(&self, run_id: &str) -> ToolSet {
        let set = self.toolset(&self.capabilities.discovery.activated(run_id));
        // A subagent run has at most its parent's tools (`discovery::child_shapes`).
        self.child_shapes.narrow(run_id, set)
    }

    /// The context of run `run_id` was rebuilt (after compaction): keep activated exactly the
    /// deferred tools the retained messages still reference. Returns them.
    pub fn rebuild_run_context(
        &self,
        run_id: &str,
        messages: &[discovery::ContextMessage],
    ) -> BTreeSet<String> {
        // The index is current: the plane rebuilds it whenever the catalog changes.
        self.capabilities.discovery.rebuild_run(run_id, messages)
    }

    /// The tool array of run `run_id`'s next step under a presentation strategy.
    pub fn present_tools(
        &self,
        run_id: &str,
        presentation: discovery::Presentation,
    ) -> Vec<discovery::PresentedTool> {
        let toolset = self.run_toolset(run_id);
        discovery::present(&toolset, &self.capabilities.registry(), presentation)
    }

    /// The runtime instructions joining the system prompt of `run_id` now: one block per config
    /// with an active tool, each headed by its config key.
    pub fn instructions(&self, run_id: &str) -> String {
        let toolset = self.run_toolset(run_id);
        discovery::instructions(&self.capabilities.registry(), &toolset)
            .into_iter()
            .map(|(key, text)| format!("## Tools: {key}\n{}", text.trim_end()))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Every tool a new run would have.
    pub fn tools_list(&self) -> Vec<ToolListing> {
        self.capabilities.refresh_if_stale();
        let mut tools = self.toolset(&BTreeSet::new()).tools;
        let mut host = self.host.clone();
        self.capabilities.fill_host(&mut host);
        tools.extend(
            self.capabilities
                .absent_listings(&host, &self.capabilities.registry()),
        );
        tools
    }

    /// A runner for one run (task).
    pub fn runner(&self, run_id: Option<String>, broker: Arc<dyn ConfirmBroker>) -> Runner {
        Runner {
            run_id: run_id
                .unwrap_or_else(|| format!("run_{}", ulid::Ulid::new().to_string().to_lowercase())),
            registry: self.capabilities.registry(),
            services: self.services.clone(),
            broker,
            recorder: self.recorder.clone(),
            after_call: self.persistence.as_ref().map(|p| p.after_call()),
            sandbox_kind: self.services.settings.sandbox.kind.clone(),
            checkpoints: self.checkpoints.clone(),
        }
    }
}
