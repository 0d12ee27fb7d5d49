//! Unit tests of [`crate::settings_edit`] on real files in temporary directories, read back
//! through the loaders the CLI uses (`crate::trust::load_project`).

use super::*;
use serde_json::json;

struct Dirs {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    data: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (project, data) = (base.join("p"), base.join("d"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    Dirs {
        _tmp: tmp,
        project,
        data,
    }
}

const USER: &str = "{\n  \"exec\": {\n    \"heartbeat_secs\": 15\n  },\n  \"x-editor\": {\"theme\": \"dark\"}\n}\n";

#[test]
fn a_user_setting_is_written_and_the_cli_loader_reads_it_with_the_rest_kept() {
    let d = dirs();
    std::fs::write(d.data.join("settings.json"), USER).unwrap();
    let w = set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["exec", "network"],
        Some(&json!(false)),
    )
    .unwrap();
    assert!(w.changed);
    assert_eq!(w.trust, TrustAfterWrite::NotConcerned);
    let text = std::fs::read_to_string(d.data.join("settings.json")).unwrap();
    assert!(text.starts_with("{\n  \"exec\": {\n    \"heartbeat_secs\": 15,\n    \"network\": false\n  },\n  \"x-editor\": {\"theme\": \"dark\"}"), "{text}");
    let loaded = crate::trust::load_settings(&d.data, &d.project);
    assert!(!loaded.settings.exec.network.is_on());
    assert_eq!(loaded.settings.exec.heartbeat_secs, 15);
    // The unknown section is the loader's problem as before, not the editor's.
    assert!(loaded.problems.iter().any(|p| p.field == "x-editor"));
    // No temp file is left beside it.
    let names: Vec<String> = std::fs::read_dir(&d.data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["settings.json"]);
}

#[test]
fn a_provider_entry_round_trips_through_the_loader() {
    let d = dirs();
    let entry = json!({"kind": "openai-chat", "model": "qwen3:8b", "base_url": "http://127.0.0.1:11434/v1"});
    set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["providers", "local"],
        Some(&entry),
    )
    .unwrap();
    set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["providers", "default"],
        Some(&json!("local")),
    )
    .unwrap();
    let loaded = crate::trust::load_settings(&d.data, &d.project);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let route = loaded
        .settings
        .providers
        .resolve(None, &aibuddy_provider::BaseUrlOverrides::default())
        .unwrap();
    assert_eq!(
        (route.name.as_str(), route.model.as_str()),
        ("local", "qwen3:8b")
    );
    set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["providers", "local"],
        None,
    )
    .unwrap();
    let text = std::fs::read_to_string(d.data.join("settings.json")).unwrap();
    assert!(!text.contains("qwen3"));
}

#[test]
fn a_value_the_loader_refuses_is_not_written_and_the_problem_is_located() {
    let d = dirs();
    std::fs::write(d.data.join("settings.json"), USER).unwrap();
    let err = set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["exec", "heartbeat_secs"],
        Some(&json!("soon")),
    )
    .unwrap_err();
    assert_eq!(err.stage(), Stage::Parameters);
    let p = &err.problems()[0];
    assert_eq!((p.field.as_str(), p.line), ("exec.heartbeat_secs", Some(3)));
    assert!(p.file.ends_with("settings.json"));
    assert!(p.to_string().contains("settings.json:3:"), "{p}");
    assert_eq!(
        std::fs::read_to_string(d.data.join("settings.json")).unwrap(),
        USER
    );
    let unknown = set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["exec", "nope"],
        Some(&json!(1)),
    );
    assert_eq!(unknown.unwrap_err().problems()[0].field, "exec.nope");
}

#[test]
fn invalid_json_is_refused_with_its_line_and_left_alone() {
    let d = dirs();
    let broken = "{\n  \"exec\": {\n    \"network\": tru\n  }\n}\n";
    std::fs::write(d.data.join("settings.json"), broken).unwrap();
    let err = set_setting(
        &d.project,
        &d.data,
        Level::User,
        &["exec", "network"],
        Some(&json!(false)),
    )
    .unwrap_err();
    let p = &err.problems()[0];
    // The same file, line and column as the loader (`aibuddy tools check`) reports.
    let check = crate::trust::load_settings(&d.data, &d.project).problems;
    let loader = check.iter().find(|c| c.field == "(file)").unwrap();
    assert_eq!(
        (&p.file, p.line, p.column),
        (&loader.file, loader.line, loader.column)
    );
    assert!(matches!(p.line, Some(3 | 4)), "{p}");
    assert_eq!(
        std::fs::read_to_string(d.data.join("settings.json")).unwrap(),
        broken
    );
}

#[test]
fn a_change_on_disk_during_the_edit_is_detected_and_nothing_is_written() {
    let d = dirs();
    let file = d.data.join("settings.json");
    std::fs::write(&file, USER).unwrap();
    let target = Target::new(ConfigFile::Settings, Level::User, &d.project, &d.data);
    let err = target
        .write(|text| {
            // Another writer changes the file between the read and the rename.
            std::fs::write(&file, "{\"exec\": {\"network\": true}}").unwrap();
            Ok(format!("{text} "))
        })
        .unwrap_err();
    assert!(matches!(err, EditError::Changed { .. }), "{err:?}");
    assert_eq!(err.stage(), Stage::Verification);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"exec\": {\"network\": true}}"
    );
}

fn trust_now(d: &Dirs) -> crate::trust::TrustStatus {
    crate::trust::status(&d.project, &d.data).unwrap()
}

