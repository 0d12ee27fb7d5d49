//! Reading the few git config keys that decide which files git runs (`core.hooksPath`,
//! `core.worktree`), includes followed, without running git (nothing of an untrusted config can run
//! while it is read: no process, no `fsmonitor`, no system config).
//!
//! - [`parse`]: one file's text to its entries, in order, by git's syntax (`[section]`,
//!   `[section "sub"]`, the old `[section.sub]`, quotes, `\` escapes and line continuations,
//!   `;`/`#` comments, a key without `=` as `true`).
//! - [`read`]: a config file and everything it includes, in git's order (an include is read where
//!   it stands). Both `include.path` and every `includeIf.<condition>.path` are followed whatever
//!   the condition (`gitdir:`, `onbranch:`, `hasconfig:`): a condition can change between now and
//!   the person's next `git`, so every file that may be included counts. Relative paths are
//!   relative to the including file's directory, `~/` is the person's home; at most
//!   [`MAX_DEPTH`] levels and [`MAX_FILES`] files, as git stops at 10 levels.

use std::path::{Path, PathBuf};

/// Include levels followed at most (git's own limit).
pub(crate) const MAX_DEPTH: usize = 10;
/// Included files read at most per config.
pub(crate) const MAX_FILES: usize = 64;

/// One `section.key = value` (section and key lower-cased; the subsection as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) section: String,
    pub(crate) subsection: Option<String>,
    pub(crate) key: String,
    /// `None` for a key without `=` (a boolean `true`).
    pub(crate) value: Option<String>,
}

/// A config and its includes, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Config {
    /// Every entry of the file and its includes, in the order git applies them.
    pub(crate) entries: Vec<Entry>,
    /// Every file an include names (resolved against its includer; present or not), in order.
    pub(crate) included: Vec<PathBuf>,
}

impl Config {
    /// Every value of `section.key` (no subsection), in order.
    pub(crate) fn all(&self, section: &str, key: &str) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|e| e.section == section && e.subsection.is_none() && e.key == key)
            .filter_map(|e| e.value.as_deref())
            .collect()
    }

    /// The value git uses for `section.key` (the last one), when not empty.
    pub(crate) fn last(&self, section: &str, key: &str) -> Option<&str> {
        self.all(section, key)
            .last()
            .copied()
            .filter(|v| !v.is_empty())
    }
}

/// Reads `file` and what it includes (`read_text` gives a file's text, `None` when unreadable).
pub(crate) fn read(
    file: &Path,
    home: Option<&Path>,
    read_text: &dyn Fn(&Path) -> Option<String>,
) -> Config {
    let mut out = Config::default();
    walk(file, home, read_text, 0, &mut out);
    out
}

fn walk(
    file: &Path,
    home: Option<&Path>,
    read_text: &dyn Fn(&Path) -> Option<String>,
    depth: usize,
    out: &mut Config,
) {
    let Some(text) = read_text(file) else {
        return;
    };
    for e in parse(&text) {
        let include = e.key == "path"
            && (e.section == "include" && e.subsection.is_none()
                || e.section == "includeif" && e.subsection.is_some());
        let target = include
            .then(|| e.value.as_deref().and_then(|v| include_path(v, file, home)))
            .flatten();
        out.entries.push(e);
        let Some(target) = target else { continue };
        if out.included.len() >= MAX_FILES {
            continue;
        }
        out.included.push(target.clone());
        if depth + 1 < MAX_DEPTH {
            walk(&target, home, read_text, depth + 1, out);
        }
    }
}

/// Where an include's `path` points (git's `handle_path_include`): `~/` is the home, a relative
/// path is relative to the including file's directory; `~user/` and `%(prefix)/` are not followed.
fn include_path(value: &str, includer: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if value.is_empty() || value.starts_with("%(prefix)/") {
        return None;
    }
    if let Some(rest) = value.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    if value == "~" {
        return home.map(Path::to_path_buf);
    }
    if value.starts_with('~') {
        return None;
    }
    let p = Path::new(value);
    if p.is_absolute() {
        Some(p.to_path_buf())
    } else {
        Some(includer.parent()?.join(p))
    }
}

/// The entries of one config file's text, in order. Lines git would refuse are skipped (git
/// refuses the whole file then, so nothing of it applies; reading more is only stricter).
pub(crate) fn parse(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    // Git reads `\r\n` as `\n`.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let chars: Vec<char> = text.replace("\r\n", "\n").chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Leading white space of a line (or after a section header).
        while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t' || chars[i] == '\n') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        match chars[i] {
            ';' | '#' => i = skip_line(&chars, i),
            '[' => {
                let (s, sub, next) = header(&chars, i + 1);
                i = next;
                match s {
                    Some(s) => {
                        section = s;
                        subsection = sub;
                    }
                    None => i = skip_line(&chars, i),
                }
            }
            c if c.is_ascii_alphabetic() => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '-') {
                    i += 1;
                }
                let key: String = chars[start..i].iter().collect::<String>().to_lowercase();
                while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
                    i += 1;
                }
                let value = if i < chars.len() && chars[i] == '=' {
                    let (v, next) = value(&chars, i + 1);
                    i = next;
                    Some(v)
                } else {
                    i = skip_line(&chars, i);
                    None
                };
                if !section.is_empty() {
                    out.push(Entry {
                        section: section.clone(),
                        subsection: subsection.clone(),
                        key,
                        value,
                    });
                }
            }
            _ => i = skip_line(&chars, i),
        }
    }
    out
}

