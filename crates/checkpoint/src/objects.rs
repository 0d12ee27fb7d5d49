//! The content-addressed object store: `objects/<2 hex>/<62 hex>`, named by the SHA-256 of the
//! content (SHA-NI where the CPU has it). An object is one header byte (`r` raw, `z` deflate)
//! then the bytes; content is compressed (deflate, fastest level) only when that makes it
//! smaller. Writes go to a temporary file in the same folder and are renamed into place, so an
//! object is either whole or absent; a write that finds the object present does nothing. Reads
//! check the hash, so a damaged object is an error, never wrong content.
//!
//! Objects are not fsynced: they survive the process being killed (the page cache outlives
//! it), which is what a rewind after `kill -9` needs; a power loss may lose the newest ones.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
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

#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> Self {
        ObjectStore { dir }
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
        if path.exists() {
            return Ok(());
        }
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)
            .map_err(|e| CheckpointError::io("create folder", parent, e))?;
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
            Ok(())
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(CheckpointError::io("write object", &path, e));
        }
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            CheckpointError::io("store object", &path, e)
        })
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
}
