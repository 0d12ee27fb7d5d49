//! Project trust through the library: what applies untrusted (narrowing fields, the user level),
//! what waits for trust (widening fields, project MCP servers), the no-TOCTOU grant, symlinked
//! trust files, resolved writable roots in the execute scope line, and the `TrustChanged` event.

use std::path::{Path, PathBuf};

use aibuddy::app::{App, AppOptions, check};
use aibuddy::trust::{self, TrustError, TrustState};
use serde_json::json;

struct Fx {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    project: PathBuf,
    data: PathBuf,
}

fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let project = base.join("proj");
    let data = base.join("data");
    std::fs::create_dir_all(project.join(".aibuddy")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    Fx {
        _tmp: tmp,
        base,
        project,
        data,
    }
}

impl Fx {
    fn project_settings(&self, text: &str) {
        std::fs::write(self.project.join(".aibuddy/settings.json"), text).unwrap();
    }
    fn user_settings(&self, text: &str) {
        std::fs::write(self.data.join("settings.json"), text).unwrap();
    }
    fn opts(&self) -> AppOptions {
        AppOptions {
            project: self.project.clone(),
            data_dir: self.data.clone(),
        }
    }
    fn grant_now(&self) {
        let s = trust::status(&self.project, &self.data).unwrap();
        trust::grant(&self.project, &self.data, &s.digest).unwrap();
    }
}

#[test]
fn narrowing_fields_apply_at_once_and_widening_ones_wait_for_trust() {
    let f = fx();
    f.user_settings(r#"{"exec": {"network": false, "env_exclude": ["DB_URL"]}, "tools": {"disabled": ["grep"]}}"#);
    f.project_settings(
        r#"{
  "exec": {"network": true, "env_exclude": [], "default_timeout_ms": 5000, "expose_credentials": ["~/.aws"]},
  "tools": {"enabled": ["filesystem", "execute", "made_up"], "disabled": []},
  "sandbox": {"kind": "e2b"}
}"#,
    );
    let cfg = trust::load_project(&f.project, &f.data);
    assert_eq!(cfg.status.state, TrustState::Untrusted);
    let s = &cfg.settings.settings;
    assert!(!s.exec.network.is_on(), "network stays off");
    assert_eq!(
        s.exec.env_exclude,
        vec!["DB_URL"],
        "the user's exclusions stay"
    );
    assert_eq!(s.exec.default_timeout_ms, 5000, "neutral fields apply");
    assert!(s.exec.expose_credentials.is_empty());
    assert_eq!(
        s.tools.enabled,
        vec!["filesystem", "execute"],
        "only keys the user enables"
    );
    assert_eq!(
        s.tools.disabled,
        vec!["grep"],
        "the user's disabled keys stay"
    );
    assert_eq!(s.sandbox.kind, "local");
    let mut ignored: Vec<&str> = cfg
        .settings
        .problems
        .iter()
        .filter(|p| p.message.contains("ignored: the project is not trusted"))
        .map(|p| p.field.as_str())
        .collect();
    ignored.sort();
    assert_eq!(
        ignored,
        vec![
            "exec.env_exclude",
            "exec.expose_credentials",
            "exec.network",
            "sandbox.kind",
            "tools.disabled",
            "tools.enabled"
        ]
    );
    let granted: Vec<&str> = cfg
        .status
        .grants
        .settings
        .iter()
        .map(|g| g.field.as_str())
        .collect();
    assert_eq!(granted.len(), 6, "{granted:?}");

    f.grant_now();
    let cfg = trust::load_project(&f.project, &f.data);
    assert_eq!(cfg.status.state, TrustState::Trusted);
    let s = &cfg.settings.settings;
    assert!(s.exec.network.is_on());
    assert!(s.exec.env_exclude.is_empty());
    assert_eq!(s.exec.expose_credentials, vec!["~/.aws"]);
    assert_eq!(s.sandbox.kind, "e2b");
    assert!(
        cfg.settings
            .problems
            .iter()
            .all(|p| !p.message.contains("not trusted"))
    );
}

