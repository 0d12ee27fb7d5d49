//! This machine's side of the sync: every operation walks from the project's own descriptor with
//! `openat(O_NOFOLLOW)` one component at a time, so no symlink is ever followed (a symlink on
//! the way is refused, not resolved), nothing outside the project is reached whatever the names
//! or links, and files are replaced by a rename of a new file in the same folder (a symlink at
//! the name is replaced, never written through).

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::manifest::{Fingerprint, Hasher, Node, Rel};

/// Why a local operation did not happen.
#[derive(Debug)]
pub(crate) enum LocalError {
    /// Refused: the way to the path is not plain folders of the project.
    Refused(&'static str),
    Io(std::io::Error),
}

impl From<Errno> for LocalError {
    fn from(e: Errno) -> Self {
        LocalError::Io(e.into())
    }
}

impl From<std::io::Error> for LocalError {
    fn from(e: std::io::Error) -> Self {
        LocalError::Io(e)
    }
}

impl std::fmt::Display for LocalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LocalError::Refused(why) => f.write_str(why),
            LocalError::Io(e) => write!(f, "{e}"),
        }
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The project folder, held by its descriptor.
#[derive(Debug)]
pub(crate) struct LocalTree {
    root: OwnedFd,
}

/// The kind of a local entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Link,
    /// A fifo, socket or device: never synced.
    Other,
}

pub(crate) fn kind_of(st: &rustix::fs::Stat) -> Kind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Link,
        _ => Kind::Other,
    }
}

fn name(c: &[u8]) -> &OsStr {
    OsStr::from_bytes(c)
}

/// A name for a new file next to the one it replaces (never an existing name: `O_EXCL`).
fn temp_name() -> Vec<u8> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".aibuddy-sync.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
    .into_bytes()
}

impl LocalTree {
    pub(crate) fn open(root: &Path) -> std::io::Result<Self> {
        let root = rustix::fs::openat(rustix::fs::CWD, root, DIR_FLAGS, Mode::empty())?;
        Ok(LocalTree { root })
    }

    pub(crate) fn root_fd(&self) -> &OwnedFd {
        &self.root
    }

