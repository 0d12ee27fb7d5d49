//! Pure step-up policy: how many authorizations one server may ask for before the client gives
//! up (the spec asks clients to bound scope escalation so a server cannot loop them forever).

/// Authorizations allowed for one connection, the first one included.
pub const MAX_AUTHORIZATIONS: u32 = 3;

/// What to do after the server refused a token for lack of scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepUp {
    /// Authorize again asking for these scopes (granted ∪ required, order kept, no duplicates).
    Authorize(Vec<String>),
    /// Give up: the limit is reached, or the server names no scope and nothing new can be asked.
    GiveUp,
}

/// Decides the next step after a 403 `insufficient_scope` naming `required` (space-separated),
/// given the scopes already `granted` and the authorizations already made.
pub fn next_step(required: Option<&str>, granted: &[String], authorizations: u32) -> StepUp {
    if authorizations >= MAX_AUTHORIZATIONS {
        return StepUp::GiveUp;
    }
    let Some(required) = required.filter(|r| !r.trim().is_empty()) else {
        return StepUp::GiveUp;
    };
    let mut scopes: Vec<String> = granted.to_vec();
    for scope in required.split_whitespace() {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    StepUp::Authorize(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escalation_asks_for_the_union() {
        assert_eq!(
            next_step(Some("mcp:basic mcp:write"), &["mcp:basic".into()], 1),
            StepUp::Authorize(vec!["mcp:basic".into(), "mcp:write".into()])
        );
    }

    #[test]
    fn the_limit_counts_the_first_authorization() {
        assert!(matches!(next_step(Some("a"), &[], 2), StepUp::Authorize(_)));
        assert_eq!(
            next_step(Some("a"), &[], MAX_AUTHORIZATIONS),
            StepUp::GiveUp
        );
    }

    #[test]
    fn no_named_scope_gives_up() {
        assert_eq!(next_step(None, &[], 0), StepUp::GiveUp);
        assert_eq!(next_step(Some("  "), &[], 0), StepUp::GiveUp);
    }
}
