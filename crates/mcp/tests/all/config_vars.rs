//! `${VAR}` expansion and per-tool lists through the public parser: what a server gets, where a
//! problem points (file, line, column, field path), and that values never reach a problem.

use std::path::Path;

use aibuddy_mcp::config::{
    ConfigScope, ToolFilter, Transport, Vars, parse_config_text, parse_config_text_with,
};

fn env(name: &str) -> Option<String> {
    match name {
        "API_TOKEN" => Some("tok-s3cret-value".into()),
        "BIN_DIR" => Some("/opt/bin".into()),
        "BASE" => Some("https://mcp.example.test".into()),
        "EMPTY" => Some(String::new()),
        "FTP" => Some("ftp://x".into()),
        _ => None,
    }
}

const FILE: &str = "/p/.aibuddy/mcp.json";

const TEXT: &str = r#"{"mcpServers": {
  "local": {"command": "${BIN_DIR}/server", "args": ["--token=${API_TOKEN}", "${MODE:-fast}", "$${literal}"],
            "env": {"TOKEN": "${API_TOKEN}", "PLAIN": "1"}, "cwd": "${NOT_EXPANDED}"},
  "remote": {"url": "${BASE}/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"},
             "tools": {"allow": ["get_*"], "deny": ["get_secret"]}}
}}"#;

#[test]
fn every_field_that_takes_variables_is_expanded() {
    let out = parse_config_text_with(
        Path::new(FILE),
        ConfigScope::Project,
        TEXT,
        Vars::From(&env),
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let local = &out.servers[0];
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &local.transport
    else {
        panic!("stdio expected")
    };
    assert_eq!(command, "/opt/bin/server");
    assert_eq!(args, &["--token=tok-s3cret-value", "fast", "${literal}"]);
    assert_eq!(env["TOKEN"], "tok-s3cret-value");
    assert_eq!(env["PLAIN"], "1");
    assert_eq!(
        cwd.as_deref(),
        Some(Path::new("${NOT_EXPANDED}")),
        "cwd is not one of the five fields"
    );
    assert_eq!(local.variables, vec!["API_TOKEN", "BIN_DIR", "MODE"]);
    let remote = &out.servers[1];
    let Transport::Http { url, headers } = &remote.transport else {
        panic!("http expected")
    };
    assert_eq!(url, "https://mcp.example.test/mcp");
    assert_eq!(headers["Authorization"], "Bearer tok-s3cret-value");
    assert_eq!(
        remote.tools,
        ToolFilter {
            allow: Some(vec!["get_*".into()]),
            deny: vec!["get_secret".into()],
        }
    );
}

#[test]
fn templates_are_kept_for_showing_and_list_their_variables() {
    let out = parse_config_text(Path::new(FILE), ConfigScope::Project, TEXT);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let Transport::Stdio { command, args, .. } = &out.servers[0].transport else {
        panic!("stdio expected")
    };
    assert_eq!(command, "${BIN_DIR}/server");
    assert_eq!(args[1], "${MODE:-fast}");
    assert_eq!(out.servers[1].variables, vec!["API_TOKEN", "BASE"]);
}

#[test]
fn an_unset_variable_is_a_located_problem_and_only_that_server_is_left_out() {
    let text = "{\"mcpServers\": {\n  \"ok\": {\"command\": \"${BIN_DIR}/s\"},\n  \"bad\": {\"command\": \"s\",\n          \"env\": {\"A\": \"x\", \"KEY\": \"${MISSING_KEY}\"}}\n}}";
    let out = parse_config_text_with(
        Path::new(FILE),
        ConfigScope::Project,
        text,
        Vars::From(&env),
    );
    assert_eq!(out.servers.len(), 1);
    assert_eq!(out.servers[0].name, "ok");
    let e = &out.errors[0];
    assert_eq!(e.server.as_deref(), Some("bad"));
    assert_eq!(e.field.as_deref(), Some("env.KEY"));
    assert_eq!((e.line, e.column), (Some(4), Some(29)), "{e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{FILE}:4:29: server \"bad\": field \"env.KEY\": ")),
        "{shown}"
    );
    assert!(shown.contains("MISSING_KEY is not set"), "{shown}");

    // An argument's problem names its index.
    let text = r#"{"mcpServers": {"a": {"command": "s", "args": ["x", "${NOPE"]}}}"#;
    let out = parse_config_text_with(Path::new(FILE), ConfigScope::User, text, Vars::From(&env));
    assert_eq!(out.errors[0].field.as_deref(), Some("args[1]"));
    assert!(
        out.errors[0].message.contains("unterminated"),
        "{}",
        out.errors[0]
    );
    // Syntax problems are problems even when templates are kept.
    let out = parse_config_text(Path::new(FILE), ConfigScope::User, text);
    assert_eq!(out.errors.len(), 1);
}

#[test]
fn expanded_values_are_checked_and_never_quoted() {
    let cases = [
        (
            r#"{"url": "${FTP}/mcp"}"#,
            "url",
            "expected an http:// or https:// URL",
        ),
        (
            r#"{"url": "https://x/mcp", "headers": {"X-A": "${API_TOKEN}\u0001"}}"#,
            "headers.X-A",
            "not a valid HTTP header value",
        ),
        (r#"{"command": "${EMPTY}"}"#, "command", "is empty once"),
    ];
    for (entry, field, says) in cases {
        let text = format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#);
        let out =
            parse_config_text_with(Path::new(FILE), ConfigScope::User, &text, Vars::From(&env));
        let e = out
            .errors
            .first()
            .unwrap_or_else(|| panic!("{entry}: no error"));
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
        assert!(e.message.contains(says), "{e}");
        let shown = e.to_string();
        assert!(
            !shown.contains("s3cret") && !shown.contains("ftp://x"),
            "{shown}"
        );
    }
}

#[test]
fn tool_lists_are_checked() {
    let cases = [
        (
            r#"{"command": "s", "tools": ["a"]}"#,
            "tools",
            "expected an object",
        ),
        (
            r#"{"command": "s", "tools": {"allow": "a"}}"#,
            "tools.allow",
            "expected an array of tool names",
        ),
        (
            r#"{"command": "s", "tools": {"allow": [1]}}"#,
            "tools.allow[0]",
            "expected a tool name",
        ),
        (
            r#"{"command": "s", "tools": {"only": ["a"]}}"#,
            "tools",
            "unknown member",
        ),
    ];
    for (entry, field, says) in cases {
        let text = format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#);
        let out = parse_config_text(Path::new(FILE), ConfigScope::User, &text);
        let e = out
            .errors
            .first()
            .unwrap_or_else(|| panic!("{entry}: no error"));
        assert!(
            e.field.as_deref().is_some_and(|f| f.starts_with(field)),
            "{entry}: {e}"
        );
        assert!(e.message.contains(says), "{entry}: {e}");
    }
}
