//! Writing settings from a host (the desktop's settings pages): one key of `settings.json` or one
//! server of `mcp.json`, at the user level (the data directory) or the project level
//! (`.aibuddy/`), in the very files the CLI reads. Everything else in the file is kept as written
//! (`aibuddy_common::json_edit`), the new text is validated as the loaders read it (a field they
//! would refuse is never written; the problem comes back with file, line, column and field, as
//! `aibuddy tools check` prints it), and the file is replaced atomically (temp file beside it,
//! fsync, rename, directory fsync).
//!
//! Concurrency: the file is read, edited, and read again just before the rename; if it changed in
//! between, nothing is written ([`EditError::Changed`]).
//!
//! Trust: a project file is trust-relevant (`crate::trust`), so writing it changes the project's
//! digest. The project's trust is re-recorded at the new digest only when the project was trusted
//! at the files exactly as read for this edit and, after the write, the files are exactly those
//! plus this edit (the other file unchanged, every pinned path of the servers unchanged). Anything
//! else changed meanwhile, or a project that was not trusted, is left for the trust dialog. So this
//! sits above `trust` (and `settings`, which knows nothing of trust).

use std::io::Write;
use std::path::{Path, PathBuf};

use aibuddy_common::json_edit::{self, Edit};
use aibuddy_mcp::ConfigScope;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::contract::Stage;
use crate::settings::{PROJECT_SETTINGS, SettingsProblem, USER_SETTINGS};
use crate::trust::{self, FileContent, ProjectConfig, TrustState};

/// Which file an edit goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Level {
    /// The person's own file in the data directory (the default of every page).
    User,
    /// The open project's `.aibuddy/` file (trust-relevant).
    Project,
}

/// Which of the two configuration files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFile {
    Settings,
    Mcp,
}

/// Where `file` lives at `level`.
pub fn path_of(file: ConfigFile, level: Level, project_root: &Path, data_dir: &Path) -> PathBuf {
    match (file, level) {
        (ConfigFile::Settings, Level::User) => data_dir.join(USER_SETTINGS),
        (ConfigFile::Settings, Level::Project) => project_root.join(PROJECT_SETTINGS),
        (ConfigFile::Mcp, Level::User) => aibuddy_mcp::config::user_config_path(data_dir),
        (ConfigFile::Mcp, Level::Project) => aibuddy_mcp::config::project_config_path(project_root),
    }
}

/// Why an edit was not written. Nothing was changed on disk in any case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// The value (or the file as it is) is refused by the loader: its problems, located.
    #[error("Parameters: {}", problems.first().map(ToString::to_string).unwrap_or_default())]
    Refused { problems: Vec<SettingsProblem> },
    /// The project file (or `.aibuddy`) does not lie inside the project, or is not a regular file.
    #[error("Authorization: `{path}` is not written: {reason}")]
    Outside { path: PathBuf, reason: String },
    /// The file changed on disk while it was being edited.
    #[error(
        "Verification: `{path}` changed on disk while it was being edited; nothing was written (reload and try again)"
    )]
    Changed { path: PathBuf },
    #[error("Execution: `{path}` cannot be written: {reason}")]
    Io { path: PathBuf, reason: String },
}

impl EditError {
    pub fn stage(&self) -> Stage {
        match self {
            EditError::Refused { .. } => Stage::Parameters,
            EditError::Outside { .. } => Stage::Authorization,
            EditError::Changed { .. } => Stage::Verification,
            EditError::Io { .. } => Stage::Execution,
        }
    }

    /// The located problems of a refused value (empty otherwise).
    pub fn problems(&self) -> &[SettingsProblem] {
        match self {
            EditError::Refused { problems } => problems,
            _ => &[],
        }
    }
}

/// What a project-level write did to the project's trust.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum TrustAfterWrite {
    /// A user-level file: the project's trust is not concerned.
    NotConcerned,
    /// Trusted just before the write; trust was recorded again at the new digest.
    Kept { digest: String },
    /// Not trusted before the write (or nothing to trust): nothing recorded. `state` is now.
    NotRecorded { state: TrustState },
    /// Something besides this write changed the project's files: trust was not recorded again,
    /// the trust dialog asks.
    ChangedMeanwhile,
}

/// A write that happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Written {
    /// The file written.
    pub file: String,
    /// False when the edit changed nothing (the file was left alone).
    pub changed: bool,
    pub trust: TrustAfterWrite,
}

/// Set (`Some`) or remove (`None`) the settings key `path` (e.g. `["exec", "network"]`,
/// `["providers", "local"]`) at `level`.
pub fn set_setting(
    project_root: &Path,
    data_dir: &Path,
    level: Level,
    path: &[&str],
    value: Option<&Value>,
) -> Result<Written, EditError> {
    let target = Target::new(ConfigFile::Settings, level, project_root, data_dir);
    let file = target.path.display().to_string();
    target.write(|text| {
        let edit = value.map_or(Edit::Remove, Edit::Set);
        let out = json_edit::edit(text, path, edit).map_err(|e| EditError::Refused {
            problems: vec![SettingsProblem {
                file: file.clone(),
                line: e.position().map(|p| p.line),
                column: e.position().map(|p| p.column),
                field: if matches!(e, json_edit::EditError::Syntax(_)) {
                    "(file)".to_string()
                } else {
                    path.join(".")
                },
                message: e.to_string(),
            }],
        })?;
        let mut problems = field_problems(&file, &out, path);
        problems.extend(user_only_problem(&file, &out, level, path, value));
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(EditError::Refused { problems })
        }
    })
}

