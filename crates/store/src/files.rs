//! File I/O of the store: durable atomic writes, bounded reads, the per-call output spool.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// Writes `bytes` to `path` durably: a temp file beside it is written, fsynced, renamed over
/// `path`, and the directory is fsynced. Readers see the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| StoreError::io(path, std::io::Error::other("no parent directory")))?;
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let tmp = temp_beside(path);
    let res = (|| {
        let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| StoreError::io(&tmp, e))?;
        f.sync_all().map_err(|e| StoreError::io(&tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
        sync_dir(dir)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Writes `bytes` to a fresh temp file beside `final_path` and fsyncs it; the caller renames it
/// into place (`rename_durable`) once it knows the rename is wanted.
pub fn write_temp_durable(final_path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let dir = final_path
        .parent()
        .ok_or_else(|| StoreError::io(final_path, std::io::Error::other("no parent directory")))?;
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let tmp = temp_beside(final_path);
    let res = (|| {
        let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| StoreError::io(&tmp, e))?;
        f.sync_all().map_err(|e| StoreError::io(&tmp, e))
    })();
    match res {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Copies `src` to a fresh temp file beside `final_path` and fsyncs it (see `write_temp_durable`).
pub fn copy_temp_durable(src: &Path, final_path: &Path) -> Result<PathBuf> {
    let dir = final_path
        .parent()
        .ok_or_else(|| StoreError::io(final_path, std::io::Error::other("no parent directory")))?;
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let tmp = temp_beside(final_path);
    let res = (|| {
        fs::copy(src, &tmp).map_err(|e| StoreError::io(src, e))?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| StoreError::io(&tmp, e))
    })();
    match res {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Renames `from` to `to` and fsyncs the directory.
pub fn rename_durable(from: &Path, to: &Path) -> Result<()> {
    if let Some(dir) = to.parent() {
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    }
    fs::rename(from, to).map_err(|e| StoreError::io(to, e))?;
    match to.parent() {
        Some(dir) => sync_dir(dir),
        None => Ok(()),
    }
}

fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", crate::ids::new_id()))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

/// Reads at most `limit` bytes at `offset`; returns the bytes and the file's length.
pub fn read_slice(path: &Path, offset: u64, limit: u64) -> Result<(Vec<u8>, u64)> {
    let mut f = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let len = f.metadata().map_err(|e| StoreError::io(path, e))?.len();
    let start = offset.min(len);
    let want = limit.min(len - start);
    f.seek(SeekFrom::Start(start))
        .map_err(|e| StoreError::io(path, e))?;
    let want = usize::try_from(want)
        .map_err(|_| StoreError::io(path, std::io::Error::other("slice larger than memory")))?;
    // One exact read into a zeroed buffer: no incremental growth, no probing reads.
    let mut buf = vec![0u8; want];
    f.read_exact(&mut buf)
        .map_err(|e| StoreError::io(path, e))?;
    Ok((buf, len))
}

/// Append-only spool of a running call's output (`spool/<id>.out`). If the process dies, the
/// next open attaches what was spooled as the call's partial raw output. Writes are not fsynced:
/// they survive the process being killed, which is the failure this covers.
/// Blocking I/O: call it from a blocking thread (the exec reader) or `spawn_blocking`.
#[derive(Debug)]
pub struct Spool {
    file: File,
    path: PathBuf,
}

impl Spool {
    pub(crate) fn create(path: PathBuf) -> Result<Spool> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(Spool { file, path })
    }

    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| StoreError::io(&self.path, e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
