//! Resolving `exec.writable_roots` when settings load: `~` expanded, `..` and symlinks resolved,
//! so the confirmation's scope line shows where writes really land. A project may not name a root
//! outside itself (even when trusted); a user-level root must be absolute (or `~/...`); a root that
//! does not exist is skipped. Each refusal is a problem for `aibuddy tools check`.
//!
//! The decision is pure over an injected `canonicalize` (tests pass `std::fs::canonicalize` over
//! real symlinks).

use std::path::{Component, Path, PathBuf};

/// Whose file named the roots.
#[derive(Debug, Clone, Copy)]
pub enum RootsScope<'a> {
    /// The person's own `settings.json`: absolute or `~/...` roots anywhere.
    User { home: Option<&'a Path> },
    /// `.aibuddy/settings.json`: relative to the (canonical) project root, and inside it.
    Project {
        root: &'a Path,
        home: Option<&'a Path>,
    },
}

/// Why one root was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootRefusal {
    /// A user-level root must be absolute or start with `~/`.
    Relative,
    /// `~` was used but there is no home directory.
    NoHome,
    /// A project root that leaves the project (`..`, an absolute path elsewhere, `~`).
    Outside,
    /// A project root that leaves the project through a symbolic link.
    OutsideThroughSymlink,
    /// Nothing exists at that path.
    Missing,
    /// It cannot be resolved (permissions, not valid UTF-8, ...).
    Unresolvable(String),
}

impl RootRefusal {
    pub fn message(&self, index: usize) -> String {
        let what = match self {
            RootRefusal::Relative => {
                "is relative; a user-level root must be absolute or start with `~/`".to_string()
            }
            RootRefusal::NoHome => "starts with `~` but there is no home directory".to_string(),
            RootRefusal::Outside => "lies outside the project".to_string(),
            RootRefusal::OutsideThroughSymlink => {
                "resolves outside the project through a symbolic link".to_string()
            }
            RootRefusal::Missing => "does not exist".to_string(),
            RootRefusal::Unresolvable(why) => format!("cannot be resolved ({why})"),
        };
        format!("entry {} {what}; ignored", index + 1)
    }
}

/// `std::fs::canonicalize` as a plain function (the resolver's `canonicalize` outside tests).
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

/// Remove `.` and fold `..` without touching the filesystem.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn expand_home(given: &str, home: Option<&Path>) -> Result<PathBuf, RootRefusal> {
    if given == "~" || given.starts_with("~/") {
        let home = home.ok_or(RootRefusal::NoHome)?;
        return Ok(match given.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => home.to_path_buf(),
        });
    }
    Ok(PathBuf::from(given))
}

/// Resolve one root, or say why it is refused.
pub fn resolve_root(
    given: &str,
    scope: RootsScope<'_>,
    canonicalize: &dyn Fn(&Path) -> std::io::Result<PathBuf>,
) -> Result<PathBuf, RootRefusal> {
    let (expanded, project) = match scope {
        RootsScope::User { home } => {
            let p = expand_home(given, home)?;
            if !p.is_absolute() {
                return Err(RootRefusal::Relative);
            }
            (p, None)
        }
        RootsScope::Project { root, home } => {
            let p = expand_home(given, home)?;
            let joined = root.join(p);
            if !normalize_lexically(&joined).starts_with(root) {
                return Err(RootRefusal::Outside);
            }
            (joined, Some(root))
        }
    };
    let real = canonicalize(&expanded).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RootRefusal::Missing,
        _ => RootRefusal::Unresolvable(e.kind().to_string()),
    })?;
    if let Some(root) = project
        && !real.starts_with(root)
    {
        return Err(RootRefusal::OutsideThroughSymlink);
    }
    if real.to_str().is_none() {
        return Err(RootRefusal::Unresolvable("not valid UTF-8".to_string()));
    }
    Ok(real)
}