/// A project-level value of a field only the user level may set (`FieldSpec::user_only`, e.g.
/// `exec.unprotected_paths`: it widens authority, and the loader ignores a project's), refused
/// rather than written to be ignored. Removing one is fine.
fn user_only_problem(
    file: &str,
    text: &str,
    level: Level,
    path: &[&str],
    value: Option<&Value>,
) -> Option<SettingsProblem> {
    let [section, field] = path else {
        return None;
    };
    let message = crate::settings::fields::find(section, field)?.user_only?;
    if level != Level::Project || value.is_none() {
        return None;
    }
    let at = aibuddy_common::located::parse(text).ok().and_then(|doc| {
        let entry = doc.root().get(section)?.value.get(field)?;
        Some((entry.position.line, entry.position.column))
    });
    Some(SettingsProblem {
        file: file.to_string(),
        line: at.map(|p| p.0),
        column: at.map(|p| p.1),
        field: path.join("."),
        message: message.to_string(),
    })
}

/// The loader's problems of the edited text that concern `path` (the key, what lies under it,
/// its section as a whole, or the file).
fn field_problems(file: &str, text: &str, path: &[&str]) -> Vec<SettingsProblem> {
    let mut all = Vec::new();
    crate::settings::clean(file, text, &mut all);
    let dotted = path.join(".");
    all.into_iter()
        .filter(|p| {
            p.field == "(file)"
                || p.field == dotted
                || p.field.starts_with(&format!("{dotted}."))
                || dotted.starts_with(&format!("{}.", p.field))
        })
        .collect()
}

/// Add or replace MCP server `name` at `level` with `entry` (the `mcpServers` format).
pub fn put_mcp_server(
    project_root: &Path,
    data_dir: &Path,
    level: Level,
    name: &str,
    entry: &Value,
) -> Result<Written, EditError> {
    let target = Target::new(ConfigFile::Mcp, level, project_root, data_dir);
    let (path, scope) = (target.path.clone(), target.scope());
    target.write(|text| {
        aibuddy_mcp::config::edit::put_server(&path, scope, text, name, entry).map_err(|errors| {
            EditError::Refused {
                problems: errors.iter().map(mcp_problem).collect(),
            }
        })
    })
}

/// Remove MCP server `name` at `level` (nothing happens when it is not there).
pub fn remove_mcp_server(
    project_root: &Path,
    data_dir: &Path,
    level: Level,
    name: &str,
) -> Result<Written, EditError> {
    let target = Target::new(ConfigFile::Mcp, level, project_root, data_dir);
    let path = target.path.clone();
    target.write(|text| {
        aibuddy_mcp::config::edit::remove_server(&path, text, name).map_err(|e| {
            EditError::Refused {
                problems: vec![mcp_problem(&e)],
            }
        })
    })
}

/// An `mcp.json` problem in the settings problem shape: the field is
/// `mcpServers.<server>.<field>` (or `(file)`).
pub fn mcp_problem(e: &aibuddy_mcp::ConfigError) -> SettingsProblem {
    let field = match (&e.server, &e.field) {
        (Some(s), Some(f)) => format!("mcpServers.{s}.{f}"),
        (Some(s), None) => format!("mcpServers.{s}"),
        (None, Some(f)) => f.clone(),
        (None, None) => "(file)".to_string(),
    };
    SettingsProblem {
        file: e.file.display().to_string(),
        line: e.line,
        column: e.column,
        field,
        message: e.message.clone(),
    }
}

/// One file to edit.
struct Target<'a> {
    file: ConfigFile,
    level: Level,
    path: PathBuf,
    project_root: &'a Path,
    data_dir: &'a Path,
}

impl<'a> Target<'a> {
    fn new(file: ConfigFile, level: Level, project_root: &'a Path, data_dir: &'a Path) -> Self {
        Target {
            file,
            level,
            path: path_of(file, level, project_root, data_dir),
            project_root,
            data_dir,
        }
    }

    fn scope(&self) -> ConfigScope {
        match self.level {
            Level::User => ConfigScope::User,
            Level::Project => ConfigScope::Project,
        }
    }

    fn io(&self, e: std::io::Error) -> EditError {
        EditError::Io {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    /// This file's content in a project snapshot.
    fn content<'c>(&self, config: &'c ProjectConfig) -> &'c FileContent {
        match self.file {
            ConfigFile::Settings => &config.snapshot.settings.content,
            ConfigFile::Mcp => &config.snapshot.mcp.content,
        }
    }

