//! Project files a project server runs. A trusted stdio server runs outside the sandbox, while a
//! confined command may write anywhere in the project: if `sh server.sh` were trusted by its
//! command line alone, a command could rewrite `server.sh` and the next start would run that code
//! unconfined. So every path a server's command line names inside the project is pinned: its kind
//! and content (SHA-256) at trust time join the trust digest, and any change (rewritten, created,
//! removed, re-pointed symlink) makes the project untrusted again.
//!
//! A file with a data-store extension ([`DATA_STORE_EXTENSIONS`]: a database or log the server
//! itself writes as it runs, such as `--db-path db.sqlite`) is pinned by kind only (`data file`),
//! so its own writes do not untrust the project at every use; replacing it by a symlink, a
//! directory or a FIFO is still a change.
//!
//! Candidates are the command (when it contains `/`; a bare name is looked up in `PATH`), every
//! argument, and the value of `--flag=value` arguments, resolved against the server's working
//! directory; plus where an interpreter's own lookup lands first ([`resolution_candidates`]:
//! the module of `python -m mod`, the package and `.bin` link of `npx pkg`, in the working
//! directory and, for `npx`, each folder above it). Candidates that lie inside the project,
//! lexically or once symbolic links are resolved, are pinned; what they import in turn (a
//! script's modules, the rest of a directory's content) is not.
//!
//! A user-level server (the person's own `mcp.json`) starts in an empty directory of the data
//! dir; when its entry still reaches into the project (a `cwd` there: [`cwd_pin`]; a command,
//! argument or `env` path there, `${AIBUDDY_PROJECT_ROOT}` included), it gets the same pins and
//! needs the same trust as a project server (`super::mcp`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ts_rs::TS;

use crate::settings::normalize_lexically;

/// The paths a command line names (pure): see the module documentation.
pub fn candidates<'a>(command: &'a str, args: &'a [String]) -> Vec<&'a str> {
    let mut out = Vec::new();
    if command.contains('/') {
        out.push(command);
    }
    for a in args {
        out.push(a.as_str());
        if a.starts_with('-')
            && let Some((_, value)) = a.split_once('=')
        {
            out.push(value);
        }
    }
    out.retain(|c| !c.is_empty());
    out
}

/// What one pinned path was when evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Pin {
    /// Project-relative (lexical) path as it will be opened.
    pub path: String,
    /// `absent`, `file sha256:<hex>`, `data file`, `directory`, `outside the project: <real path>`, `other`
    /// (FIFO, device, socket) or `unreadable (<kind>)`.
    pub state: String,
    /// The absolute (lexical) path evaluated, also for a pin labelled by a variable: what the
    /// window watches (`super::watch`). Never shown (not even by `Debug`), not in the digest.
    #[serde(skip)]
    #[ts(skip)]
    pub at: super::watch::PinnedAt,
}

/// SHA-256 of a regular file, opened without blocking and checked on the open file.
fn hash_regular(path: &Path) -> Result<String, String> {
    let file = super::files::open_nonblocking(path).map_err(|e| e.kind().to_string())?;
    let meta = file.metadata().map_err(|e| e.kind().to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut reader = file;
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.kind().to_string()),
        }
    }
    Ok(hex::encode(h.finalize()))
}

/// Extensions of files a server writes while it runs (databases, logs): pinned by kind only.
pub const DATA_STORE_EXTENSIONS: &[&str] = &[
    "db", "sqlite", "sqlite3", "duckdb", "jsonl", "ndjson", "log", "csv",
];

fn is_data_store(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| DATA_STORE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The state of one path (see [`Pin::state`]).
fn state_of(project_root: &Path, path: &Path) -> String {
    let meta = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(path) {
                Ok(_) => "dangling symbolic link".to_string(),
                Err(_) => "absent".to_string(),
            };
        }
        Err(e) => return format!("unreadable ({})", e.kind()),
        Ok(m) => m,
    };
    match std::fs::canonicalize(path) {
        Ok(real) if !real.starts_with(project_root) => {
            return format!("outside the project: {}", real.display());
        }
        Ok(_) => {}
        Err(e) => return format!("unreadable ({})", e.kind()),
    }
    if meta.is_dir() {
        "directory".to_string()
    } else if meta.is_file() && is_data_store(path) {
        "data file".to_string()
    } else if meta.is_file() {
        match hash_regular(path) {
            Ok(h) => format!("file sha256:{h}"),
            Err(why) => format!("unreadable ({why})"),
        }
    } else {
        "other".to_string()
    }
}

