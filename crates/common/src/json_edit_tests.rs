//! Unit tests of [`crate::json_edit`]: the rest of the file is kept byte for byte.

use super::*;
use serde_json::json;

const FILE: &str = r#"{
    "exec": {
        "network": true,

        "heartbeat_secs": 30
    },
    "x-other-tool": {"keep": [1, 2.50, "é"]},
    "providers": {"default": "anthropic"}
}
"#;

#[test]
fn setting_one_field_keeps_every_other_byte() {
    let out = edit(FILE, &["exec", "network"], Edit::Set(&json!(false))).unwrap();
    assert_eq!(out, FILE.replace("\"network\": true", "\"network\": false"));
}

#[test]
fn a_new_field_takes_the_files_indentation_and_unknown_keys_stay() {
    let out = edit(
        FILE,
        &["confirm", "auto_approve_writes"],
        Edit::Set(&json!(true)),
    )
    .unwrap();
    assert!(out.starts_with(&FILE[..FILE.find("\"providers\"").unwrap()]));
    assert!(out.contains(r#""x-other-tool": {"keep": [1, 2.50, "é"]}"#));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["confirm"]["auto_approve_writes"], json!(true));
    assert!(
        out.contains("\n    \"confirm\": {\n        \"auto_approve_writes\": true\n    }\n}"),
        "{out}"
    );
}

#[test]
fn nested_objects_and_strings_are_escaped() {
    let entry =
        json!({"kind": "openai-chat", "model": "q\"wen\n", "base_url": "http://127.0.0.1:1/v1"});
    let out = edit(FILE, &["providers", "lo\"cal"], Edit::Set(&entry)).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["providers"]["lo\"cal"], entry);
    assert_eq!(v["providers"]["default"], json!("anthropic"));
}

#[test]
fn removing_keeps_the_rest_and_a_missing_key_is_a_no_op() {
    let out = edit(FILE, &["exec", "heartbeat_secs"], Edit::Remove).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["exec"], json!({"network": true}));
    assert!(out.contains(r#""x-other-tool": {"keep": [1, 2.50, "é"]}"#));
    assert_eq!(
        edit(FILE, &["nothing", "here"], Edit::Remove).unwrap(),
        FILE
    );
    assert_eq!(edit(FILE, &["exec", "nope"], Edit::Remove).unwrap(), FILE);
}

#[test]
fn an_empty_file_becomes_an_object() {
    let out = edit("", &["exec", "network"], Edit::Set(&json!(false))).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, json!({"exec": {"network": false}}));
    assert_eq!(edit("  \n", &["a"], Edit::Remove).unwrap(), "  \n");
}

#[test]
fn text_the_loaders_refuse_is_refused_with_its_place() {
    // Comments: the CLI's loader ignores such a file as a whole, so it is not edited either.
    let commented = "{\n  // mine\n  \"exec\": {}\n}\n";
    let err = edit(commented, &["exec", "network"], Edit::Set(&json!(false))).unwrap_err();
    assert!(matches!(err, EditError::Syntax(_)), "{err:?}");
    assert_eq!(err.position().map(|p| p.line), Some(2));
    let broken = "{\n  \"exec\": {\"network\": tru}\n}";
    let err = edit(broken, &["exec", "network"], Edit::Set(&json!(false))).unwrap_err();
    assert_eq!(err.position().map(|p| p.line), Some(2));
}

#[test]
fn a_value_in_the_way_is_not_replaced() {
    let text = "{\n  \"exec\": [1]\n}";
    let err = edit(text, &["exec", "network"], Edit::Set(&json!(false))).unwrap_err();
    match &err {
        EditError::NotAnObject { field, path, at } => {
            assert_eq!((field.as_str(), path.as_str()), ("exec", "exec.network"));
            assert_eq!(at.map(|p| p.line), Some(2));
        }
        other => panic!("{other:?}"),
    }
    let err = edit("[1]", &["a"], Edit::Set(&json!(1))).unwrap_err();
    assert!(matches!(err, EditError::NotAnObject { .. }));
    assert_eq!(edit(text, &[], Edit::Remove), Err(EditError::EmptyPath));
}

#[test]
fn a_duplicate_key_that_would_shadow_the_edit_is_refused() {
    let text = r#"{"exec": {"network": true, "network": true}}"#;
    let err = edit(text, &["exec", "network"], Edit::Set(&json!(false))).unwrap_err();
    assert!(matches!(err, EditError::Unverified { .. }), "{err:?}");
}

#[test]
fn a_leading_byte_order_mark_is_kept_and_not_taken_for_content() {
    let with_bom = format!("\u{feff}{FILE}");
    let out = edit(&with_bom, &["exec", "network"], Edit::Set(&json!(false))).unwrap();
    assert_eq!(
        out,
        with_bom.replace("\"network\": true", "\"network\": false")
    );
    // Removing what is absent changes nothing, mark included.
    let out = edit(&with_bom, &["nope", "x"], Edit::Remove).unwrap();
    assert_eq!(out, with_bom);
    // A mark alone is an empty file.
    let out = edit("\u{feff}", &["exec", "network"], Edit::Set(&json!(true))).unwrap();
    assert!(out.starts_with('\u{feff}'), "{out:?}");
    let v: Value = serde_json::from_str(located::strip_bom(&out)).unwrap();
    assert_eq!(v, json!({"exec": {"network": true}}));
}