    /// The other trust-relevant file's content in a project snapshot.
    fn other<'c>(&self, config: &'c ProjectConfig) -> &'c FileContent {
        match self.file {
            ConfigFile::Settings => &config.snapshot.mcp.content,
            ConfigFile::Mcp => &config.snapshot.settings.content,
        }
    }

    /// The file's text now (`""` when absent).
    fn read_now(&self) -> Result<String, EditError> {
        match std::fs::read_to_string(&self.path) {
            Ok(t) => Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(e) => Err(self.io(e)),
        }
    }

    /// Read, edit with `make`, check nothing changed meanwhile, write atomically, keep trust.
    fn write(
        &self,
        make: impl FnOnce(&str) -> Result<String, EditError>,
    ) -> Result<Written, EditError> {
        let root = std::fs::canonicalize(self.project_root).map_err(|e| self.io(e))?;
        let before = match self.level {
            Level::User => None,
            Level::Project => Some(trust::load_project(&root, self.data_dir)),
        };
        let original = match &before {
            None => self.read_now()?,
            Some(config) => match self.content(config) {
                FileContent::Absent => String::new(),
                FileContent::Present(t) => t.clone(),
                FileContent::Refused(why) => {
                    return Err(EditError::Outside {
                        path: self.path.clone(),
                        reason: why.clone(),
                    });
                }
            },
        };
        let text = make(&original)?;
        if text == original {
            return Ok(Written {
                file: self.path.display().to_string(),
                changed: false,
                trust: TrustAfterWrite::NotConcerned,
            });
        }
        if before.is_some() {
            prepare_project_dir(&root, &self.path)?;
        } else if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        if self.read_now()? != original {
            return Err(EditError::Changed {
                path: self.path.clone(),
            });
        }
        write_atomic(&self.path, text.as_bytes()).map_err(|e| self.io(e))?;
        tracing::info!(file = %self.path.display(), "settings file written");
        let trust = match before {
            None => TrustAfterWrite::NotConcerned,
            Some(before) => self.keep_trust(&root, &before, &text),
        };
        Ok(Written {
            file: self.path.display().to_string(),
            changed: true,
            trust,
        })
    }

    /// Re-record trust at the new digest when the project was trusted right before and nothing
    /// but this write changed since (see the module documentation).
    fn keep_trust(&self, root: &Path, before: &ProjectConfig, written: &str) -> TrustAfterWrite {
        let after = trust::load_project(root, self.data_dir);
        if before.status.state != TrustState::Trusted {
            return TrustAfterWrite::NotRecorded {
                state: after.status.state,
            };
        }
        let pins_kept = before.status.grants.servers.iter().all(|b| {
            b.pins.iter().all(|pin| {
                after.status.grants.servers.iter().all(|a| {
                    a.pins
                        .iter()
                        .all(|p| p.path != pin.path || p.state == pin.state)
                })
            })
        });
        let hook_pins_kept = before.status.grants.hooks.iter().all(|b| {
            b.pins.iter().all(|pin| {
                after.status.grants.hooks.iter().all(|a| {
                    a.pins
                        .iter()
                        .all(|p| p.path != pin.path || p.state == pin.state)
                })
            })
        });
        let pins_kept = pins_kept && hook_pins_kept;
        let only_this = *self.content(&after) == FileContent::Present(written.to_string())
            && self.other(&after) == self.other(before)
            && pins_kept;
        if !only_this {
            tracing::warn!(project = %root.display(), "project files changed besides this write: trust not recorded again");
            return TrustAfterWrite::ChangedMeanwhile;
        }
        if after.status.state == TrustState::NotNeeded {
            return TrustAfterWrite::NotRecorded {
                state: TrustState::NotNeeded,
            };
        }
        match trust::record::store(self.data_dir, root, &after.status.digest) {
            Ok(()) => TrustAfterWrite::Kept {
                digest: after.status.digest,
            },
            Err(e) => {
                tracing::warn!("trust not recorded again after a settings write: {e}");
                TrustAfterWrite::ChangedMeanwhile
            }
        }
    }
}

/// `.aibuddy` exists (created if needed) and really lies inside the project root, and the file is
/// not a symlink (the loader refuses those; a rename would replace it, never write through it).
fn prepare_project_dir(root: &Path, path: &Path) -> Result<(), EditError> {
    let outside = |reason: String| EditError::Outside {
        path: path.to_path_buf(),
        reason,
    };
    let Some(dir) = path.parent() else {
        return Err(outside("no parent directory".into()));
    };
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(outside(e.to_string())),
    }
    let real = std::fs::canonicalize(dir).map_err(|e| outside(e.to_string()))?;
    if real != root.join(".aibuddy") {
        return Err(outside(format!(
            "`.aibuddy` resolves to `{}`, not inside the project",
            real.display()
        )));
    }
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.file_type().is_file()
    {
        return Err(outside("not a regular file".into()));
    }
    Ok(())
}

/// Durable atomic replace: a fresh temp file beside `path` (created exclusively, 0600), written
/// and fsynced, renamed over `path`, then the directory fsynced. Readers see the old or the new
/// file, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        ulid::Ulid::new()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests;