/// Resolve a list of roots: the resolved ones (deduplicated, in order) and the refusals by index.
pub fn resolve_roots(
    given: &[String],
    scope: RootsScope<'_>,
    canonicalize: &dyn Fn(&Path) -> std::io::Result<PathBuf>,
) -> (Vec<String>, Vec<(usize, RootRefusal)>) {
    let mut ok: Vec<String> = Vec::new();
    let mut refused = Vec::new();
    for (i, g) in given.iter().enumerate() {
        match resolve_root(g, scope, canonicalize) {
            Ok(p) => {
                let s = p.to_string_lossy().into_owned();
                if !ok.contains(&s) {
                    ok.push(s);
                }
            }
            Err(r) => refused.push((i, r)),
        }
    }
    (ok, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fx {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
        home: PathBuf,
    }

    fn fx() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("proj");
        let outside = base.join("x");
        let home = base.join("home");
        for d in [
            &root,
            &outside,
            &home.join(".cargo"),
            &root.join("sub"),
            &root.join("cache"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        symlink("/", root.join("build-cache")).unwrap();
        symlink(&outside, root.join("sub/escape")).unwrap();
        symlink(root.join("cache"), root.join("cache-link")).unwrap();
        symlink(home.join(".cargo"), home.join("cargo-link")).unwrap();
        Fx {
            _tmp: tmp,
            root,
            outside,
            home,
        }
    }

    fn project(f: &Fx, given: &str) -> Result<PathBuf, RootRefusal> {
        resolve_root(
            given,
            RootsScope::Project {
                root: &f.root,
                home: Some(&f.home),
            },
            &real_path,
        )
    }

    fn user(f: &Fx, given: &str) -> Result<PathBuf, RootRefusal> {
        resolve_root(
            given,
            RootsScope::User {
                home: Some(&f.home),
            },
            &real_path,
        )
    }

    #[test]
    fn a_project_symlink_to_the_root_of_the_filesystem_is_refused() {
        let f = fx();
        assert_eq!(
            project(&f, "build-cache"),
            Err(RootRefusal::OutsideThroughSymlink)
        );
        assert_eq!(
            project(&f, "sub/escape"),
            Err(RootRefusal::OutsideThroughSymlink)
        );
    }

    #[test]
    fn a_project_root_climbing_out_with_dot_dot_is_refused() {
        let f = fx();
        // `x` exists next to the project: still outside.
        assert_eq!(project(&f, "sub/../../x"), Err(RootRefusal::Outside));
        assert_eq!(project(&f, "../x"), Err(RootRefusal::Outside));
        assert_eq!(
            project(&f, &f.outside.display().to_string()),
            Err(RootRefusal::Outside)
        );
        assert_eq!(project(&f, "/"), Err(RootRefusal::Outside));
        assert_eq!(project(&f, "~/.cargo"), Err(RootRefusal::Outside));
    }

    #[test]
    fn project_roots_inside_are_resolved_through_dot_dot_and_symlinks() {
        let f = fx();
        assert_eq!(project(&f, "sub/../cache"), Ok(f.root.join("cache")));
        assert_eq!(project(&f, "cache-link"), Ok(f.root.join("cache")));
        let abs = f.root.join("cache").display().to_string();
        assert_eq!(project(&f, &abs), Ok(f.root.join("cache")));
        assert_eq!(project(&f, "./cache/"), Ok(f.root.join("cache")));
    }

    #[test]
    fn missing_roots_are_refused() {
        let f = fx();
        assert_eq!(project(&f, "not-there"), Err(RootRefusal::Missing));
        assert_eq!(user(&f, "~/not-there"), Err(RootRefusal::Missing));
    }

    #[test]
    fn user_roots_expand_home_and_resolve_symlinks_and_refuse_relative_ones() {
        let f = fx();
        assert_eq!(user(&f, "~/.cargo"), Ok(f.home.join(".cargo")));
        assert_eq!(user(&f, "~/cargo-link"), Ok(f.home.join(".cargo")));
        assert_eq!(user(&f, "~"), Ok(f.home.clone()));
        assert_eq!(
            user(&f, &f.outside.display().to_string()),
            Ok(f.outside.clone())
        );
        assert_eq!(user(&f, "build-cache"), Err(RootRefusal::Relative));
        assert_eq!(user(&f, "./x"), Err(RootRefusal::Relative));
        assert_eq!(
            resolve_root("~/x", RootsScope::User { home: None }, &real_path),
            Err(RootRefusal::NoHome)
        );
    }

    #[test]
    fn lists_keep_order_drop_duplicates_and_report_indexes() {
        let f = fx();
        let given: Vec<String> = ["cache", "build-cache", "cache-link", "gone"]
            .map(String::from)
            .to_vec();
        let (ok, refused) = resolve_roots(
            &given,
            RootsScope::Project {
                root: &f.root,
                home: None,
            },
            &real_path,
        );
        assert_eq!(ok, vec![f.root.join("cache").display().to_string()]);
        assert_eq!(
            refused,
            vec![
                (1, RootRefusal::OutsideThroughSymlink),
                (3, RootRefusal::Missing)
            ]
        );
        assert_eq!(
            refused[0].1.message(refused[0].0),
            "entry 2 resolves outside the project through a symbolic link; ignored"
        );
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            normalize_lexically(Path::new("/a/b/../../../c/./d")),
            PathBuf::from("/c/d")
        );
        assert_eq!(
            normalize_lexically(Path::new("/p/sub/../../x")),
            PathBuf::from("/x")
        );
    }
}
