//! Project trust. What a project folder asks for on its own — its MCP servers
//! (`.aibuddy/mcp.json`) and every field of `.aibuddy/settings.json` that widens authority
//! (`crate::settings` lists them in one place) — takes effect only after the person trusts the
//! project *at its current content*. The user level (`settings.json` and `mcp.json` in the data
//! directory) is the person's own and needs no trust.
//!
//! Trust is recorded in `<data dir>/trusted-projects.json` ([`record`]), keyed by the canonical
//! project path, with the SHA-256 digest of the trust-relevant files ([`files`]). Any change to them
//! — by the person, a tool or a command — makes the project untrusted again until re-approved. The
//! files are read once per evaluation, and settings and MCP configs are parsed from those very
//! bytes ([`load_project`]), so what was approved is exactly what takes effect. Anything that
//! reloads settings or `mcp.json` must go through [`load_project`] again.
//!
//! API for hosts: [`status`] (what trust would grant), [`grant`] (with the digest the person saw:
//! refused if the files changed since), [`revoke`]; [`TrustStatus::event`] for the UI.

pub mod exposure;
pub mod files;
pub mod hook_pins;
pub mod mcp;
pub mod pins;
pub mod record;
pub mod watch;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use files::{FileContent, Snapshot};
pub use hook_pins::HookGrant;
pub use mcp::{McpPlan, NOT_TRUSTED, ServerGrant};
pub use watch::watched_paths;

use crate::contract::Stage;
use crate::settings::{
    self, LayerContext, LoadedSettings, SettingsProblem, SettingsText, WideningField,
};

/// Where a project stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum TrustState {
    /// Approved at its current content: its servers start, its widening fields apply.
    Trusted,
    /// Never approved: its servers do not start, its widening fields are ignored.
    Untrusted,
    /// It asks for nothing trust would grant (no project server, no widening field).
    NotNeeded,
    /// Approved once, but the files changed since: as untrusted until approved again.
    ChangedSinceTrusted,
}

impl TrustState {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustState::Trusted => "trusted",
            TrustState::Untrusted => "untrusted",
            TrustState::NotNeeded => "not_needed",
            TrustState::ChangedSinceTrusted => "changed_since_trusted",
        }
    }

    /// Whether the project's own requests take effect.
    pub fn applies(self) -> bool {
        matches!(self, TrustState::Trusted | TrustState::NotNeeded)
    }
}

/// Exactly what trusting the project grants.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Grants {
    /// Project MCP servers that would start.
    pub servers: Vec<ServerGrant>,
    /// Project settings fields that widen authority, with their effective (resolved) values.
    pub settings: Vec<WideningField>,
    /// Project hooks that would run, with the project files their commands name (pinned).
    #[serde(default)]
    pub hooks: Vec<HookGrant>,
}

impl Grants {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.settings.is_empty() && self.hooks.is_empty()
    }
}

/// The trust status of one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct TrustStatus {
    /// Canonical project root.
    pub project: String,
    pub state: TrustState,
    /// SHA-256 (hex) of the trust-relevant files now; [`grant`] takes it back.
    pub digest: String,
    pub grants: Grants,
    /// Files refused (symlinked out of the project, not regular, ...) and unusable trust records.
    pub problems: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("Authorization: project folder `{path}` cannot be opened: {reason}")]
    Project { path: PathBuf, reason: String },
    #[error("Authorization: trust records `{path}` cannot be used: {reason}")]
    Records { path: PathBuf, reason: String },
    #[error("Authorization: project `{project}` cannot be trusted: {reason}")]
    Untrustable { project: PathBuf, reason: String },
    #[error(
        "Authorization: the project's `.aibuddy/mcp.json` or `.aibuddy/settings.json` changed since it was shown (shown {shown}, now {now}); review it again with `aibuddy trust`"
    )]
    Changed { shown: String, now: String },
}

impl TrustError {
    pub fn stage(&self) -> Stage {
        Stage::Authorization
    }
}

/// The state from the grants and the record (pure).
pub fn decide_state(grants_empty: bool, digest: &str, recorded: Option<&str>) -> TrustState {
    match recorded {
        _ if grants_empty => TrustState::NotNeeded,
        Some(d) if d == digest => TrustState::Trusted,
        Some(_) => TrustState::ChangedSinceTrusted,
        None => TrustState::Untrusted,
    }
}

