//! Re-ranking of the best hits by the full sentence encoder ([`super::encoder`]): the query and
//! each candidate tool are embedded by the transformer, and a candidate's score becomes
//! `(1 - weight) * score / best + weight * cosine`. Candidates' embeddings are cached in memory by
//! the hash of their text, so a tool is encoded once per process whatever the catalog rebuilds.
//!
//! Weight, number of candidates and document text were chosen on the held-out dev set only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::embed::dot;
use super::encoder::{Encoder, encoder};
use super::{SearchDoc, split_name, words};

/// How many of the best hits are re-ranked, and the weight of the encoder's cosine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rerank {
    pub candidates: usize,
    pub weight: f32,
}

impl Default for Rerank {
    fn default() -> Self {
        Self {
            candidates: 30,
            weight: 0.7,
        }
    }
}

/// Most tool embeddings kept (384 f32 each: 1.5 KiB; the cache is cleared when full).
const CACHE_MAX: usize = 20_000;

/// The text a tool is embedded from: server words, tool-name words, then the description.
pub fn doc_text(d: &SearchDoc) -> String {
    let (server, tool) = split_name(&d.name);
    format!(
        "{} {}: {}",
        words(server).join(" "),
        words(tool).join(" "),
        d.description
    )
}

type Cache = Mutex<HashMap<[u8; 32], Arc<Vec<f32>>>>;

fn cache() -> &'static Cache {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The embedding of a tool's text, from the cache or computed (and cached).
fn doc_embedding(enc: &Encoder, text: &str) -> Arc<Vec<f32>> {
    let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    if let Some(v) = cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
        return v;
    }
    let v = Arc::new(enc.embed(text));
    if let Ok(mut c) = cache().lock() {
        if c.len() >= CACHE_MAX {
            c.clear();
        }
        c.insert(key, v.clone());
    }
    v
}

/// Embed every document now (warms the cache; a catalog change calls it in the background).
pub fn warm(docs: &[SearchDoc]) {
    if let Some(enc) = encoder() {
        for d in docs {
            doc_embedding(enc, &doc_text(d));
        }
    }
}

/// Re-score the `candidates` best of `scored` (document, score > 0) in `scores`; documents past
/// them keep `(1 - weight) * score / best`, so every candidate stays ahead of them. Returns
/// `false` (scores untouched) without an encoder.
pub fn rerank(
    cfg: &Rerank,
    docs: &[SearchDoc],
    query: &str,
    scored: &[u32],
    scores: &mut [f32],
) -> bool {
    if cfg.candidates == 0 || cfg.weight <= 0.0 || scored.is_empty() {
        return false;
    }
    let Some(enc) = encoder() else {
        return false;
    };
    let mut order: Vec<u32> = scored.to_vec();
    order.sort_by(|&a, &b| scores[b as usize].total_cmp(&scores[a as usize]));
    let best = scores[order[0] as usize];
    if best <= 0.0 {
        return false;
    }
    let q = enc.embed(query);
    let w = cfg.weight;
    for (rank, &d) in order.iter().enumerate() {
        let s = &mut scores[d as usize];
        let base = (1.0 - w) * *s / best;
        *s = if rank < cfg.candidates {
            let v = doc_embedding(enc, &doc_text(&docs[d as usize]));
            // Candidates sit above every non-candidate (whose scores stay <= 1 - w).
            1.0 + base + w * dot(&q, &v).max(0.0)
        } else {
            base
        };
    }
    true
}
