//! Tests of the MCP tool catalog: names, bounds, schemas, filters and trust.

use super::*;
use crate::risk::McpRiskLevel;
use rmcp::model::ToolAnnotations;
use serde_json::json;

fn tool(name: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        panic!("schema must be an object")
    };
    Tool::new(name.to_owned(), format!("does {name}"), Arc::new(schema))
}

#[test]
fn bad_schemas_are_rejected_and_siblings_stay() {
    let servers = BTreeMap::from([(
        "fix".to_owned(),
        vec![
            tool(
                "good",
                json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
            ),
            tool("not_object", json!({"type": "string"})),
            tool("no_type", json!({"properties": {}})),
            tool(
                "broken",
                json!({"type": "object", "properties": {"x": {"type": "no-such-type"}}}),
            ),
            tool("good", json!({"type": "object"})),
        ],
    )]);
    let catalog = build_catalog(&servers, &BTreeSet::new());
    assert_eq!(catalog.entries.len(), 1);
    assert_eq!(catalog.entries[0].qualified_name, "mcp__fix__good");
    let reasons: BTreeMap<&str, &str> = catalog
        .rejected
        .iter()
        .map(|r| (r.tool.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons["not_object"].contains("must be \"object\""));
    assert!(reasons["no_type"].contains("no top-level"));
    assert!(reasons["broken"].contains("does not compile"));
    assert!(reasons["good"].contains("duplicate"));
}

#[test]
fn arguments_are_checked_against_the_schema() {
    let servers = BTreeMap::from([(
        "s".to_owned(),
        vec![tool(
            "t",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
        )],
    )]);
    let catalog = build_catalog(&servers, &BTreeSet::new());
    let entry = &catalog.entries[0];
    assert!(entry.check_arguments(&json!({"x": 1})).is_ok());
    let err = entry.check_arguments(&json!({"x": "one"})).unwrap_err();
    assert!(err.contains("/x"), "{err}");
    assert!(
        entry
            .check_arguments(&json!({}))
            .unwrap_err()
            .contains("required")
    );
}

#[test]
fn entries_carry_risk_and_map_back() {
    let mut t = tool("read.it", json!({"type": "object"}));
    t.annotations = Some(ToolAnnotations::new().read_only(true));
    let servers = BTreeMap::from([(
        "a b".to_owned(),
        vec![t, tool("write", json!({"type": "object"}))],
    )]);
    let catalog = build_catalog(&servers, &BTreeSet::from(["a b".to_owned()]));
    let names: Vec<&str> = catalog
        .entries
        .iter()
        .map(|e| e.qualified_name.as_str())
        .collect();
    assert_eq!(names, vec!["mcp__a_b__read_it", "mcp__a_b__write"]);
    assert!(catalog.entries[0].risk.read_only);
    assert_eq!(catalog.entries[0].risk.level, McpRiskLevel::ReadOnly);
    assert!(catalog.entries[1].risk.is_high_impact());
    // The same server, not trusted: its readOnlyHint does not lower the risk.
    let untrusted = build_catalog(&servers, &BTreeSet::new());
    assert!(untrusted.entries[0].risk.read_only);
    assert_eq!(untrusted.entries[0].risk.level, McpRiskLevel::HighImpact);
    let origin = catalog.names.resolve("mcp__a_b__read_it").unwrap();
    assert_eq!(
        (origin.server.as_str(), origin.tool.as_str()),
        ("a b", "read.it")
    );
}

/// `n` tools on server `s`, each with a schema of a few properties (like real servers').
fn many_tools(n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| {
            tool(
                &format!("t{i}"),
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]*$"},
                        "limit": {"type": "integer", "minimum": 0, "maximum": i},
                        "mode": {"enum": ["a", "b", "c"]},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
            )
        })
        .collect()
}

#[test]
fn a_rebuild_compiles_only_new_or_changed_schemas() {
    let mut servers = BTreeMap::from([
        ("s".to_owned(), many_tools(3)),
        (
            "bad".to_owned(),
            vec![tool("broken", json!({"type": "string"}))],
        ),
    ]);
    let first = rebuild_catalog(&servers, &BTreeSet::new(), &Catalog::default());
    assert_eq!(first.schemas_compiled, 4);
    assert_eq!(first.entries.len(), 3);
    // Nothing changed: nothing is compiled, the rejected schema stays rejected.
    let same = rebuild_catalog(&servers, &BTreeSet::new(), &first);
    assert_eq!(same.schemas_compiled, 0);
    assert_eq!(same.entries, first.entries);
    assert_eq!(same.rejected, first.rejected);
    assert!(Arc::ptr_eq(
        &same.entries[0].validator,
        &first.entries[0].validator
    ));
    // One schema changes (same tool name): that one is compiled, and checks the new schema.
    servers.get_mut("s").unwrap()[1] = tool(
        "t1",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    );
    let changed = rebuild_catalog(&servers, &BTreeSet::new(), &same);
    assert_eq!(changed.schemas_compiled, 1);
    let t1 = changed.entries.iter().find(|e| e.name == "t1").unwrap();
    assert!(t1.check_arguments(&json!({"n": 1})).is_ok());
    assert!(t1.check_arguments(&json!({"path": "x"})).is_err());
    // A tool that is gone leaves the cache; listed again, it is compiled again.
    let t2 = servers.get_mut("s").unwrap().pop().unwrap();
    let fewer = rebuild_catalog(&servers, &BTreeSet::new(), &changed);
    assert_eq!((fewer.schemas_compiled, fewer.schemas.len()), (0, 3));
    servers.get_mut("s").unwrap().push(t2);
    let again = rebuild_catalog(&servers, &BTreeSet::new(), &fewer);
    assert_eq!(again.schemas_compiled, 1);
    // The same schema under another server is that server's own entry.
    servers.insert("s2".to_owned(), many_tools(1));
    let other = rebuild_catalog(&servers, &BTreeSet::new(), &again);
    assert_eq!(other.schemas_compiled, 1);
}

