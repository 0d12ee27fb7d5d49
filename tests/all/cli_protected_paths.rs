//! Issue 22 through the real `aibuddy` binary: one approved `execute` plants a git hook,
//! `core.fsmonitor`, an alias and a credential helper in `.git/config`, a VS Code task, an
//! `.envrc` and a fresh `.claude/x`. On the namespace path every write is refused; on the
//! Landlock-only fallback (`exec.namespaces: false`) the writes are undone when the command ends.
//! Either way nothing is left behind and the person's own `git status`/`git commit` afterwards
//! runs nothing the command planted; `git add/commit/checkout` inside a command still work.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::aibuddy;

/// The person's git: no global or system config, a fixed identity.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=p", "-c", "user.email=p@p"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

struct Setup {
    _t: tempfile::TempDir,
    project: std::path::PathBuf,
    data: std::path::PathBuf,
    marker: std::path::PathBuf,
}

/// A committed repository; `namespaces: false` puts the person's settings on the fallback.
fn setup(namespaces: bool) -> Setup {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let project = base.join("proj");
    let data = base.join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    assert!(
        git(&project, &["init", "-q", "-b", "main"])
            .status
            .success()
    );
    std::fs::write(project.join("a"), "a\n").unwrap();
    assert!(git(&project, &["add", "a"]).status.success());
    assert!(git(&project, &["commit", "-qm", "a"]).status.success());
    if !namespaces {
        std::fs::write(
            data.join("settings.json"),
            r#"{"exec": {"namespaces": false}}"#,
        )
        .unwrap();
    }
    Setup {
        marker: base.join("marker"),
        _t: t,
        project,
        data,
    }
}

