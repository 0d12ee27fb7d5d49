//! Ranking for `tool_search`: BM25F over deferred entries with field weights (words of the tool's
//! own name, its server's name, parameter names, description), Snowball stemming, query
//! expansion from general resources only (the WordNet thesaurus, see [`related`]; PowerShell's
//! verb groups, standard abbreviations and POSIX command names, see [`lexicon`]), one-typo
//! tolerance for words the catalog and WordNet do not know (and, failing that, a spelling
//! correction from the catalog and BERT's vocabulary, also fed to the embeddings: [`spell`]), a bonus for covering the tool's own
//! name, and exact selection by name, fused with the cosine of a static token embedding (meaning,
//! not words: [`embed`], [`semantic`], [`fusion`]). Pure: documents in, ranked hits out.
//!
//! The embedding table (`assets/embedding/`) is distilled from all-MiniLM-L6-v2 by
//! `scripts/distill-embedding.py`; regenerate with the commands in that script's docstring (not
//! part of `make test`). Fusion weight and field mix were chosen on the held-out dev query set
//! only.
//!
//! Each query word is one *concept*: a document scores for it with the best of the word itself
//! and its related words (related words discounted), so a word with many synonyms cannot
//! outweigh the other words of the query.

mod embed;
mod encoder;
mod expand;
mod fusion;
mod lexicon;
mod related;
mod rerank;
mod semantic;
mod spell;
mod text;
mod wordpiece;

use std::collections::{BTreeSet, HashMap};

pub use fusion::{Fusion, Ranking};
pub use rerank::{Rerank, warm as warm_encoder};
pub use semantic::FieldWeights;
pub use text::{stem, terms, words};

use semantic::DocVectors;

/// Load the WordNet thesaurus and the embedding table now rather than on the first index build
/// or search (the capability plane calls it in the background when the catalog is first built).
pub fn preload() {
    related::preload();
    let _ = embed::table();
}

/// [`preload`] on a background thread, once per process (later calls do nothing), so neither
/// the first index build nor the first search waits for it longer than it must.
pub fn preload_in_background() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("tool-search-preload".into())
            .spawn(preload);
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "tool_search preload thread not started; loading on first use");
        }
    });
}

/// Everything a search loads (the WordNet thesaurus, the embedding table and the sentence
/// encoder), on a background thread, once per process. `tool_search` calls it as it starts, so
/// the loading overlaps its wait for MCP servers still connecting; a run that never searches
/// never loads them (they are most of a run's memory).
pub fn load_in_background() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("tool-search-load".into())
            .spawn(|| {
                preload();
                let _ = encoder::encoder();
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "tool_search resources not loaded ahead; loading on first use");
        }
    });
}

/// One searchable tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDoc {
    pub name: String,
    pub description: String,
    pub params: Vec<String>,
}

/// A ranked result: the document's index and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: usize,
    pub score: f32,
}

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Field weights (BM25F): words of the tool's own name matter most, then parameter names, then
/// the server's name and the description.
const W_NAME: f32 = 3.0;
const W_PARAM: f32 = 1.5;
const W_SERVER: f32 = 1.0;
const W_DESC: f32 = 1.0;
/// Weight of a catalog word one typo away from a query word nobody knows.
const TYPO_WEIGHT: f32 = 0.8;
/// Shortest unknown query word corrected as a typo (shorter words have too many neighbours).
const TYPO_MIN_LEN: usize = 4;
/// Bonus for a document whose own name words are all matched (scaled by the share matched).
const NAME_COVERAGE_BONUS: f32 = 2.0;
/// Only the head of long descriptions is indexed (the first sentences carry the purpose).
const DESC_MAX_WORDS: usize = 120;

/// The server and the tool's own name of an MCP tool name `mcp__<server>__<tool>`; other names
/// have no server part.
fn split_name(name: &str) -> (&str, &str) {
    match name.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
        Some((server, tool)) => (server, tool),
        None => ("", name),
    }
}

/// One alternative way a document can match a query concept: stems that must all be scored
/// (a phrase) and the alternative's weight.
#[derive(Debug)]
struct Alternative {
    stems: Vec<String>,
    weight: f32,
}