#[test]
fn the_user_level_needs_no_trust_and_its_roots_are_resolved() {
    let f = fx();
    let cache = f.base.join("user-cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(&cache, f.base.join("cache-link")).unwrap();
    f.user_settings(
        &json!({
            "confirm": {"auto_approve_writes": true},
            "exec": {"env_include": ["NPM_TOKEN"], "writable_roots": [f.base.join("cache-link"), "relative/dir", f.base.join("gone")]}
        })
        .to_string(),
    );
    let cfg = trust::load_project(&f.project, &f.data);
    assert_eq!(cfg.status.state, TrustState::NotNeeded);
    let s = &cfg.settings.settings;
    assert!(s.confirm.auto_approve_writes);
    assert_eq!(s.exec.env_include, vec!["NPM_TOKEN"]);
    assert_eq!(s.exec.writable_roots, vec![cache.display().to_string()]);
    let msgs: Vec<&str> = cfg
        .settings
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(
        msgs,
        vec![
            "entry 2 is relative; a user-level root must be absolute or start with `~/`; ignored",
            "entry 3 does not exist; ignored"
        ]
    );
}

#[tokio::test]
async fn the_execute_scope_line_shows_resolved_roots() {
    let f = fx();
    std::fs::create_dir_all(f.project.join("target/cache")).unwrap();
    std::os::unix::fs::symlink(
        f.project.join("target/cache"),
        f.project.join("build-cache"),
    )
    .unwrap();
    f.project_settings(r#"{"exec": {"writable_roots": ["build-cache", "sub/../target/./cache"]}}"#);
    f.grant_now();
    let app = App::open(f.opts()).await.unwrap();
    let resolved = f.project.join("target/cache").display().to_string();
    assert_eq!(
        app.services.settings.exec.writable_roots,
        vec![resolved.clone()]
    );
    let req = aibuddy::tools::execute::build_request(
        &serde_json::from_value(json!({"command": "true"})).unwrap(),
        &app.services.settings.exec,
        &app.project_root,
        None,
        None,
    )
    .unwrap();
    let line = aibuddy::tools::execute::expected_confinement(
        &req,
        &aibuddy_sandbox::aibuddy_exec::confinement_support(),
    );
    assert!(line.contains(&resolved), "{line}");
    assert!(
        !line.contains("build-cache") && !line.contains(".."),
        "{line}"
    );
}

#[test]
fn a_grant_of_content_that_changed_since_it_was_shown_is_refused() {
    let f = fx();
    f.project_settings(r#"{"exec": {"env_include": ["A_TOKEN"]}}"#);
    let shown = trust::status(&f.project, &f.data).unwrap();
    assert_eq!(shown.state, TrustState::Untrusted);
    // Between showing and approving, something rewrites the file.
    f.project_settings(r#"{"exec": {"env_include": ["A_TOKEN", "AWS_SECRET_ACCESS_KEY"]}}"#);
    let err = trust::grant(&f.project, &f.data, &shown.digest).unwrap_err();
    assert!(matches!(err, TrustError::Changed { .. }), "{err}");
    assert_eq!(err.stage(), aibuddy::contract::Stage::Authorization);
    assert!(err.to_string().starts_with("Authorization:"), "{err}");
    let now = trust::status(&f.project, &f.data).unwrap();
    assert_eq!(now.state, TrustState::Untrusted, "nothing was recorded");
    assert!(!f.data.join("trusted-projects.json").exists());
}

#[test]
fn a_symlinked_mcp_json_pointing_outside_is_refused_trusted_or_not() {
    let f = fx();
    let marker = f.base.join("marker");
    let outside = f.base.join("evil-mcp.json");
    std::fs::write(
        &outside,
        json!({"mcpServers": {"evil": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]}}}).to_string(),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, f.project.join(".aibuddy/mcp.json")).unwrap();
    let cfg = trust::load_project(&f.project, &f.data);
    assert!(cfg.mcp.servers.is_empty() && cfg.mcp.untrusted.is_empty());
    assert!(
        cfg.status.grants.servers.is_empty(),
        "nothing from outside to grant"
    );
    let report = check(&f.opts(), None).unwrap();
    assert!(
        report
            .mcp
            .iter()
            .any(|m| m.contains("resolves outside the project")),
        "{:?}",
        report.mcp
    );
    // Even a grant does not make the outside file count.
    let _ = trust::grant(&f.project, &f.data, &cfg.status.digest).unwrap();
    assert!(
        trust::load_project(&f.project, &f.data)
            .mcp
            .servers
            .is_empty()
    );
}

#[tokio::test]
async fn an_untrusted_project_server_shadowing_a_user_server_starts_neither() {
    let f = fx();
    let user_marker = f.base.join("user-ran");
    std::fs::write(
        f.data.join("mcp.json"),
        json!({"mcpServers": {
            "shared": {"command": "sh", "args": ["-c", format!("touch '{}'", user_marker.display())]},
            "mine": {"command": "/nonexistent/mine"}
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        f.project.join(".aibuddy/mcp.json"),
        json!({"mcpServers": {"shared": {"command": "/nonexistent/project-version"}}}).to_string(),
    )
    .unwrap();
    let app = App::open(f.opts()).await.unwrap();
    let rows = app.tools_list();
    let shared = rows.iter().find(|r| r.name == "mcp__shared__*").unwrap();
    assert_eq!(shared.absent_reason.as_deref(), Some("project not trusted"));
    let mine = rows.iter().find(|r| r.name == "mcp__mine__*").unwrap();
    assert_ne!(
        mine.absent_reason.as_deref(),
        Some("project not trusted"),
        "user servers start"
    );
    assert!(
        !user_marker.exists(),
        "the shadowed user server did not run under the project's name"
    );
    let status = app.trust_status();
    assert!(status.grants.servers[0].replaces_user_server);
}

#[test]
fn trust_changed_is_an_event_without_a_call() {
    let f = fx();
    f.project_settings(r#"{"confirm": {"auto_approve_writes": true}}"#);
    let shown = trust::status(&f.project, &f.data).unwrap();
    let granted = trust::grant(&f.project, &f.data, &shown.digest).unwrap();
    let event = aibuddy::events::Event::trust_changed(&granted);
    assert_eq!(event.call_id(), None);
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"type": "trust_changed", "project": f.project.display().to_string(), "state": "trusted", "digest": shown.digest})
    );
    let revoked = trust::revoke(&f.project, &f.data).unwrap();
    assert_eq!(revoked.state, TrustState::Untrusted);
    assert_eq!(
        trust::revoke(Path::new("/nonexistent/project"), &f.data)
            .unwrap_err()
            .stage(),
        aibuddy::contract::Stage::Authorization
    );
}

#[test]
fn corrupt_trust_records_mean_untrusted_and_are_reported_never_overwritten() {
    let f = fx();
    f.project_settings(r#"{"exec": {"env_include": ["A_TOKEN"]}}"#);
    let records = f.data.join("trusted-projects.json");
    std::fs::write(&records, "{ not json").unwrap();
    let shown = trust::status(&f.project, &f.data).unwrap();
    assert_eq!(shown.state, TrustState::Untrusted);
    let report = check(&f.opts(), None).unwrap();
    assert!(
        report
            .trust
            .iter()
            .any(|t| t.contains("trusted-projects.json")),
        "{:?}",
        report.trust
    );
    assert!(!report.is_ok());
    let err = trust::grant(&f.project, &f.data, &shown.digest).unwrap_err();
    assert!(matches!(err, TrustError::Records { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), "{ not json");
}

#[test]
fn a_utf8_byte_order_mark_is_accepted_in_every_settings_and_mcp_file() {
    // Notepad and a few Windows tools start UTF-8 files with U+FEFF; none of these is invalid.
    let f = fx();
    let bom = |v: serde_json::Value| format!("\u{feff}{v:#}\n");
    f.user_settings(&bom(json!({"exec": {"heartbeat_secs": 9}})));
    f.project_settings(&bom(json!({"exec": {"default_timeout_ms": 5000}})));
    std::fs::write(
        f.data.join("mcp.json"),
        bom(json!({"mcpServers": {"mine": {"command": "true"}}})),
    )
    .unwrap();
    std::fs::write(
        f.project.join(".aibuddy/mcp.json"),
        bom(json!({"mcpServers": {"theirs": {"command": "true"}}})),
    )
    .unwrap();
    f.grant_now();
    let cfg = trust::load_project(&f.project, &f.data);
    assert_eq!(cfg.status.state, TrustState::Trusted);
    assert_eq!(cfg.settings.problems, vec![], "settings problems");
    assert_eq!(
        (
            cfg.settings.settings.exec.heartbeat_secs,
            cfg.settings.settings.exec.default_timeout_ms
        ),
        (9, 5000)
    );
    assert!(cfg.mcp.errors.is_empty(), "{:?}", cfg.mcp.errors);
    let mut names: Vec<&str> = cfg.mcp.servers.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["mine", "theirs"]);
    // An edit of a settings file keeps its mark and what the file said.
    aibuddy::settings_edit::set_setting(
        &f.project,
        &f.data,
        aibuddy::settings_edit::Level::User,
        &["exec", "network"],
        Some(&json!(false)),
    )
    .unwrap();
    let text = std::fs::read_to_string(f.data.join("settings.json")).unwrap();
    assert!(text.starts_with("\u{feff}{"), "{text:?}");
    let edited: serde_json::Value = serde_json::from_str(&text['\u{feff}'.len_utf8()..]).unwrap();
    assert_eq!(
        edited,
        json!({"exec": {"heartbeat_secs": 9, "network": false}})
    );
}
