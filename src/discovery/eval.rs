//! Retrieval-quality measurement for `tool_search` ranking: recall@k of labelled queries over a
//! catalog. Pure; used by the recall-floor test and the benchmark (`benches/tool_search.rs`).

use serde::Deserialize;

use super::search::{SearchDoc, SearchIndex};

/// One catalog tool as stored in the fixtures.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogTool {
    pub server: String,
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub params: Vec<String>,
}

impl CatalogTool {
    pub fn doc(&self) -> SearchDoc {
        SearchDoc {
            name: self.name.clone(),
            description: self.description.clone(),
            params: self.params.clone(),
        }
    }
}

/// A query and the names that answer it (any one counts).
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledQuery {
    pub query: String,
    pub expect: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QueryFile {
    pub queries: Vec<LabelledQuery>,
}

/// Recall at 1 and at 5, and the queries missed at 5.
#[derive(Debug, Clone, Default)]
pub struct Recall {
    pub at1: f64,
    pub at5: f64,
    pub n: usize,
    pub missed_at5: Vec<String>,
}

/// Evaluate `queries` against `index`. Queries whose expected tools are all absent from the index
/// are skipped (they belong to another catalog).
pub fn recall(index: &SearchIndex, queries: &[LabelledQuery]) -> Recall {
    let mut r = Recall::default();
    let (mut h1, mut h5) = (0usize, 0usize);
    for q in queries {
        if !q.expect.iter().any(|e| index.find_name(e).is_some()) {
            continue;
        }
        r.n += 1;
        let hits: Vec<&str> = index
            .search(&q.query, 5)
            .iter()
            .filter_map(|h| index.doc(h.doc).map(|d| d.name.as_str()))
            .collect();
        if hits
            .first()
            .is_some_and(|n| q.expect.iter().any(|e| e == n))
        {
            h1 += 1;
        }
        if hits.iter().any(|n| q.expect.iter().any(|e| e == n)) {
            h5 += 1;
        } else {
            r.missed_at5.push(format!(
                "{:?} -> {:?} (expected {:?})",
                q.query, hits, q.expect
            ));
        }
    }
    if r.n > 0 {
        r.at1 = h1 as f64 / r.n as f64;
        r.at5 = h5 as f64 / r.n as f64;
    }
    r
}

/// A large catalog for latency: `copies` copies of `tools`, each under a renamed server
/// (`<server>-<i>`), so vocabulary and document lengths stay those of real tools.
pub fn replicate(tools: &[CatalogTool], copies: usize) -> Vec<SearchDoc> {
    let mut out = Vec::with_capacity(tools.len() * copies);
    for i in 0..copies {
        for t in tools {
            let name = t.name.replacen(
                &format!("mcp__{}__", t.server),
                &format!("mcp__{}{i}__", t.server),
                1,
            );
            out.push(SearchDoc {
                name,
                description: t.description.clone(),
                params: t.params.clone(),
            });
        }
    }
    out
}
