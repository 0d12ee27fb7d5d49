//! No import cycle between the top-level modules of a crate (issue 24).
//!
//! Walks every crate of the workspace (the members of the root `Cargo.toml`; in each, the library
//! and binary targets under `src/`), follows the `mod` declarations from the crate root (skipping
//! modules and items under `#[cfg(test)]`), strips comments and literals, and collects the
//! references between top-level modules: `crate::x`, `use crate::{x, y::z}`, `pub(in crate::x)`,
//! and `super::…::x` chains that climb to the crate root. The graph must be a DAG; a cycle fails
//! the test naming its modules and, for each edge, the file and line that makes it.
//!
//! The layering this keeps is written down in `docs/architecture.md` ("Layers of the core").

mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scan::{Edge, Graph, crate_graph};

/// Edges allowed to close a cycle for now, each with its reason: `(member, from, to, reason)`, the
/// member as the root `Cargo.toml` lists it (`"."`, `"crates/store"`, `"src-tauri"`). An entry
/// that names no edge any more fails the test, so the list only shrinks. Empty: every crate's
/// module graph is a DAG.
const ALLOWED: &[(&str, &str, &str, &str)] = &[];

/// The crate targets of the workspace: `(member dir, target root file)`, members read from the
/// root `Cargo.toml`, targets `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`, `src/bin/*/main.rs`.
fn targets(workspace: &Path) -> Vec<(String, PathBuf)> {
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap_or_default();
    let members: Vec<String> = manifest
        .split_once("members")
        .and_then(|(_, rest)| rest.split_once('[')?.1.split_once(']'))
        .map(|(list, _)| {
            list.split(',')
                .map(|m| m.trim().trim_matches('"').to_string())
                .filter(|m| !m.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for member in members {
        let src = workspace.join(&member).join("src");
        for root in ["lib.rs", "main.rs"] {
            if src.join(root).is_file() {
                out.push((member.clone(), src.join(root)));
            }
        }
        let mut bins: Vec<PathBuf> = std::fs::read_dir(src.join("bin"))
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        bins.sort();
        for bin in bins {
            if bin.extension().is_some_and(|e| e == "rs") {
                out.push((member.clone(), bin));
            } else if bin.join("main.rs").is_file() {
                out.push((member.clone(), bin.join("main.rs")));
            }
        }
    }
    out
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &Graph, allowed: &BTreeSet<(&str, &str)>) -> Vec<Vec<String>> {
    let mut adj: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in &graph.edges {
        if !allowed.contains(&(e.from.as_str(), e.to.as_str())) {
            adj.entry(&e.from).or_default().insert(&e.to);
        }
    }
    struct State<'a> {
        adj: &'a BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for &w in s.adj.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        adj: &adj,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in adj.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A readable account of one cycle: a shortest loop through its first module, then every edge
/// inside the component with the file and line that makes it.
fn describe(graph: &Graph, comp: &[String], workspace: &Path) -> String {
    let inside = |e: &&Edge| comp.contains(&e.from) && comp.contains(&e.to);
    let mut text = format!("cycle between {{{}}}", comp.join(", "));
    // Shortest loop from the first module back to itself (BFS).
    let start = &comp[0];
    let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
    let mut frontier = vec![start.as_str()];
    'bfs: while !frontier.is_empty() {
        let mut next = Vec::new();
        for v in frontier {
            for e in graph.edges.iter().filter(inside).filter(|e| e.from == v) {
                if e.to == *start {
                    let mut path = vec![start.as_str(), v];
                    let mut at = v;
                    while at != start.as_str() {
                        at = prev[at];
                        path.push(at);
                    }
                    path.reverse();
                    text.push_str(&format!(": {}", path.join(" -> ")));
                    break 'bfs;
                }
                if !prev.contains_key(e.to.as_str()) {
                    prev.insert(&e.to, v);
                    next.push(e.to.as_str());
                }
            }
        }
        frontier = next;
    }
    for e in graph.edges.iter().filter(inside) {
        let file = e.file.strip_prefix(workspace).unwrap_or(&e.file);
        text.push_str(&format!(
            "\n    {} -> {}  ({}:{})",
            e.from,
            e.to,
            file.display(),
            e.line
        ));
    }
    text
}

/// Every cycle of every crate target of the workspace at `workspace`, described.
fn workspace_cycles(workspace: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (member, root) in targets(workspace) {
        let graph = crate_graph(&root);
        let allowed: BTreeSet<(&str, &str)> = ALLOWED
            .iter()
            .filter(|(m, ..)| *m == member)
            .map(|(_, from, to, _)| (*from, *to))
            .collect();
        for comp in cycles(&graph, &allowed) {
            let rel = root.strip_prefix(workspace).unwrap_or(&root);
            found.push(format!(
                "{}: {}",
                rel.display(),
                describe(&graph, &comp, workspace)
            ));
        }
    }
    found
}

#[test]
fn no_module_cycle_in_any_crate() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = workspace_cycles(workspace);
    assert!(
        found.is_empty(),
        "the top-level modules of a crate must form a DAG (docs/architecture.md, \"Layers of the \
         core\"): move the shared fact down, pass a value or closure from the caller, or move the \
         glue up; found:\n{}",
        found.join("\n")
    );
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(member, from, to, _)| {
            !targets(workspace)
                .iter()
                .filter(|(m, _)| m == member)
                .any(|(_, root)| {
                    crate_graph(root)
                        .edges
                        .iter()
                        .any(|e| e.from == *from && e.to == *to)
                })
        })
        .map(|(member, from, to, _)| format!("{member}: {from} -> {to}"))
        .collect();
    assert!(
        stale.is_empty(),
        "allowed edges that are gone (remove them): {stale:?}"
    );
}

/// The scanner on a small crate written for it: every form of reference is seen, comments,
/// literals and test code are not, and a cycle is reported with the lines that make it.
#[test]
fn the_scanner_reads_references_and_skips_comments_literals_and_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\nmod c;\nmod d;\nmod e;\n#[cfg(test)]\nmod t;\n",
    );
    // a: a grouped use, a nested child climbing to the root.
    write("a/mod.rs", "use crate::{b::X, c};\nmod inner;\n");
    write("a/inner.rs", "fn f() { super::super::d::g(); }\n");
    // b: only comments, literals and test code name `e`; `crate::a` in a doc comment.
    write(
        "b.rs",
        "//! see crate::e\n/* crate::e */\nconst S: &str = \"crate::e\";\nconst R: &str = r#\"crate::e\"#;\n\
         #[cfg(test)]\nmod tests { use crate::e; }\n#[cfg(all(test, unix))]\nfn t() { crate::e::x(); }\n\
         pub struct X<'a>(&'a str);\nconst C: char = '\\'';\n",
    );
    // c names d in a visibility (`pub(in crate::d)`); d closes a cycle back to a.
    write("c.rs", "pub(in crate::d) fn f() {}\n");
    write(
        "d.rs",
        "#[cfg(not(test))]\nuse crate::a;\n#[cfg(any(test, unix))]\nfn h() { crate::e::x(); }\n",
    );
    write("e.rs", "pub fn x() {}\n");
    write("t.rs", "use crate::a;\n");
    let graph = crate_graph(&src.join("lib.rs"));
    let edges: BTreeSet<(&str, &str)> = graph
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    let want: BTreeSet<(&str, &str)> = [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("c", "d"),
        ("d", "a"),
        ("d", "e"),
    ]
    .into_iter()
    .collect();
    assert_eq!(edges, want);
    assert!(
        !graph.modules.contains("t"),
        "a #[cfg(test)] module is not read"
    );
    let found = cycles(&graph, &BTreeSet::new());
    assert_eq!(found, vec![vec!["a".to_string(), "c".into(), "d".into()]]);
    let text = describe(&graph, &found[0], dir.path());
    assert!(text.contains("a -> d -> a"), "{text}");
    assert!(text.contains("d -> a  (src/d.rs:2)"), "{text}");
    // An allowed edge opens the cycle.
    assert!(cycles(&graph, &BTreeSet::from([("d", "a")])).is_empty());
}

/// For a quick look outside the test harness (`rustc` a wrapper calling this): prints the
/// cycles of the workspace at the current directory, or every edge with `EDGES=1`.
#[allow(dead_code)]
pub fn run_cli() {
    let workspace = std::env::current_dir().unwrap_or_default();
    if std::env::var_os("EDGES").is_some() {
        for (member, root) in targets(&workspace) {
            let g = crate_graph(&root);
            for e in &g.edges {
                let file = e.file.strip_prefix(&workspace).unwrap_or(&e.file);
                println!(
                    "{member} {} -> {} {}:{}",
                    e.from,
                    e.to,
                    file.display(),
                    e.line
                );
            }
        }
    }
    for c in workspace_cycles(&workspace) {
        println!("{c}");
    }
}