/// Index after the end of the line holding `i`.
fn skip_line(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] != '\n' {
        i += 1;
    }
    i + 1
}

/// A section header after its `[`: (section, subsection, index after `]`).
fn header(chars: &[char], mut i: usize) -> (Option<String>, Option<String>, usize) {
    let start = i;
    while i < chars.len() && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '-' | '.')) {
        i += 1;
    }
    let name: String = chars[start..i].iter().collect();
    if name.is_empty() || i >= chars.len() {
        return (None, None, i);
    }
    if chars[i] == ']' {
        // `[section.sub]`: the old form, the subsection lower-cased.
        return match name.split_once('.') {
            Some((s, sub)) => (Some(s.to_lowercase()), Some(sub.to_lowercase()), i + 1),
            None => (Some(name.to_lowercase()), None, i + 1),
        };
    }
    while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
        i += 1;
    }
    if i >= chars.len() || chars[i] != '"' || name.contains('.') {
        return (None, None, i);
    }
    i += 1;
    let mut sub = String::new();
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\n' {
            return (None, None, i);
        }
        if chars[i] == '\\' && i + 1 < chars.len() && chars[i + 1] != '\n' {
            i += 1;
        }
        sub.push(chars[i]);
        i += 1;
    }
    if i + 1 < chars.len() && chars[i + 1] == ']' {
        (Some(name.to_lowercase()), Some(sub), i + 2)
    } else {
        (None, None, i)
    }
}

/// A value after its `=`: (value, index after its line).
fn value(chars: &[char], mut i: usize) -> (String, usize) {
    let mut out = String::new();
    let mut quoted = false;
    // Length of `out` up to its last character that is not unquoted white space.
    let mut kept = 0;
    while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\n' => break,
            ';' | '#' if !quoted => {
                i = skip_line(chars, i - 1);
                break;
            }
            '"' => quoted = !quoted,
            '\\' if i < chars.len() => {
                let e = chars[i];
                i += 1;
                match e {
                    '\n' => continue,
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'b' => {
                        out.pop();
                    }
                    other => out.push(other),
                }
                kept = out.len();
            }
            ' ' | '\t' if !quoted => out.push(c),
            other => {
                out.push(other);
                kept = out.len();
            }
        }
    }
    out.truncate(kept);
    (out, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(section: &str, sub: Option<&str>, key: &str, value: Option<&str>) -> Entry {
        Entry {
            section: section.into(),
            subsection: sub.map(str::to_string),
            key: key.into(),
            value: value.map(str::to_string),
        }
    }

    #[test]
    fn entries_follow_gits_syntax() {
        let text = "# c\n[core]\n\tbare = false\n\thooksPath = \".hu;sky\" ; comment\n\
                    [Include]\n  path = a.inc\n[includeIf \"gitdir:~/w/\"]\npath=b\\\n.inc\n\
                    [alias]\n\thookspath\n[core.sub]\nx = \"  sp \" tail  \n[bad\nk = v\n";
        assert_eq!(
            parse(text),
            vec![
                e("core", None, "bare", Some("false")),
                e("core", None, "hookspath", Some(".hu;sky")),
                e("include", None, "path", Some("a.inc")),
                e("includeif", Some("gitdir:~/w/"), "path", Some("b.inc")),
                e("alias", None, "hookspath", None),
                e("core", Some("sub"), "x", Some("  sp  tail")),
                // After a broken header the previous section goes on (git refuses the file).
                e("core", Some("sub"), "k", Some("v")),
            ]
        );
    }

    #[test]
    fn includes_are_followed_in_order_whatever_their_condition() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(
            d.join("config"),
            "[core]\nhooksPath = one\n[includeIf \"onbranch:x\"]\npath = sub/a\n[include]\npath = ~/h\npath = /abs/none\n",
        )
        .unwrap();
        std::fs::write(
            d.join("sub/a"),
            "[core]\nhooksPath = two\n[include]\npath = ../sub/a\n",
        )
        .unwrap();
        std::fs::write(d.join("h"), "[core]\n\tworktree = w\n").unwrap();
        let read_text = |p: &Path| std::fs::read_to_string(p).ok();
        let c = read(&d.join("config"), Some(d), &read_text);
        assert_eq!(c.all("core", "hookspath")[..3], ["one", "two", "two"]);
        assert_eq!(c.last("core", "worktree"), Some("w"));
        // The self-include stops at git's depth limit; every include is named.
        assert_eq!(c.included[0], d.join("sub/a"));
        assert_eq!(c.included[1], d.join("sub/../sub/a"));
        assert!(c.included.contains(&d.join("h")));
        assert!(c.included.contains(&PathBuf::from("/abs/none")));
        assert!(c.included.len() <= MAX_FILES);
        assert_eq!(c.all("core", "hookspath").len(), MAX_DEPTH);
    }
}
