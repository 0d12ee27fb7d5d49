//! The recent-projects list: the folders the person opened (from the folder dialog or the command
//! line), most recent first, capped at [`MAX_RECENT`], kept as JSON in the data directory
//! ([`RECENT_FILE`]). Each entry also remembers, for that project, the trust digest the person
//! declined (so the dialog does not ask again for the same content) and the provider entry and
//! model last chosen in the picker.
//!
//! The list is the only source of paths the UI may send back (`open_recent`): a path not in it is
//! refused. The decisions here are pure ([`touch`], [`forget`], [`views`]); [`load`] and [`save`]
//! do the file I/O.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The file in the data directory.
pub const RECENT_FILE: &str = "desktop-recent-projects.json";
/// How many projects the list keeps.
pub const MAX_RECENT: usize = 20;

/// One remembered project (the file's shape).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentEntry {
    /// Canonical path, as opened.
    pub path: String,
    pub opened_at_ms: u64,
    /// The trust digest the person chose not to trust (not asked again while it is the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declined_digest: Option<String>,
    /// The provider entry last chosen in the picker for this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model override last chosen in the picker for this project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The file: a version and the entries, most recent first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentFile {
    #[serde(default)]
    pub version: u32,
    #[serde(default)]
    pub projects: Vec<RecentEntry>,
}

/// One recent project as the welcome view and the project menu show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct RecentProject {
    /// The path exactly as stored: the key `open_recent` and `forget_recent` take back.
    pub path: String,
    /// The path for display, control and bidirectional characters escaped.
    pub display: String,
    /// The folder's name (escaped), for the list's first line.
    pub name: String,
    /// The folder no longer exists or is not a directory: shown as missing, removable.
    pub missing: bool,
    /// It is the project open now.
    pub current: bool,
    pub opened_at_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RecentError {
    #[error("Execution: the recent-projects list `{path}` cannot be written: {reason}")]
    Write { path: PathBuf, reason: String },
}

/// Puts `path` first (opened at `now_ms`), keeping what was remembered for it, and caps the list.
pub fn touch(mut file: RecentFile, path: &str, now_ms: u64) -> RecentFile {
    let mut entry = match file.projects.iter().position(|e| e.path == path) {
        Some(at) => file.projects.remove(at),
        None => RecentEntry {
            path: path.to_string(),
            ..RecentEntry::default()
        },
    };
    entry.opened_at_ms = now_ms;
    file.projects.insert(0, entry);
    file.projects.truncate(MAX_RECENT);
    file.version = 1;
    file
}

/// Removes `path`. False when it was not in the list.
pub fn forget(file: &mut RecentFile, path: &str) -> bool {
    let before = file.projects.len();
    file.projects.retain(|e| e.path != path);
    file.projects.len() != before
}

/// The entry for `path`, if listed.
pub fn entry<'a>(file: &'a RecentFile, path: &str) -> Option<&'a RecentEntry> {
    file.projects.iter().find(|e| e.path == path)
}

/// Updates the entry for `path` (added first if missing) with `edit`.
pub fn update(
    mut file: RecentFile,
    path: &str,
    now_ms: u64,
    edit: impl FnOnce(&mut RecentEntry),
) -> RecentFile {
    if entry(&file, path).is_none() {
        file = touch(file, path, now_ms);
    }
    if let Some(e) = file.projects.iter_mut().find(|e| e.path == path) {
        edit(e);
    }
    file
}

/// The list as shown: `is_dir` says whether a path is still a directory; `current` is the open
/// project's path.
pub fn views(
    file: &RecentFile,
    current: Option<&str>,
    is_dir: impl Fn(&str) -> bool,
) -> Vec<RecentProject> {
    use aibuddy_common::term::line;
    file.projects
        .iter()
        .map(|e| {
            let name = Path::new(&e.path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| e.path.clone());
            RecentProject {
                path: e.path.clone(),
                display: line(&e.path).into_owned(),
                name: line(&name).into_owned(),
                missing: !is_dir(&e.path),
                current: current == Some(e.path.as_str()),
                opened_at_ms: e.opened_at_ms,
            }
        })
        .collect()
}

/// Reads the list. A missing file is an empty list; an unreadable or malformed one is too (with a
/// warning in the log): the list is a convenience, never a reason not to start.
pub fn load(data_dir: &Path) -> RecentFile {
    let path = data_dir.join(RECENT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return RecentFile::default(),
        Err(e) => {
            tracing::warn!(file = %path.display(), "recent projects unreadable: {e}");
            return RecentFile::default();
        }
    };
    serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::warn!(file = %path.display(), "recent projects malformed, starting empty: {e}");
        RecentFile::default()
    })
}

/// Writes the list (to a temporary file renamed over the old one, so a crash never leaves half a
/// file).
pub fn save(data_dir: &Path, file: &RecentFile) -> Result<(), RecentError> {
    let path = data_dir.join(RECENT_FILE);
    let fail = |reason: String| RecentError::Write {
        path: path.clone(),
        reason,
    };
    let text = serde_json::to_string_pretty(file).map_err(|e| fail(e.to_string()))?;
    std::fs::create_dir_all(data_dir).map_err(|e| fail(e.to_string()))?;
    let tmp = data_dir.join(format!("{RECENT_FILE}.tmp"));
    std::fs::write(&tmp, text).map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, &path).map_err(|e| fail(e.to_string()))
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_recent_first_capped_and_remembering() {
        let mut file = RecentFile::default();
        for i in 0..(MAX_RECENT + 3) {
            file = touch(file, &format!("/p{i}"), i as u64);
        }
        assert_eq!(file.projects.len(), MAX_RECENT);
        assert_eq!(file.projects[0].path, format!("/p{}", MAX_RECENT + 2));
        file = update(file, "/p5", 100, |e| e.provider = Some("local".into()));
        let reopened = touch(file, "/p5", 200);
        assert_eq!(reopened.projects[0].path, "/p5");
        assert_eq!(reopened.projects[0].opened_at_ms, 200);
        assert_eq!(reopened.projects[0].provider.as_deref(), Some("local"));
        assert_eq!(reopened.projects.len(), MAX_RECENT);
    }

    #[test]
    fn views_flag_missing_and_current_and_escape_display() {
        let file = touch(
            touch(RecentFile::default(), "/gone", 1),
            "/a/evil\u{1b}[2Kx",
            2,
        );
        let v = views(&file, Some("/gone"), |p| p != "/gone");
        assert_eq!(v[0].path, "/a/evil\u{1b}[2Kx");
        assert!(!v[0].display.contains('\u{1b}') && !v[0].name.contains('\u{1b}'));
        assert!(!v[0].missing && !v[0].current);
        assert!(v[1].missing && v[1].current);
        let mut file = file;
        assert!(forget(&mut file, "/gone"));
        assert!(!forget(&mut file, "/gone"));
    }

    #[test]
    fn load_survives_missing_and_malformed_files_and_save_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()), RecentFile::default());
        std::fs::write(dir.path().join(RECENT_FILE), "{not json").unwrap();
        assert_eq!(load(dir.path()), RecentFile::default());
        let file = touch(RecentFile::default(), "/x", 5);
        save(dir.path(), &file).unwrap();
        assert_eq!(load(dir.path()), file);
    }
}
