//! Property tests of `mcp.json` parsing: arbitrary JSON never panics, each server entry yields
//! one server or one error naming it, configured `env` and `headers` values never appear in an
//! error, and merging lets a project entry replace (or, when broken, hide) the user's entry.

use std::collections::BTreeSet;
use std::path::Path;

use aibuddy_mcp::config::{ConfigScope, merge, parse_config_text};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop::sample::select(vec![
            "stdio",
            "http",
            "sse",
            "streamable-http",
            "node",
            "https://example.test/mcp",
            "ftp://x",
            "SECRET-hunter2",
            "bad\nheader\u{0}SECRET-hunter2",
            "",
            "..",
            "\u{1b}[2K",
        ])
        .prop_map(|s| Value::String(s.to_string())),
        ".{0,10}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A server entry with the known fields, each either well-typed or arbitrary.
fn entry() -> impl Strategy<Value = Value> {
    let field = prop::sample::select(vec![
        "command", "args", "env", "cwd", "url", "headers", "type", "timeouts", "enabled",
        "disabled",
    ]);
    let secret_map = prop::collection::btree_map(
        prop::sample::select(vec![
            "API_KEY",
            "Authorization",
            "X-Token",
            "bad header",
            "",
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            "SECRET-hunter2",
            "Bearer SECRET-hunter2",
            "SECRET-hunter2\n\u{0}",
        ])
        .prop_map(|s| Value::String(s.to_string())),
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()));
    prop::collection::btree_map(
        field.prop_map(str::to_string),
        prop_oneof![2 => json_value(), 1 => secret_map],
        0..6,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn config_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::btree_map("[a-z .]{0,6}", prop_oneof![4 => entry(), 1 => json_value()], 0..5)
            .prop_map(|m| json!({"mcpServers": Value::Object(m.into_iter().collect())}).to_string()),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => ".{0,60}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn mcp_json_parses_entry_by_entry_without_leaking_values(user in config_text(), project in config_text()) {
        let uf = Path::new("/data/mcp.json");
        let pf = Path::new("/p/.aibuddy/mcp.json");
        let u = parse_config_text(uf, ConfigScope::User, &user);
        let p = parse_config_text(pf, ConfigScope::Project, &project);
        for (loaded, text) in [(&u, &user), (&p, &project)] {
            for e in &loaded.errors {
                prop_assert!(!e.to_string().contains("hunter2"), "a configured value leaked: {e}");
            }
            if let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text)
                && let Some(Value::Object(entries)) = root.get("mcpServers")
            {
                prop_assert_eq!(loaded.servers.len() + loaded.errors.len(), entries.len());
                for e in &loaded.errors {
                    prop_assert!(e.server.as_ref().is_some_and(|s| entries.contains_key(s)));
                }
            }
        }
        let user_names: BTreeSet<String> = u.servers.iter().map(|s| s.name.clone()).collect();
        let project_ok: BTreeSet<String> = p.servers.iter().map(|s| s.name.clone()).collect();
        let project_bad: BTreeSet<String> = p.errors.iter().filter_map(|e| e.server.clone()).collect();
        let merged = merge(u, p);
        let names: BTreeSet<String> = merged.servers.iter().map(|s| s.name.clone()).collect();
        let want: BTreeSet<String> = user_names.difference(&project_bad).cloned().chain(project_ok.iter().cloned()).collect();
        prop_assert_eq!(names, want);
        for s in &merged.servers {
            if project_ok.contains(&s.name) {
                prop_assert_eq!(s.scope, ConfigScope::Project);
            }
        }
    }
}
