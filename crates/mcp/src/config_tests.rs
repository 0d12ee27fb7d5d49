//! Unit tests of [`crate::config`]: parsing, merging and loading `mcp.json` files.

use super::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn parse(text: &str) -> LoadedConfigs {
    parse_config_text(
        Path::new("/p/.aibuddy/mcp.json"),
        ConfigScope::Project,
        text,
    )
}

#[test]
fn stdio_and_http_entries_parse() {
    let out = parse(
        r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "srv", 3], "env": {"A": "1", "B": 2}},
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"},
                       "timeouts": {"connect": 5, "call": 0.5}, "enabled": false}
        }}"#,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.servers.len(), 2);
    let files = out.servers.iter().find(|s| s.name == "files").unwrap();
    assert_eq!(
        files.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "srv".into(), "3".into()],
            env: BTreeMap::from([("A".into(), "1".into()), ("B".into(), "2".into())]),
            cwd: None,
        }
    );
    assert_eq!(files.timeouts, Timeouts::default());
    assert!(files.enabled);
    let remote = out.servers.iter().find(|s| s.name == "remote").unwrap();
    assert!(
        matches!(&remote.transport, Transport::Http { url, headers } if url == "http://127.0.0.1:9/mcp" && headers.len() == 1)
    );
    assert_eq!(remote.timeouts.connect, Duration::from_secs(5));
    assert_eq!(remote.timeouts.call, Duration::from_millis(500));
    assert!(!remote.enabled);
    assert_eq!(remote.scope, ConfigScope::Project);
}

#[test]
fn a_bad_entry_names_file_server_and_field_and_others_still_load() {
    let out = parse(
        r#"{"mcpServers": {
            "good": {"command": "srv"},
            "bad-args": {"command": "srv", "args": "not-an-array"},
            "bad-timeout": {"command": "srv", "timeouts": {"call": -1}},
            "bad-env": {"command": "srv", "env": {"K": ["x"]}},
            "nothing": {"args": []},
            "both": {"command": "a", "url": "http://x"},
            "sse": {"type": "sse", "url": "http://x/sse"},
            "ws": {"type": "websocket", "url": "http://x/ws"},
            "ftp": {"url": "ftp://x"}
        }}"#,
    );
    let names: Vec<&str> = out.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["good", "sse"]);
    assert!(matches!(out.servers[1].transport, Transport::Sse { .. }));
    let field_of = |server: &str| {
        out.errors
            .iter()
            .find(|e| e.server.as_deref() == Some(server))
            .and_then(|e| e.field.clone())
            .unwrap()
    };
    assert_eq!(field_of("bad-args"), "args");
    assert_eq!(field_of("bad-timeout"), "timeouts.call");
    assert_eq!(field_of("bad-env"), "env.K");
    assert_eq!(field_of("nothing"), "command");
    assert_eq!(field_of("both"), "url");
    assert_eq!(field_of("ws"), "type");
    assert_eq!(field_of("ftp"), "url");
    let msg = out
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some("bad-args"))
        .unwrap()
        .to_string();
    assert_eq!(
        msg,
        "/p/.aibuddy/mcp.json:3:44: server \"bad-args\": field \"args\": expected an array of strings, found a string"
    );
}

#[test]
fn invalid_json_is_one_file_error() {
    let out = parse("{\"mcpServers\": {");
    assert!(out.servers.is_empty());
    assert_eq!(out.errors.len(), 1);
    assert!(out.errors[0].server.is_none());
    assert!(
        out.errors[0].message.contains("invalid JSON at line 1"),
        "{}",
        out.errors[0]
    );
}

#[test]
fn missing_mcp_servers_is_empty_and_wrong_type_is_an_error() {
    assert_eq!(parse("{}"), LoadedConfigs::default());
    let out = parse(r#"{"mcpServers": []}"#);
    assert_eq!(out.errors[0].field.as_deref(), Some("mcpServers"));
}

#[test]
fn trust_annotations_is_an_opt_in_boolean() {
    let out = parse(
        r#"{"mcpServers": {
            "trusted": {"command": "x", "trustAnnotations": true},
            "plain": {"command": "x"},
            "off": {"command": "x", "trustAnnotations": false},
            "wrong": {"command": "x", "trustAnnotations": "yes"}
        }}"#,
    );
    let trust = |name: &str| {
        out.servers
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .trust_annotations
    };
    assert!(trust("trusted"));
    assert!(!trust("plain"));
    assert!(!trust("off"));
    let wrong = out
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some("wrong"))
        .unwrap();
    assert_eq!(wrong.field.as_deref(), Some("trustAnnotations"));
    assert!(!ServerConfig::stdio("i", "x", vec![]).trust_annotations);
}