    /// The folder holding `rel`'s last component and that component; `create`: missing
    /// folders on the way are made (`0755`).
    pub(crate) fn parent<'a>(
        &self,
        rel: &'a [u8],
        create: bool,
    ) -> Result<(OwnedFd, &'a [u8]), LocalError> {
        let mut comps: Vec<&[u8]> = rel.split(|b| *b == b'/').collect();
        let last = comps.pop().ok_or(LocalError::Refused("an empty name"))?;
        let mut dir = rustix::fs::openat(&self.root, ".", DIR_FLAGS, Mode::empty())?;
        for c in comps {
            let next = match rustix::fs::openat(&dir, name(c), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&dir, name(c), Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    rustix::fs::openat(&dir, name(c), DIR_FLAGS, Mode::empty())
                        .map_err(refuse_or_io)?
                }
                Err(e) => return Err(refuse_or_io(e)),
            };
            dir = next;
        }
        Ok((dir, last))
    }

    /// `lstat` of `rel` (`None`: absent, or a folder on the way is missing).
    pub(crate) fn lstat(&self, rel: &[u8]) -> Result<Option<rustix::fs::Stat>, LocalError> {
        let (dir, last) = match self.parent(rel, false) {
            Ok(p) => p,
            Err(LocalError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The node of `rel` here (`None`: absent or not a file, folder or link), reusing `cached`
    /// when the file's `stat` has not changed since; files are hashed up to `max_file` bytes
    /// (a larger one is `Err(Refused)`).
    pub(crate) fn node(
        &self,
        rel: &[u8],
        cached: Option<&(Fingerprint, Node)>,
        max_file: u64,
    ) -> Result<Option<(Fingerprint, Node)>, LocalError> {
        let Some(st) = self.lstat(rel)? else {
            return Ok(None);
        };
        let fp = Fingerprint::of(&st);
        match kind_of(&st) {
            Kind::Dir => Ok(Some((fp, Node::Dir))),
            Kind::Other => Ok(None),
            Kind::Link => {
                let (dir, last) = self.parent(rel, false)?;
                let target = rustix::fs::readlinkat(&dir, name(last), Vec::new())?;
                Ok(Some((
                    fp,
                    Node::Link {
                        target: target.into_bytes(),
                    },
                )))
            }
            Kind::File => {
                if let Some((f, n)) = cached
                    && *f == fp
                {
                    return Ok(Some((fp, n.clone())));
                }
                let (dir, last) = self.parent(rel, false)?;
                let (fp, node, _) = read_file(&dir, last, max_file, None)?;
                Ok(Some((fp, node)))
            }
        }
    }

    /// Writes `content` (a staged file) at `rel` by a rename over it; `exec`: the execute bits
    /// follow the read bits. An existing file keeps its permission bits (an exec bit aside).
    pub(crate) fn write_file(
        &self,
        rel: &[u8],
        content: &mut std::fs::File,
        exec: bool,
    ) -> Result<Fingerprint, LocalError> {
        let (dir, last) = self.parent(rel, true)?;
        let base = match rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if kind_of(&st) == Kind::File => st.st_mode & 0o666,
            Ok(st) if kind_of(&st) == Kind::Dir => {
                return Err(LocalError::Refused(
                    "a folder here where the container has a file",
                ));
            }
            _ => 0o644,
        };
        let mode = if exec {
            base | ((base & 0o444) >> 2)
        } else {
            base
        };
        let tmp = temp_name();
        let fd = rustix::fs::openat(
            &dir,
            name(&tmp),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut out = std::fs::File::from(fd);
        let written = (|| -> std::io::Result<()> {
            std::io::copy(content, &mut out)?;
            out.flush()?;
            rustix::fs::fchmod(&out, Mode::from_raw_mode(mode))?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&dir, name(&tmp), AtFlags::empty());
            return Err(e.into());
        }
        let st = rustix::fs::fstat(&out)?;
        if let Err(e) = rustix::fs::renameat(&dir, name(&tmp), &dir, name(last)) {
            let _ = rustix::fs::unlinkat(&dir, name(&tmp), AtFlags::empty());
            return Err(e.into());
        }
        Ok(Fingerprint::of(&st))
    }

    /// Makes the symlink `rel -> target` (replacing a file or link there by a rename).
    pub(crate) fn write_link(&self, rel: &[u8], target: &[u8]) -> Result<Fingerprint, LocalError> {
        let (dir, last) = self.parent(rel, true)?;
        if let Ok(st) = rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW)
            && kind_of(&st) == Kind::Dir
        {
            return Err(LocalError::Refused(
                "a folder here where the container has a link",
            ));
        }
        let tmp = temp_name();
        rustix::fs::symlinkat(name(target), &dir, name(&tmp))?;
        if let Err(e) = rustix::fs::renameat(&dir, name(&tmp), &dir, name(last)) {
            let _ = rustix::fs::unlinkat(&dir, name(&tmp), AtFlags::empty());
            return Err(e.into());
        }
        let st = rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Fingerprint::of(&st))
    }

    /// Makes the folder `rel` (a file or link there is removed first).
    pub(crate) fn make_dir(&self, rel: &[u8]) -> Result<Fingerprint, LocalError> {
        let (dir, last) = self.parent(rel, true)?;
        match rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if kind_of(&st) == Kind::Dir => return Ok(Fingerprint::of(&st)),
            Ok(_) => rustix::fs::unlinkat(&dir, name(last), AtFlags::empty())?,
            Err(Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        rustix::fs::mkdirat(&dir, name(last), Mode::from_raw_mode(0o755))?;
        let st = rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Fingerprint::of(&st))
    }

    /// Removes `rel`: a file or link, or an empty folder (never a tree: what the container
    /// deleted beneath it is removed one by one first). Absent already: fine.
    pub(crate) fn remove(&self, rel: &[u8]) -> Result<(), LocalError> {
        let (dir, last) = match self.parent(rel, false) {
            Ok(p) => p,
            Err(LocalError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let st = match rustix::fs::statat(&dir, name(last), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let flags = if kind_of(&st) == Kind::Dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        match rustix::fs::unlinkat(&dir, name(last), flags) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(Errno::NOTEMPTY) => {
                Err(LocalError::Refused("a folder that still holds files here"))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// A symlink or a file where a folder is needed on the way: refused; anything else is an error.
fn refuse_or_io(e: Errno) -> LocalError {
    match e {
        Errno::LOOP | Errno::NOTDIR => LocalError::Refused("a symlink or a file on the way"),
        e => LocalError::Io(e.into()),
    }
}

/// Reads the regular file `last` of `dir` (never through a symlink, never blocking on a fifo):
/// its fingerprint, node and (with `keep`) its bytes, up to `max_file` (a larger file is
/// `Err(Refused)`).
pub(crate) fn read_file(
    dir: &OwnedFd,
    last: &[u8],
    max_file: u64,
    keep: Option<&mut Vec<u8>>,
) -> Result<(Fingerprint, Node, u64), LocalError> {
    let fd = rustix::fs::openat(
        dir,
        name(last),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(refuse_or_io)?;
    let st = rustix::fs::fstat(&fd)?;
    if kind_of(&st) != Kind::File {
        return Err(LocalError::Refused("not a regular file"));
    }
    let fp = Fingerprint::of(&st);
    if fp.size > max_file {
        return Err(LocalError::Refused("over the size bound"));
    }
    let mut file = std::fs::File::from(fd);
    let mut hasher = Hasher::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut keep = keep;
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        if size > max_file {
            return Err(LocalError::Refused("over the size bound"));
        }
        hasher.update(&buf[..n]);
        if let Some(k) = keep.as_deref_mut() {
            k.extend_from_slice(&buf[..n]);
        }
    }
    let node = Node::File {
        size,
        hash: hasher.finish(),
        exec: st.st_mode & 0o111 != 0,
    };
    Ok((fp, node, size))
}

/// The entries of the folder `dir` (names only, `.` and `..` left out).
pub(crate) fn entries(dir: &OwnedFd) -> std::io::Result<Vec<Rel>> {
    let mut out = Vec::new();
    for e in rustix::fs::Dir::read_from(dir)? {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            out.push(n.to_vec());
        }
    }
    Ok(out)
}

/// Opens the folder `last` of `dir` (never through a symlink).
pub(crate) fn open_dir(dir: &OwnedFd, last: &[u8]) -> Result<OwnedFd, LocalError> {
    rustix::fs::openat(dir, name(last), DIR_FLAGS, Mode::empty()).map_err(refuse_or_io)
}

/// `lstat` of `last` in `dir`.
pub(crate) fn stat_in(dir: &OwnedFd, last: &[u8]) -> std::io::Result<rustix::fs::Stat> {
    Ok(rustix::fs::statat(
        dir,
        name(last),
        AtFlags::SYMLINK_NOFOLLOW,
    )?)
}

/// The target of the symlink `last` in `dir`.
pub(crate) fn link_target(dir: &OwnedFd, last: &[u8]) -> std::io::Result<Vec<u8>> {
    Ok(rustix::fs::readlinkat(dir, name(last), Vec::new())?.into_bytes())
}
