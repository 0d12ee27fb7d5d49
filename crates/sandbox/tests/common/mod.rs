//! Shared test fixture: a project root with hostile symlink layouts next to a canary folder.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aibuddy_sandbox::{Sandbox, SandboxKind, SandboxSettings, create_sandbox};

/// Content of every canary file: it must never appear in any result.
pub const CANARY: &str = "CANARY-OUTSIDE-7f3a";

pub struct Layout {
    pub _tmp: tempfile::TempDir,
    /// Parent of root and outside (canonical).
    pub tmp: PathBuf,
    pub root: PathBuf,
    pub outside: PathBuf,
}

impl Layout {
    pub fn sandbox(&self) -> Arc<dyn Sandbox> {
        create_sandbox(SandboxKind::Local, &SandboxSettings::new(&self.root)).unwrap()
    }

    /// Substitute `{ROOT}`, `{OUT}`, `{TMP}` and unescape `\x00`.
    pub fn expand(&self, raw: &str) -> String {
        raw.replace("{ROOT}", &self.root.to_string_lossy())
            .replace("{OUT}", &self.outside.to_string_lossy())
            .replace("{TMP}", &self.tmp.to_string_lossy())
            .replace("\\x00", "\0")
    }

    /// Everything under `tmp` except the root: type, size, mode, mtime and file content.
    pub fn snapshot_outside(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        snapshot(&self.tmp, &self.tmp, &self.root, &mut out);
        out
    }

    /// Is `rel` (as returned by the sandbox) really a path inside the root?
    pub fn resolves_inside(&self, rel: &str) -> bool {
        let joined = self.root.join(rel);
        match std::fs::canonicalize(&joined) {
            Ok(c) => c.starts_with(&self.root),
            // Dangling or unreadable: the parent must be inside.
            Err(_) => joined
                .parent()
                .and_then(|p| std::fs::canonicalize(p).ok())
                .is_some_and(|p| p.starts_with(&self.root)),
        }
    }
}

fn snapshot(dir: &Path, base: &Path, skip: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        if path == skip {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let rel = path.strip_prefix(base).unwrap().to_path_buf();
        let mut desc = format!(
            "type={:?} len={} mode={:o} mtime={}.{}",
            meta.file_type(),
            meta.len(),
            meta.mode(),
            meta.mtime(),
            meta.mtime_nsec()
        );
        if meta.is_file() {
            desc.push_str(&format!(" content={:?}", std::fs::read(&path).unwrap()));
        } else if meta.file_type().is_symlink() {
            desc.push_str(&format!(" target={:?}", std::fs::read_link(&path).unwrap()));
        }
        out.insert(rel, desc);
        if meta.is_dir() {
            snapshot(&path, base, skip, out);
        }
    }
}

/// Build the layout: `tmp/outside` (canaries) and `tmp/root` (project) with hostile links.
pub fn layout() -> Layout {
    let tmpdir = tempfile::tempdir().unwrap();
    let tmp = std::fs::canonicalize(tmpdir.path()).unwrap();
    let root = tmp.join("root");
    let outside = tmp.join("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{CANARY} secret\n")).unwrap();
    std::fs::write(outside.join("dir/inner.txt"), format!("{CANARY} inner\n")).unwrap();
    std::fs::write(tmp.join("sibling.txt"), format!("{CANARY} sibling\n")).unwrap();

    std::fs::create_dir_all(root.join("sub/deep")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("ok.txt"), "inside ok\nsecret word inside\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("sub/deep/file.txt"), "deep file\n").unwrap();

    let links: &[(&str, PathBuf)] = &[
        ("link_out_file", PathBuf::from("../outside/secret.txt")),
        ("link_out_abs", outside.join("secret.txt")),
        ("link_out_dir", PathBuf::from("../outside")),
        ("link_out_dir_abs", outside.clone()),
        ("link_parent", PathBuf::from("..")),
        ("link_root", PathBuf::from("/")),
        ("sub/link_up2", PathBuf::from("../../outside")),
        ("link_chain", PathBuf::from("link_out_dir")),
        ("link_proc", PathBuf::from("/proc/self/root")),
        ("link_proc_cwd", PathBuf::from("/proc/self/cwd")),
        ("link_dev_null", PathBuf::from("/dev/null")),
        ("link_dangling_out", outside.join("does-not-exist")),
        ("link_self_loop", PathBuf::from("link_self_loop")),
        ("link_loop_a", PathBuf::from("link_loop_b")),
        ("link_loop_b", PathBuf::from("link_loop_a")),
        ("link_in", PathBuf::from("ok.txt")),
        ("link_in_dir", PathBuf::from("sub")),
        ("link_to_fifo", PathBuf::from("fifo")),
    ];
    for (name, target) in links {
        symlink(target, root.join(name)).unwrap();
    }
    let status = std::process::Command::new("mkfifo")
        .arg(root.join("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    // A character device (needs root; without it the line still has to be refused).
    let _ = std::process::Command::new("mknod")
        .arg(root.join("devnull_node"))
        .args(["c", "1", "3"])
        .status();
    let _ = std::os::unix::net::UnixListener::bind(root.join("socket")).unwrap();
    Layout {
        _tmp: tmpdir,
        tmp,
        root,
        outside,
    }
}

/// Hostile corpus lines: (expectation, raw path).
pub fn corpus() -> Vec<(String, String)> {
    let text = include_str!("../fixtures/hostile_paths.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (expect, path) = l.split_once('\t').unwrap();
            (expect.to_string(), path.to_string())
        })
        .collect()
}
