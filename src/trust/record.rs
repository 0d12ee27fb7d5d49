//! The person's trust decisions: `trusted-projects.json` in the user data directory, keyed by the
//! canonical project path, holding the digest of the trust-relevant files that was approved.
//! Written atomically (a 0600 temporary file in the same directory, then rename) under an exclusive
//! lock on `trusted-projects.lock`, so two grants at once cannot lose each other's record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TrustError;

pub const RECORDS_FILE: &str = "trusted-projects.json";
const LOCK_FILE: &str = "trusted-projects.lock";
const VERSION: u32 = 1;

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustRecord {
    /// SHA-256 (hex) of the trust-relevant files when the person approved them.
    pub digest: String,
    /// Seconds since the Unix epoch.
    pub granted_at: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct RecordsFile {
    version: u32,
    projects: BTreeMap<String, TrustRecord>,
}

pub fn records_path(data_dir: &Path) -> PathBuf {
    data_dir.join(RECORDS_FILE)
}

fn read_all(data_dir: &Path) -> Result<RecordsFile, TrustError> {
    let path = records_path(data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RecordsFile {
                version: VERSION,
                projects: BTreeMap::new(),
            });
        }
        Err(e) => {
            return Err(TrustError::Records {
                path,
                reason: e.to_string(),
            });
        }
    };
    serde_json::from_str(&text).map_err(|e| TrustError::Records {
        path,
        reason: format!("not a valid trust record file ({e}); remove it to start over"),
    })
}

pub use crate::user_file::record_key;

/// The record of `project` (a canonical path), if any.
pub fn lookup(data_dir: &Path, project: &Path) -> Result<Option<TrustRecord>, TrustError> {
    Ok(read_all(data_dir)?
        .projects
        .get(&record_key(project))
        .cloned())
}

fn write_atomically(data_dir: &Path, records: &RecordsFile) -> Result<(), TrustError> {
    let path = records_path(data_dir);
    let err = |reason: String| TrustError::Records {
        path: path.clone(),
        reason,
    };
    let text = serde_json::to_string_pretty(records).map_err(|e| err(e.to_string()))?;
    crate::user_file::write_private_atomically(&path, text.as_bytes())
        .map_err(|e| err(e.to_string()))
}

/// Read, change and write the records under the lock.
fn update(
    data_dir: &Path,
    change: impl FnOnce(&mut BTreeMap<String, TrustRecord>),
) -> Result<(), TrustError> {
    std::fs::create_dir_all(data_dir).map_err(|e| TrustError::Records {
        path: records_path(data_dir),
        reason: e.to_string(),
    })?;
    let lock_path = data_dir.join(LOCK_FILE);
    let lock =
        crate::user_file::FileLock::acquire(&lock_path).map_err(|e| TrustError::Records {
            path: lock_path.clone(),
            reason: e.to_string(),
        })?;
    let mut records = read_all(data_dir)?;
    records.version = VERSION;
    change(&mut records.projects);
    let out = write_atomically(data_dir, &records);
    drop(lock);
    out
}

/// Record `digest` as approved for `project`.
pub fn store(data_dir: &Path, project: &Path, digest: &str) -> Result<(), TrustError> {
    let granted_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let key = record_key(project);
    update(data_dir, |p| {
        p.insert(
            key,
            TrustRecord {
                digest: digest.to_string(),
                granted_at,
            },
        );
    })
}

/// Forget `project`. Returns whether there was a record.
pub fn remove(data_dir: &Path, project: &Path) -> Result<bool, TrustError> {
    let key = record_key(project);
    let mut had = false;
    update(data_dir, |p| had = p.remove(&key).is_some())?;
    Ok(had)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn store_lookup_remove_and_mode_0600() {
        let d = tempfile::tempdir().unwrap();
        let p = Path::new("/some/project");
        assert_eq!(lookup(d.path(), p).unwrap(), None);
        store(d.path(), p, "abc").unwrap();
        store(d.path(), Path::new("/other"), "def").unwrap();
        assert_eq!(lookup(d.path(), p).unwrap().unwrap().digest, "abc");
        let mode = std::fs::metadata(records_path(d.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(remove(d.path(), p).unwrap());
        assert!(!remove(d.path(), p).unwrap());
        assert_eq!(lookup(d.path(), p).unwrap(), None);
        assert_eq!(
            lookup(d.path(), Path::new("/other"))
                .unwrap()
                .unwrap()
                .digest,
            "def"
        );
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn non_utf8_paths_that_look_alike_have_distinct_keys() {
        use std::os::unix::ffi::OsStrExt;
        let a = Path::new(std::ffi::OsStr::from_bytes(b"/p/a\xff"));
        let b = Path::new(std::ffi::OsStr::from_bytes(b"/p/a\xfe"));
        assert_eq!(a.to_string_lossy(), b.to_string_lossy());
        assert_ne!(record_key(a), record_key(b));
        assert_eq!(record_key(Path::new("/p/a")), "/p/a");
        let d = tempfile::tempdir().unwrap();
        store(d.path(), a, "x").unwrap();
        assert!(lookup(d.path(), a).unwrap().is_some());
        assert_eq!(lookup(d.path(), b).unwrap(), None);
    }

    #[test]
    fn a_corrupt_record_file_is_an_error_not_trust() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(records_path(d.path()), "{ nope").unwrap();
        assert!(matches!(
            lookup(d.path(), Path::new("/p")),
            Err(TrustError::Records { .. })
        ));
        assert!(
            store(d.path(), Path::new("/p"), "x").is_err(),
            "never overwritten blindly"
        );
    }

    #[test]
    fn concurrent_grants_keep_every_record() {
        let d = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let dir = d.path().to_path_buf();
                std::thread::spawn(move || {
                    store(&dir, Path::new(&format!("/p{i}")), &format!("d{i}")).unwrap()
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        for i in 0..8 {
            assert!(
                lookup(d.path(), Path::new(&format!("/p{i}")))
                    .unwrap()
                    .is_some()
            );
        }
    }
}
