//! Per-server tool allow and deny lists (`"tools": {"allow": [...], "deny": [...]}` in an
//! `mcpServers` entry): which of a server's tools are offered at all (pure).
//!
//! Names are the tool names as the server gives them, matched exactly; `*` in a pattern
//! matches any run of characters (`"read_*"`, `"*"`). A tool matching a `deny` pattern is left
//! out ([`DENIED`]); with an `allow` list, a tool matching none of its patterns is left out
//! ([`NOT_ALLOWED`]); deny wins over allow. Filtering happens before the catalog is built, so
//! a left-out tool counts toward no gate and is never offered or callable.

use serde::Serialize;

/// Reason of a tool left out by a `deny` pattern.
pub const DENIED: &str = "denied by mcp.json";
/// Reason of a tool matching no `allow` pattern.
pub const NOT_ALLOWED: &str = "not in allow list";

/// One server's tool filter. The default lets every tool through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolFilter {
    /// When given, only tools matching one of these patterns are offered.
    pub allow: Option<Vec<String>>,
    /// Tools matching one of these patterns are never offered.
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Why `tool` is left out, or None when it is offered.
    pub fn verdict(&self, tool: &str) -> Option<&'static str> {
        if self.deny.iter().any(|p| glob_match(p, tool)) {
            return Some(DENIED);
        }
        match &self.allow {
            Some(allow) if !allow.iter().any(|p| glob_match(p, tool)) => Some(NOT_ALLOWED),
            _ => None,
        }
    }

    /// Whether it lets every tool through.
    pub fn is_open(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty()
    }
}

/// `*` matches any run of characters (also none); everything else matches itself. Pure;
/// linear in practice (greedy with one backtrack point), never recursive.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_exactly_or_with_stars() {
        assert!(glob_match("echo", "echo"));
        assert!(!glob_match("echo", "echo2"));
        assert!(
            !glob_match("echo", "Echo"),
            "case matters: names as the server gives them"
        );
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("read_*", "read_file"));
        assert!(!glob_match("read_*", "write_file"));
        assert!(glob_match("*_file", "read_file"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(glob_match("**", "x"));
        assert!(glob_match("a*a", "aaa"));
        assert!(!glob_match("", "a"));
    }

    #[test]
    fn deny_wins_over_allow() {
        let open = ToolFilter::default();
        assert!(open.is_open());
        assert_eq!(open.verdict("x"), None);
        let f = ToolFilter {
            allow: Some(vec!["get_*".into(), "echo".into()]),
            deny: vec!["get_secret".into()],
        };
        assert_eq!(f.verdict("echo"), None);
        assert_eq!(f.verdict("get_sum"), None);
        assert_eq!(f.verdict("get_secret"), Some(DENIED));
        assert_eq!(f.verdict("add"), Some(NOT_ALLOWED));
        let empty_allow = ToolFilter {
            allow: Some(Vec::new()),
            deny: Vec::new(),
        };
        assert_eq!(empty_allow.verdict("echo"), Some(NOT_ALLOWED));
    }
}
