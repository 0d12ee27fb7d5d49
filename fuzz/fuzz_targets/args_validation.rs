//! Argument validation: arbitrary bytes as a model's argument text, against the built-in tools'
//! compiled schemas and against arbitrary schemas (an MCP server chooses its own schemas).
//!
//! Input: `selector byte` then `schema 0x1E arguments` (schema only used when the selector is odd).
//! Invariants: never panics; `parse_args` returns a value only if it validates against the schema
//! and equals the JSON given (or `{}` for blank text); every failure is a Parameters-stage error
//! coded `malformed_arguments` or `invalid_arguments`, the latter listing each violation with a
//! JSON pointer; `define_tool` refuses every schema whose top level is not an object schema.
#![no_main]

use std::sync::LazyLock;

use aibuddy::contract::{Stage, ToolSpec, define_tool};
use aibuddy_fuzz::{fields, text};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

static BUILTIN: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
    aibuddy::tools::builtin_configs()
        .iter()
        .flat_map(|c| c.tools().expect("built-in tools define"))
        .map(|d| d.spec)
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let f = fields(rest, 2);
    if selector & 1 == 0 {
        let specs = &*BUILTIN;
        let spec = &specs[(selector as usize / 2) % specs.len()];
        check_parse(spec, &text(rest));
        return;
    }
    let Ok(schema) = serde_json::from_slice::<Value>(f[0]) else {
        return;
    };
    match define_tool("fuzz_tool", "fuzzed schema", schema.clone()) {
        Ok(spec) => {
            assert_eq!(spec.input_schema(), &schema);
            assert_eq!(schema.get("type"), Some(&Value::String("object".into())));
            check_parse(&spec, &text(f[1]));
        }
        Err(e) => {
            assert_eq!(e.tool, "fuzz_tool");
            assert!(!e.reason.is_empty());
        }
    }
});

fn check_parse(spec: &ToolSpec, raw: &str) {
    match spec.parse_args(raw) {
        Ok(value) => {
            assert!(
                spec.validate(&value).is_ok(),
                "accepted value must validate"
            );
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                assert_eq!(value, serde_json::json!({}));
            } else {
                let parsed: Value = serde_json::from_str(trimmed).expect("accepted text is JSON");
                assert_eq!(value, parsed);
            }
        }
        Err(e) => {
            assert_eq!(e.stage, Stage::Parameters, "{e:?}");
            match e.code.as_str() {
                "malformed_arguments" => {
                    assert!(serde_json::from_str::<Value>(raw.trim()).is_err())
                }
                "invalid_arguments" => {
                    let details = e
                        .details
                        .as_ref()
                        .and_then(Value::as_array)
                        .expect("details");
                    assert!(!details.is_empty());
                    for d in details {
                        let pointer = d["pointer"].as_str().expect("pointer");
                        assert!(pointer.starts_with('/'), "{pointer}");
                    }
                }
                other => panic!("unexpected code {other}"),
            }
        }
    }
}