/// Everything a project configures, gated by its trust, from one read of its files.
#[derive(Debug, Clone)]
pub struct ProjectConfig {
    pub snapshot: Snapshot,
    pub status: TrustStatus,
    /// Effective settings: the project's widening fields only when its trust applies.
    pub settings: LoadedSettings,
    /// MCP servers to start: the project's only when its trust applies.
    pub mcp: McpPlan,
    /// Why the trust records could not be read (the project then counts as untrusted).
    pub records_problem: Option<String>,
}

/// Read and layer the user and project settings, gated by the project's trust (the settings of
/// [`load_project`]). Trust sits above `settings`, so this lives here, not in `settings`.
pub fn load_settings(data_dir: &Path, project: &Path) -> LoadedSettings {
    load_project(project, data_dir).settings
}

/// Read the project's trust-relevant files once, evaluate trust, and load settings and MCP
/// configs from those bytes. `project_root` should be canonical (it is canonicalized if it can be).
pub fn load_project(project_root: &Path, data_dir: &Path) -> ProjectConfig {
    let root = std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf());
    let snapshot = Snapshot::read(&root);
    let (user_text, user_problem) = settings::read_user(data_dir);
    let project_text = snapshot.settings.content.text().map(|text| SettingsText {
        file: snapshot.settings.path.display().to_string(),
        text: text.to_string(),
    });
    let home = dirs::home_dir();
    // The person's own files are only theirs while the project cannot write them.
    let data_real = exposure::resolve(data_dir);
    let exposed = data_real
        .starts_with(&root)
        .then(|| exposure::message(data_dir));
    // The person's approvals for this project (a broken file is a problem, never a wider mode).
    let (approvals_record, approvals_problem) =
        match crate::approvals::record::lookup(data_dir, &root) {
            Ok(r) => (r, None),
            Err(e) => (None, Some(e.to_string())),
        };
    let layer = |trusted: bool| {
        settings::layer(
            user_text.as_ref(),
            project_text.as_ref(),
            &LayerContext {
                project_root: &root,
                home: home.as_deref(),
                project_trusted: trusted,
                user_trusted: exposed.is_none(),
                data_dir: Some(&data_real),
                approvals_record: approvals_record.as_ref(),
                canonicalize: &crate::settings::real_path,
            },
        )
    };
    let untrusted = layer(false);
    let grants = Grants {
        servers: mcp::grants(&root, data_dir, &snapshot.mcp),
        settings: untrusted.widening.clone(),
        hooks: hook_pins::grants(&root, &untrusted.project_hooks),
    };
    // The files' digest, with the project paths each server's command line and each project
    // hook's command names folded in.
    let hook_labels: Vec<String> = grants.hooks.iter().map(HookGrant::label).collect();
    let digest = pins::fold_digest(
        &snapshot.digest(),
        grants
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.pins.as_slice()))
            .chain(
                grants
                    .hooks
                    .iter()
                    .zip(&hook_labels)
                    .map(|(h, label)| (label.as_str(), h.pins.as_slice())),
            ),
    );
    let mut problems: Vec<String> = snapshot
        .refusals()
        .iter()
        .map(|(f, why)| format!("{}: {why}; not used", f.path.display()))
        .collect();
    let (recorded, records_problem) = match (&exposed, record::lookup(data_dir, &root)) {
        (Some(why), _) => (None, Some(why.clone())),
        (None, Ok(r)) => (r.map(|r| r.digest), None),
        (None, Err(e)) => (None, Some(e.to_string())),
    };
    problems.extend(records_problem.clone());
    problems.extend(approvals_problem);
    let state = decide_state(grants.is_empty(), &digest, recorded.as_deref());
    let mut loaded = if state.applies() && !untrusted.widening.is_empty() {
        layer(true)
    } else {
        untrusted
    };
    loaded.problems.splice(0..0, user_problem);
    if let FileContent::Refused(why) = &snapshot.settings.content {
        loaded.problems.push(SettingsProblem {
            file: snapshot.settings.path.display().to_string(),
            line: None,
            column: None,
            field: "(file)".to_string(),
            message: format!("{why}; the whole file is ignored"),
        });
    }
    loaded.files = user_text
        .iter()
        .map(|t| PathBuf::from(&t.file))
        .chain(project_text.iter().map(|t| PathBuf::from(&t.file)))
        .collect();
    let mut plan = mcp::plan(
        &root,
        data_dir,
        &snapshot.mcp,
        state.applies(),
        exposed.is_none(),
    );
    if state == TrustState::Trusted {
        plan.approved_digest = Some(digest.clone());
    }
    if let FileContent::Refused(why) = &snapshot.mcp.content {
        plan.errors.push(aibuddy_mcp::ConfigError {
            file: snapshot.mcp.path.clone(),
            line: None,
            column: None,
            server: None,
            field: None,
            message: format!("{why}; the whole file is ignored"),
        });
    }
    ProjectConfig {
        status: TrustStatus {
            project: root.display().to_string(),
            state,
            digest,
            grants,
            problems,
        },
        snapshot,
        settings: loaded,
        mcp: plan,
        records_problem,
    }
}