/// An inverted index with BM25F scoring.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    docs: Vec<SearchDoc>,
    /// term -> (doc, weighted term frequency)
    postings: HashMap<String, Vec<(u32, f32)>>,
    doc_len: Vec<f32>,
    avg_len: f32,
    /// exact name (lower-case) -> doc
    by_name: HashMap<String, usize>,
    /// the part after the last `__` (lower-case) -> docs (MCP tools named without their server)
    by_short: HashMap<String, Vec<usize>>,
    /// per doc: how many distinct stems the tool's own name (without the server) has
    name_len: Vec<u32>,
    /// stem -> docs whose own name has it (name-coverage bonus without per-posting lookups)
    name_postings: HashMap<String, Vec<u32>>,
    /// every alphabetic word of the catalog, unstemmed (typo correction looks here)
    vocabulary: Vec<String>,
    /// per doc: its embedding (empty for a lexical-only ranking)
    vectors: DocVectors,
    ranking: Ranking,
}

impl SearchIndex {
    /// Build with the default ranking (BM25F fused with the embedding).
    pub fn build(docs: Vec<SearchDoc>) -> Self {
        Self::build_with(docs, Ranking::default())
    }

    /// Build with an explicit ranking (the benchmark compares against the lexical one).
    pub fn build_with(docs: Vec<SearchDoc>, ranking: Ranking) -> Self {
        let vectors = if ranking.uses_embedding() {
            DocVectors::build(&docs, &ranking.fields)
        } else {
            DocVectors::default()
        };
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(docs.len());
        let mut by_name = HashMap::new();
        let mut by_short: HashMap<String, Vec<usize>> = HashMap::new();
        let mut name_len = Vec::with_capacity(docs.len());
        let mut name_postings: HashMap<String, Vec<u32>> = HashMap::new();
        let mut vocabulary: BTreeSet<String> = BTreeSet::new();
        for (i, d) in docs.iter().enumerate() {
            let lower = d.name.to_lowercase();
            if let Some((_, short)) = lower.rsplit_once("__") {
                by_short.entry(short.to_string()).or_default().push(i);
            }
            by_name.entry(lower).or_insert(i);
            let mut tf: HashMap<String, f32> = HashMap::new();
            let mut len = 0.0;
            let mut add = |t: String, w: f32, len: &mut f32| {
                *tf.entry(t).or_default() += w;
                *len += w;
            };
            let (server, tool) = split_name(&d.name);
            let mut own: Vec<String> = terms(tool);
            own.sort();
            own.dedup();
            name_len.push(own.len() as u32);
            for t in own {
                name_postings.entry(t).or_default().push(i as u32);
            }
            for text in std::iter::once(tool)
                .chain(d.params.iter().map(String::as_str))
                .chain(std::iter::once(d.description.as_str()))
            {
                vocabulary.extend(
                    text::query_words(text)
                        .into_iter()
                        .filter(|w| w.chars().all(char::is_alphabetic)),
                );
            }
            for t in terms(tool) {
                add(t, W_NAME, &mut len);
            }
            for t in terms(server) {
                add(t, W_SERVER, &mut len);
            }
            for p in &d.params {
                for t in terms(p) {
                    add(t, W_PARAM, &mut len);
                }
            }
            for t in terms(&d.description).into_iter().take(DESC_MAX_WORDS) {
                add(t, W_DESC, &mut len);
            }
            for (t, f) in tf {
                postings.entry(t).or_default().push((i as u32, f));
            }
            doc_len.push(len);
        }
        let avg_len = if doc_len.is_empty() {
            1.0
        } else {
            (doc_len.iter().sum::<f32>() / doc_len.len() as f32).max(1.0)
        };
        Self {
            docs,
            postings,
            doc_len,
            avg_len,
            by_name,
            by_short,
            name_len,
            name_postings,
            vocabulary: vocabulary.into_iter().collect(),
            vectors,
            ranking,
        }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn doc(&self, i: usize) -> Option<&SearchDoc> {
        self.docs.get(i)
    }

    /// The document with exactly this name (case-insensitive), or the only one whose name ends
    /// with `__<name>` (an MCP tool named without its server prefix).
    pub fn find_name(&self, name: &str) -> Option<usize> {
        let lower = name.trim().to_lowercase();
        if lower.is_empty() {
            return None;
        }
        if let Some(&i) = self.by_name.get(&lower) {
            return Some(i);
        }
        match self.by_short.get(&lower).map(Vec::as_slice) {
            Some([i]) => Some(*i),
            _ => None,
        }
    }

    fn idf(&self, df: usize) -> f32 {
        let n = self.docs.len() as f32;
        let df = df as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// The concepts of a free-text query: one per query word, each with its alternatives.
    fn concepts(&self, query: &str) -> Vec<Vec<Alternative>> {
        let mut out: Vec<Vec<Alternative>> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for w in text::query_words(query) {
            let expansion = expand::expand(&w);
            let own = expansion.own.clone();
            if seen.contains(&own) {
                continue;
            }
            seen.push(own.clone());
            let mut alts = vec![Alternative {
                stems: vec![own.clone()],
                weight: 1.0,
            }];
            alts.extend(
                expansion
                    .alternatives
                    .iter()
                    .map(|(stems, weight)| Alternative {
                        stems: stems.clone(),
                        weight: *weight,
                    }),
            );
            let unknown = !self.postings.contains_key(&own) && !expansion.known;
            if unknown && w.chars().count() >= TYPO_MIN_LEN {
                let len = w.chars().count();
                let before = alts.len();
                for v in self
                    .vocabulary
                    .iter()
                    .filter(|v| v.chars().count().abs_diff(len) <= 1)
                    .filter(|v| text::one_edit_apart(&w, v))
                {
                    alts.push(Alternative {
                        stems: vec![stem(v)],
                        weight: TYPO_WEIGHT,
                    });
                }
                if alts.len() == before && self.ranking.spelling {
                    self.push_correction(&w, &mut alts);
                }
            }
            out.push(alts);
        }
        out
    }

    /// Alternatives for an unknown word no catalog word is one typo from: its spelling
    /// correction ([`spell`]) and the correction's own expansion, discounted as typos.
    fn push_correction(&self, word: &str, alts: &mut Vec<Alternative>) {
        let Some(fixed) = spell::correct(word, &self.vocabulary, false, spell::dictionary()) else {
            return;
        };
        if text::is_stopword(&fixed) {
            return;
        }
        let e = expand::expand(&fixed);
        alts.push(Alternative {
            stems: vec![e.own.clone()],
            weight: TYPO_WEIGHT,
        });
        alts.extend(e.alternatives.iter().map(|(stems, weight)| Alternative {
            stems: stems.clone(),
            weight: TYPO_WEIGHT * weight,
        }));
    }

    /// The query as the embeddings read it: each word nobody knows (not in the catalog, WordNet
    /// or the dictionary) replaced by its spelling correction, the rest unchanged.
    fn corrected_query(&self, query: &str) -> String {
        if !self.ranking.spelling {
            return query.to_string();
        }
        let mut out = String::with_capacity(query.len());
        for token in query.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            // Paths, flags, identifiers and numbers are not prose: only plain words are fixed.
            let core = token.trim_matches(|c: char| !c.is_alphanumeric());
            let lower = core.to_lowercase();
            let fixed = (!core.is_empty() && core.chars().all(char::is_alphabetic))
                .then(|| {
                    let e = expand::expand(&lower);
                    let known =
                        e.known || !e.alternatives.is_empty() || self.postings.contains_key(&e.own);
                    spell::correct(&lower, &self.vocabulary, known, spell::dictionary())
                })
                .flatten();
            match fixed {
                Some(fixed) => out.push_str(&token.replacen(core, &fixed, 1)),
                None => out.push_str(token),
            }
        }
        out
    }

    /// Add to `scores` the name-coverage bonus of every scored document: the share of its own
    /// name's stems that some alternative of the query matches.
    fn add_name_coverage(&self, concepts: &[Vec<Alternative>], scores: &mut [f32]) {
        let mut stems: Vec<&str> = concepts
            .iter()
            .flatten()
            .flat_map(|a| &a.stems)
            .map(String::as_str)
            .collect();
        stems.sort_unstable();
        stems.dedup();
        let mut matched: HashMap<u32, u32> = HashMap::new();
        for s in stems {
            for &d in self.name_postings.get(s).into_iter().flatten() {
                *matched.entry(d).or_default() += 1;
            }
        }
        for (d, m) in matched {
            let total = self.name_len[d as usize];
            let slot = &mut scores[d as usize];
            if *slot > 0.0 && total > 0 {
                *slot += NAME_COVERAGE_BONUS * m as f32 / total as f32;
            }
        }
    }

    /// Add `weight` x BM25 of `term` to `scores` for every document holding it.
    fn score_term(&self, term: &str, weight: f32, scores: &mut [f32], touched: &mut Vec<u32>) {
        let Some(list) = self.postings.get(term) else {
            return;
        };
        let idf = self.idf(list.len());
        for &(d, tf) in list {
            let dl = self.doc_len[d as usize];
            let norm = K1 * (1.0 - B + B * dl / self.avg_len);
            let s = idf * tf * (K1 + 1.0) / (tf + norm);
            let slot = &mut scores[d as usize];
            if *slot == 0.0 {
                touched.push(d);
            }
            *slot += weight * s;
        }
    }

    /// Rank documents for a free-text query; the top `limit` hits, best first. A query equal to a
    /// tool's exact name puts that tool first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        if self.docs.is_empty() || limit == 0 {
            return Vec::new();
        }
        let n = self.docs.len();
        let mut scores = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        // Per concept: the best alternative per document (dis-max), then summed over concepts.
        let mut concept = vec![0f32; n];
        let mut alt = vec![0f32; n];
        let mut concept_touched: Vec<u32> = Vec::new();
        let mut alt_touched: Vec<u32> = Vec::new();
        let concepts = self.concepts(query);
        for alts in &concepts {
            for a in alts {
                if !a.stems.iter().all(|s| self.postings.contains_key(s)) {
                    continue;
                }
                for s in &a.stems {
                    self.score_term(s, a.weight, &mut alt, &mut alt_touched);
                }
                for d in alt_touched.drain(..) {
                    let v = std::mem::take(&mut alt[d as usize]);
                    let c = &mut concept[d as usize];
                    if *c == 0.0 {
                        concept_touched.push(d);
                    }
                    *c = c.max(v);
                }
            }
            for d in concept_touched.drain(..) {
                let v = std::mem::take(&mut concept[d as usize]);
                let slot = &mut scores[d as usize];
                if *slot == 0.0 {
                    touched.push(d);
                }
                *slot += v;
            }
        }
        self.add_name_coverage(&concepts, &mut scores);
        let corrected = self.corrected_query(query);
        let fused = match self.vectors.similarities(&corrected) {
            Some(sims) => {
                self.ranking
                    .fusion
                    .fuse(&mut scores, &sims, self.ranking.min_similarity);
                touched = (0..n as u32).collect();
                true
            }
            None => false,
        };
        if let Some(cfg) = &self.ranking.rerank {
            let scored: Vec<u32> = touched
                .iter()
                .copied()
                .filter(|&d| scores[d as usize] > 0.0)
                .collect();
            rerank::rerank(cfg, &self.docs, &corrected, &scored, &mut scores);
        }
        let looks_like_name = !query.trim().contains(char::is_whitespace);
        if let Some(exact) = looks_like_name.then(|| self.find_name(query)).flatten() {
            if scores[exact] <= 0.0 && !fused {
                touched.push(exact as u32);
            }
            scores[exact] = scores[exact].max(0.0) + 1_000.0;
        }
        let mut hits: Vec<Hit> = touched
            .into_iter()
            .map(|d| Hit {
                doc: d as usize,
                score: scores[d as usize],
            })
            .filter(|h| h.score > 0.0)
            .collect();
        let cmp = |a: &Hit, b: &Hit| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.docs[a.doc].name.cmp(&self.docs[b.doc].name))
        };
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, cmp);
            hits.truncate(limit);
        }
        hits.sort_by(cmp);
        hits
    }
}

/// A parsed `tool_search` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// `select:name1,name2`: exactly these tools.
    Select(Vec<String>),
    /// Free text.
    Text(String),
}

impl Query {
    pub fn parse(q: &str) -> Query {
        let t = q.trim();
        match t.strip_prefix("select:") {
            Some(rest) => Query::Select(
                rest.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            None => Query::Text(t.to_string()),
        }
    }
}

#[cfg(test)]
mod tests;
