//! Helpers shared by the operation tests (`operations*.rs`): a fresh project, files in it, requests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use aibuddy_sandbox::*;
use tokio_util::sync::CancellationToken;

pub fn c() -> CancellationToken {
    CancellationToken::new()
}

pub fn project() -> (tempfile::TempDir, Arc<dyn Sandbox>) {
    let tmp = tempfile::tempdir().unwrap();
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(tmp.path())).unwrap();
    (tmp, sb)
}

pub fn put(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

pub fn read_req(path: &str, offset: Option<u64>, limit: Option<u64>) -> ReadRequest {
    ReadRequest {
        path: path.into(),
        offset,
        limit,
    }
}

/// A project of `files` (path, bytes) whose sandbox has `grep_line_bytes` as its line bound.
pub fn project_with_line_bound(
    files: &[(&str, &[u8])],
    grep_line_bytes: usize,
) -> (tempfile::TempDir, Arc<dyn Sandbox>) {
    let tmp = tempfile::tempdir().unwrap();
    for (path, content) in files {
        put(tmp.path(), path, content);
    }
    let mut settings = SandboxSettings::new(tmp.path());
    settings.limits.grep_line_bytes = grep_line_bytes;
    let sb = create_sandbox(SandboxKind::Local, &settings).unwrap();
    (tmp, sb)
}

/// A glob request: `pattern` from `path` (the root when `None`), at most `limit` entries.
pub fn glob_req(pattern: &str, path: Option<&str>, limit: Option<usize>) -> GlobRequest {
    GlobRequest {
        pattern: pattern.into(),
        path: path.map(Into::into),
        limit,
    }
}

/// A grep request for `pattern` with every other field at its default (content mode, from the
/// root); set the others with `GrepRequest { mode, ..grep_req("x") }`.
pub fn grep_req(pattern: &str) -> GrepRequest {
    GrepRequest {
        pattern: pattern.into(),
        ..Default::default()
    }
}

/// An ls request for `path` (the root when `None`), no limit but the default.
pub fn ls_req(path: Option<&str>) -> ListRequest {
    ListRequest {
        path: path.map(Into::into),
        limit: None,
    }
}

/// Writes each `(path, content)` under `root` (folders created on the way).
pub fn put_all(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        put(root, path, content);
    }
}

pub fn edit(old: &str, new: &str, all: bool) -> EditSpec {
    EditSpec {
        old_string: old.into(),
        new_string: new.into(),
        replace_all: all,
    }
}

/// A project with a .gitignore, ignored and hidden files, a binary file and nested sources.
pub fn gitignored_project() -> (tempfile::TempDir, Arc<dyn Sandbox>) {
    let (tmp, sb) = project();
    let r = tmp.path();
    put(r, ".gitignore", "target/\n*.log\n");
    put(r, "src/a.rs", "fn alpha() {}\n// TODO one\n");
    put(r, "src/b.rs", "fn beta() {}\n// todo two\n// TODO three\n");
    put(r, "src/nested/c.rs", "fn gamma() {}\n");
    put(r, "target/debug/gen.rs", "// TODO generated\n");
    put(r, "notes.log", "TODO log\n");
    put(r, ".hidden/h.rs", "// TODO hidden\n");
    put(r, "README.md", "todo: readme\n");
    put(r, "bin.dat", b"TODO\0binary");
    (tmp, sb)
}
