//! Reading one crate's module graph: the files its `mod` declarations reach from the crate root
//! (not under `#[cfg(test)]`), each stripped of comments and literals, and the references between
//! top-level modules they hold (`crate::x`, `use crate::{x, y::z}`, `pub(in crate::x)`, and
//! `super::…::x` chains that climb to the crate root).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One lexical token of the stripped source.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// A plain string literal's text (for `#[path = "…"]`).
    Str(String),
    /// `::`
    Path,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The tokens of `src` with comments, string, char and byte literals and lifetimes removed.
fn tokenize(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(b, i) {
            line += b[i..end].iter().filter(|&&x| x == b'\n').count();
            i = end;
        } else if c == b'"' || (c == b'b' && b.get(i + 1) == Some(&b'"')) {
            i += if c == b'b' { 2 } else { 1 };
            let start = i;
            let start_line = line;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') {
                    line += 1;
                }
                i += 1;
            }
            out.push(Token {
                tok: Tok::Str(src.get(start..i).unwrap_or_default().to_string()),
                line: start_line,
            });
            i += 1;
        } else if c == b'\'' || (c == b'b' && b.get(i + 1) == Some(&b'\'')) {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): both dropped.
            let start = if c == b'b' { i + 2 } else { i + 1 };
            if b.get(start) == Some(&b'\\') {
                let mut j = start + 1;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
            } else if b.get(start + 1) == Some(&b'\'') {
                i = start + 2;
            } else if let Some(ch) = src[start..].chars().next().filter(|ch| !ch.is_ascii())
                && src[start + ch.len_utf8()..].starts_with('\'')
            {
                i = start + ch.len_utf8() + 1;
            } else {
                i = start;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            out.push(Token {
                tok: Tok::Ident(word.strip_prefix("r#").unwrap_or(word).to_string()),
                line,
            });
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else if b[i..].starts_with(b"::") {
            out.push(Token {
                tok: Tok::Path,
                line,
            });
            i += 2;
        } else {
            let ch = src[i..].chars().next().unwrap_or(' ');
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += ch.len_utf8();
        }
    }
    out
}

/// The end of a raw (byte) string literal starting at `i` (`r"…"`, `r#"…"#`, `br#"…"#`).
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
    {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&x| x == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    while j < b.len() {
        if b[j..].starts_with(&close) {
            return Some(j + close.len());
        }
        j += 1;
    }
    Some(b.len())
}

fn is_ident(t: Option<&Token>, word: &str) -> bool {
    matches!(t, Some(Token { tok: Tok::Ident(w), .. }) if w == word)
}

fn is_punct(t: Option<&Token>, ch: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(p), .. }) if *p == ch)
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token {
            tok: Tok::Ident(w), ..
        }) => Some(w),
        _ => None,
    }
}

