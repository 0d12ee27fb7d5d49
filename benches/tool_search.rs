//! `tool_search` ranking benchmark: recall@1 / recall@5 on every labelled query set present
//! (tests/fixtures/tool_search_queries.json, the original fixture; tool_search_heldout_dev.json
//! and tool_search_heldout.json, written without looking at the ranker) over the real servers'
//! tools and over those plus the published catalog, for the default ranking (BM25F fused with the
//! static embedding) and the lexical ranker alone; then latency per query over a 10,000-tool
//! catalog (target < 1 ms/query in release) for both, with their ratio, and a naive linear-scan
//! baseline, all measured in the same run.
//! Numbers are printed, not asserted (shared, noisy machines). Run:
//! `cargo bench --bench tool_search` or benches/tool_search.sh.

use std::time::Instant;

use aibuddy::discovery::eval::{CatalogTool, LabelledQuery, QueryFile, recall, replicate};
use aibuddy::discovery::search::{Ranking, SearchDoc, SearchIndex, preload, words};

/// The query sets, by file name under tests/fixtures; absent ones are skipped.
const QUERY_SETS: &[(&str, &str)] = &[
    ("original fixture", "tool_search_queries.json"),
    ("held-out dev", "tool_search_heldout_dev.json"),
    ("held-out test", "tool_search_heldout.json"),
];

fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = fixture_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad {}: {e}", path.display()))
}

/// Baseline: score = how many query words occur as substrings of name + description.
fn naive_top5(docs: &[(String, &SearchDoc)], query: &str) -> Vec<usize> {
    let q = words(query);
    let mut scored: Vec<(usize, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, (text, _))| (q.iter().filter(|w| text.contains(w.as_str())).count(), i))
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(5).map(|(_, i)| i).collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let real: Vec<CatalogTool> = fixture("mcp_real_tools.json");
    let published: Vec<CatalogTool> = fixture("mcp_published_tools.json");
    let sets: Vec<(&str, Vec<LabelledQuery>)> = QUERY_SETS
        .iter()
        .filter(|(_, file)| fixture_path(file).exists())
        .map(|&(label, file)| (label, fixture::<QueryFile>(file).queries))
        .collect();

    println!(
        "tool_search ranking (BM25F + Snowball stemming + WordNet / verb-group / abbreviation expansion, fused with a static MiniLM token embedding); lexical = BM25F alone"
    );
    let t = Instant::now();
    preload();
    println!(
        "  WordNet thesaurus + embedding table load (once per process, in the background in the app): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let all: Vec<CatalogTool> = real.iter().chain(&published).cloned().collect();
    let all_docs: Vec<SearchDoc> = all.iter().map(CatalogTool::doc).collect();
    let texts: Vec<(String, &SearchDoc)> = all_docs
        .iter()
        .map(|d| {
            (
                format!(
                    "{} {}",
                    words(&d.name).join(" "),
                    d.description.to_lowercase()
                ),
                d,
            )
        })
        .collect();
    for (set, queries) in &sets {
        for (label, tools) in [("real servers", &real), ("real + published", &all)] {
            let docs: Vec<SearchDoc> = tools.iter().map(CatalogTool::doc).collect();
            let lex = recall(
                &SearchIndex::build_with(docs.clone(), Ranking::lexical()),
                queries,
            );
            let ix = SearchIndex::build(docs);
            let r = recall(&ix, queries);
            println!(
                "  {set:16} {label:18} {:5} tools  {:3} queries  recall@1 {:.3}  recall@5 {:.3}   (lexical alone {:.3} / {:.3})",
                ix.len(),
                r.n,
                r.at1,
                r.at5,
                lex.at1,
                lex.at5
            );
        }
        // Naive baseline recall on the combined catalog, for comparison.
        let (mut n1, mut n5, mut n) = (0, 0, 0);
        for q in queries {
            n += 1;
            let top = naive_top5(&texts, &q.query);
            let names: Vec<&str> = top.iter().map(|&i| all_docs[i].name.as_str()).collect();
            if names
                .first()
                .is_some_and(|x| q.expect.iter().any(|e| e == x))
            {
                n1 += 1;
            }
            if names.iter().any(|x| q.expect.iter().any(|e| e == x)) {
                n5 += 1;
            }
        }
        println!(
            "  {set:16} naive substring baseline ({} tools): recall@1 {:.3}  recall@5 {:.3}",
            all_docs.len(),
            n1 as f64 / n.max(1) as f64,
            n5 as f64 / n.max(1) as f64
        );
    }
    let queries: Vec<&LabelledQuery> = sets.iter().flat_map(|(_, q)| q).collect();

    // Latency over ~10,000 tools.
    let copies = 10_000usize.div_ceil(all.len());
    let big = replicate(&all, copies);
    let mut timings = Vec::new();
    let mut sink = 0usize;
    for (label, ranking) in [
        ("lexical", Ranking::lexical()),
        ("static", Ranking::static_fused()),
        ("fused", Ranking::default()),
    ] {
        if label == "fused" {
            // First re-ranking search: loads the encoder and embeds the candidates (cold cost).
            let t = Instant::now();
            let ix = SearchIndex::build(all_docs.clone());
            sink += ix.search("read a file", 5).len();
            println!(
                "  encoder load + first re-ranked search over {} tools: {:.1} ms",
                ix.len(),
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        let t = Instant::now();
        let big_ix = SearchIndex::build_with(big.clone(), ranking);
        let build_ms = t.elapsed().as_secs_f64() * 1e3;
        let rounds = 20;
        let mut lat = Vec::new();
        for _ in 0..rounds {
            for q in &queries {
                let t = Instant::now();
                sink += big_ix.search(&q.query, 5).len();
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        lat.sort_by(f64::total_cmp);
        let mean = lat.iter().sum::<f64>() / lat.len() as f64;
        println!(
            "  {label:7} over {} tools: index build {build_ms:.1} ms; per query mean {mean:.3} ms, p50 {:.3} ms, p95 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            big_ix.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.95),
            percentile(&lat, 0.99),
            lat.last().copied().unwrap_or(0.0)
        );
        timings.push(mean);
    }
    let mean = timings[2];
    println!(
        "  mean latency ratios: static / lexical {:.2}x, fused (re-ranked) / lexical {:.2}x",
        timings[1] / timings[0],
        timings[2] / timings[0]
    );

    let big_texts: Vec<(String, &SearchDoc)> = big
        .iter()
        .map(|d| {
            (
                format!(
                    "{} {}",
                    words(&d.name).join(" "),
                    d.description.to_lowercase()
                ),
                d,
            )
        })
        .collect();
    let mut base = Vec::new();
    for q in &queries {
        let t = Instant::now();
        sink += naive_top5(&big_texts, &q.query).len();
        base.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let base_mean = base.iter().sum::<f64>() / base.len() as f64;
    println!(
        "  naive linear scan over the same catalog: mean {base_mean:.3} ms/query; the fused index is {:.1}x faster",
        base_mean / mean
    );
    std::hint::black_box(sink);
}
