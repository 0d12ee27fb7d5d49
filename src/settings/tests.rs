//! Unit tests of settings parsing and layering.

use super::*;
use pretty_assertions::assert_eq;

/// Layer `files` as [user, project] with the project trusted (the field rules are tested in
/// `authority`, the gating in `tests/all/settings_trust.rs`).
fn layer_texts(files: &[(String, String)]) -> LoadedSettings {
    let texts: Vec<SettingsText> = files
        .iter()
        .map(|(file, text)| SettingsText {
            file: file.clone(),
            text: text.clone(),
        })
        .collect();
    layer(
        texts.first(),
        texts.get(1),
        &LayerContext {
            project_root: Path::new("/nonexistent-project"),
            home: None,
            project_trusted: true,
            user_trusted: true,
            data_dir: None,
            approvals_record: None,
            canonicalize: &crate::settings::real_path,
        },
    )
}

#[test]
fn defaults_when_no_files() {
    let l = layer_texts(&[]);
    assert_eq!(l.settings, Settings::default());
    assert!(l.problems.is_empty());
}

#[test]
fn project_overrides_user_field_by_field() {
    let user = r#"{"exec": {"heartbeat_secs": 5, "network": false}, "confirm": {"auto_approve_writes": true}}"#;
    let project = r#"{"exec": {"heartbeat_secs": 7}}"#;
    let l = layer_texts(&[
        ("user".into(), user.into()),
        ("project".into(), project.into()),
    ]);
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    assert_eq!(l.settings.exec.heartbeat_secs, 7);
    assert!(!l.settings.exec.network.is_on());
    assert!(l.settings.confirm.auto_approve_writes);
}

#[test]
fn reports_unknown_and_ill_typed_fields_with_line() {
    let text = "{\n  \"exec\": {\n    \"heartbeat_secs\": \"often\",\n    \"bogus\": 1\n  },\n  \"nope\": {}\n}";
    let l = layer_texts(&[("p.json".into(), text.into())]);
    assert_eq!(l.settings.exec.heartbeat_secs, 30, "falls back to default");
    let got: Vec<(String, Option<u32>)> = l
        .problems
        .iter()
        .map(|p| (p.field.clone(), p.line))
        .collect();
    assert_eq!(
        got,
        vec![
            ("exec.heartbeat_secs".to_string(), Some(3)),
            ("exec.bogus".to_string(), Some(4)),
            ("nope".to_string(), Some(6)),
        ]
    );
    assert!(l.problems[0].message.contains("wrong type"));
    assert!(l.problems[1].message.contains("unknown field"));
}

#[test]
fn wrong_type_never_quotes_the_value() {
    let text = r#"{"exec": {"network": "sk-live-SECRET123"}, "sandbox": {"kind": 7}}"#;
    let l = layer_texts(&[("p.json".into(), text.into())]);
    assert_eq!(l.problems.len(), 2);
    for p in &l.problems {
        assert!(!p.message.contains("SECRET"), "{}", p.message);
    }
    assert_eq!(
        l.problems[0].message,
        "wrong type: found a string, expected a boolean or an object with `allow` and `deny` lists; using the default"
    );
    assert!(l.settings.exec.network.is_on());
}