/// The index after the group opened at `i` (`{`, `[` or `(`), brackets balanced.
fn skip_group(toks: &[Token], i: usize) -> usize {
    let mut depth = 0i32;
    let mut j = i;
    while j < toks.len() {
        match &toks[j].tok {
            Tok::Punct('{' | '[' | '(') => depth += 1,
            Tok::Punct('}' | ']' | ')') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    toks.len()
}

/// The index after the item starting at `i` (a `use … ;`, an item ending in `;`, or an item whose
/// first top-level `{…}` is its body).
fn skip_item(toks: &[Token], i: usize) -> usize {
    let mut j = i;
    let is_use = toks[i..]
        .iter()
        .take_while(|t| !matches!(t.tok, Tok::Punct('{' | ';')))
        .any(|t| t.tok == Tok::Ident("use".to_string()));
    while j < toks.len() {
        match &toks[j].tok {
            Tok::Punct(';') => return j + 1,
            Tok::Punct('#') if is_punct(toks.get(j + 1), '[') => j = skip_group(toks, j + 1),
            Tok::Punct('(' | '[') => j = skip_group(toks, j),
            Tok::Punct('{') if !is_use => return skip_group(toks, j),
            Tok::Punct('{') => j = skip_group(toks, j),
            _ => j += 1,
        }
    }
    toks.len()
}

/// Whether the attribute group `[ … ]` at `i` compiles its item only under test: `cfg(test)` or
/// `cfg(all(…, test, …))` (not `cfg(not(test))`, nor `cfg(any(test, …))`, built without tests too).
fn is_test_cfg(toks: &[Token], i: usize) -> bool {
    let end = skip_group(toks, i);
    let body = &toks[i + 1..end.saturating_sub(1)];
    if !is_ident(body.first(), "cfg") || !is_punct(body.get(1), '(') {
        return false;
    }
    if is_ident(body.get(2), "test") && is_punct(body.get(3), ')') {
        return true;
    }
    if !is_ident(body.get(2), "all") || !is_punct(body.get(3), '(') {
        return false;
    }
    // The direct conditions of `all(…)`: depth 0 inside its parentheses.
    let mut depth = 0i32;
    for t in &body[4..] {
        match &t.tok {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') if depth == 0 => return false,
            Tok::Punct(')') => depth -= 1,
            Tok::Ident(w) if depth == 0 && w == "test" => return true,
            _ => {}
        }
    }
    false
}

/// One module file to read: its module path inside the crate and its file.
struct ModFile {
    path: Vec<String>,
    file: PathBuf,
    /// Whether the file owns its directory (`lib.rs`, `main.rs`, `mod.rs`, or `#[path]`-free
    /// children resolve beside it).
    dir_owner: bool,
}

/// A reference from one top-level module to another, with where it is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Edge {
    pub(super) from: String,
    pub(super) to: String,
    pub(super) file: PathBuf,
    pub(super) line: usize,
}

/// The top-level modules of one crate target and the references between them.
#[derive(Default)]
pub(super) struct Graph {
    pub(super) modules: BTreeSet<String>,
    pub(super) edges: Vec<Edge>,
}

/// Reads the module tree of the target rooted at `root` (`src/lib.rs`, `src/main.rs`, …).
pub(super) fn crate_graph(root: &Path) -> Graph {
    let mut graph = Graph::default();
    let mut queue = vec![ModFile {
        path: Vec::new(),
        file: root.to_path_buf(),
        dir_owner: true,
    }];
    let mut raw_edges: Vec<(Vec<String>, String, PathBuf, usize)> = Vec::new();
    while let Some(m) = queue.pop() {
        let Ok(src) = std::fs::read_to_string(&m.file) else {
            continue;
        };
        let toks = tokenize(&src);
        scan(&toks, &m, &mut queue, &mut raw_edges, &mut graph.modules);
    }
    for (from_path, to, file, line) in raw_edges {
        let Some(from) = from_path.first() else {
            continue;
        };
        if *from != to && graph.modules.contains(&to) {
            graph.edges.push(Edge {
                from: from.clone(),
                to,
                file,
                line,
            });
        }
    }
    graph.edges.sort();
    graph
        .edges
        .dedup_by(|a, b| a.from == b.from && a.to == b.to && a.file == b.file);
    graph
}

/// Scans one file: child module declarations go to `queue`, references to `edges`.
fn scan(
    toks: &[Token],
    m: &ModFile,
    queue: &mut Vec<ModFile>,
    edges: &mut Vec<(Vec<String>, String, PathBuf, usize)>,
    top: &mut BTreeSet<String>,
) {
    // An inner `#![cfg(test)]` makes the whole file test code.
    if is_punct(toks.first(), '#') && is_punct(toks.get(1), '!') && is_test_cfg(toks, 2) {
        return;
    }
    let dir = m.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let own_dir = if m.dir_owner {
        dir.clone()
    } else {
        dir.join(m.file.file_stem().unwrap_or_default())
    };
    // Inline modules: (name, brace depth at which it closes).
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut test_attr = false;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match &t.tok {
            Tok::Punct('#') if is_punct(toks.get(i + 1), '[') => {
                if is_test_cfg(toks, i + 1) {
                    test_attr = true;
                }
                if is_ident(toks.get(i + 2), "path") {
                    path_attr = path_literal(toks, i);
                }
                i = skip_group(toks, i + 1);
                continue;
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        if test_attr {
            test_attr = false;
            path_attr = None;
            if !matches!(t.tok, Tok::Punct('{' | '}')) {
                i = skip_item(toks, i);
                continue;
            }
        }
        let mut module: Vec<String> = m.path.clone();
        module.extend(inline.iter().map(|(n, _)| n.clone()));
        if is_ident(Some(t), "mod")
            && let Some(name) = ident(toks.get(i + 1))
        {
            if is_punct(toks.get(i + 2), ';') {
                let mut child = module.clone();
                child.push(name.to_string());
                if child.len() == 1 {
                    top.insert(name.to_string());
                }
                let mut base = own_dir.clone();
                for (n, _) in &inline {
                    base.push(n);
                }
                let (file, dir_owner) = match path_attr.take() {
                    Some(p) => (dir.join(p), true),
                    None if base.join(format!("{name}.rs")).is_file() => {
                        (base.join(format!("{name}.rs")), false)
                    }
                    None => (base.join(name).join("mod.rs"), true),
                };
                queue.push(ModFile {
                    path: child,
                    file,
                    dir_owner,
                });
                i += 3;
                continue;
            }
            if is_punct(toks.get(i + 2), '{') {
                if module.is_empty() {
                    top.insert(name.to_string());
                }
                inline.push((name.to_string(), depth));
                depth += 1;
                i += 3;
                continue;
            }
        }
        path_attr = None;
        let after_path = i > 0 && matches!(toks[i - 1].tok, Tok::Path);
        if (is_ident(Some(t), "crate") || is_ident(Some(t), "super"))
            && !after_path
            && matches!(toks.get(i + 1).map(|t| &t.tok), Some(Tok::Path))
        {
            // Climb: `crate::` is the root; each `super::` one level up.
            let mut j = i;
            let mut level = module.len() as isize;
            if is_ident(Some(t), "crate") {
                level = 0;
                j += 2;
            } else {
                while is_ident(toks.get(j), "super")
                    && matches!(toks.get(j + 1).map(|t| &t.tok), Some(Tok::Path))
                {
                    level -= 1;
                    j += 2;
                }
            }
            if level == 0 {
                for target in first_segments(toks, j) {
                    edges.push((
                        module.clone(),
                        target,
                        m.file.clone(),
                        toks[j.min(toks.len() - 1)].line,
                    ));
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
}

/// The file named by `#[path = "…"]` whose `#` is at `i`.
fn path_literal(toks: &[Token], i: usize) -> Option<String> {
    match toks.get(i + 4).map(|t| &t.tok) {
        Some(Tok::Str(s)) if is_punct(toks.get(i + 3), '=') => Some(s.clone()),
        _ => None,
    }
}

/// The first segments named at `j`: `x` of `x::…`, or each element's first segment of `{x, y::z}`.
fn first_segments(toks: &[Token], j: usize) -> Vec<String> {
    if let Some(name) = ident(toks.get(j)) {
        return vec![name.to_string()];
    }
    let mut out = Vec::new();
    if is_punct(toks.get(j), '{') {
        let end = skip_group(toks, j);
        let mut k = j + 1;
        let mut expect = true;
        while k < end.saturating_sub(1) {
            match &toks[k].tok {
                Tok::Ident(w) if expect => {
                    out.push(w.clone());
                    expect = false;
                }
                Tok::Punct('{' | '(' | '[') => {
                    k = skip_group(toks, k);
                    continue;
                }
                Tok::Punct(',') => expect = true,
                _ => {}
            }
            k += 1;
        }
    }
    out
}
