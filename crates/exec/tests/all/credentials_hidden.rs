//! Every credential location of `hide::CREDENTIAL_LOCATIONS` and every one the environment names
//! (`hide::CREDENTIAL_ENV`, passed as `credential_paths`) is unreadable inside a real command on
//! the namespace path, as a file and as a directory, while the rest of the fake home stays
//! readable (issue 22: `~/.claude/.credentials.json`, rclone, browser profiles, histories and the
//! file named by `GOOGLE_APPLICATION_CREDENTIALS` were readable).

use crate::support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use aibuddy_exec::hide::{self, CREDENTIAL_ENV, CREDENTIAL_LOCATIONS, EnvShape};
use aibuddy_exec::{Confinement, ExecRequest, NamespacePolicy, Stream, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug)]
enum Shape {
    File,
    Dir,
}

/// Creates `path` holding `marker` (a directory gets it in `secret` inside).
fn plant(path: &Path, shape: Shape, marker: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match shape {
        Shape::File => std::fs::write(path, marker).unwrap(),
        Shape::Dir => {
            std::fs::create_dir_all(path).unwrap();
            std::fs::write(path.join("secret"), marker).unwrap();
        }
    }
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Plants every location (home table and environment table) in `shape`, runs one command that
/// tries to read each, and returns (planted (path, marker), output).
async fn probe(shape: Shape) -> (Vec<(PathBuf, String)>, String) {
    let root = support::visible_tempdir();
    let root_path = root.path().canonicalize().unwrap();
    let home = root_path.join("home");
    let elsewhere = root_path.join("elsewhere");
    std::fs::create_dir_all(&home).unwrap();
    let mut planted: Vec<(PathBuf, String)> = Vec::new();
    for (i, c) in CREDENTIAL_LOCATIONS.iter().enumerate() {
        planted.push((home.join(c.path), format!("HOME-SECRET-{i}-{:?}", shape)));
    }
    // Every variable of the environment table, naming paths outside the home.
    let value_of = |var: &str| -> Option<OsString> {
        let entry = CREDENTIAL_ENV.iter().find(|e| e.var == var)?;
        let base = elsewhere.join(var);
        Some(match entry.shape {
            EnvShape::Path | EnvShape::Under(_) => base.into_os_string(),
            EnvShape::PathList => {
                let mut list = base.join("a").into_os_string();
                list.push(":relative/ignored:");
                list.push(base.join("b"));
                list
            }
        })
    };
    let named = hide::env_credential_paths(value_of, Some(&home));
    for (i, p) in named.iter().enumerate() {
        planted.push((p.clone(), format!("ENV-SECRET-{i}-{:?}", shape)));
    }
    // Each variable contributes at least one path.
    assert!(named.len() >= CREDENTIAL_ENV.len(), "{named:?}");
    for (p, marker) in &planted {
        plant(p, shape, marker);
    }
    std::fs::write(home.join(".bashrc"), "VISIBLE-CONTROL").unwrap();
    let mut script = format!("cat {}/.bashrc; echo\n", quote(&home));
    for (p, _) in &planted {
        script.push_str(&match shape {
            Shape::File => format!("cat {} 2>/dev/null; echo\n", quote(p)),
            Shape::Dir => format!(
                "cat {q}/secret 2>/dev/null; ls -A {q} 2>/dev/null; echo\n",
                q = quote(p)
            ),
        });
    }
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("probe.sh"), script).unwrap();
    let mut r = ExecRequest::new("sh probe.sh", project.path());
    r.namespaces = NamespacePolicy::Auto;
    r.home = Some(home.clone());
    r.credential_paths = named;
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    assert!(
        matches!(out.confinement, Confinement::Namespaces { .. }),
        "this test needs the namespace path: {:?}",
        out.confinement
    );
    let mut text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    text.push_str(&String::from_utf8_lossy(&rec.stream(Stream::Stderr)));
    (planted, text)
}

async fn check(shape: Shape) {
    let (planted, text) = probe(shape).await;
    assert!(
        text.contains("VISIBLE-CONTROL"),
        "the probe could not read the home at all:\n{text}"
    );
    let readable: Vec<String> = planted
        .iter()
        .filter(|(_, marker)| text.contains(marker.as_str()))
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        readable.is_empty(),
        "readable inside the command as a {shape:?}:\n{}",
        readable.join("\n")
    );
    // Directories are empty inside (no names leak either).
    if let Shape::Dir = shape {
        assert!(!text.contains("secret"), "{text}");
    }
}

#[tokio::test]
async fn every_credential_location_is_unreadable_as_a_file() {
    check(Shape::File).await;
}

#[tokio::test]
async fn every_credential_location_is_unreadable_as_a_directory() {
    check(Shape::Dir).await;
}

#[tokio::test]
async fn an_exposed_environment_location_stays_readable() {
    let root = support::visible_tempdir();
    let root_path = root.path().canonicalize().unwrap();
    let sa = root_path.join("sa.json");
    let kube = root_path.join("kubeconfig");
    std::fs::write(&sa, "SA-EXPOSED").unwrap();
    std::fs::write(&kube, "KUBE-HIDDEN").unwrap();
    let project = tempfile::tempdir().unwrap();
    let mut r = ExecRequest::new(
        format!("cat {} {}", quote(&sa), quote(&kube)),
        project.path(),
    );
    r.namespaces = NamespacePolicy::Auto;
    r.credential_paths = vec![sa.clone(), kube.clone()];
    r.exposed_credentials = vec![sa.clone()];
    let rec = Recorder::new();
    run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    assert_eq!(text, "SA-EXPOSED");
}
