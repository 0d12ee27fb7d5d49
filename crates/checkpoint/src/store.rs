//! `CheckpointStore`: one project's checkpoints in the data directory,
//! `<data_dir>/checkpoints/<project key>/` with `objects/` (content and manifests) and `HEAD`
//! (the id of the newest manifest, the stat cache of the next snapshot, and when its walk
//! started). The project key is the
//! first 16 bytes of the SHA-256 of the canonical project path, in hex.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::{CheckpointError, Result};
use crate::manifest::Manifest;
use crate::objects::{ObjectStore, hash_bytes, is_object_id};
use crate::snapshot::{SnapshotOptions, SnapshotStats, take};

/// A snapshot taken: its id (the manifest's object id) and content.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub id: String,
    pub manifest: Manifest,
    pub stats: SnapshotStats,
}

#[derive(Debug)]
pub struct CheckpointStore {
    root: PathBuf,
    root_dir: Dir,
    dir: PathBuf,
    key: String,
    objects: ObjectStore,
    opts: SnapshotOptions,
    last: Mutex<Option<(String, Manifest)>>,
}

/// The key naming a project's checkpoint folder.
pub fn project_key(canonical_root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    hash_bytes(canonical_root.as_os_str().as_bytes())[..32].to_string()
}

impl CheckpointStore {
    /// Opens (creating) the checkpoints of `project_root` in `data_dir`.
    pub fn open(data_dir: &Path, project_root: &Path, mut opts: SnapshotOptions) -> Result<Self> {
        let root = std::fs::canonicalize(project_root)
            .map_err(|e| CheckpointError::io("open project", project_root, e))?;
        let root_dir = Dir::open_ambient_dir(&root, ambient_authority())
            .map_err(|e| CheckpointError::io("open project", &root, e))?;
        let key = project_key(&root);
        let dir = data_dir.join("checkpoints").join(&key);
        std::fs::create_dir_all(dir.join("objects"))
            .map_err(|e| CheckpointError::io("create", &dir, e))?;
        // The data directory inside the project is never walked (it holds the store itself).
        if let Ok(data) = std::fs::canonicalize(data_dir)
            && data.starts_with(&root)
        {
            opts.skip.push(data);
        }
        Ok(CheckpointStore {
            objects: ObjectStore::new(dir.join("objects")),
            root,
            root_dir,
            dir,
            key,
            opts,
            last: Mutex::new(None),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn root_dir(&self) -> &Dir {
        &self.root_dir
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    pub fn options(&self) -> &SnapshotOptions {
        &self.opts
    }

    /// The newest manifest, as the stat cache (this process's, else `HEAD`'s).
    fn cache(&self) -> Option<(String, Manifest)> {
        if let Some(last) = self.last.lock().ok().and_then(|l| l.clone()) {
            return Some(last);
        }
        let head = std::fs::read_to_string(self.dir.join("HEAD")).ok()?;
        let mut words = head.split_whitespace();
        let id = words.next()?;
        let taken_at_ns = words.next().and_then(|t| t.parse().ok()).unwrap_or(0);
        let mut m = self.manifest(id).ok()?;
        m.taken_at_ns = taken_at_ns;
        Some((id.to_string(), m))
    }

    /// Takes a snapshot: walks the tree, stores new content and the manifest; returns once
    /// every object it names is stored.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let previous = self.cache();
        let (manifest, stats) = take(
            &self.root,
            &self.root_dir,
            &self.objects,
            previous.as_ref().map(|(_, m)| m),
            &self.opts,
        )?;
        let bytes = manifest.encode();
        let id = hash_bytes(&bytes);
        self.objects.put_with_id(&id, &bytes)?;
        // `HEAD`: the newest manifest and when its walk started (for the racy rule).
        let head = self.dir.join("HEAD");
        let tmp = self.dir.join(format!("HEAD.tmp-{}", std::process::id()));
        if let Err(e) = std::fs::write(&tmp, format!("{id} {}\n", manifest.taken_at_ns))
            .and_then(|_| std::fs::rename(&tmp, &head))
        {
            // Only the cache of the next snapshot is lost: it reads more.
            tracing::debug!(error = %e, "checkpoint HEAD not updated");
        }
        if let Ok(mut last) = self.last.lock() {
            *last = Some((id.clone(), manifest.clone()));
        }
        Ok(Snapshot {
            id,
            manifest,
            stats,
        })
    }

    /// A stored manifest by id.
    pub fn manifest(&self, id: &str) -> Result<Manifest> {
        if !is_object_id(id) {
            return Err(CheckpointError::BadManifest {
                id: id.to_string(),
                reason: "not a snapshot id".into(),
            });
        }
        if let Some((last_id, m)) = self.last.lock().ok().and_then(|l| l.clone())
            && last_id == id
        {
            return Ok(m);
        }
        let bytes = self.objects.get(id)?;
        Manifest::decode(id, &bytes)
    }
}
