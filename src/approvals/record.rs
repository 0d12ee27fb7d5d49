//! The person's approvals for one project, kept at the user level: `project-approvals.json` in the
//! data directory, keyed by the canonical project path (the key of `crate::trust`'s records). It
//! holds the mode the person chose for the project and the rules they added for it (from a
//! confirmation's "allow commands starting with ..." or by hand). Never in the project: a
//! project's files cannot choose their own mode or allow their own commands.
//!
//! Written atomically (a 0600 temporary file in the same directory, then rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::mode::ApprovalMode;
use super::rules::ApprovalRule;
use crate::user_file::record_key;

pub const APPROVALS_FILE: &str = "project-approvals.json";
const VERSION: u32 = 1;

/// What the person chose for one project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectApprovals {
    /// The mode chosen for this project (None: the user-level `approvals.mode`, or `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ApprovalMode>,
    /// Rules for this project only, after the user-level ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<ApprovalRule>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ApprovalsFile {
    version: u32,
    projects: BTreeMap<String, ProjectApprovals>,
}

/// Why the record file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("Authorization: project approvals `{path}` cannot be used: {reason}")]
pub struct RecordError {
    pub path: PathBuf,
    pub reason: String,
}

pub fn approvals_path(data_dir: &Path) -> PathBuf {
    data_dir.join(APPROVALS_FILE)
}

fn read_all(data_dir: &Path) -> Result<ApprovalsFile, RecordError> {
    let path = approvals_path(data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ApprovalsFile {
                version: VERSION,
                projects: BTreeMap::new(),
            });
        }
        Err(e) => {
            return Err(RecordError {
                path,
                reason: e.to_string(),
            });
        }
    };
    serde_json::from_str(&text).map_err(|e| RecordError {
        path,
        reason: format!("not a valid approvals file ({e}); fix or remove it"),
    })
}

/// The record of `project` (a canonical path), if any.
pub fn lookup(data_dir: &Path, project: &Path) -> Result<Option<ProjectApprovals>, RecordError> {
    Ok(read_all(data_dir)?
        .projects
        .get(&record_key(project))
        .cloned())
}

fn write_atomically(data_dir: &Path, file: &ApprovalsFile) -> Result<(), RecordError> {
    let path = approvals_path(data_dir);
    let err = |reason: String| RecordError {
        path: path.clone(),
        reason,
    };
    let text = serde_json::to_string_pretty(file).map_err(|e| err(e.to_string()))?;
    std::fs::create_dir_all(data_dir).map_err(|e| err(e.to_string()))?;
    crate::user_file::write_private_atomically(&path, text.as_bytes())
        .map_err(|e| err(e.to_string()))
}

fn update(
    data_dir: &Path,
    project: &Path,
    change: impl FnOnce(&mut ProjectApprovals),
) -> Result<ProjectApprovals, RecordError> {
    let path = approvals_path(data_dir);
    std::fs::create_dir_all(data_dir).map_err(|e| RecordError {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    // Read, change and write under the lock: two answers at once must not lose one.
    let lock_path = data_dir.join(format!(".{APPROVALS_FILE}.lock"));
    let _lock = crate::user_file::FileLock::acquire(&lock_path).map_err(|e| RecordError {
        path: lock_path.clone(),
        reason: e.to_string(),
    })?;
    let mut all = read_all(data_dir)?;
    all.version = VERSION;
    let entry = all.projects.entry(record_key(project)).or_default();
    change(entry);
    let out = entry.clone();
    write_atomically(data_dir, &all)?;
    Ok(out)
}

/// Record the mode the person chose for `project` (a canonical path).
pub fn set_mode(
    data_dir: &Path,
    project: &Path,
    mode: ApprovalMode,
) -> Result<ProjectApprovals, RecordError> {
    update(data_dir, project, |e| e.mode = Some(mode))
}

/// Add a rule for `project` (kept once).
pub fn add_rule(
    data_dir: &Path,
    project: &Path,
    rule: ApprovalRule,
) -> Result<ProjectApprovals, RecordError> {
    if let Some(why) = rule.invalid() {
        return Err(RecordError {
            path: approvals_path(data_dir),
            reason: why,
        });
    }
    update(data_dir, project, |e| {
        if !e.rules.contains(&rule) {
            e.rules.push(rule);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::rules::RuleDecision;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn mode_and_rules_are_kept_per_project_with_mode_0600() {
        let data = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/p/a"), Path::new("/p/b"));
        assert_eq!(lookup(data.path(), a).unwrap(), None);
        set_mode(data.path(), a, ApprovalMode::Auto).unwrap();
        let rule = ApprovalRule::command("cargo test *", RuleDecision::Allow);
        add_rule(data.path(), a, rule.clone()).unwrap();
        add_rule(data.path(), a, rule.clone()).unwrap();
        assert_eq!(
            lookup(data.path(), a).unwrap(),
            Some(ProjectApprovals {
                mode: Some(ApprovalMode::Auto),
                rules: vec![rule]
            })
        );
        assert_eq!(lookup(data.path(), b).unwrap(), None);
        let meta = std::fs::metadata(approvals_path(data.path())).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(
            add_rule(
                data.path(),
                a,
                ApprovalRule::command("*", RuleDecision::Allow)
            )
            .is_err()
        );
    }

    #[test]
    fn a_corrupt_file_is_an_error() {
        let data = tempfile::tempdir().unwrap();
        std::fs::write(approvals_path(data.path()), "{").unwrap();
        assert!(lookup(data.path(), Path::new("/p")).is_err());
    }
}
