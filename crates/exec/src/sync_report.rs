//! What a container sandbox's `project: "sync"` did around one command (`aibuddy-container`'s
//! `sync`): the project copied into the container before it, the container's changes brought
//! back after it, and every change that was not brought back, with why.

use serde::{Deserialize, Serialize};

/// Notes kept at most per list of a [`SyncReport`] (the rest are counted in `more_notes`).
pub const SYNC_NOTES_CAP: usize = 50;

/// One path of the project the sync did not carry over, and why (project-relative, `/`-joined,
/// lossy UTF-8: untrusted text, shown through the terminal-safe line helper).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncNote {
    pub path: String,
    pub why: String,
}

/// The sync of one command (counts of paths; files, folders and links alike).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Paths copied into the container before the command (changed here since the last sync).
    pub copied_in: u64,
    /// Paths removed in the container before the command (deleted here since the last sync).
    pub removed_in: u64,
    /// Paths the command created or changed that were written into the project.
    pub brought_back: u64,
    /// Bytes of the files brought back.
    pub brought_back_bytes: u64,
    /// Paths the command deleted that were removed from the project.
    pub deleted: u64,
    /// Changes refused for safety (a protected path, a name or link leading out of the project,
    /// a symlink on the way, a new git directory...): the project keeps its version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<SyncNote>,
    /// Changes not carried over for another reason (over a size bound, changed here meanwhile,
    /// not a file, folder or link...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SyncNote>,
    /// Notes beyond [`SYNC_NOTES_CAP`] per list, counted only.
    #[serde(default)]
    pub more_notes: u64,
    /// Why the container's tree was not read to its end (the engine, a bound, a stop): what was
    /// read was brought back, but no deletion was applied. `None`: read completely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// The command ran in the read-only mode: nothing was brought back, whatever it changed in
    /// the container.
    #[serde(default)]
    pub read_only: bool,
    /// The container's tree was listed by its own `find` and only the changed files were read
    /// (else the whole tree was read back).
    #[serde(default)]
    pub listed: bool,
}

impl SyncReport {
    pub fn refuse(&mut self, path: &str, why: impl Into<String>) {
        if self.refused.len() < SYNC_NOTES_CAP {
            self.refused.push(SyncNote {
                path: path.to_string(),
                why: why.into(),
            });
        } else {
            self.more_notes += 1;
        }
    }

    pub fn skip(&mut self, path: &str, why: impl Into<String>) {
        if self.skipped.len() < SYNC_NOTES_CAP {
            self.skipped.push(SyncNote {
                path: path.to_string(),
                why: why.into(),
            });
        } else {
            self.more_notes += 1;
        }
    }

    /// One line for the model and the card: the counts, then what was not brought back.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "project sync: {} copied in, {} removed in the container before; {} brought back ({} bytes), {} deleted here after",
            self.copied_in,
            self.removed_in,
            self.brought_back,
            self.brought_back_bytes,
            self.deleted
        );
        if self.read_only {
            s.push_str(
                "; read-only: nothing the command changed in the container was brought back",
            );
        }
        let list = |notes: &[SyncNote]| {
            notes
                .iter()
                .take(10)
                .map(|n| format!("{} ({})", n.path, n.why))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.refused.is_empty() {
            s.push_str(&format!(
                "; REFUSED {}: {}",
                self.refused.len(),
                list(&self.refused)
            ));
        }
        if !self.skipped.is_empty() {
            s.push_str(&format!(
                "; not brought back {}: {}",
                self.skipped.len(),
                list(&self.skipped)
            ));
        }
        if self.more_notes > 0 {
            s.push_str(&format!("; {} more not listed", self.more_notes));
        }
        if let Some(why) = &self.incomplete {
            s.push_str(&format!(
                "; INCOMPLETE ({why}): deletions in the container were not applied"
            ));
        }
        s
    }
}
