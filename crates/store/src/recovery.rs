//! Start-up recovery: calls left `running` by a dead process become `interrupted`, and its
//! precompactions left `pending` become `failed` (their original projection stays).
//!
//! Each live process holds an exclusive `flock` on `live/<instance>.lock` for as long as its
//! `Store` exists, and stamps its calls with that instance id (`tool_calls.owner`). At open, a
//! running call whose owner's lock can be taken (or whose lock file is gone) belongs to a dead
//! process; calls of a live process (the desktop app while the CLI runs) are left alone.
//! The kernel drops a flock when its process dies, including by `kill -9`.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::path::Path;

use rusqlite::Connection;

use crate::error::{Result, StoreError};
use crate::files;
use crate::ids::{now_ms, validate_id};
use crate::paths::{DataPaths, INLINE_LIMIT};
use crate::tables::runs;
use crate::tables::tool_calls::{self, OutputRef};

/// Creates and locks this process's `live/<instance>.lock`.
pub fn hold_instance_lock(paths: &DataPaths, instance: &str) -> Result<File> {
    let dir = paths.live_dir();
    fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let path = dir.join(format!("{instance}.lock"));
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io(&path, e))?;
    f.try_lock().map_err(|e| {
        StoreError::io(
            &path,
            match e {
                TryLockError::Error(e) => e,
                TryLockError::WouldBlock => std::io::Error::other("instance lock already held"),
            },
        )
    })?;
    Ok(f)
}

/// True when the instance's lock file is absent or can be locked (its process is gone).
/// Removes the stale lock file of a dead instance.
pub(crate) fn owner_is_dead(paths: &DataPaths, owner: Option<&str>) -> bool {
    let Some(owner) = owner else { return true };
    if validate_id(owner).is_err() {
        return true;
    }
    let path = paths.live_dir().join(format!("{owner}.lock"));
    let f = match OpenOptions::new().write(true).open(&path) {
        Ok(f) => f,
        Err(_) => return true,
    };
    match f.try_lock() {
        Ok(()) => {
            let _ = fs::remove_file(&path);
            true
        }
        Err(_) => false,
    }
}

/// Marks the running calls of dead processes `interrupted`, attaching spooled partial output.
/// Returns the ids marked. Runs on the writer connection before the writer thread starts.
pub fn interrupt_dead_calls(conn: &Connection, paths: &DataPaths) -> Result<Vec<String>> {
    let mut marked = Vec::new();
    for owner in tool_calls::running_owners(conn)? {
        if !owner_is_dead(paths, owner.as_deref()) {
            continue;
        }
        for id in tool_calls::running_of_owner(conn, owner.as_deref())? {
            interrupt_one(conn, paths, &id)?;
            marked.push(id);
        }
        let failed = tool_calls::fail_pending_compactions(conn, owner.as_deref())?;
        if failed > 0 {
            tracing::warn!(
                count = failed,
                "precompactions of a dead process marked failed"
            );
        }
    }
    if !marked.is_empty() {
        tracing::warn!(
            count = marked.len(),
            "calls of a dead process marked interrupted"
        );
    }
    Ok(marked)
}

/// Marks the running agent runs of dead processes `interrupted`; returns their ids. Their
/// dangling tool calls are answered when the run is resumed (`Store::resume_run`).
pub fn interrupt_dead_runs(conn: &Connection, paths: &DataPaths) -> Result<Vec<String>> {
    let mut marked = Vec::new();
    for owner in runs::running_owners(conn)? {
        if owner_is_dead(paths, owner.as_deref()) {
            marked.extend(runs::interrupt_of_owner(conn, owner.as_deref(), now_ms())?);
        }
    }
    if !marked.is_empty() {
        tracing::warn!(
            count = marked.len(),
            "runs of a dead process marked interrupted"
        );
    }
    Ok(marked)
}

fn interrupt_one(conn: &Connection, paths: &DataPaths, id: &str) -> Result<()> {
    let spool = paths.spool_file(id).ok();
    let partial = spool.as_deref().filter(|p| p.exists());
    let now = now_ms();
    match partial {
        None => {
            tool_calls::interrupt(conn, id, None, now)?;
        }
        Some(spool) => {
            let len = fs::metadata(spool)
                .map_err(|e| StoreError::io(spool, e))?
                .len();
            if len <= INLINE_LIMIT as u64 {
                let bytes = fs::read(spool).map_err(|e| StoreError::io(spool, e))?;
                tool_calls::interrupt(conn, id, Some(OutputRef::Inline(&bytes)), now)?;
            } else {
                let rel = DataPaths::blob_rel(id)?;
                let dest = paths.root().join(&rel);
                if let Some(dir) = dest.parent() {
                    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
                }
                files::rename_durable(spool, &dest)?;
                tool_calls::interrupt(
                    conn,
                    id,
                    Some(OutputRef::File {
                        rel_path: &rel,
                        len,
                    }),
                    now,
                )?;
            }
            let _ = fs::remove_file(spool);
        }
    }
    Ok(())
}

/// Files younger than this are never treated as orphans: another live process may be between
/// writing a file and committing the row that references it.
const ORPHAN_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes blob files no row references and spool files of calls that are not running
/// (left by a crash between writing a file and committing its row), if older than 10 minutes.
pub fn remove_orphans(conn: &Connection, paths: &DataPaths) -> Result<usize> {
    let referenced = tool_calls::referenced_files(conn)?;
    let mut removed = 0;
    removed += remove_in(&paths.blobs_dir(), |name| {
        !referenced.contains(&format!("blobs/{name}"))
    });
    removed += remove_in(&paths.spool_dir(), |name| match DataPaths::spool_id(name) {
        Some(id) => !matches!(tool_calls::status_of(conn, id), Ok(Some(s)) if s == "running"),
        None => true,
    });
    Ok(removed)
}

fn remove_in(dir: &Path, orphan: impl Fn(&str) -> bool) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let old_enough = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= ORPHAN_MIN_AGE);
        let name = e.file_name().to_string_lossy().into_owned();
        if old_enough && orphan(&name) && fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}
