//! Pure, lexical first pass over a path as given by a model or user.
//!
//! This is NOT the confinement: every path that passes is still opened relative to the root's
//! directory handle by cap-std, which the kernel resolves beneath the root (symlinks included).
//! The lexical pass only refuses what can be refused without touching anything and turns
//! absolute paths that lie under the root into relative ones:
//! - empty, NUL byte, longer than `MAX_PATH_BYTES`, a component longer than `MAX_NAME_BYTES`:
//!   `InvalidPath` (Parameters);
//! - an absolute path not lexically under a root path (after folding `.`, `..`, `//`): `Escape`;
//! - a relative path whose `..` components climb above the root: `Escape`.

use std::path::{Component, Path, PathBuf};

use crate::error::SandboxError;

pub const MAX_PATH_BYTES: usize = 4096;
pub const MAX_NAME_BYTES: usize = 255;

/// Turn `given` into a path relative to the root (`"."` for the root itself).
///
/// `roots` are the absolute spellings of the project root (canonical and as configured).
pub fn relative_path(roots: &[&Path], given: &str) -> Result<PathBuf, SandboxError> {
    let invalid = |reason: &str| SandboxError::InvalidPath {
        path: given.to_string(),
        reason: reason.to_string(),
    };
    if given.is_empty() {
        return Err(invalid("empty path"));
    }
    if given.contains('\0') {
        return Err(invalid("contains a NUL byte"));
    }
    if given.len() > MAX_PATH_BYTES {
        return Err(invalid("longer than 4096 bytes"));
    }
    let path = Path::new(given);
    if path
        .components()
        .any(|c| c.as_os_str().len() > MAX_NAME_BYTES)
    {
        return Err(invalid("a component is longer than 255 bytes"));
    }
    let escape = || SandboxError::Escape {
        path: given.to_string(),
    };
    let relative: PathBuf = if path.is_absolute() {
        let folded = fold_lexically(path).ok_or_else(escape)?;
        let rest = roots
            .iter()
            .find_map(|root| folded.strip_prefix(root).ok())
            .ok_or_else(escape)?;
        rest.to_path_buf()
    } else {
        let mut depth: usize = 0;
        let mut out = PathBuf::new();
        for component in path.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    depth = depth.checked_sub(1).ok_or_else(escape)?;
                    out.push("..");
                }
                Component::Normal(name) => {
                    depth += 1;
                    out.push(name);
                }
                Component::RootDir | Component::Prefix(_) => return Err(escape()),
            }
        }
        out
    };
    if relative.as_os_str().is_empty() {
        Ok(PathBuf::from("."))
    } else {
        Ok(relative)
    }
}

/// Fold `.`, `..` and repeated separators of an absolute path; `None` if `..` climbs above `/`.
fn fold_lexically(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

/// Display form of a relative path: `/`-separated, lossy for non-UTF-8 names, `.` for the root.
pub fn display(rel: &Path) -> String {
    let s = rel.to_string_lossy();
    if s.is_empty() {
        ".".into()
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(given: &str) -> Result<String, &'static str> {
        relative_path(&[Path::new("/p/root"), Path::new("/link/root")], given)
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|e| e.code())
    }

    #[test]
    fn ladder() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("src/main.rs", Ok("src/main.rs")),
            ("./src//main.rs", Ok("src/main.rs")),
            (".", Ok(".")),
            ("a/../b", Ok("a/../b")),
            ("a/..", Ok("a/..")),
            ("..", Err("path_escape")),
            ("a/../../x", Err("path_escape")),
            ("/p/root/src/x", Ok("src/x")),
            ("/p/root", Ok(".")),
            ("/p/root/../root/a", Ok("a")),
            ("/link/root/a", Ok("a")),
            ("/p/rootx/a", Err("path_escape")),
            ("/etc/passwd", Err("path_escape")),
            ("/proc/self/root/etc", Err("path_escape")),
            ("//p/root/a", Ok("a")),
            ("/../../p/root/a", Err("path_escape")),
            ("", Err("invalid_path")),
            ("a\0b", Err("invalid_path")),
            ("foo.", Ok("foo.")),
            ("...", Ok("...")),
            ("\u{2024}\u{2024}/x", Ok("\u{2024}\u{2024}/x")),
            ("~/x", Ok("~/x")),
        ];
        for (given, want) in cases {
            assert_eq!(rel(given), want.map(str::to_string), "{given:?}");
        }
        assert_eq!(rel(&"a/".repeat(3000)), Err("invalid_path"));
        assert_eq!(rel(&"n".repeat(300)), Err("invalid_path"));
    }
}