/// The pins of one stdio server started in `cwd` (absolute) with `command` and `args`.
pub fn pins(
    project_root: &Path,
    cwd: &Path,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> Vec<Pin> {
    let mut out: Vec<Pin> = Vec::new();
    let mut pin = |given: &str, label: Option<String>| {
        let joined = normalize_lexically(&cwd.join(given));
        // The working directory may itself be a symlink: pin where the path is in the project.
        let Some(rel) = inside(project_root, &joined) else {
            return;
        };
        let shown = label.unwrap_or_else(|| {
            if rel.as_os_str().is_empty() {
                ".".to_string()
            } else {
                rel.display().to_string()
            }
        });
        if out.iter().any(|p| p.path == shown) {
            return;
        }
        out.push(Pin {
            state: state_of(project_root, &joined),
            path: shown,
            at: super::watch::PinnedAt(joined),
        });
    };
    for c in candidates(command, args) {
        pin(c, None);
    }
    for c in resolution_candidates(command, args, cwd.components().count()) {
        pin(&c, None);
    }
    for (label, given) in env_candidates(command, env) {
        pin(&given, Some(label));
    }
    // Without a `PATH` of its own, a bare command is looked up in the inherited one, whose
    // entries may lie in the project (`.`, `node_modules/.bin`, `~/proj/bin`).
    if !env.contains_key("PATH")
        && let Some(inherited) = std::env::var_os("PATH")
    {
        for (label, given) in path_lookup(command, &inherited.to_string_lossy(), "$PATH") {
            pin(&given, Some(label));
        }
    }
    out
}

/// `path` relative to the (canonical) project root when it lies inside: lexically, or once its
/// symbolic links are resolved (a link outside the project that points in).
fn inside(project_root: &Path, path: &Path) -> Option<PathBuf> {
    if let Ok(rel) = path.strip_prefix(project_root) {
        return Some(rel.to_path_buf());
    }
    // The longest part that exists, resolved, then the rest (an absent file is pinned as absent).
    let mut existing = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let real = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    let mut real = real;
    for part in rest.iter().rev() {
        real.push(part);
    }
    real.strip_prefix(project_root).ok().map(Path::to_path_buf)
}

/// The pin of a working directory inside the project (None outside it): for a user-level server,
/// whose working directory is otherwise an empty directory of the data dir.
pub fn cwd_pin(project_root: &Path, cwd: &Path) -> Option<Pin> {
    let joined = normalize_lexically(cwd);
    let rel = inside(project_root, &joined)?;
    let shown = if rel.as_os_str().is_empty() {
        ".".to_string()
    } else {
        rel.display().to_string()
    };
    let at = project_root.join(&rel);
    Some(Pin {
        path: format!("cwd {shown}"),
        state: state_of(project_root, &at),
        at: super::watch::PinnedAt(at),
    })
}

/// Whether `command` names a Python interpreter (`python`, `python3`, `python3.12`, a venv's).
fn is_python(command: &str) -> bool {
    let base = command.rsplit('/').next().unwrap_or(command);
    base.strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The package a `npx`/`npm exec` command line runs (its first operand, or `--package`'s value).
fn npx_package(command: &str, args: &[String]) -> Option<String> {
    let base = command.rsplit('/').next().unwrap_or(command);
    let args: &[String] = match base {
        "npx" => args,
        "npm" => match args.first().map(String::as_str) {
            Some("exec" | "x") => &args[1..],
            _ => return None,
        },
        _ => return None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--package=") {
            return Some(v.to_string());
        }
        if a == "-p" || a == "--package" {
            return it.next().cloned();
        }
        if a == "--" {
            return it.next().cloned();
        }
        if !a.starts_with('-') {
            return Some(a.clone());
        }
    }
    None
}

/// Where an interpreter's own lookup lands before anything installed (pure), relative to the
/// server's working directory, `depth` its number of path components: `python -m a.b` imports
/// `a` from the working directory first (`a.py`, `a/__init__.py`, then `a/b.py` or
/// `a/b/__main__.py`); `npx pkg@1` (and `npm exec`) runs `node_modules/.bin/<bin>` of the working
/// directory or the nearest folder above it that has one, from `node_modules/pkg`.
pub fn resolution_candidates(command: &str, args: &[String], depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    if is_python(command) {
        let module = args.iter().enumerate().find_map(|(i, a)| {
            if a == "-m" {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix("-m")
                    .filter(|m| !m.is_empty() && !a.starts_with("--"))
                    .map(str::to_string)
            }
        });
        if let Some(module) = module.filter(|m| !m.is_empty() && !m.contains('/')) {
            let parts: Vec<&str> = module.split('.').collect();
            for i in 1..=parts.len() {
                let dir = parts[..i].join("/");
                out.push(format!("{dir}.py"));
                out.push(format!("{dir}/__init__.py"));
            }
            out.push(format!("{}/__main__.py", parts.join("/")));
        }
    }
    if let Some(spec) = npx_package(command, args) {
        // `@scope/name@1.2` -> package `@scope/name`, bin `name`.
        let (scoped, rest) = match spec.strip_prefix('@') {
            Some(r) => ("@", r),
            None => ("", spec.as_str()),
        };
        let package = format!("{scoped}{}", rest.split('@').next().unwrap_or(rest));
        let bin = package.rsplit('/').next().unwrap_or(&package).to_string();
        let local = !package.is_empty()
            && !package.contains("..")
            && !package.starts_with('/')
            && !package.starts_with('.');
        if local {
            for up in 0..=depth {
                let prefix = "../".repeat(up);
                out.push(format!("{prefix}node_modules/.bin/{bin}"));
                out.push(format!("{prefix}node_modules/{package}/package.json"));
            }
        }
    }
    out
}

/// Where a lookup of a bare `command` through `path` may land, labelled `<var>[i]/<command>`.
fn path_lookup(command: &str, path: &str, var: &str) -> Vec<(String, String)> {
    if command.contains('/') || command.is_empty() {
        return Vec::new();
    }
    path.split(':')
        .enumerate()
        .map(|(i, entry)| {
            let dir = if entry.is_empty() { "." } else { entry };
            (
                format!("{var}[{i}]/{command}"),
                format!("{}/{command}", dir.trim_end_matches('/')),
            )
        })
        .collect()
}

/// Paths the server's environment names (pure): each `:`-separated element of each value
/// (`LD_PRELOAD=./x.so`, `PYTHONPATH=lib`, ...), and for a bare command, where a `PATH` set in the
/// entry makes the lookup land (`PATH=./bin` runs `./bin/<command>`). Labelled by variable name,
/// never by value: values may be secrets.
pub fn env_candidates(command: &str, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, value) in env {
        if name == "PATH" {
            out.extend(path_lookup(command, value, "$PATH"));
        }
        let parts: Vec<&str> = value.split(':').filter(|p| !p.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            let label = if parts.len() > 1 {
                format!("${name}[{i}]")
            } else {
                format!("${name}")
            };
            out.push((label, (*part).to_string()));
        }
    }
    out
}

/// The trust digest with the pins folded in; unchanged when there is none (so records made before
/// pins existed still match a project whose servers name no project file).
pub fn fold_digest<'a>(
    files_digest: &str,
    pins: impl IntoIterator<Item = (&'a str, &'a [Pin])> + Clone,
) -> String {
    if pins.clone().into_iter().all(|(_, p)| p.is_empty()) {
        return files_digest.to_string();
    }
    let mut h = Sha256::new();
    h.update(b"aibuddy-trust-pins-v1\0");
    h.update(files_digest.as_bytes());
    for (server, list) in pins {
        for p in list {
            for part in [server, p.path.as_str(), p.state.as_str()] {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part.as_bytes());
            }
        }
    }
    hex::encode(h.finalize())
}