#[test]
fn config_errors_do_not_quote_urls() {
    let out =
        parse(r#"{"mcpServers": {"u": {"url": "ftp://user:SECRETPW@host/x?token=SECRETQ"}}}"#);
    let msg = out.errors[0].to_string();
    assert!(!msg.contains("SECRET"), "{msg}");
    assert!(msg.contains("field \"url\""), "{msg}");
}

#[test]
fn disabled_flag_is_accepted_too() {
    let out = parse(r#"{"mcpServers": {"a": {"command": "x", "disabled": true}}}"#);
    assert!(!out.servers[0].enabled);
}

#[test]
fn project_overrides_user_by_name() {
    let user = parse_config_text(
        Path::new("/home/u/mcp.json"),
        ConfigScope::User,
        r#"{"mcpServers": {"shared": {"command": "user-version"}, "mine": {"command": "m"}, "broken-later": {"command": "b"}}}"#,
    );
    let project = parse(
        r#"{"mcpServers": {"shared": {"command": "project-version"}, "proj": {"url": "https://x/mcp"}, "broken-later": {"command": 5}}}"#,
    );
    let merged = merge(user, project);
    let names: Vec<&str> = merged.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["mine", "proj", "shared"]);
    let shared = merged.servers.iter().find(|s| s.name == "shared").unwrap();
    assert!(
        matches!(&shared.transport, Transport::Stdio { command, .. } if command == "project-version")
    );
    assert_eq!(shared.scope, ConfigScope::Project);
    assert_eq!(merged.errors.len(), 1);
    assert_eq!(merged.errors[0].server.as_deref(), Some("broken-later"));
}

#[test]
fn loading_reads_both_files_and_tolerates_missing_ones() {
    let project = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    assert_eq!(
        load_server_configs(project.path(), Some(user.path())),
        LoadedConfigs::default()
    );
    std::fs::create_dir_all(project.path().join(".aibuddy")).unwrap();
    std::fs::write(
        project_config_path(project.path()),
        r#"{"mcpServers": {"p": {"command": "x", "cwd": "sub"}}}"#,
    )
    .unwrap();
    std::fs::write(
        user_config_path(user.path()),
        r#"{"mcpServers": {"u": {"url": "http://127.0.0.1:1/mcp"}}}"#,
    )
    .unwrap();
    let loaded = load_server_configs(project.path(), Some(user.path()));
    assert!(loaded.errors.is_empty());
    assert_eq!(loaded.servers.len(), 2);
    let p = loaded.servers.iter().find(|s| s.name == "p").unwrap();
    assert!(
        matches!(&p.transport, Transport::Stdio { cwd: Some(c), .. } if *c == project.path().join("sub"))
    );
    assert_eq!(
        p.source.as_deref(),
        Some(project_config_path(project.path()).as_path())
    );
}

#[test]
fn errors_point_at_the_value_at_fault() {
    let out = parse(
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n        \"args\": [\"ok\", {}]},\n  \"b\": {\"command\": \"x\", \"timeouts\": {\"call\": 1, \"soon\": 2}},\n  \"c\": 7\n}}",
    );
    let at = |server: &str| {
        let e = out
            .errors
            .iter()
            .find(|e| e.server.as_deref() == Some(server))
            .unwrap();
        (e.field.clone(), e.line, e.column, e.message.clone())
    };
    assert_eq!(
        at("a"),
        (
            Some("args[1]".into()),
            Some(3),
            Some(24),
            "expected a string, found an object".into()
        )
    );
    assert_eq!(
        at("b"),
        (
            Some("timeouts.soon".into()),
            Some(4),
            Some(49),
            "unknown timeout (expected \"connect\" or \"call\")".into()
        )
    );
    assert_eq!(
        at("c"),
        (
            None,
            Some(5),
            Some(3),
            "expected an object, found a number".into()
        )
    );
}

#[test]
fn fields_of_the_other_transport_are_not_read() {
    let out = parse(
        r#"{"mcpServers": {"s": {"command": "x", "headers": 5}, "h": {"url": "http://x", "args": 5, "timeouts": {"connect": 0, "call": "x"}}}}"#,
    );
    assert_eq!(out.servers.len(), 1, "{:?}", out.errors);
    assert_eq!(out.errors[0].field.as_deref(), Some("timeouts.connect"));
    assert_eq!(
        out.errors[0].message,
        "expected seconds in (0, 86400], found 0"
    );
}

#[test]
fn an_object_field_given_as_an_array_is_refused_not_read_by_position() {
    // serde would read `[1e138]` as `{"connect": 1e138}`, past the range check (found by the
    // config property test: a panic converting the seconds).
    let out = parse(
        r#"{"mcpServers": {"a": {"command": "x", "timeouts": [1.1e138]}, "b": {"command": "x", "tools": [["t"]]}, "c": {"command": "x", "timeouts": [5]}}}"#,
    );
    assert!(out.servers.is_empty(), "{:?}", out.servers);
    let message = |server: &str| {
        out.errors
            .iter()
            .find(|e| e.server.as_deref() == Some(server))
            .map(|e| (e.field.clone(), e.message.clone()))
            .unwrap()
    };
    assert_eq!(
        message("a"),
        (
            Some("timeouts".into()),
            "expected an object, found an array".into()
        )
    );
    assert_eq!(message("c").1, "expected an object, found an array");
    assert_eq!(
        message("b"),
        (
            Some("tools".into()),
            "expected an object with \"allow\" and/or \"deny\", found an array".into()
        )
    );
}
