//! The content-addressed object store: `objects/<2 hex>/<62 hex>`, named by the SHA-256 of the
//! content (SHA-NI where the CPU has it). An object is one header byte (`r` raw, `z` deflate)
//! then the bytes; content is compressed (deflate, fastest level) only when that makes it
//! smaller. Writes go to a temporary file in the same folder and are renamed into place, so an
//! object is either whole or absent; a write that finds the object present does nothing. Reads
//! check the hash, so a damaged object is an error, never wrong content.
//!
//! Durability: a new object's temporary file is fsynced before it is renamed into place, so the
//! name never points at a truncated object (an object already present is not rewritten, nor
//! synced again). The folders that gained a name are fsynced together, once per snapshot
//! ([`ObjectStore::sync_dirs`]), before the snapshot's id is committed anywhere. A damaged object
//! is still refused by the hash check on read, and a write that finds an empty file under its
//! name (what a crash of an older, unsynced write leaves) replaces it.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::{CheckpointError, Result};

/// Content smaller than this is stored raw (deflate's framing would eat the gain).
const COMPRESS_MIN: usize = 256;

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// The hex SHA-256 of `bytes`.
pub fn hash_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Whether `id` is a well-formed object id (64 lowercase hex digits).
pub fn is_object_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[derive(Debug)]
pub struct ObjectStore {
    dir: PathBuf,
    /// Folders that gained a name since the last [`ObjectStore::sync_dirs`].
    dirty: Mutex<BTreeSet<PathBuf>>,
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> Self {
        ObjectStore {
            dir,
            dirty: Mutex::new(BTreeSet::new()),
        }
    }

    /// Fsyncs every folder that gained an object (or a subfolder) since the last call, so the
    /// renames are durable; called once per snapshot, before its id is committed.
    pub fn sync_dirs(&self) -> Result<()> {
        let dirs = match self.dirty.lock() {
            Ok(mut d) => std::mem::take(&mut *d),
            Err(_) => return Ok(()),
        };
        // Deepest first: a new subfolder's entries, then the folder that names it.
        for dir in dirs.iter().rev() {
            sync_dir(dir).map_err(|e| CheckpointError::io("sync folder", dir, e))?;
        }
        Ok(())
    }

    fn mark_dirty(&self, dir: &Path) {
        if let Ok(mut d) = self.dirty.lock() {
            d.insert(dir.to_path_buf());
        }
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(&id[..2]).join(&id[2..])
    }

    /// Whether the object is present.
    pub fn contains(&self, id: &str) -> bool {
        is_object_id(id) && self.path_of(id).exists()
    }

    /// Stores `bytes` under its hash (nothing written when already present); returns the id.
    pub fn put(&self, bytes: &[u8]) -> Result<String> {
        let id = hash_bytes(bytes);
        self.put_with_id(&id, bytes)?;
        Ok(id)
    }

    /// Stores `bytes` already hashed to `id`.
    pub fn put_with_id(&self, id: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path_of(id);
        // Present and whole (the size is the cheap check; reads verify the hash): nothing to do.
        if let Ok(meta) = std::fs::metadata(&path)
            && meta.len() > 0
        {
            return Ok(());
        }
        let parent = path.parent().unwrap_or(&self.dir);
        if !parent.is_dir() {
            std::fs::create_dir_all(parent)
                .map_err(|e| CheckpointError::io("create folder", parent, e))?;
            self.mark_dirty(&self.dir);
        }
        let compressed = if bytes.len() >= COMPRESS_MIN {
            let mut enc = flate2::write::DeflateEncoder::new(
                Vec::with_capacity(bytes.len() / 2),
                flate2::Compression::fast(),
            );
            enc.write_all(bytes)
                .and_then(|_| enc.finish())
                .ok()
                .filter(|c| c.len() < bytes.len() - bytes.len() / 16)
        } else {
            None
        };
        let tmp = parent.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            TMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create_new(&tmp)?;
            match &compressed {
                Some(c) => {
                    f.write_all(b"z")?;
                    f.write_all(c)?;
                }
                None => {
                    f.write_all(b"r")?;
                    f.write_all(bytes)?;
                }
            }
            // Whole on disk before the name points at it.
            f.sync_data()
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(CheckpointError::io("write object", &path, e));
        }
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            CheckpointError::io("store object", &path, e)
        })?;
        self.mark_dirty(parent);
        Ok(())
    }

    /// The content of `id`, checked against its hash.
    pub fn get(&self, id: &str) -> Result<Vec<u8>> {
        if !is_object_id(id) {
            return Err(CheckpointError::MissingObject(id.to_string()));
        }
        let path = self.path_of(id);
        let stored = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => CheckpointError::MissingObject(id.to_string()),
            _ => CheckpointError::io("read object", &path, e),
        })?;
        let bytes = match stored.split_first() {
            Some((b'r', rest)) => rest.to_vec(),
            Some((b'z', rest)) => {
                let mut out = Vec::with_capacity(rest.len() * 3);
                flate2::read::DeflateDecoder::new(rest)
                    .read_to_end(&mut out)
                    .map_err(|_| CheckpointError::MissingObject(id.to_string()))?;
                out
            }
            _ => return Err(CheckpointError::MissingObject(id.to_string())),
        };
        if hash_bytes(&bytes) != id {
            return Err(CheckpointError::MissingObject(id.to_string()));
        }
        Ok(bytes)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Fsyncs a folder (its entries: names created or renamed in it).
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_raw_and_compressed_and_refuses_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(tmp.path().join("objects"));
        let small = store.put(b"hi").unwrap();
        let big_content = "line of text\n".repeat(1000);
        let big = store.put(big_content.as_bytes()).unwrap();
        assert_eq!(store.get(&small).unwrap(), b"hi");
        assert_eq!(store.get(&big).unwrap(), big_content.as_bytes());
        let on_disk = std::fs::read(store.path_of(&big)).unwrap();
        assert_eq!(on_disk[0], b'z');
        assert!(on_disk.len() < big_content.len() / 4);
        // A second put writes nothing new.
        assert_eq!(store.put(b"hi").unwrap(), small);
        std::fs::write(store.path_of(&small), b"rho").unwrap();
        assert!(matches!(
            store.get(&small),
            Err(CheckpointError::MissingObject(_))
        ));
        assert!(store.get("../../etc/passwd").is_err());
    }

    #[test]
    fn an_empty_object_left_by_a_crash_is_replaced_and_new_folders_are_synced() {
        let tmp = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(tmp.path().join("objects"));
        let id = store.put(b"content").unwrap();
        assert!(!store.dirty.lock().unwrap().is_empty());
        store.sync_dirs().unwrap();
        assert!(store.dirty.lock().unwrap().is_empty());
        // What an unsynced write cut short by a power loss leaves: the name, no content.
        std::fs::write(store.path_of(&id), b"").unwrap();
        assert!(store.get(&id).is_err());
        assert_eq!(store.put(b"content").unwrap(), id);
        assert_eq!(store.get(&id).unwrap(), b"content");
    }
}
