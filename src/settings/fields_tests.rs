//! The table against the parser: every key a settings file may hold has one row, every row is a
//! key the parser accepts.

use super::*;
use crate::settings::Settings;
use aibuddy_common::located::{self, Problem};

/// What the parser (serde derive over located JSON, as `parse.rs` runs it) says of `text`.
fn decode(text: &str) -> Result<Settings, located::DecodeError> {
    let doc = located::parse(text).expect("test JSON parses");
    located::decode::<Settings>(doc.root().tree())
}

/// The names the parser knows where `text` puts an unknown one, or `None` when it takes any name.
fn known(text: &str) -> Option<Vec<&'static str>> {
    match decode(text) {
        Err(e) => match e.problem {
            Problem::UnknownField { known, .. } => Some(known.to_vec()),
            _ => None,
        },
        Ok(_) => None,
    }
}

const UNKNOWN: &str = "no_such_key_of_ours";

fn sections() -> Vec<&'static str> {
    known(&format!(r#"{{"{UNKNOWN}": {{}}}}"#)).expect("the sections are a closed set")
}

#[test]
fn every_key_the_parser_accepts_has_a_row() {
    for section in sections() {
        match known(&format!(r#"{{"{section}": {{"{UNKNOWN}": 1}}}}"#)) {
            Some(fields) => {
                for field in fields {
                    let path = format!("{section}.{field}");
                    assert!(
                        FIELDS.iter().any(|f| f.path == path),
                        "`{path}` has no row in settings::fields::FIELDS"
                    );
                }
            }
            None => assert!(
                FIELDS.iter().any(|f| f.path == format!("{section}.*")),
                "`{section}` takes any key: it needs a `{section}.*` row"
            ),
        }
    }
}

#[test]
fn every_row_is_a_key_the_parser_accepts_and_paths_are_unique() {
    let sections = sections();
    for (i, f) in FIELDS.iter().enumerate() {
        let (section, field) = f.split();
        assert!(
            sections.contains(&section),
            "`{}`: no section `{section}`",
            f.path
        );
        // A section of names takes any key: every row of it is one.
        if let Some(fields) = known(&format!(r#"{{"{section}": {{"{UNKNOWN}": 1}}}}"#)) {
            assert!(fields.contains(&field), "`{}` is not a key", f.path);
        }
        assert!(
            FIELDS[..i].iter().all(|g| g.path != f.path),
            "`{}` has two rows",
            f.path
        );
        assert!(
            !f.meaning.is_empty() && !f.label.is_empty(),
            "`{}`: meaning and label",
            f.path
        );
    }
}

#[test]
fn the_hook_rows_are_the_hook_events() {
    let rows: Vec<&str> = FIELDS
        .iter()
        .filter_map(|f| f.path.strip_prefix("hooks."))
        .collect();
    assert_eq!(rows, crate::settings::HOOK_EVENTS.to_vec());
}

#[test]
fn edited_rows_have_a_page_and_shown_ones_are_edited() {
    for f in FIELDS {
        assert_eq!(f.editable, f.page.is_some(), "`{}`", f.path);
        assert!(
            !(f.may_hold_secrets && f.page.is_some()),
            "`{}` may hold credentials: the pages never show it",
            f.path
        );
    }
    assert_eq!(
        page_sections(),
        vec!["confirm", "exec", "providers", "agent"]
    );
}

#[test]
fn find_takes_a_rows_own_path_first_then_its_sections_names() {
    assert_eq!(
        find("exec", "network").map(|f| f.path),
        Some("exec.network")
    );
    assert_eq!(
        find("providers", "default").map(|f| f.path),
        Some("providers.default")
    );
    assert_eq!(
        find("providers", "local").map(|f| f.path),
        Some("providers.*")
    );
    assert_eq!(find("providers", ""), None);
    assert_eq!(find("exec", "future_field"), None);
    assert_eq!(find("hooks", "PreToolUse"), None);
    assert_eq!(find("nope", "x"), None);
}

#[test]
fn every_rule_is_listed_once_with_its_sentence() {
    for (i, r) in AuthorityRule::ALL.iter().enumerate() {
        assert!(!AuthorityRule::ALL[..i].contains(r), "{r:?} twice");
        assert!(r.describe().ends_with('.'), "{r:?}");
    }
    for f in FIELDS {
        assert!(
            AuthorityRule::ALL.contains(&f.rule),
            "{:?} not in ALL",
            f.rule
        );
    }
}