#[test]
fn unknown_sandbox_kind_is_reported_and_defaults_to_local() {
    let text = "{\n  \"sandbox\": {\n    \"kind\": \"docker\"\n  }\n}";
    let l = layer_texts(&[("p.json".into(), text.into())]);
    assert_eq!(l.settings.sandbox.kind, "local");
    assert_eq!(l.problems.len(), 1);
    assert_eq!(l.problems[0].field, "sandbox.kind");
    assert_eq!(l.problems[0].line, Some(3));
    assert!(l.problems[0].message.contains("unknown sandbox kind"));
    let ok = layer_texts(&[("p.json".into(), r#"{"sandbox": {"kind": "e2b"}}"#.into())]);
    assert!(ok.problems.is_empty());
    assert_eq!(ok.settings.sandbox.kind, "e2b");
}

#[test]
fn unknown_tool_keys_are_problems() {
    let mut l = layer_texts(&[(
        "p.json".into(),
        r#"{"tools": {"enabled": ["filesystm", "execute", "mcp:time"], "disabled": ["nope"]}}"#
            .into(),
    )]);
    l.files.push("p.json".into());
    let problems = unknown_tool_keys(&l, &["filesystem", "execute"]);
    let got: Vec<(&str, bool)> = problems
        .iter()
        .map(|p| {
            (
                p.field.as_str(),
                p.message.starts_with("`filesystm`") || p.message.starts_with("`nope`"),
            )
        })
        .collect();
    assert_eq!(got, vec![("tools.enabled", true), ("tools.disabled", true)]);
}

#[test]
fn invalid_json_file_is_reported_and_ignored() {
    let l = layer_texts(&[
        ("u.json".into(), r#"{"exec": {"heartbeat_secs": 9}}"#.into()),
        ("p.json".into(), "{ not json".into()),
    ]);
    assert_eq!(l.settings.exec.heartbeat_secs, 9);
    assert_eq!(l.problems.len(), 1);
    assert_eq!(l.problems[0].file, "p.json");
}

#[test]
fn every_problem_is_reported_with_line_and_column() {
    let text = "{\n  \"exec\": {\"network\": 1, \"env_include\": [\"A\", 2]},\n  \"tools\": {\"enabled\": \"x\", \"nope\": 1}\n}";
    let l = layer_texts(&[("p.json".into(), text.into())]);
    let got: Vec<(&str, Option<u32>, Option<u32>)> = l
        .problems
        .iter()
        .map(|p| (p.field.as_str(), p.line, p.column))
        .collect();
    assert_eq!(
        got,
        vec![
            ("exec.network", Some(2), Some(12)),
            ("exec.env_include", Some(2), Some(47)),
            ("tools.enabled", Some(3), Some(13)),
            ("tools.nope", Some(3), Some(29)),
        ]
    );
    assert_eq!(
        l.problems[1].message,
        "wrong type at `exec.env_include[1]`: found a number, expected a string; using the default"
    );
    assert_eq!(
        l.problems[0].to_string(),
        "p.json:2:12: `exec.network`: wrong type: found a number, expected a boolean or an object with `allow` and `deny` lists; using the default"
    );
    assert_eq!(
        l.problems[3].message,
        "unknown field `nope`, expected `enabled` or `disabled`"
    );
}

#[test]
fn a_section_that_is_not_an_object_is_reported_at_its_key() {
    let l = layer_texts(&[("p.json".into(), "{\"confirm\": true, \"x\": 1}".into())]);
    let got: Vec<(&str, &str, Option<u32>)> = l
        .problems
        .iter()
        .map(|p| (p.field.as_str(), p.message.as_str(), p.column))
        .collect();
    assert_eq!(
        got,
        vec![
            ("confirm", "must be an object", Some(2)),
            (
                "x",
                "unknown field (known: tools, sandbox, confirm, approvals, exec, tool_search, providers, agent, checkpoints, hooks, agents)",
                Some(19)
            ),
        ]
    );
}

#[test]
fn the_issues_providers_example_parses() {
    let text = r#"{"providers": {"default": "anthropic", "anthropic": {"model": "claude-sonnet-4-6"}, "openai": {"model": "gpt-5.4"}, "local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:11434/v1", "model": "qwen3:8b"}}}"#;
    let l = layer_texts(&[("user".into(), text.into())]);
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    let p = &l.settings.providers;
    assert_eq!(p.default.as_deref(), Some("anthropic"));
    assert_eq!(p.entries.len(), 3);
    assert_eq!(p.entries["local"].model, "qwen3:8b");
}

#[test]
fn a_bad_provider_entry_is_located_and_the_others_kept() {
    let text = "{\"providers\": {\n  \"openai\": {\"model\": \"gpt-5.4\"},\n  \"local\": {\"kind\": \"telnet\", \"model\": \"m\"}\n}}";
    let l = layer_texts(&[("u.json".into(), text.into())]);
    assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
    assert_eq!(l.problems[0].field, "providers.local");
    assert_eq!(l.problems[0].line, Some(3));
    assert!(l.settings.providers.entries.contains_key("openai"));
    assert!(!l.settings.providers.entries.contains_key("local"));
}

#[test]
fn agent_compaction_settings_parse_and_bad_values_fall_back() {
    let text = r#"{"agent": {"compaction_threshold": 0.5, "keep_recent_turns": 3, "summary_model": "claude-haiku-4-5"}}"#;
    let l = layer_texts(&[("u.json".into(), text.into())]);
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    assert_eq!(l.settings.agent.compaction_threshold, 0.5);
    assert_eq!(l.settings.agent.keep_recent_turns, 3);
    assert_eq!(
        l.settings.agent.summary_model.as_deref(),
        Some("claude-haiku-4-5")
    );
    let bad = "{\n  \"agent\": {\n    \"compaction_threshold\": 1.5,\n    \"keep_recent_turns\": 0\n  }\n}";
    let l = layer_texts(&[("u.json".into(), bad.into())]);
    assert_eq!(l.settings.agent, AgentSettings::default());
    let fields: Vec<(&str, Option<u32>)> = l
        .problems
        .iter()
        .map(|p| (p.field.as_str(), p.line))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("agent.compaction_threshold", Some(3)),
            ("agent.keep_recent_turns", Some(4))
        ]
    );
}

#[test]
fn max_processes_out_of_range_falls_back_to_the_default() {
    let ok = layer_texts(&[("u.json".into(), r#"{"exec": {"max_processes": 64}}"#.into())]);
    assert!(ok.problems.is_empty(), "{:?}", ok.problems);
    assert_eq!(ok.settings.exec.max_processes, 64);
    for bad in ["0", "4194305", "4294967295"] {
        let text = format!("{{\n  \"exec\": {{\n    \"max_processes\": {bad}\n  }}\n}}");
        let l = layer_texts(&[("u.json".into(), text)]);
        assert_eq!(
            l.settings.exec.max_processes,
            ExecSettings::default().max_processes,
            "{bad}"
        );
        let fields: Vec<(&str, Option<u32>, &str)> = l
            .problems
            .iter()
            .map(|p| (p.field.as_str(), p.line, p.message.as_str()))
            .collect();
        assert_eq!(
            fields,
            vec![(
                "exec.max_processes",
                Some(3),
                "must be between 1 and 4194304 processes; using the default 4096"
            )],
            "{bad}"
        );
    }
}

#[test]
fn agent_time_limits_parse_and_out_of_range_values_fall_back() {
    let ok = layer_texts(&[(
        "u.json".into(),
        r#"{"agent": {"step_timeout_secs": 1, "keepalive_timeout_secs": 86400, "idle_timeout_secs": 30}}"#
            .into(),
    )]);
    assert!(ok.problems.is_empty(), "{:?}", ok.problems);
    let a = &ok.settings.agent;
    assert_eq!(
        (
            a.step_timeout_secs,
            a.keepalive_timeout_secs,
            a.idle_timeout_secs
        ),
        (1, 86_400, 30)
    );
    let options = crate::agent::AgentOptions::from_settings(&ok.settings);
    assert_eq!(
        (
            options.step_timeout,
            options.keepalive_timeout,
            options.idle_timeout
        ),
        (
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(86_400),
            std::time::Duration::from_secs(30)
        )
    );
    let bad = "{\n  \"agent\": {\n    \"step_timeout_secs\": 0,\n    \"keepalive_timeout_secs\": 86401,\n    \"idle_timeout_secs\": 1.5\n  }\n}";
    let l = layer_texts(&[("u.json".into(), bad.into())]);
    assert_eq!(l.settings.agent, AgentSettings::default());
    let got: Vec<(&str, Option<u32>, &str)> = l
        .problems
        .iter()
        .map(|p| (p.field.as_str(), p.line, p.message.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "agent.step_timeout_secs",
                Some(3),
                "must be between 1 and 86400 seconds (24 h); using the default 1800"
            ),
            (
                "agent.keepalive_timeout_secs",
                Some(4),
                "must be between 1 and 86400 seconds (24 h); using the default 900"
            ),
            (
                "agent.idle_timeout_secs",
                Some(5),
                "wrong type: found a number, expected u64; using the default"
            ),
        ]
    );
}

#[test]
fn an_untrusted_project_may_shorten_the_agent_time_limits_but_not_lengthen_them() {
    let user = SettingsText {
        file: "u.json".into(),
        text: r#"{"agent": {"step_timeout_secs": 600}}"#.into(),
    };
    let load = |project: &str| {
        layer(
            Some(&user),
            Some(&SettingsText {
                file: "p.json".into(),
                text: project.into(),
            }),
            &LayerContext {
                project_root: Path::new("/nonexistent-project"),
                home: None,
                project_trusted: false,
                user_trusted: true,
                data_dir: None,
                approvals_record: None,
                canonicalize: &crate::settings::real_path,
            },
        )
    };
    let shorter = load(r#"{"agent": {"step_timeout_secs": 60, "idle_timeout_secs": 10}}"#);
    assert!(shorter.widening.is_empty(), "{:?}", shorter.widening);
    assert_eq!(shorter.settings.agent.step_timeout_secs, 60);
    assert_eq!(shorter.settings.agent.idle_timeout_secs, 10);
    let longer = load(
        r#"{"agent": {"step_timeout_secs": 601, "keepalive_timeout_secs": 901, "idle_timeout_secs": 91}}"#,
    );
    let a = &longer.settings.agent;
    assert_eq!(
        (
            a.step_timeout_secs,
            a.keepalive_timeout_secs,
            a.idle_timeout_secs
        ),
        (600, 900, 90),
        "the user level's limits stay"
    );
    let widening: Vec<&str> = longer.widening.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(
        widening,
        vec![
            "agent.idle_timeout_secs",
            "agent.keepalive_timeout_secs",
            "agent.step_timeout_secs"
        ]
    );
    assert!(
        longer
            .problems
            .iter()
            .all(|p| p.message == UNTRUSTED_IGNORED),
        "{:?}",
        longer.problems
    );
}

#[test]
fn a_project_may_add_protected_paths_but_only_the_user_level_may_remove_them() {
    let user = r#"{"exec": {"unprotected_paths": [".idea"], "protected_paths": ["Makefile"]}}"#;
    let project = "{\n  \"exec\": {\n    \"protected_paths\": [\"Makefile\", \"build.rs\"],\n    \"unprotected_paths\": [\".git/hooks\"]\n  }\n}";
    // Trusted or not, the project's removal is ignored with a problem line; its addition applies.
    let l = layer_texts(&[
        ("user".into(), user.into()),
        ("project".into(), project.into()),
    ]);
    assert_eq!(l.settings.exec.unprotected_paths, vec![".idea".to_string()]);
    assert_eq!(
        l.settings.exec.protected_paths,
        vec!["Makefile".to_string(), "build.rs".to_string()]
    );
    assert_eq!(
        l.problems,
        vec![SettingsProblem {
            file: "project".into(),
            line: Some(4),
            column: Some(5),
            field: "exec.unprotected_paths".into(),
            message: UNPROTECTED_USER_ONLY.into(),
        }]
    );
    assert!(l.widening.is_empty(), "{:?}", l.widening);
    // Entries must be relative paths without `..`.
    let bad = layer_texts(&[(
        "user".into(),
        r#"{"exec": {"protected_paths": ["../x"], "unprotected_paths": ["/etc"]}}"#.into(),
    )]);
    assert!(bad.settings.exec.protected_paths.is_empty());
    assert!(bad.settings.exec.unprotected_paths.is_empty());
    assert_eq!(bad.problems.len(), 2, "{:?}", bad.problems);
}

#[test]
fn namespaces_off_applies_from_the_user_level_only() {
    let l = layer_texts(&[("user".into(), r#"{"exec": {"namespaces": false}}"#.into())]);
    assert!(!l.settings.exec.namespaces);
    let texts = [SettingsText {
        file: "project".into(),
        text: r#"{"exec": {"namespaces": false}}"#.into(),
    }];
    let untrusted = layer(
        None,
        texts.first(),
        &LayerContext {
            project_root: Path::new("/nonexistent-project"),
            home: None,
            project_trusted: false,
            user_trusted: true,
            data_dir: None,
            approvals_record: None,
            canonicalize: &crate::settings::real_path,
        },
    );
    assert!(untrusted.settings.exec.namespaces);
    assert_eq!(untrusted.problems[0].field, "exec.namespaces");
}

/// Issue 23: the approvals section is layered on its own: the mode only narrows from a project,
/// rules are added, a project's allow rules need trust, the person's record comes first.
#[test]
fn approvals_mode_narrows_and_rules_add_up_with_allow_rules_gated_by_trust() {
    use crate::approvals::record::ProjectApprovals;
    use crate::approvals::{ApprovalMode, ApprovalRule, RuleDecision};
    let user = SettingsText {
        file: "u.json".into(),
        text:
            r#"{"approvals": {"mode": "auto", "rules": [{"command": "rm *", "decision": "deny"}]}}"#
                .into(),
    };
    let load = |project: &str, trusted: bool, record: Option<&ProjectApprovals>| {
        layer(
            Some(&user),
            Some(&SettingsText {
                file: "p.json".into(),
                text: project.into(),
            }),
            &LayerContext {
                project_root: Path::new("/nonexistent-project"),
                home: None,
                project_trusted: trusted,
                user_trusted: true,
                data_dir: None,
                approvals_record: record,
                canonicalize: &crate::settings::real_path,
            },
        )
    };
    let project = r#"{"approvals": {"mode": "read-only", "rules": [
        {"command": "curl *", "decision": "allow"},
        {"command": "git push *", "decision": "ask"}]}}"#;
    let untrusted = load(project, false, None);
    let a = &untrusted.settings.approvals;
    assert_eq!(a.mode, ApprovalMode::ReadOnly);
    assert_eq!(a.project_narrows, Some(ApprovalMode::ReadOnly));
    assert!(a.chosen);
    assert_eq!(
        a.rules,
        vec![
            ApprovalRule::command("rm *", RuleDecision::Deny),
            ApprovalRule::command("git push *", RuleDecision::Ask),
        ]
    );
    assert!(
        untrusted
            .problems
            .iter()
            .any(|p| p.field == "approvals.rules" && p.message == RULE_UNTRUSTED),
        "{:?}",
        untrusted.problems
    );
    assert_eq!(untrusted.widening.len(), 1);
    assert_eq!(untrusted.widening[0].field, "approvals.rules");
    let trusted = load(project, true, None);
    assert_eq!(trusted.settings.approvals.rules.len(), 3);

    // A wider mode from the project is ignored, trusted or not; the person's record comes first.
    let record = ProjectApprovals {
        mode: Some(ApprovalMode::Ask),
        rules: vec![ApprovalRule::command("cargo test *", RuleDecision::Allow)],
    };
    for trusted in [false, true] {
        let wider = load(r#"{"approvals": {"mode": "auto"}}"#, trusted, Some(&record));
        let a = &wider.settings.approvals;
        assert_eq!(a.mode, ApprovalMode::Ask);
        assert_eq!(a.project_narrows, None);
        assert_eq!(a.rules.len(), 2);
        assert!(
            wider
                .problems
                .iter()
                .any(|p| p.field == "approvals.mode" && p.message == MODE_USER_ONLY),
            "{:?}",
            wider.problems
        );
    }
    // A flag replaces the user level's mode but not the project's narrowing.
    let mut a = load(project, false, None).settings.approvals;
    a.with_flag(ApprovalMode::Auto);
    assert_eq!(a.mode, ApprovalMode::ReadOnly);
    let mut a = load("{}", false, None).settings.approvals;
    a.with_flag(ApprovalMode::ReadOnly);
    assert_eq!(a.mode, ApprovalMode::ReadOnly);
}

#[test]
fn an_invalid_approval_rule_is_a_located_problem() {
    let l = layer_texts(&[(
        "u.json".into(),
        r#"{"approvals": {"rules": [{"command": "ls", "tool": "x", "decision": "allow"}]}}"#.into(),
    )]);
    assert!(l.settings.approvals.rules.is_empty());
    assert!(
        l.problems
            .iter()
            .any(|p| p.field == "approvals.rules" && p.message.contains("not both")),
        "{:?}",
        l.problems
    );
    let l = layer_texts(&[("u.json".into(), r#"{"approvals": {"mode": "yolo"}}"#.into())]);
    assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
    assert_eq!(l.problems[0].field, "approvals.mode");
}

#[test]
fn an_untrusted_project_may_raise_the_checkpoint_size_cap_but_not_lower_it() {
    let user = SettingsText {
        file: "u.json".into(),
        text: r#"{"checkpoints": {"max_file_bytes": 1048576}}"#.into(),
    };
    let load = |project: &str, trusted: bool| {
        layer(
            Some(&user),
            Some(&SettingsText {
                file: "p.json".into(),
                text: project.into(),
            }),
            &LayerContext {
                project_root: Path::new("/nonexistent-project"),
                home: None,
                project_trusted: trusted,
                user_trusted: true,
                data_dir: None,
                approvals_record: None,
                canonicalize: &crate::settings::real_path,
            },
        )
    };
    let raised = load(r#"{"checkpoints": {"max_file_bytes": 4194304}}"#, false);
    assert!(raised.widening.is_empty(), "{:?}", raised.widening);
    assert_eq!(raised.settings.checkpoints.max_file_bytes, 4_194_304);
    let lowered = load(r#"{"checkpoints": {"max_file_bytes": 1}}"#, false);
    assert_eq!(
        lowered.settings.checkpoints.max_file_bytes, 1_048_576,
        "the user level's cap stays: a project cannot reduce what is protected"
    );
    let widening: Vec<&str> = lowered.widening.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(widening, vec!["checkpoints.max_file_bytes"]);
    let trusted = load(r#"{"checkpoints": {"max_file_bytes": 1}}"#, true);
    assert_eq!(trusted.settings.checkpoints.max_file_bytes, 1);
    let too_big = layer_texts(&[(
        "u.json".into(),
        r#"{"checkpoints": {"max_file_bytes": 2147483648}}"#.into(),
    )]);
    assert_eq!(
        too_big.settings.checkpoints.max_file_bytes,
        aibuddy_checkpoint::DEFAULT_MAX_FILE_BYTES
    );
    assert_eq!(too_big.problems[0].field, "checkpoints.max_file_bytes");
}

fn layer_trust(user: &str, project: &str, trusted: bool) -> LoadedSettings {
    let (u, p) = (
        SettingsText {
            file: "user".into(),
            text: user.into(),
        },
        SettingsText {
            file: "project".into(),
            text: project.into(),
        },
    );
    layer(
        Some(&u),
        Some(&p),
        &LayerContext {
            project_root: Path::new("/nonexistent-project"),
            home: None,
            project_trusted: trusted,
            user_trusted: true,
            data_dir: None,
            approvals_record: None,
            canonicalize: &crate::settings::real_path,
        },
    )
}

#[test]
fn a_projects_hooks_are_added_after_the_users_only_when_trusted() {
    let user = r#"{"hooks": {"pre_tool_call": [{"match": "execute", "command": "mine"}]}}"#;
    let project =
        r#"{"hooks": {"pre_tool_call": [{"command": "theirs"}], "run_end": [{"command": "bye"}]}}"#;
    let commands = |l: &LoadedSettings| -> Vec<(String, HookLevel)> {
        l.settings
            .hooks
            .entries()
            .map(|(e, h)| (format!("{e}:{}", h.command), h.level))
            .collect()
    };
    let trusted = layer_trust(user, project, true);
    assert_eq!(
        commands(&trusted),
        vec![
            ("pre_tool_call:mine".to_string(), HookLevel::User),
            ("pre_tool_call:theirs".to_string(), HookLevel::Project),
            ("run_end:bye".to_string(), HookLevel::Project),
        ]
    );
    let untrusted = layer_trust(user, project, false);
    assert_eq!(
        commands(&untrusted),
        vec![("pre_tool_call:mine".to_string(), HookLevel::User)]
    );
    // Listed as what trust grants, reported as ignored, and kept as given for the pins.
    let fields: Vec<&str> = untrusted
        .widening
        .iter()
        .map(|w| w.field.as_str())
        .collect();
    assert_eq!(fields, vec!["hooks.pre_tool_call", "hooks.run_end"]);
    assert!(
        untrusted
            .problems
            .iter()
            .any(|p| p.field == "hooks.pre_tool_call" && p.message == UNTRUSTED_IGNORED)
    );
    assert_eq!(untrusted.project_hooks.entries().count(), 2);
    assert_eq!(untrusted.project_hooks.pre_tool_call[0].command, "theirs");
    // A bad entry is a located problem; the rest of the list's section still loads.
    let bad = layer_trust(
        "{}",
        r#"{"hooks": {"pre_tool_call": [{"cmd": "x"}]}}"#,
        true,
    );
    assert!(bad.settings.hooks.is_empty());
    assert!(
        bad.problems
            .iter()
            .any(|p| p.field.starts_with("hooks.pre_tool_call")),
        "{:?}",
        bad.problems
    );
}

#[test]
fn a_user_file_a_command_could_have_written_runs_no_hooks() {
    let user = SettingsText {
        file: "user".into(),
        text: r#"{"hooks": {"run_start": [{"command": "planted"}]}}"#.into(),
    };
    let l = layer(
        Some(&user),
        None,
        &LayerContext {
            project_root: Path::new("/nonexistent-project"),
            home: None,
            project_trusted: false,
            user_trusted: false,
            data_dir: None,
            approvals_record: None,
            canonicalize: &crate::settings::real_path,
        },
    );
    assert!(l.settings.hooks.is_empty(), "{:?}", l.settings.hooks);
    assert!(
        l.problems
            .iter()
            .any(|p| p.field == "hooks.run_start" && p.message == USER_FILE_EXPOSED)
    );
}

#[test]
fn a_projects_agent_profiles_apply_untrusted_and_only_narrow_the_users() {
    let user = r#"{"agents": {"profiles": {"reviewer": {"description": "mine", "tools": ["read_file", "grep"], "prompt": "read only"}}}}"#;
    let project = r#"{"agents": {"profiles": {
        "reviewer": {"description": "theirs", "tools": ["grep", "execute"], "prompt": "run anything"},
        "builder": {"tools": ["execute"], "prompt": "build"}}}}"#;
    for trusted in [false, true] {
        let l = layer_trust(user, project, trusted);
        assert!(l.problems.is_empty(), "{:?}", l.problems);
        assert!(l.widening.is_empty(), "{:?}", l.widening);
        let p = &l.settings.agents.profiles;
        let r = &p["reviewer"];
        assert_eq!(r.tools, Some(vec!["grep".to_string()]));
        assert_eq!(
            (r.description.as_str(), r.prompt.as_deref()),
            ("mine", Some("read only"))
        );
        assert!(p["builder"].from_project);
    }
    // A bad profile is a located problem and the field falls back to no profiles.
    let l = layer_texts(&[(
        "u.json".into(),
        r#"{"agents": {"profiles": {"bad name": {}}}}"#.into(),
    )]);
    assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
    assert_eq!(l.problems[0].field, "agents.profiles");
    assert!(l.settings.agents.profiles.is_empty());
}

#[test]
fn agents_max_concurrent_a_project_may_only_lower_it_unless_trusted() {
    assert_eq!(layer_texts(&[]).settings.agents.max_concurrent, 4);
    let user = r#"{"agents": {"max_concurrent": 6}}"#;
    // Lower: applies at once, trusted or not (the user's profiles are kept beside it).
    for trusted in [false, true] {
        let l = layer_trust(user, r#"{"agents": {"max_concurrent": 2}}"#, trusted);
        assert!(l.problems.is_empty(), "{:?}", l.problems);
        assert_eq!(l.settings.agents.max_concurrent, 2);
    }
    // Higher: only once trusted; untrusted, the user's value stays and the field is named.
    let l = layer_trust(user, r#"{"agents": {"max_concurrent": 12}}"#, false);
    assert_eq!(l.settings.agents.max_concurrent, 6);
    assert!(
        l.widening
            .iter()
            .any(|w| w.field == "agents.max_concurrent"),
        "{:?}",
        l.widening
    );
    let l = layer_trust(user, r#"{"agents": {"max_concurrent": 12}}"#, true);
    assert_eq!(l.settings.agents.max_concurrent, 12);
    // A project that leaves it out keeps the user's.
    let l = layer_trust(user, r#"{"agents": {"profiles": {}}}"#, false);
    assert_eq!(l.settings.agents.max_concurrent, 6);
    // Out of range: the default, with a located problem.
    for bad in ["0", "17"] {
        let text = format!("{{\n  \"agents\": {{\n    \"max_concurrent\": {bad}\n  }}\n}}");
        let l = layer_texts(&[("u.json".into(), text)]);
        assert_eq!(l.settings.agents.max_concurrent, 4, "{bad}");
        let fields: Vec<(&str, Option<u32>, &str)> = l
            .problems
            .iter()
            .map(|p| (p.field.as_str(), p.line, p.message.as_str()))
            .collect();
        assert_eq!(
            fields,
            vec![(
                "agents.max_concurrent",
                Some(3),
                "must be between 1 and 16 children; using the default 4"
            )],
            "{bad}"
        );
    }
}
