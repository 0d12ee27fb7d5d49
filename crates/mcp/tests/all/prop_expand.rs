//! Property tests of `${VAR}` expansion: any text expands or fails without panicking, text
//! without `$` is unchanged, an escaped template comes back literally, and expanded values are
//! never expanded again.

use aibuddy_mcp::config::expand::{ExpandError, expand, variables};
use proptest::prelude::*;

fn lookup(name: &str) -> Option<String> {
    match name {
        "A" => Some("${B}".into()),
        "B" => Some("bee".into()),
        "E" => Some(String::new()),
        _ => None,
    }
}

fn template() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("$".to_string()),
            Just("${".to_string()),
            Just("}".to_string()),
            Just("$${".to_string()),
            Just(":-".to_string()),
            Just("${A}".to_string()),
            Just("${B:-d}".to_string()),
            Just("${E:-}".to_string()),
            Just("${UNSET}".to_string()),
            "[a-zA-Z0-9_ /é]{0,5}",
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn expansion_never_panics_and_agrees_with_variables(t in template()) {
        let vars = variables(&t);
        match expand(&t, &lookup) {
            Ok(_) => prop_assert!(vars.is_ok()),
            Err(ExpandError::Unset { name }) => {
                let vars = vars.expect("an unset variable parsed");
                prop_assert!(vars.iter().any(|v| v.name == name && v.default.is_none()));
            }
            Err(_) => prop_assert!(vars.is_err()),
        }
    }

    #[test]
    fn text_without_a_dollar_is_unchanged(t in "[^$]{0,40}") {
        prop_assert_eq!(expand(&t, &lookup).unwrap(), t);
    }

    #[test]
    fn escaped_references_come_back_literally(name in "[A-Z_][A-Z0-9_]{0,8}", rest in "[a-z/]{0,8}") {
        let written = format!("$${{{name}}}{rest}");
        prop_assert_eq!(expand(&written, &lookup).unwrap(), format!("${{{name}}}{rest}"));
        prop_assert!(variables(&written).unwrap().is_empty());
    }

    #[test]
    fn values_are_not_expanded_again(prefix in "[a-z]{0,4}") {
        prop_assert_eq!(expand(&format!("{prefix}${{A}}"), &lookup).unwrap(), format!("{prefix}${{B}}"));
    }
}
