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

/// How many texts go through the encoder together (its products pack the weights once per batch).
const BATCH: usize = 32;

fn key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn cached(text: &str) -> Option<Arc<Vec<f32>>> {
    cache().lock().ok().and_then(|c| c.get(&key(text)).cloned())
}

fn remember(text: &str, v: Arc<Vec<f32>>) {
    if let Ok(mut c) = cache().lock() {
        if c.len() >= CACHE_MAX {
            c.clear();
        }
        c.insert(key(text), v);
    }
}

/// The embeddings of `query` (never cached) and of each text of `docs`, from the cache or
/// computed together in batches (and cached).
fn embeddings(enc: &Encoder, query: &str, docs: &[String]) -> (Vec<f32>, Vec<Arc<Vec<f32>>>) {
    let mut out: Vec<Option<Arc<Vec<f32>>>> = docs.iter().map(|d| cached(d)).collect();
    let missing: Vec<usize> = (0..docs.len()).filter(|&i| out[i].is_none()).collect();
    let mut batches: Vec<&[usize]> = missing.chunks(BATCH).collect();
    if batches.is_empty() {
        batches.push(&[]);
    }
    let mut q = None;
    for (n, chunk) in batches.into_iter().enumerate() {
        let mut texts: Vec<&str> = chunk.iter().map(|&i| docs[i].as_str()).collect();
        // The query rides in the first batch.
        if n == 0 {
            texts.push(query);
        }
        let mut vs = enc.embed_batch(&texts);
        if n == 0 {
            q = vs.pop();
        }
        for (&i, v) in chunk.iter().zip(vs) {
            let v = Arc::new(v);
            remember(&docs[i], v.clone());
            out[i] = Some(v);
        }
    }
    let q = q.unwrap_or_else(|| enc.embed(query));
    let out = out.into_iter().map(Option::unwrap_or_default).collect();
    (q, out)
}

/// Embed every document now (warms the cache; a catalog change calls it in the background).
pub fn warm(docs: &[SearchDoc]) {
    if let Some(enc) = encoder() {
        let texts: Vec<String> = docs
            .iter()
            .map(doc_text)
            .filter(|t| cached(t).is_none())
            .collect();
        for chunk in texts.chunks(BATCH) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            for (text, v) in chunk.iter().zip(enc.embed_batch(&refs)) {
                remember(text, Arc::new(v));
            }
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
    let texts: Vec<String> = order
        .iter()
        .take(cfg.candidates)
        .map(|&d| doc_text(&docs[d as usize]))
        .collect();
    let (q, vs) = embeddings(enc, query, &texts);
    let w = cfg.weight;
    for (rank, &d) in order.iter().enumerate() {
        let s = &mut scores[d as usize];
        let base = (1.0 - w) * *s / best;
        *s = match vs.get(rank) {
            // Candidates sit above every non-candidate (whose scores stay <= 1 - w).
            Some(v) => 1.0 + base + w * dot(&q, v).max(0.0),
            None => base,
        };
    }
    true
}
