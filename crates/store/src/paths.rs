//! The store's files inside the data directory, and the rule for raw outputs.
//!
//! ```text
//! <data>/aibuddy.db                                  the database (+ -wal, -shm)
//! <data>/blobs/<tool_call_id>.bin                    raw output larger than INLINE_LIMIT (64 KiB)
//! <data>/spool/<tool_call_id>.out                    output spooled while a call runs; becomes the
//!                                                    partial raw output if the process dies
//! <data>/compacted_outputs/<run_id>/<tool_call_id>.json  raw input+output offloaded by precompaction
//! <data>/live/<instance>.lock                        held (flock) by each live process using the store
//! ```
//! Raw output of at most `INLINE_LIMIT` bytes is stored inline in the row; above that it is written
//! to `blobs/` (fsynced, renamed into place) before the row referencing it is committed.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::ids::validate_id;

/// Raw outputs up to this many bytes are stored inline in `tool_calls.raw_output`.
pub const INLINE_LIMIT: usize = 64 * 1024;

pub const DB_FILE: &str = "aibuddy.db";

const SPOOL_SUFFIX: &str = ".out";

#[derive(Debug, Clone)]
pub struct DataPaths {
    root: PathBuf,
}

impl DataPaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DataPaths { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn db(&self) -> PathBuf {
        self.root.join(DB_FILE)
    }

    pub fn blobs_dir(&self) -> PathBuf {
        self.root.join("blobs")
    }

    pub fn spool_dir(&self) -> PathBuf {
        self.root.join("spool")
    }

    pub fn live_dir(&self) -> PathBuf {
        self.root.join("live")
    }

    /// `blobs/<id>.bin`, relative to the data directory (the form stored in rows).
    pub fn blob_rel(id: &str) -> Result<String> {
        validate_id(id)?;
        Ok(format!("blobs/{id}.bin"))
    }

    /// `spool/<id>.out`: the one mapping from a call id to its spool file. Every writer of a spool
    /// (execute), the finish that consumes it and the recovery that attaches it after a crash ask
    /// here; an id is never rewritten (agent-run ids contain `:`, `<run_id>:<provider id>`).
    pub fn spool_file(&self, id: &str) -> Result<PathBuf> {
        validate_id(id)?;
        Ok(self.spool_dir().join(format!("{id}{SPOOL_SUFFIX}")))
    }

    /// The call id of a file name in `spool/` (the inverse of [`Self::spool_file`]); `None` for a
    /// name no call id maps to.
    pub fn spool_id(file_name: &str) -> Option<&str> {
        file_name
            .strip_suffix(SPOOL_SUFFIX)
            .filter(|id| validate_id(id).is_ok())
    }

    /// `compacted_outputs/<run_id>/<id>.json`, relative to the data directory.
    pub fn compacted_rel(run_id: &str, id: &str) -> Result<String> {
        validate_id(run_id)?;
        validate_id(id)?;
        Ok(format!("compacted_outputs/{run_id}/{id}.json"))
    }

    /// Absolute path of a relative path stored in a row. Refuses anything that is not one of the
    /// store's own relative forms (a corrupted row must not make us read outside the data dir).
    pub fn resolve(&self, rel: &str) -> Option<PathBuf> {
        let p = Path::new(rel);
        let ok = p.is_relative()
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
            && (rel.starts_with("blobs/") || rel.starts_with("compacted_outputs/"));
        ok.then(|| self.root.join(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_paths_outside_the_store_folders() {
        let p = DataPaths::new("/data");
        assert_eq!(
            p.resolve("blobs/a.bin"),
            Some(PathBuf::from("/data/blobs/a.bin"))
        );
        for bad in [
            "/etc/passwd",
            "blobs/../../x",
            "spool/a.out",
            "../blobs/a",
            "compacted_outputs/../x",
        ] {
            assert_eq!(p.resolve(bad), None, "{bad}");
        }
    }

    #[test]
    fn spool_files_keep_the_call_id_and_map_back_to_it() {
        let p = DataPaths::new("/data");
        for id in ["call_1", "01JRUN:call_1", "01JRUN:toolu_01.x"] {
            let file = p.spool_file(id).unwrap();
            assert_eq!(file.parent().unwrap(), Path::new("/data/spool"));
            let name = file.file_name().unwrap().to_str().unwrap();
            assert_eq!(name, format!("{id}.out"));
            assert_eq!(DataPaths::spool_id(name), Some(id));
        }
        assert!(p.spool_file("a/b").is_err());
        assert_eq!(DataPaths::spool_id("x.tmp"), None);
        assert_eq!(DataPaths::spool_id(".out"), None);
    }

    #[test]
    fn relative_forms_validate_ids() {
        assert_eq!(DataPaths::blob_rel("abc").unwrap(), "blobs/abc.bin");
        assert!(DataPaths::blob_rel("../x").is_err());
        assert_eq!(
            DataPaths::compacted_rel("run1", "call_1").unwrap(),
            "compacted_outputs/run1/call_1.json"
        );
        assert!(DataPaths::compacted_rel("a/b", "c").is_err());
    }
}
