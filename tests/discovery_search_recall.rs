//! Retrieval quality of the `tool_search` ranking on the labelled query fixture, over the real
//! servers' 78 tools and over those plus a catalog of published MCP tool definitions. Asserts a
//! recall floor (the benchmark `benches/tool_search.rs` prints the same numbers with latency).

use aibuddy::discovery::eval::{CatalogTool, QueryFile, recall};
use aibuddy::discovery::search::SearchIndex;

fn fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn recall_floor_on_real_and_published_catalogs() {
    let real: Vec<CatalogTool> = fixture("mcp_real_tools.json");
    let published: Vec<CatalogTool> = fixture("mcp_published_tools.json");
    let queries: QueryFile = fixture("tool_search_queries.json");
    assert!(queries.queries.len() >= 100);
    assert_eq!(real.len(), 78, "the 7 real servers expose 78 tools");

    let real_ix = SearchIndex::build(real.iter().map(CatalogTool::doc).collect());
    let r = recall(&real_ix, &queries.queries);
    println!(
        "real servers ({} tools): {} queries, recall@1 {:.3}, recall@5 {:.3}",
        real_ix.len(),
        r.n,
        r.at1,
        r.at5
    );
    for m in &r.missed_at5 {
        println!("  missed: {m}");
    }
    assert!(r.n >= 100, "at least 100 queries over the real servers");
    assert!(r.at1 >= 0.75, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.95, "recall@5 {:.3} under the floor", r.at5);

    let all_ix = SearchIndex::build(
        real.iter()
            .chain(&published)
            .map(CatalogTool::doc)
            .collect(),
    );
    let r = recall(&all_ix, &queries.queries);
    println!(
        "real + published ({} tools): {} queries, recall@1 {:.3}, recall@5 {:.3}",
        all_ix.len(),
        r.n,
        r.at1,
        r.at5
    );
    for m in &r.missed_at5 {
        println!("  missed: {m}");
    }
    assert!(r.at1 >= 0.7, "recall@1 {:.3} under the floor", r.at1);
    assert!(r.at5 >= 0.9, "recall@5 {:.3} under the floor", r.at5);
}
