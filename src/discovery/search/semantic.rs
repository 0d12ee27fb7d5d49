//! The embedding side of the ranking: one unit vector per document, computed once when the index
//! is built, so a query costs one query embedding and one dot product per document.

use super::embed::{self, Table, normalise};
use super::{SearchDoc, split_name, words};

/// How a document's fields are mixed into its vector (each field embedded and normalised on its
/// own, then weighted, summed and normalised again).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    pub name: f32,
    pub server: f32,
    pub params: f32,
    pub description: f32,
    /// Only the head of long descriptions is embedded.
    pub description_words: usize,
}

impl Default for FieldWeights {
    fn default() -> Self {
        Self {
            name: 0.5,
            server: 0.3,
            params: 0.0,
            description: 1.0,
            description_words: 60,
        }
    }
}

/// Per-document unit vectors (row-major), empty when the table is unavailable.
#[derive(Debug, Clone, Default)]
pub struct DocVectors {
    dims: usize,
    data: Vec<f32>,
}

/// Add `weight` x the normalised embedding of `text` to `acc`.
fn add_field(table: &Table, text: &str, weight: f32, acc: &mut [f32], scratch: &mut [f32]) {
    if weight == 0.0 || text.is_empty() {
        return;
    }
    scratch.iter_mut().for_each(|x| *x = 0.0);
    if table.accumulate(text, 1.0, scratch) == 0 {
        return;
    }
    normalise(scratch);
    for (a, s) in acc.iter_mut().zip(scratch.iter()) {
        *a += weight * s;
    }
}

impl DocVectors {
    pub fn build(docs: &[SearchDoc], weights: &FieldWeights) -> Self {
        let Some(table) = embed::table() else {
            return Self::default();
        };
        let dims = table.dims();
        let mut data = vec![0f32; docs.len() * dims];
        let mut scratch = vec![0f32; dims];
        for (d, row) in docs.iter().zip(data.chunks_exact_mut(dims)) {
            let (server, tool) = split_name(&d.name);
            add_field(
                table,
                &words(tool).join(" "),
                weights.name,
                row,
                &mut scratch,
            );
            add_field(
                table,
                &words(server).join(" "),
                weights.server,
                row,
                &mut scratch,
            );
            let params: Vec<String> = d.params.iter().flat_map(|p| words(p)).collect();
            add_field(table, &params.join(" "), weights.params, row, &mut scratch);
            let desc: Vec<&str> = d
                .description
                .split_whitespace()
                .take(weights.description_words)
                .collect();
            add_field(
                table,
                &desc.join(" "),
                weights.description,
                row,
                &mut scratch,
            );
            normalise(row);
        }
        Self { dims, data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The cosine of the query with every document (`None` without a table or a known token).
    pub fn similarities(&self, query: &str) -> Option<Vec<f32>> {
        let table = embed::table()?;
        if self.is_empty() {
            return None;
        }
        let q = table.embed(query);
        if q.iter().all(|&x| x == 0.0) {
            return None;
        }
        Some(
            self.data
                .chunks_exact(self.dims)
                .map(|row| embed::dot(row, &q))
                .collect(),
        )
    }
}
