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
use crate::registry::{ConsistencyProblem, Registry};
use crate::services::{Services, open_sandbox};
use crate::settings::{self, LoadedSettings, SettingsProblem};
use crate::tools;

pub const DATA_DIR_ENV: &str = "AIBUDDY_DATA_DIR";

/// The OS app-data directory (`~/.local/share/aibuddy` on Linux).
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("aibuddy-data"))
        .join("aibuddy")
}

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
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.consistency.is_empty() && self.settings.is_empty()
    }
}

/// An open project.
pub struct App {
    pub project_root: PathBuf,
    pub data_dir: PathBuf,
    pub settings: LoadedSettings,
    pub registry: Arc<Registry>,
    pub services: Arc<Services>,
    pub host: HostCaps,
    pub recorder: Arc<dyn CallRecorder>,
    /// The SQLite store, its recorder and the background precompaction (`crate::results`).
    pub persistence: Option<crate::results::Persistence>,
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

/// Run the startup checks without opening anything else.
pub fn check(opts: &AppOptions) -> Result<CheckReport, AppError> {
    let project = resolve_project(&opts.project)?;
    let loaded = settings::load(&opts.data_dir, &project);
    let consistency = match Registry::build(tools::builtin_configs(), tools::builtin_metas()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    };
    Ok(CheckReport {
        consistency,
        settings: loaded.problems,
    })
}

impl App {
    /// Open a project: settings, registry (stops on inconsistency), services.
    pub async fn open(opts: AppOptions) -> Result<App, AppError> {
        let project_root = resolve_project(&opts.project)?;
        std::fs::create_dir_all(&opts.data_dir).map_err(|e| AppError::DataDir {
            path: opts.data_dir.clone(),
            reason: e.to_string(),
        })?;
        let loaded = settings::load(&opts.data_dir, &project_root);
        for p in &loaded.problems {
            tracing::warn!("settings: {p}");
        }
        let registry = Registry::build(tools::builtin_configs(), tools::builtin_metas())
            .map_err(AppError::Inconsistent)?;
        let sandbox = open_sandbox(&loaded.settings.sandbox.kind, &project_root);
        if let Err(reason) = &sandbox {
            tracing::warn!("{reason}");
        }
        let services = Arc::new(Services {
            project_root: project_root.clone(),
            data_dir: opts.data_dir.clone(),
            settings: loaded.settings.clone(),
            sandbox,
        });
        let mut host = host_caps(&services);
        let registry = Arc::new(registry);
        let persistence = crate::results::Persistence::open(
            &opts.data_dir,
            &project_root,
            registry.clone(),
            None,
        )
        .await
        .map_err(|e| AppError::DataDir {
            path: opts.data_dir.clone(),
            reason: e.to_string(),
        })?;
        host.store = true;
        Ok(App {
            project_root,
            data_dir: opts.data_dir,
            settings: loaded,
            registry,
            services,
            host,
            recorder: persistence.call_recorder(),
            persistence: Some(persistence),
        })
    }

    /// The effective tool set for a run that has activated `activated` deferred tools.
    pub fn toolset(&self, activated: &BTreeSet<String>) -> ToolSet {
        discovery::effective(
            &self.registry,
            &self.services.settings,
            &self.host,
            activated,
        )
    }

    /// Every tool a new run would have.
    pub fn tools_list(&self) -> Vec<ToolListing> {
        self.toolset(&BTreeSet::new()).tools
    }

    /// A runner for one run (task).
    pub fn runner(&self, run_id: Option<String>, broker: Arc<dyn ConfirmBroker>) -> Runner {
        Runner {
            run_id: run_id
                .unwrap_or_else(|| format!("run_{}", ulid::Ulid::new().to_string().to_lowercase())),
            registry: self.registry.clone(),
            services: self.services.clone(),
            broker,
            recorder: self.recorder.clone(),
            after_call: self.persistence.as_ref().map(|p| p.after_call()),
            sandbox_kind: self.services.settings.sandbox.kind.clone(),
        }
    }
}
