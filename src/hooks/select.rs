//! Which hooks of an event run for a tool (pure).
//!
//! A `match` is a tool name or a glob (`*` any run of characters, `?` one character), with
//! alternatives separated by `|` (`write_file|edit_file`); an empty `match` is `*`. Names are
//! compared exactly (case matters, as tool names do). Run events ignore `match`.

use crate::settings::HookEntry;

/// Whether `pattern` matches the tool `name`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return true;
    }
    pattern
        .split('|')
        .map(str::trim)
        .any(|alt| glob(alt.as_bytes(), name.as_bytes()))
}

/// Iterative glob with backtracking on the last `*` (linear in practice, never exponential).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The entries of a tool event that match `tool`, in settings order.
pub fn for_tool<'a>(entries: &'a [HookEntry], tool: &str) -> Vec<&'a HookEntry> {
    entries
        .iter()
        .filter(|h| matches(&h.matcher, tool))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_globs_and_alternatives() {
        assert!(matches("execute", "execute"));
        assert!(!matches("execute", "execute2"));
        assert!(!matches("Execute", "execute"));
        assert!(matches("*", "anything"));
        assert!(matches("", "anything"));
        assert!(matches("mcp__github__*", "mcp__github__create_issue"));
        assert!(!matches("mcp__github__*", "mcp__gitlab__x"));
        assert!(matches("write_file|edit_file", "edit_file"));
        assert!(matches("write_file | edit_file", "write_file"));
        assert!(!matches("write_file|edit_file", "read_file"));
        assert!(matches("re?d_*", "read_file"));
        assert!(matches("*_file", "read_file"));
        assert!(!matches("*_file", "read_files"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("a*b*c", "aXXbYY"));
    }

    #[test]
    fn a_long_pattern_is_not_exponential() {
        let p = "*a".repeat(50);
        let s = "a".repeat(10_000) + "b";
        let t = std::time::Instant::now();
        assert!(!matches(&p, &s));
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }
}
