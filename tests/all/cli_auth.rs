//! Issue 11, `aibuddy auth` through the real binary: `auth status` says which providers have a key
//! and from where, never the key; `auth set` stores a key from stdin in the OS keyring or, where
//! there is none (this container), says so clearly and points at the environment variables.

use crate::support;

use std::io::Write;
use std::process::Stdio;

use serde_json::{Value, json};

const SECRET: &str = "sk-ant-never-print-7c41d2";

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    (tmp, project, data)
}

#[test]
fn status_names_the_source_and_never_the_key() {
    let (_tmp, project, data) = dirs();
    std::fs::write(
        data.join("settings.json"),
        json!({"providers": {"default": "local", "local": {
            "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "q"}}})
        .to_string(),
    )
    .unwrap();
    for json_flag in [true, false] {
        let mut cmd = support::aibuddy_cmd(&project, &data);
        cmd.args(["auth", "status"])
            .env("ANTHROPIC_API_KEY", SECRET)
            .env_remove("OPENAI_API_KEY");
        if json_flag {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{e}");
        assert!(
            !o.contains(SECRET) && !e.contains(SECRET),
            "key printed: {o}{e}"
        );
        if json_flag {
            let rows: Value = serde_json::from_str(&o).unwrap();
            let row = |n: &str| {
                rows.as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["provider"] == n)
                    .cloned()
                    .unwrap_or_else(|| panic!("{n} missing: {rows}"))
            };
            assert_eq!(row("anthropic")["has_key"], true);
            assert_eq!(row("anthropic")["source"], "env");
            assert_eq!(row("openai")["has_key"], false);
            assert_eq!(row("local")["kind"], "openai-chat");
            assert_eq!(row("local")["env_var"], "OPENAI_API_KEY");
        } else {
            assert!(
                o.contains("anthropic  anthropic  key from ANTHROPIC_API_KEY"),
                "{o}"
            );
            assert!(o.contains("openai  openai-responses  no key"), "{o}");
        }
    }
}

#[test]
fn set_without_a_keyring_says_so_and_points_at_the_environment() {
    let (_tmp, project, data) = dirs();
    // A name nobody uses, so a machine with a keyring is not disturbed (deleted below).
    let name = format!("aibuddy-cli-auth-test-{}", std::process::id());
    let mut child = support::aibuddy_cmd(&project, &data)
        .args(["auth", "set", &name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{SECRET}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        !o.contains(SECRET) && !e.contains(SECRET),
        "key printed: {o}{e}"
    );
    if out.status.code() == Some(0) {
        // A machine with a keyring: the key was stored under the name; remove it again.
        let stored = aibuddy_provider::keys::keyring_get(&name)
            .unwrap()
            .expect("stored");
        assert_eq!(stored.expose(), SECRET);
        aibuddy_provider::KeyStore::new().delete(&name).unwrap();
        return;
    }
    // No keyring (a container where keyutils is denied): exit 1 with a clear message.
    assert!(
        !aibuddy_provider::keys::keyring_usable(),
        "the keyring works here but `auth set` failed: {e}"
    );
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("keyring is not available"), "{e}");
    assert!(
        e.contains("ANTHROPIC_API_KEY") && e.contains("OPENAI_API_KEY"),
        "{e}"
    );
    assert!(e.contains("stage Execution"), "{e}");
}

#[test]
fn set_with_nothing_on_stdin_is_a_usage_error() {
    let (_tmp, project, data) = dirs();
    let (code, _, err) = support::aibuddy(&project, &data, &["auth", "set", "anthropic"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no key on stdin"), "{err}");
}

#[test]
fn set_with_a_name_no_provider_entry_can_have_is_refused_at_parameters() {
    let (_tmp, project, data) = dirs();
    for name in ["a/b", "../x", "with space"] {
        let out = support::aibuddy_cmd(&project, &data)
            .args(["auth", "set", name])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(b"sk-test")?;
                c.wait_with_output()
            })
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {e}");
        assert!(
            e.contains("provider entry name") && e.contains("stage Parameters"),
            "{e}"
        );
    }
}
