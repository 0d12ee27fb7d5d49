//! `CheckpointStore`: one project's checkpoints in the data directory,
//! `<data_dir>/checkpoints/<project key>/` with `objects/` (content and manifests), `HEAD` (the
//! id of the newest manifest and when its walk started: the stat cache of a process that opens
//! the store afresh) and `calls.lock` (the project's call lock, `lock`). The project key is the
//! first 16 bytes of the SHA-256 of the canonical project path, in hex.
//!
//! The stat cache is kept in memory between snapshots (`statcache`); snapshots of one store run
//! one at a time (they share it). A snapshot's objects and manifest are durable (fsynced, their
//! folders too) before it returns, so its id may be committed at once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::{CheckpointError, Result};
use crate::lock::CallLock;
use crate::manifest::Manifest;
use crate::objects::{ObjectStore, hash_bytes, is_object_id};
use crate::snapshot::{SnapshotOptions, SnapshotStats, Taken, take};
use crate::statcache::StatCache;

/// A snapshot taken: its id (the manifest's object id) and content.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub id: String,
    pub manifest: Manifest,
    pub stats: SnapshotStats,
}

/// A snapshot taken, sharing its manifest with the stat cache (no copy).
#[derive(Debug, Clone)]
pub struct SharedSnapshot {
    pub id: String,
    pub manifest: Arc<Manifest>,
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
    /// The stat cache (the newest snapshot); held for the whole of a snapshot.
    cache: Mutex<Option<StatCache>>,
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
            cache: Mutex::new(None),
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

    /// The stat cache of a store opened afresh: `HEAD`'s manifest.
    fn load_cache(&self) -> Option<StatCache> {
        let head = std::fs::read_to_string(self.dir.join("HEAD")).ok()?;
        let mut words = head.split_whitespace();
        let id = words.next()?;
        let taken_at_ns = words.next().and_then(|t| t.parse().ok()).unwrap_or(0);
        let bytes = self.objects.get(id).ok()?;
        let m = Manifest::decode(id, &bytes).ok()?;
        Some(StatCache::new(id.to_string(), Arc::new(m), taken_at_ns))
    }

    /// Takes a snapshot: walks the tree, stores new content and the manifest; returns once
    /// every object it names is durable.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let s = self.snapshot_shared()?;
        Ok(Snapshot {
            id: s.id,
            manifest: Manifest::clone(&s.manifest),
            stats: s.stats,
        })
    }

    /// [`CheckpointStore::snapshot`], sharing the manifest with the stat cache.
    pub fn snapshot_shared(&self) -> Result<SharedSnapshot> {
        let mut slot = match self.cache.lock() {
            Ok(g) => g,
            Err(poisoned) => {
                let mut g = poisoned.into_inner();
                *g = None;
                g
            }
        };
        let cache = slot.take().or_else(|| self.load_cache());
        let (taken, taken_at_ns, mut stats, dirs) = match take(
            &self.root,
            &self.root_dir,
            &self.objects,
            cache.as_ref(),
            &self.opts,
        ) {
            Ok(t) => t,
            Err(e) => {
                *slot = cache;
                return Err(e);
            }
        };
        let next = match (taken, cache) {
            (Taken::Unchanged, Some(mut c)) => {
                // Every racy entry was read again: this walk is what the cache now rests on.
                c.taken_at_ns = taken_at_ns;
                stats.unchanged = true;
                if stats.read > 0 {
                    // So that a process opening the store afresh need not read them again.
                    self.write_head(&c.id, taken_at_ns);
                }
                c
            }
            (Taken::Unchanged, None) => {
                return Err(CheckpointError::Walk("no stat cache to compare".into()));
            }
            (
                Taken::Changed {
                    manifest,
                    changed,
                    removed,
                },
                cache,
            ) => {
                let bytes = manifest.encode();
                let id = hash_bytes(&bytes);
                let stored = self
                    .objects
                    .put_with_id(&id, &bytes)
                    .and_then(|()| self.objects.sync_dirs());
                if let Err(e) = stored {
                    *slot = cache;
                    return Err(e);
                }
                self.write_head(&id, taken_at_ns);
                let manifest = Arc::new(manifest);
                match cache {
                    Some(c) => {
                        let changed: Vec<&Path> = changed.iter().map(PathBuf::as_path).collect();
                        let removed: Vec<&Path> = removed.iter().map(PathBuf::as_path).collect();
                        c.updated(id, manifest, taken_at_ns, &changed, &removed)
                    }
                    None => StatCache::new(id, manifest, taken_at_ns),
                }
            }
        };
        let mut next = next;
        next.dirs = dirs;
        if next.wasteful() {
            // Mostly slots of paths gone (a long session of files made and removed): rebuilt
            // from the manifest, without the listings (they name the old slots).
            next = StatCache::new(next.id, next.manifest, next.taken_at_ns);
        }
        let snap = SharedSnapshot {
            id: next.id.clone(),
            manifest: next.manifest.clone(),
            stats,
        };
        *slot = Some(next);
        Ok(snap)
    }

    /// `HEAD`: the newest manifest and when its walk started (for the racy rule), replaced
    /// atomically. Only the stat cache of a later process depends on it: a failure (or a HEAD
    /// lost or emptied by a crash of the machine) costs reads, never a wrong snapshot, so it is
    /// not fsynced.
    fn write_head(&self, id: &str, taken_at_ns: i64) {
        use std::io::Write;
        let head = self.dir.join("HEAD");
        let tmp = self.dir.join(format!("HEAD.tmp-{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(format!("{id} {taken_at_ns}\n").as_bytes())?;
            std::fs::rename(&tmp, &head)
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            tracing::debug!(error = %e, "checkpoint HEAD not updated");
        }
    }

    /// Blocks until no other mutating call of this project runs (in any process), and holds
    /// the project's call lock until the returned guard is dropped.
    pub fn lock_calls(&self) -> Result<CallLock> {
        CallLock::acquire(&self.dir)
    }

    /// A stored manifest by id.
    pub fn manifest(&self, id: &str) -> Result<Manifest> {
        if !is_object_id(id) {
            return Err(CheckpointError::BadManifest {
                id: id.to_string(),
                reason: "not a snapshot id".into(),
            });
        }
        if let Some(m) = self.cache.lock().ok().and_then(|c| {
            c.as_ref()
                .filter(|c| c.id == id)
                .map(|c| c.manifest.clone())
        }) {
            return Ok(Manifest::clone(&m));
        }
        let bytes = self.objects.get(id)?;
        Manifest::decode(id, &bytes)
    }
}
