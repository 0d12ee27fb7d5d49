//! Scoped open helpers shared by the operations. Everything goes through the root `Dir`.

use cap_std::fs::{Dir, File, FileType, Metadata, OpenOptions, OpenOptionsExt};
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

use crate::error::SandboxError;

/// Human name of a non-regular file type, for `NotRegular`.
pub fn type_name(ft: &FileType) -> &'static str {
    use cap_std::fs::FileTypeExt;
    if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

/// Open an existing regular file for reading, following symlinks only beneath the root.
///
/// The type is checked before opening (so a device or fifo is never opened) and again on the
/// opened handle (so a swap between the two checks is caught). `O_NONBLOCK` makes even a fifo
/// swapped in at the last moment fail instead of hanging.
pub fn open_regular(dir: &Dir, rel: &Path, given: &str) -> Result<(File, Metadata), SandboxError> {
    let before = dir
        .metadata(rel)
        .map_err(|e| SandboxError::from_io("stat", given, e))?;
    check_regular(&before.file_type(), given)?;
    let mut opts = OpenOptions::new();
    opts.read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    let file = dir
        .open_with(rel, &opts)
        .map_err(|e| SandboxError::from_io("open", given, e))?;
    let meta = file
        .metadata()
        .map_err(|e| SandboxError::from_io("stat", given, e))?;
    check_regular(&meta.file_type(), given)?;
    Ok((file, meta))
}

pub fn check_regular(ft: &FileType, given: &str) -> Result<(), SandboxError> {
    if ft.is_file() {
        Ok(())
    } else if ft.is_dir() {
        Err(SandboxError::IsADirectory {
            path: given.to_string(),
        })
    } else {
        Err(SandboxError::NotRegular {
            path: given.to_string(),
            file_type: type_name(ft).to_string(),
        })
    }
}

/// (length, modification time): what "the file did not change" is checked against.
pub fn identity(meta: &Metadata) -> (u64, Option<SystemTime>) {
    (meta.len(), meta.modified().ok().map(|t| t.into_std()))
}

/// A reader that fails once the token is cancelled, so any read loop stops mid-file.
pub struct CancelReader<'a, R> {
    pub inner: R,
    pub cancel: &'a CancellationToken,
}

impl<R: Read> Read for CancelReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(io::Error::other("cancelled"));
        }
        self.inner.read(buf)
    }
}

/// Map an error from a cancel-aware read: `Cancelled` if the token fired, else the io error.
pub fn read_error(
    op: &'static str,
    given: &str,
    cancel: &CancellationToken,
    err: io::Error,
) -> SandboxError {
    if cancel.is_cancelled() {
        SandboxError::Cancelled { op }
    } else {
        SandboxError::from_io(op, given, err)
    }
}

/// Read a whole regular file (at most `max` bytes, else `TooLarge`), checking for cancellation.
pub fn read_whole(
    dir: &Dir,
    rel: &Path,
    given: &str,
    max: u64,
    cancel: &CancellationToken,
) -> Result<(Vec<u8>, Metadata), SandboxError> {
    let (file, meta) = open_regular(dir, rel, given)?;
    if meta.len() > max {
        return Err(SandboxError::TooLarge {
            path: given.to_string(),
            size: meta.len(),
            max,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let mut reader = CancelReader {
        inner: (&file).take(max + 1),
        cancel,
    };
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| read_error("read", given, cancel, e))?;
    let after = file
        .metadata()
        .map_err(|e| SandboxError::from_io("stat", given, e))?;
    if bytes.len() as u64 != meta.len() || identity(&after) != identity(&meta) {
        return Err(SandboxError::Changed {
            path: given.to_string(),
        });
    }
    Ok((bytes, meta))
}
