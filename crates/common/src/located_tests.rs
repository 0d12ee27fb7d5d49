//! Unit tests of [`crate::located`]: positions, entries, typed decoding with paths.

use super::*;
use std::collections::BTreeMap;

#[derive(Debug, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Exec {
    #[serde(default)]
    heartbeat_secs: u64,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    map: BTreeMap<String, String>,
}

#[test]
fn positions_are_one_based_lines_and_character_columns() {
    let text = "ab\n  é\"x\"";
    assert_eq!(Position::at(text, 0), Position { line: 1, column: 1 });
    assert_eq!(Position::at(text, 3), Position { line: 2, column: 1 });
    // `é` is two bytes, one column.
    assert_eq!(Position::at(text, 7), Position { line: 2, column: 4 });
    assert_eq!(Position::at(text, 999), Position { line: 2, column: 7 });
    // Inside a multi-byte char: its start.
    assert_eq!(Position::at(text, 6), Position { line: 2, column: 3 });
}

#[test]
fn syntax_errors_carry_serde_json_place_and_words() {
    let e = parse("{\n  \"a\": 1,\n}").unwrap_err();
    assert_eq!(e.position.line, 3);
    assert!(e.message.contains("trailing comma"), "{e}");
    assert!(parse("{\"a\": 1} // c").is_err());
    assert!(parse("").is_err());
}

#[test]
fn entries_keep_key_positions_and_the_last_duplicate() {
    let text = "{\n  \"a\": 1,\n  \"b\": [true, null],\n  \"a\": \"x\"\n}";
    let doc = parse(text).unwrap();
    let entries = doc.root().entries().unwrap();
    let keys: Vec<(&str, Position, Kind)> = entries
        .iter()
        .map(|e| (e.key.as_str(), e.position, e.value.kind()))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("b", Position { line: 3, column: 3 }, Kind::Array),
            ("a", Position { line: 4, column: 3 }, Kind::String),
        ]
    );
    assert_eq!(entries[1].value.json(), serde_json::json!("x"));
    let b = doc.root().get("b").unwrap().value.elements().unwrap();
    assert_eq!(b[1].kind(), Kind::Null);
    assert!(doc.root().elements().is_none());
    assert!(b[0].entries().is_none());
}

#[test]
fn decode_reports_wrong_types_with_their_path() {
    let text = "{\n \"heartbeat_secs\": 5,\n \"env\": [\"A\",\n   7]\n}";
    let doc = parse(text).unwrap();
    let e = decode::<Exec>(doc.root().tree()).unwrap_err();
    assert_eq!(e.path.to_string(), "env[1]");
    assert_eq!(
        e.problem,
        Problem::WrongType {
            expected: "a string".into()
        }
    );
    let (node, at) = doc.root().find(&e.path).unwrap();
    assert_eq!(node.kind(), Kind::Number);
    assert_eq!(at, Position { line: 4, column: 4 });
}

#[test]
fn decode_reports_unknown_fields_structurally() {
    let doc = parse(r#"{"heartbeat_secs": 1, "bogus": 2}"#).unwrap();
    let e = decode::<Exec>(doc.root().tree()).unwrap_err();
    assert_eq!(e.path.to_string(), "bogus");
    let Problem::UnknownField { field, known } = &e.problem else {
        panic!("{e:?}")
    };
    assert_eq!(field, "bogus");
    assert_eq!(*known, ["heartbeat_secs", "env", "map"]);
    assert_eq!(
        e.problem.serde_message(),
        "unknown field `bogus`, expected one of `heartbeat_secs`, `env`, `map`"
    );
}

#[test]
fn negative_numbers_for_unsigned_fields_are_wrong_types() {
    let doc = parse(r#"{"heartbeat_secs": -1}"#).unwrap();
    let e = decode::<Exec>(doc.root().tree()).unwrap_err();
    assert_eq!(e.path.to_string(), "heartbeat_secs");
    assert_eq!(
        e.problem,
        Problem::WrongType {
            expected: "u64".into()
        }
    );
}

#[test]
fn nested_map_paths_and_probes() {
    let doc = parse(r#"{"map": {"K": ["x"]}}"#).unwrap();
    let e = decode::<Exec>(doc.root().tree()).unwrap_err();
    assert_eq!(e.path.to_string(), "map.K");
    let entry = doc.root().get("map").unwrap();
    let probe = object([("map", entry.value.tree())]);
    let again = decode::<Exec>(probe).unwrap_err();
    assert_eq!(again, e);
    let ok = decode::<Exec>(object([("heartbeat_secs", Tree::U64(3))])).unwrap();
    assert_eq!(ok.heartbeat_secs, 3);
}

#[test]
fn find_follows_keys_and_indexes_and_stops_outside() {
    let doc = parse("{\"a\": {\"b\": [1, {\"c\": 2}]}}").unwrap();
    let path = FieldPath(vec![
        PathSegment::Key("a".into()),
        PathSegment::Key("b".into()),
        PathSegment::Index(1),
        PathSegment::Key("c".into()),
    ]);
    assert_eq!(path.to_string(), "a.b[1].c");
    let (node, at) = doc.root().find(&path).unwrap();
    assert_eq!(node.raw(), "2");
    assert_eq!(at.column, 18);
    assert!(doc.root().find(&path.child("d")).is_none());
    assert_eq!(path.skip(2).to_string(), "[1].c");
}

#[test]
fn a_leading_byte_order_mark_is_left_out_and_not_counted_in_positions() {
    let text = "{\"exec\":\n  {\"heartbeat_secs\": \"x\"}}";
    let field = FieldPath::default().child("exec").child("heartbeat_secs");
    let place = |text: &str| parse(text).unwrap().root().find(&field).map(|(_, at)| at);
    assert_eq!(place(&format!("\u{feff}{text}")), place(text));
    assert!(place(text).is_some());
    let err = parse("\u{feff}{,}").unwrap_err();
    assert_eq!(err.position, parse("{,}").unwrap_err().position);
    // Only a leading mark: one inside the text is still not JSON.
    assert!(parse("{}\u{feff}").is_err());
    assert!(parse("\u{feff}\u{feff}{}").is_err());
}