fn canonical(project: &Path) -> Result<PathBuf, TrustError> {
    let root = std::fs::canonicalize(project).map_err(|e| TrustError::Project {
        path: project.to_path_buf(),
        reason: e.to_string(),
    })?;
    if !root.is_dir() {
        return Err(TrustError::Project {
            path: project.to_path_buf(),
            reason: "not a directory".to_string(),
        });
    }
    Ok(root)
}

/// Where `project` stands now and what trusting it would grant.
pub fn status(project: &Path, data_dir: &Path) -> Result<TrustStatus, TrustError> {
    Ok(load_project(&canonical(project)?, data_dir).status)
}

/// Trust `project` at the content the person was shown: `shown_digest` is the digest of the
/// status they approved; if the files changed since, nothing is recorded.
pub fn grant(
    project: &Path,
    data_dir: &Path,
    shown_digest: &str,
) -> Result<TrustStatus, TrustError> {
    let root = canonical(project)?;
    if exposure::data_dir_inside(&root, data_dir) {
        return Err(TrustError::Untrustable {
            project: root,
            reason: exposure::message(data_dir),
        });
    }
    let now = load_project(&root, data_dir).status;
    if now.digest != shown_digest {
        return Err(TrustError::Changed {
            shown: shown_digest.to_string(),
            now: now.digest,
        });
    }
    if now.state == TrustState::NotNeeded {
        return Ok(now);
    }
    record::store(data_dir, &root, shown_digest)?;
    tracing::info!(project = %root.display(), "project trusted");
    Ok(load_project(&root, data_dir).status)
}

/// Before (re)starting a project server mid-session: whether the project is still what was
/// approved when the session opened (`approved_digest`, the digest of `App::trust`). A trusted
/// server runs unconfined; a command may have rewritten a file it runs (see [`pins`]) since, and
/// a reconnect would run that. Refused (`TrustError::Changed`) when anything changed.
pub fn verify_unchanged(
    project: &Path,
    data_dir: &Path,
    approved_digest: &str,
) -> Result<(), TrustError> {
    let now = load_project(project, data_dir).status;
    if now.digest == approved_digest && now.state.applies() {
        return Ok(());
    }
    Err(TrustError::Changed {
        shown: approved_digest.to_string(),
        now: now.digest,
    })
}

/// Forget the trust of `project`.
pub fn revoke(project: &Path, data_dir: &Path) -> Result<TrustStatus, TrustError> {
    let root = canonical(project)?;
    if record::remove(data_dir, &root)? {
        tracing::info!(project = %root.display(), "project trust revoked");
    }
    Ok(load_project(&root, data_dir).status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_unchanged_refuses_a_rewritten_pinned_script() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let (project, data) = (base.join("p"), base.join("d"));
        std::fs::create_dir_all(project.join(".aibuddy")).unwrap();
        std::fs::write(
            project.join(".aibuddy/mcp.json"),
            r#"{"mcpServers": {"s": {"command": "sh", "args": ["server.sh"]}}}"#,
        )
        .unwrap();
        std::fs::write(project.join("server.sh"), "exit 0").unwrap();
        let shown = status(&project, &data).unwrap();
        let granted = grant(&project, &data, &shown.digest).unwrap();
        assert_eq!(granted.state, TrustState::Trusted);
        assert!(verify_unchanged(&project, &data, &granted.digest).is_ok());
        std::fs::write(project.join("server.sh"), "touch /tmp/x").unwrap();
        assert!(matches!(
            verify_unchanged(&project, &data, &granted.digest),
            Err(TrustError::Changed { .. })
        ));
    }

    #[test]
    fn state_from_grants_and_record() {
        assert_eq!(decide_state(true, "d", None), TrustState::NotNeeded);
        assert_eq!(decide_state(true, "d", Some("old")), TrustState::NotNeeded);
        assert_eq!(decide_state(false, "d", None), TrustState::Untrusted);
        assert_eq!(decide_state(false, "d", Some("d")), TrustState::Trusted);
        assert_eq!(
            decide_state(false, "d", Some("old")),
            TrustState::ChangedSinceTrusted
        );
        assert!(TrustState::Trusted.applies() && TrustState::NotNeeded.applies());
        assert!(!TrustState::Untrusted.applies() && !TrustState::ChangedSinceTrusted.applies());
    }
}