fn trusted_project(d: &Dirs) {
    std::fs::create_dir_all(d.project.join(".aibuddy")).unwrap();
    std::fs::write(
        d.project.join(".aibuddy/settings.json"),
        "{\"confirm\": {\"auto_approve_writes\": true}}\n",
    )
    .unwrap();
    let shown = trust_now(d);
    crate::trust::grant(&d.project, &d.data, &shown.digest).unwrap();
    assert_eq!(trust_now(d).state, TrustState::Trusted);
}

#[test]
fn a_project_write_keeps_the_trust_of_a_project_trusted_just_before() {
    let d = dirs();
    trusted_project(&d);
    let w = set_setting(
        &d.project,
        &d.data,
        Level::Project,
        &["exec", "network"],
        Some(&json!(false)),
    )
    .unwrap();
    let now = trust_now(&d);
    assert_eq!(now.state, TrustState::Trusted);
    assert_eq!(w.trust, TrustAfterWrite::Kept { digest: now.digest });
    assert!(
        !crate::trust::load_settings(&d.data, &d.project)
            .settings
            .exec
            .network
            .is_on()
    );
    // An MCP server added at the project level: same rule.
    let entry = json!({"command": "true"});
    let w = put_mcp_server(&d.project, &d.data, Level::Project, "local", &entry).unwrap();
    assert!(matches!(w.trust, TrustAfterWrite::Kept { .. }));
    assert_eq!(trust_now(&d).state, TrustState::Trusted);
    let servers = aibuddy_mcp::load_server_configs(&d.project, Some(&d.data)).servers;
    assert_eq!(servers[0].name, "local");
}

#[test]
fn a_project_not_trusted_before_is_not_trusted_by_a_write() {
    let d = dirs();
    std::fs::create_dir_all(d.project.join(".aibuddy")).unwrap();
    std::fs::write(
        d.project.join(".aibuddy/mcp.json"),
        "{\"mcpServers\": {\"x\": {\"command\": \"true\"}}}",
    )
    .unwrap();
    assert_eq!(trust_now(&d).state, TrustState::Untrusted);
    let w = set_setting(
        &d.project,
        &d.data,
        Level::Project,
        &["exec", "heartbeat_secs"],
        Some(&json!(5)),
    )
    .unwrap();
    assert_eq!(
        w.trust,
        TrustAfterWrite::NotRecorded {
            state: TrustState::Untrusted
        }
    );
    assert_eq!(trust_now(&d).state, TrustState::Untrusted);
}

#[test]
fn a_project_file_changed_besides_the_write_is_left_for_the_trust_dialog() {
    let d = dirs();
    trusted_project(&d);
    let target = Target::new(ConfigFile::Settings, Level::Project, &d.project, &d.data);
    let w = target
        .write(|text| {
            // The other trust-relevant file changes while the person edits this one.
            std::fs::write(
                d.project.join(".aibuddy/mcp.json"),
                "{\"mcpServers\": {\"sneaky\": {\"command\": \"true\"}}}",
            )
            .unwrap();
            Ok(text.replace("true", "false"))
        })
        .unwrap();
    assert_eq!(w.trust, TrustAfterWrite::ChangedMeanwhile);
    assert_eq!(trust_now(&d).state, TrustState::ChangedSinceTrusted);
}

#[test]
fn a_symlinked_aibuddy_dir_is_never_written_through() {
    let d = dirs();
    let elsewhere = d.data.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.project.join(".aibuddy")).unwrap();
    let err = set_setting(
        &d.project,
        &d.data,
        Level::Project,
        &["exec", "network"],
        Some(&json!(false)),
    )
    .unwrap_err();
    assert_eq!(err.stage(), Stage::Authorization);
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
}

#[test]
fn mcp_servers_are_added_validated_and_removed_at_the_user_level() {
    let d = dirs();
    let mcp = d.data.join("mcp.json");
    std::fs::write(&mcp, "{\n  \"mcpServers\": {}, \"other\": 1\n}\n").unwrap();
    let bad = put_mcp_server(
        &d.project,
        &d.data,
        Level::User,
        "s",
        &json!({"url": "ftp://x"}),
    )
    .unwrap_err();
    let p = &bad.problems()[0];
    assert!(p.field.starts_with("mcpServers.s"), "{p:?}");
    assert!(p.line.is_some());
    put_mcp_server(
        &d.project,
        &d.data,
        Level::User,
        "s",
        &json!({"command": "true", "args": ["a"]}),
    )
    .unwrap();
    let loaded = aibuddy_mcp::load_server_configs(&d.project, Some(&d.data));
    assert_eq!(loaded.servers.len(), 1);
    assert!(
        std::fs::read_to_string(&mcp)
            .unwrap()
            .contains("\"other\": 1")
    );
    let w = remove_mcp_server(&d.project, &d.data, Level::User, "s").unwrap();
    assert!(w.changed);
    assert!(
        aibuddy_mcp::load_server_configs(&d.project, Some(&d.data))
            .servers
            .is_empty()
    );
    let again = remove_mcp_server(&d.project, &d.data, Level::User, "s").unwrap();
    assert!(!again.changed);
}

#[test]
fn a_project_file_changed_during_the_edit_is_not_overwritten() {
    let d = dirs();
    trusted_project(&d);
    let file = d.project.join(".aibuddy/settings.json");
    let target = Target::new(ConfigFile::Settings, Level::Project, &d.project, &d.data);
    let err = target
        .write(|text| {
            // A command rewrites the project file while the person edits it.
            std::fs::write(&file, "{\"confirm\":{\"auto_approve_writes\":true}}").unwrap();
            Ok(text.replace("true", "false"))
        })
        .unwrap_err();
    assert!(matches!(err, EditError::Changed { .. }), "{err:?}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"confirm\":{\"auto_approve_writes\":true}}"
    );
    // Nothing re-recorded: the command's change is for the trust dialog.
    assert_eq!(trust_now(&d).state, TrustState::ChangedSinceTrusted);
}
