//! Hosts the person allowed "for this project" at a network question: one file per project at
//! the user level, `<data_dir>/network/<sha256(project root)>.json` (hex of the SHA-256 of the
//! canonical root path's bytes), never in the project's files (the data directory is hidden from
//! commands, so a command cannot add to it). Later calls in the project treat these hosts as
//! allowed (exact host and port; the `exec.network.deny` list still wins, and `exec.network: false`
//! still means no egress at all).
//!
//! ```json
//! {"project": "/home/me/proj", "allow": [{"host": "example.com", "port": 443}]}
//! ```
//!
//! A file that does not parse, or names another project, allows nothing (logged).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One allowed host and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    project: PathBuf,
    #[serde(default)]
    allow: Vec<HostPort>,
}

/// The record file of `project_root`.
pub fn record_path(data_dir: &Path, project_root: &Path) -> PathBuf {
    let digest = Sha256::digest(project_root.as_os_str().as_bytes());
    data_dir
        .join("network")
        .join(format!("{}.json", hex::encode(digest)))
}

fn read(data_dir: &Path, project_root: &Path) -> Option<Record> {
    let path = record_path(data_dir, project_root);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "project network record unreadable");
            return None;
        }
    };
    match serde_json::from_str::<Record>(&text) {
        Ok(r) if r.project == project_root => Some(r),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "project network record names another project; ignored");
            None
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "project network record does not parse; ignored");
            None
        }
    }
}

/// The hosts allowed for this project.
pub fn load(data_dir: &Path, project_root: &Path) -> Vec<HostPort> {
    read(data_dir, project_root)
        .map(|r| r.allow)
        .unwrap_or_default()
}

/// Adds `host:port` to the project's record (atomically: a temporary file renamed over it).
pub fn add(data_dir: &Path, project_root: &Path, entry: HostPort) -> std::io::Result<()> {
    let path = record_path(data_dir, project_root);
    let dir = path.parent().unwrap_or(data_dir);
    std::fs::create_dir_all(dir)?;
    // Read, change and write under the lock: a command asking about two hosts at once, both
    // allowed for the project, keeps both.
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("record");
    let _lock = crate::user_file::FileLock::acquire(&dir.join(format!(".{name}.lock")))?;
    let mut record = read(data_dir, project_root).unwrap_or_else(|| Record {
        project: project_root.to_path_buf(),
        allow: Vec::new(),
    });
    if !record.allow.contains(&entry) {
        record.allow.push(entry);
    }
    let text = serde_json::to_string_pretty(&record).map_err(std::io::Error::other)?;
    crate::user_file::write_private_atomically(&path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_hosts_are_read_back_for_the_same_project_only() {
        let data = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/p/a"), Path::new("/p/b"));
        assert!(load(data.path(), a).is_empty());
        let h = |host: &str, port| HostPort {
            host: host.into(),
            port,
        };
        add(data.path(), a, h("example.com", 443)).unwrap();
        add(data.path(), a, h("::1", 8080)).unwrap();
        add(data.path(), a, h("example.com", 443)).unwrap();
        assert_eq!(
            load(data.path(), a),
            vec![h("example.com", 443), h("::1", 8080)]
        );
        assert!(load(data.path(), b).is_empty());
        let file = record_path(data.path(), a);
        assert_eq!(file.parent().unwrap(), data.path().join("network"));
        assert_eq!(
            file.file_name().unwrap().to_str().unwrap(),
            format!("{}.json", hex::encode(Sha256::digest(b"/p/a")))
        );
        // A record copied to another project's name allows nothing there.
        std::fs::copy(&file, record_path(data.path(), b)).unwrap();
        assert!(load(data.path(), b).is_empty());
        std::fs::write(&file, "not json").unwrap();
        assert!(load(data.path(), a).is_empty());
        assert_eq!(h("::1", 80).to_string(), "[::1]:80");
    }
}