/// Resolve a server's working directory for display: canonical when it exists.
pub fn shown_cwd(cwd: &Path) -> PathBuf {
    std::fs::canonicalize(cwd).unwrap_or_else(|_| normalize_lexically(cwd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn candidates_are_paths_args_and_flag_values() {
        let args: Vec<String> = ["server.js", "--config=cfg.json", "-y", "--port", "80"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            candidates("node", &args),
            vec![
                "server.js",
                "--config=cfg.json",
                "cfg.json",
                "-y",
                "--port",
                "80"
            ]
        );
        assert_eq!(candidates("./run.sh", &[]), vec!["./run.sh"]);
        assert!(candidates("npx", &[]).is_empty());
    }

    #[test]
    fn interpreters_lookups_are_candidates() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            resolution_candidates("/venv/bin/python3", &a(&["-u", "-m", "srv.main"]), 0),
            vec![
                "srv.py",
                "srv/__init__.py",
                "srv/main.py",
                "srv/main/__init__.py",
                "srv/main/__main__.py"
            ]
        );
        assert_eq!(
            resolution_candidates("npx", &a(&["-y", "@mcp/server-x@1.2", "."]), 1),
            vec![
                "node_modules/.bin/server-x",
                "node_modules/@mcp/server-x/package.json",
                "../node_modules/.bin/server-x",
                "../node_modules/@mcp/server-x/package.json"
            ]
        );
        assert_eq!(
            resolution_candidates("npm", &a(&["exec", "--package=tool", "--", "t"]), 0),
            vec!["node_modules/.bin/tool", "node_modules/tool/package.json"]
        );
        assert!(resolution_candidates("node", &a(&["-m", "x"]), 3).is_empty());
        assert!(resolution_candidates("pythonic", &a(&["-m", "x"]), 3).is_empty());
    }

    #[test]
    fn a_cwd_reaching_the_project_through_a_symlink_is_pinned() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("p");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        symlink(root.join("sub"), base.join("link")).unwrap();
        let p = cwd_pin(&root, &base.join("link")).unwrap();
        assert_eq!(
            (p.path.as_str(), p.state.as_str()),
            ("cwd sub", "directory")
        );
        assert!(cwd_pin(&root, &base).is_none());
        let p = pins(
            &root,
            &base.join("link"),
            "python3",
            &["-m".into(), "m".into()],
            &BTreeMap::new(),
        );
        let names: Vec<&str> = p.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "sub/-m",
                "sub/m",
                "sub/m.py",
                "sub/m/__init__.py",
                "sub/m/__main__.py"
            ],
            "every argument, then what `python -m` finds first: {p:?}"
        );
    }

    #[test]
    fn env_paths_and_a_path_lookup_into_the_project_are_pinned_by_name_not_value() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap().join("p");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/node"), "#!/bin/sh\n").unwrap();
        let env = BTreeMap::from([
            ("PATH".to_string(), "./bin:/usr/bin".to_string()),
            ("TOKEN".to_string(), "s3cret-value".to_string()),
        ]);
        let p = pins(&root, &root, "node", &[], &env);
        let names: Vec<&str> = p.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(names, vec!["$PATH[0]/node", "$PATH[0]", "$TOKEN"], "{p:?}");
        assert!(p[0].state.starts_with("file sha256:"), "{p:?}");
        assert_eq!(p[2].state, "absent");
        let text = format!("{p:?}");
        assert!(!text.contains("s3cret"), "{text}");
    }

    #[test]
    fn each_kind_of_change_changes_the_pin() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap().join("p");
        std::fs::create_dir_all(root.join("d")).unwrap();
        let args = vec![
            "s.sh".to_string(),
            "d".to_string(),
            "/usr/bin/x".to_string(),
        ];
        let get = || pins(&root, &root, "sh", &args, &BTreeMap::new());
        let absent = get();
        assert_eq!(absent.len(), 2, "only paths inside the project: {absent:?}");
        assert_eq!(absent[0].state, "absent");
        assert_eq!(absent[1].state, "directory");
        std::fs::write(root.join("s.sh"), "exit 0").unwrap();
        let one = get();
        assert!(one[0].state.starts_with("file sha256:"), "{one:?}");
        std::fs::write(root.join("s.sh"), "exit 1").unwrap();
        let two = get();
        assert_ne!(one, two);
        std::fs::remove_file(root.join("s.sh")).unwrap();
        symlink("/etc/hostname", root.join("s.sh")).unwrap();
        assert!(
            get()[0].state.starts_with("outside the project"),
            "{:?}",
            get()
        );
        let digest = |p: &[Pin]| fold_digest("f", [("s", p)]);
        assert_ne!(digest(&one), digest(&two));
        assert_ne!(digest(&one), "f");
        assert_eq!(digest(&[]), "f");

        // A database the server writes is pinned by kind, not content.
        std::fs::write(root.join("mem.sqlite"), "v1").unwrap();
        let db = |root: &Path| {
            pins(
                root,
                root,
                "srv",
                &["--db=mem.sqlite".to_string()],
                &BTreeMap::new(),
            )
        };
        let before = db(&root);
        assert_eq!(before[1].state, "data file", "{before:?}");
        std::fs::write(root.join("mem.sqlite"), "v2").unwrap();
        assert_eq!(db(&root), before);
        std::fs::remove_file(root.join("mem.sqlite")).unwrap();
        std::fs::create_dir(root.join("mem.sqlite")).unwrap();
        assert_ne!(db(&root), before);
    }
}