/// Ten thousand tools: a first build against a rebuild with unchanged schemas. Prints the
/// times and their ratio (`cargo test -p aibuddy-mcp --lib rebuild_of_ten_thousand --
/// --nocapture`); asserts only what is compiled, never a time.
#[test]
fn rebuild_of_ten_thousand_tools_reuses_every_schema() {
    let servers = BTreeMap::from([("s".to_owned(), many_tools(10_000))]);
    let started = std::time::Instant::now();
    let first = rebuild_catalog(&servers, &BTreeSet::new(), &Catalog::default());
    let cold = started.elapsed();
    let started = std::time::Instant::now();
    let again = rebuild_catalog(&servers, &BTreeSet::new(), &first);
    let warm = started.elapsed();
    assert_eq!(first.schemas_compiled, 10_000);
    assert_eq!(again.schemas_compiled, 0);
    assert_eq!(again.entries.len(), 10_000);
    println!(
        "catalog of 10000 tools: build compiling every schema {cold:?}, rebuild with the \
         cache {warm:?} ({:.1}x)",
        cold.as_secs_f64() / warm.as_secs_f64().max(1e-9)
    );
}

#[test]
fn hostile_names_big_schemas_and_long_texts_are_bounded() {
    let mut verbose = tool("verbose", json!({"type": "object"}));
    verbose.description = Some("d".repeat(MAX_DESCRIPTION_CHARS + 1).into());
    verbose.title = Some("t".repeat(MAX_TITLE_CHARS * 10));
    let mut at_bound = tool("at_bound", json!({"type": "object"}));
    at_bound.description = Some("é".repeat(MAX_DESCRIPTION_CHARS).into());
    let props: serde_json::Map<String, Value> = (0..MAX_SCHEMA_BYTES / 10)
        .map(|i| (format!("p{i}"), json!({})))
        .collect();
    let mut big_output = tool("big_output", json!({"type": "object"}));
    big_output.output_schema = Some(Arc::new(
        json!({"type": "object", "properties": props.clone()})
            .as_object()
            .unwrap()
            .clone(),
    ));
    let servers = BTreeMap::from([(
        "s".to_owned(),
        vec![
            verbose,
            at_bound,
            big_output,
            tool(
                "n".repeat(MAX_TOOL_NAME_CHARS).as_str(),
                json!({"type": "object"}),
            ),
            tool(
                &"n".repeat(MAX_TOOL_NAME_CHARS + 1),
                json!({"type": "object"}),
            ),
            tool("bell\u{7}", json!({"type": "object"})),
            tool("rtl\u{202e}", json!({"type": "object"})),
            tool("big_input", json!({"type": "object", "properties": props})),
            tool(
                "remote",
                json!({"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/x"}}}),
            ),
        ],
    )]);
    let catalog = build_catalog(&servers, &BTreeSet::new());
    let kept: BTreeMap<&str, &McpToolEntry> = catalog
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let description = &kept["verbose"].description;
    assert!(description.starts_with(&"d".repeat(MAX_DESCRIPTION_CHARS)));
    assert!(description.ends_with("[... description cut at 2048 of 2049 characters]"));
    assert_eq!(
        kept["verbose"].title.as_deref().map(|t| t.chars().count()),
        Some(MAX_TITLE_CHARS + " [... title cut at 256 of 2560 characters]".len())
    );
    assert_eq!(
        kept["at_bound"].description.chars().count(),
        MAX_DESCRIPTION_CHARS
    );
    assert!(kept.contains_key("n".repeat(MAX_TOOL_NAME_CHARS).as_str()));
    let reasons: BTreeMap<&str, &str> = catalog
        .rejected
        .iter()
        .map(|r| (r.tool.as_str(), r.reason.as_str()))
        .collect();
    let long_shown = format!("{}...", "n".repeat(MAX_TOOL_NAME_CHARS));
    assert_eq!(
        reasons.get(long_shown.as_str()).copied(),
        Some("tool name is 129 characters, more than 128")
    );
    assert!(reasons["bell\u{7}"].contains("control characters"));
    assert!(reasons["rtl\u{202e}"].contains("bidirectional"));
    assert!(
        reasons["big_input"].starts_with("input schema is "),
        "{reasons:?}"
    );
    assert!(
        reasons["big_output"].starts_with("output schema is "),
        "{reasons:?}"
    );
    assert!(
        reasons["remote"].contains("does not compile"),
        "{reasons:?}"
    );
    assert!(reasons["remote"].contains("not resolved"), "{reasons:?}");
    assert_eq!(catalog.entries.len(), 3, "{reasons:?}");
}