fn call_execute(s: &Setup, command: &str) -> Value {
    let args = serde_json::json!({ "command": command }).to_string();
    let (code, out, err) = aibuddy(
        &s.project,
        &s.data,
        &["call", "execute", &args, "--yes", "--json"],
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(code, 0, "{v}\n{err}");
    v
}

fn attack(marker: &Path) -> String {
    let m = marker.display();
    [
        format!("printf '#!/bin/sh\\ntouch {m}.hook\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo WROTE hook"),
        format!("git config core.fsmonitor 'touch {m}.fsmonitor; false' && echo WROTE fsmonitor"),
        format!("git config alias.st '!touch {m}.alias' && echo WROTE alias"),
        format!("git config credential.helper '!touch {m}.cred' && echo WROTE credential"),
        "mkdir -p .vscode && echo '{\"tasks\":[{\"runOptions\":{\"runOn\":\"folderOpen\"}}]}' > .vscode/tasks.json && echo WROTE vscode".to_string(),
        "echo 'touch x' > .envrc && echo WROTE envrc".to_string(),
        "mkdir -p .claude && echo x > .claude/x && echo WROTE claude".to_string(),
    ]
    .iter()
    .map(|l| format!("( {l} ) 2>/dev/null"))
    .collect::<Vec<_>>()
    .join("\n")
}

fn wrote(v: &Value) -> Vec<String> {
    v["model"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("WROTE "))
        .map(str::to_string)
        .collect()
}

/// After the command: nothing planted remains and the person's git runs nothing.
fn nothing_left_and_git_runs_nothing(s: &Setup, config_before: &[u8]) {
    let p = &s.project;
    for rel in [".git/hooks/pre-commit", ".vscode", ".envrc", ".claude"] {
        assert!(
            std::fs::symlink_metadata(p.join(rel)).is_err(),
            "{rel} left behind"
        );
    }
    assert_eq!(std::fs::read(p.join(".git/config")).unwrap(), config_before);
    let _ = git(p, &["status"]);
    let _ = git(p, &["st"]);
    std::fs::write(p.join("b"), "b\n").unwrap();
    assert!(git(p, &["add", "b"]).status.success());
    let c = git(p, &["commit", "-qm", "b"]);
    assert!(c.status.success(), "{c:?}");
    let ran: Vec<String> = std::fs::read_dir(s.marker.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("marker"))
        .collect();
    assert!(ran.is_empty(), "the person's git ran {ran:?}");
}

#[test]
fn the_attack_is_refused_through_the_cli_on_the_namespace_path() {
    let s = setup(true);
    let config = std::fs::read(s.project.join(".git/config")).unwrap();
    let v = call_execute(&s, &attack(&s.marker));
    let label = v["client"]["confinement"].as_str().unwrap_or_default();
    assert!(label.starts_with("namespaces"), "{v}");
    assert_eq!(wrote(&v), Vec::<String>::new(), "{v}");
    nothing_left_and_git_runs_nothing(&s, &config);
}

#[test]
fn the_attack_is_undone_through_the_cli_on_the_landlock_fallback() {
    let s = setup(false);
    let config = std::fs::read(s.project.join(".git/config")).unwrap();
    let v = call_execute(&s, &attack(&s.marker));
    let label = v["client"]["confinement"].as_str().unwrap_or_default();
    assert!(label.starts_with("landlock"), "{v}");
    // Landlock cannot refuse them: the writes happen and are undone when the command ends, and
    // the call says so.
    assert!(wrote(&v).contains(&"fsmonitor".to_string()), "{v}");
    let restored = v["client"]["restored_protected"].to_string();
    let removed = v["client"]["removed_protected"].to_string();
    assert!(restored.contains(".git/config"), "{v}");
    assert!(restored.contains(".git/hooks"), "{v}");
    assert!(
        removed.contains(".envrc") && removed.contains(".vscode"),
        "{v}"
    );
    assert!(
        v["model"]
            .as_str()
            .unwrap()
            .contains("changed by the command and restored after it"),
        "{v}"
    );
    nothing_left_and_git_runs_nothing(&s, &config);
    // `tools list` says the fallback does not refuse them.
    let (code, out, _) = aibuddy(&s.project, &s.data, &["tools", "list", "--json"]);
    assert_eq!(code, 0);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let exec = rows.iter().find(|r| r["name"] == "execute").unwrap();
    let label = exec["confinement"].as_str().unwrap_or_default();
    assert!(
        label.contains("protected paths not refused"),
        "tools list: {exec}"
    );
}

#[test]
fn git_add_commit_and_checkout_work_inside_a_command_on_both_paths() {
    for namespaces in [true, false] {
        let s = setup(namespaces);
        let v = call_execute(
            &s,
            "set -e; g() { git -c user.name=c -c user.email=c@c \"$@\"; }
             echo c > c; g add c; g commit -qm c; g checkout -qb side; echo d > d; g add d;
             g commit -qm d; g checkout -q main; g log --format=%s side | tr '\\n' ' '; echo",
        );
        assert_eq!(v["client"]["exit_code"], 0, "{v}");
        assert!(v["model"].as_str().unwrap().contains("d c a"), "{v}");
        let log = git(&s.project, &["log", "--format=%s", "side"]);
        assert_eq!(String::from_utf8_lossy(&log.stdout), "d\nc\na\n");
        assert_eq!(
            v["client"]["removed_protected"],
            serde_json::json!([]),
            "{v}"
        );
    }
}

#[test]
fn a_project_may_add_protected_paths_but_not_remove_them() {
    let s = setup(true);
    std::fs::create_dir_all(s.project.join(".aibuddy")).unwrap();
    std::fs::write(
        s.project.join(".aibuddy/settings.json"),
        "{\n  \"exec\": {\n    \"protected_paths\": [\"Makefile\"],\n    \"unprotected_paths\": [\".git/hooks\"]\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(s.project.join("Makefile"), "all:\n").unwrap();
    let (code, out, _) = aibuddy(&s.project, &s.data, &["tools", "check", "--json"]);
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let problem = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["field"] == "exec.unprotected_paths")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(problem["line"], 4, "{problem}");
    let v = call_execute(
        &s,
        "( echo evil > Makefile ) 2>/dev/null && echo WROTE make; ( echo x > .git/hooks/pre-commit ) 2>/dev/null && echo WROTE hook",
    );
    assert_eq!(wrote(&v), Vec::<String>::new(), "{v}");
    assert_eq!(
        std::fs::read_to_string(s.project.join("Makefile")).unwrap(),
        "all:\n"
    );
}

/// Gaps closed after the first attack: a hooks path set through an include (`.git/config`
/// includes `../team.gitconfig`, which sets `core.hooksPath = .githooks`), the included file
/// itself, and a repository nested in the project that is no submodule (`vendor/lib`). Through
/// the CLI on both paths, the person's git afterwards runs nothing the command planted.
#[test]
fn includes_and_nested_repositories_are_protected_through_the_cli_on_both_paths() {
    for namespaces in [true, false] {
        let s = setup(namespaces);
        let p = &s.project;
        let mut config = std::fs::read_to_string(p.join(".git/config")).unwrap();
        config.push_str("[include]\n\tpath = ../team.gitconfig\n");
        std::fs::write(p.join(".git/config"), &config).unwrap();
        std::fs::write(
            p.join("team.gitconfig"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        let lib = p.join("vendor/lib");
        std::fs::create_dir_all(&lib).unwrap();
        assert!(git(&lib, &["init", "-q", "-b", "main"]).status.success());
        let m = s.marker.display();
        let cmd = [
            format!("mkdir -p .githooks && printf '#!/bin/sh\\ntouch {m}.hook\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit && echo WROTE hook"),
            format!("printf '[alias]\\n\\tst = !touch {m}.inc\\n' >> team.gitconfig && echo WROTE include"),
            format!("git -C vendor/lib config core.fsmonitor 'touch {m}.nested; false' && echo WROTE nested-config"),
            format!("printf '#!/bin/sh\\ntouch {m}.nested-hook\\n' > vendor/lib/.git/hooks/pre-commit && chmod +x vendor/lib/.git/hooks/pre-commit && echo WROTE nested-hook"),
        ]
        .iter()
        .map(|l| format!("( {l} ) 2>/dev/null"))
        .collect::<Vec<_>>()
        .join("\n");
        let v = call_execute(&s, &cmd);
        if namespaces {
            assert_eq!(wrote(&v), Vec::<String>::new(), "{v}");
        } else {
            let restored = v["client"]["restored_protected"].to_string();
            assert!(restored.contains("team.gitconfig"), "{v}");
            assert!(restored.contains("vendor/lib/.git/config"), "{v}");
        }
        assert_eq!(
            std::fs::read_to_string(p.join("team.gitconfig")).unwrap(),
            "[core]\n\thooksPath = .githooks\n"
        );
        nothing_left_and_git_runs_nothing(&s, config.as_bytes());
        let _ = git(&lib, &["status"]);
        std::fs::write(lib.join("x"), "x\n").unwrap();
        assert!(git(&lib, &["add", "x"]).status.success());
        assert!(git(&lib, &["commit", "-qm", "x"]).status.success());
        let ran: Vec<String> = std::fs::read_dir(s.marker.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("marker"))
            .collect();
        assert!(ran.is_empty(), "{namespaces}: the person's git ran {ran:?}");
    }
}
