//! Unit tests of the `tool_search` ranking on a small hand-made catalog.
use super::*;

fn doc(name: &str, desc: &str, params: &[&str]) -> SearchDoc {
    SearchDoc {
        name: name.into(),
        description: desc.into(),
        params: params.iter().map(|s| s.to_string()).collect(),
    }
}

fn index() -> SearchIndex {
    SearchIndex::build(vec![
        doc(
            "mcp__github__create_issue",
            "Create a new issue in a GitHub repository",
            &["owner", "repo", "title", "body"],
        ),
        doc(
            "mcp__github__list_commits",
            "Get list of commits of a branch in a GitHub repository",
            &["owner", "repo", "sha"],
        ),
        doc(
            "mcp__filesystem__read_text_file",
            "Read the complete contents of a file from the file system as text",
            &["path", "head", "tail"],
        ),
        doc(
            "mcp__time__convert_time",
            "Convert time between timezones",
            &["source_timezone", "time", "target_timezone"],
        ),
        doc(
            "mcp__fetch__fetch",
            "Fetches a URL from the internet and extracts its contents as markdown",
            &["url", "max_length"],
        ),
    ])
}

fn top(ix: &SearchIndex, q: &str) -> String {
    let h = ix.search(q, 5);
    let first = h.first().unwrap_or_else(|| panic!("no hit for {q:?}"));
    ix.doc(first.doc).unwrap().name.clone()
}

#[test]
fn words_split_on_separators_and_camel_case() {
    assert_eq!(
        words("mcp__github__createIssue-v2 readFile"),
        vec!["mcp", "github", "create", "issue", "v", "2", "read", "file"]
    );
    assert_eq!(words("get_HTTPResponse"), vec!["get", "httpresponse"]);
}

#[test]
fn stemmer_joins_forms() {
    for (a, b) in [
        ("files", "file"),
        ("listing", "list"),
        ("created", "create"),
        ("repositories", "repository"),
        ("issues", "issue"),
        ("processes", "process"),
        ("running", "run"),
    ] {
        assert_eq!(stem(a), stem(b), "{a} vs {b}");
    }
    assert_eq!(stem("address"), "address");
}

#[test]
fn ranks_by_meaning_words() {
    let ix = index();
    assert_eq!(
        top(&ix, "open a new ticket on github"),
        "mcp__github__create_issue"
    );
    assert_eq!(top(&ix, "show recent commits"), "mcp__github__list_commits");
    assert_eq!(
        top(&ix, "read the contents of a file"),
        "mcp__filesystem__read_text_file"
    );
    assert_eq!(
        top(&ix, "what time is it in Tokyo timezone"),
        "mcp__time__convert_time"
    );
    // Lexically a URL stands for "url" and "web", not for its host. (The encoder's re-ranking
    // reads the host too and puts a GitHub tool first for this query: see the next assertion.)
    let lexical = SearchIndex::build_with(ix.docs.clone(), Ranking::static_fused());
    assert_eq!(
        top(&lexical, "what is on https://github.com/some/repo"),
        "mcp__fetch__fetch"
    );
    let hits = ix.search("what is on https://github.com/some/repo", 5);
    assert!(
        hits.iter()
            .any(|h| ix.docs[h.doc].name == "mcp__fetch__fetch"),
        "fetch stays among the hits"
    );
}

#[test]
fn expansion_uses_general_resources() {
    let ix = index();
    // WordNet: "commute" shares a synset with "convert" (no document says "commute").
    assert_eq!(top(&ix, "commute"), "mcp__time__convert_time");
    // PowerShell verb group: "generate" belongs with "new"/"create".
    assert_eq!(top(&ix, "generate"), "mcp__github__create_issue");
    // One typo in a word that neither the catalog nor WordNet knows.
    assert_eq!(top(&ix, "timeznoes"), "mcp__time__convert_time");
}

#[test]
fn meaning_finds_what_no_word_matches() {
    let docs = index().docs.clone();
    let lexical = SearchIndex::build_with(docs.clone(), Ranking::lexical());
    let fused = SearchIndex::build_with(docs, Ranking::default());
    for (q, want) in [
        ("grab a website", "mcp__fetch__fetch"),
        ("bug report", "mcp__github__create_issue"),
    ] {
        // No query word, stem, WordNet synonym or verb group reaches the tool's words...
        assert!(lexical.search(q, 5).is_empty(), "{q}");
        // ...but the embedding does.
        assert_eq!(top(&fused, q), want, "{q}");
    }
}

#[test]
fn misspelt_words_are_corrected_for_words_and_meaning() {
    let lexical = SearchIndex::build_with(
        index().docs,
        Ranking {
            spelling: true,
            ..Ranking::lexical()
        },
    );
    // Two letters dropped: no catalog word is one typo away, the correction is.
    assert_eq!(top(&lexical, "cnvrt timezones"), "mcp__time__convert_time");
    let off = SearchIndex::build_with(
        index().docs,
        Ranking {
            spelling: false,
            ..Ranking::lexical()
        },
    );
    assert!(off.search("cnvrt", 5).is_empty());
    // The embeddings read the corrected words; paths, flags and known words are left alone.
    let ix = index();
    assert_eq!(
        ix.corrected_query("Reaad the fiel src/lbi.rs -p"),
        "read the file src/lbi.rs -p"
    );
    assert_eq!(ix.corrected_query("swtich brnch"), "switch branch");
}

#[test]
fn parameter_names_are_indexed() {
    let ix = index();
    assert_eq!(top(&ix, "source_timezone"), "mcp__time__convert_time");
}

#[test]
fn exact_name_wins_and_short_names_resolve() {
    let ix = index();
    assert_eq!(top(&ix, "mcp__fetch__fetch"), "mcp__fetch__fetch");
    assert_eq!(ix.find_name("create_issue"), Some(0));
    assert_eq!(ix.find_name("MCP__GITHUB__CREATE_ISSUE"), Some(0));
    assert_eq!(ix.find_name("nothing"), None);
}

#[test]
fn no_match_no_hits_and_limit_respected() {
    let ix = index();
    assert!(ix.search("zzzz qqqq", 5).is_empty());
    assert!(ix.search("", 5).is_empty());
    assert_eq!(ix.search("github repository", 1).len(), 1);
    assert!(SearchIndex::build(vec![]).search("x", 3).is_empty());
}

#[test]
fn query_parsing() {
    assert_eq!(
        Query::parse(" select:a, b ,,"),
        Query::Select(vec!["a".into(), "b".into()])
    );
    assert_eq!(Query::parse("find x"), Query::Text("find x".into()));
}

proptest::proptest! {
    /// Queries are model output: any text ranks without panicking and respects the limit.
    #[test]
    fn any_query_ranks_without_panicking(q in "\\PC{0,40}", limit in 0usize..8) {
        let ix = index();
        let hits = ix.search(&q, limit);
        proptest::prop_assert!(hits.len() <= limit);
        proptest::prop_assert!(hits.iter().all(|h| ix.doc(h.doc).is_some()));
    }
}

/// Writes, for `scripts/eval-rerank-models.py`, each fixture query's spelling-corrected text and
/// its 30 best hits before the encoder's re-ranking, plus every real tool's re-rank document
/// text, to the JSON file named by `AIBUDDY_RERANK_DUMP`: candidate encoders are then compared
/// offline on exactly the candidates and texts the shipped one sees:
/// `AIBUDDY_RERANK_DUMP=/tmp/cands.json cargo test --lib dump_rerank_candidates`. Without the
/// variable it writes nothing and only checks the dump (every query has candidates, at most
/// the re-ranker's number, best first).
#[test]
fn dump_rerank_candidates() {
    use crate::discovery::eval::{CatalogTool, QueryFile};
    let target = std::env::var("AIBUDDY_RERANK_DUMP").ok();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let read = |n: &str| std::fs::read_to_string(root.join(n)).unwrap();
    let real: Vec<CatalogTool> = serde_json::from_str(&read("mcp_real_tools.json")).unwrap();
    let docs: Vec<SearchDoc> = real.iter().map(CatalogTool::doc).collect();
    let ix = SearchIndex::build_with(
        docs.clone(),
        Ranking {
            rerank: None,
            ..Ranking::default()
        },
    );
    let candidates = Rerank::default().candidates;
    let mut out = serde_json::Map::new();
    let texts: Vec<_> = docs
        .iter()
        .map(|d| serde_json::json!({"name": d.name, "text": rerank::doc_text(d)}))
        .collect();
    out.insert("docs".into(), texts.into());
    for (set, file) in [
        ("original", "tool_search_queries.json"),
        ("dev", "tool_search_heldout_dev.json"),
        ("test", "tool_search_heldout.json"),
    ] {
        let q: QueryFile = serde_json::from_str(&read(file)).unwrap();
        let mut rows = Vec::new();
        for lq in &q.queries {
            if !lq.expect.iter().any(|e| ix.find_name(e).is_some()) {
                continue;
            }
            let found = ix.search(&lq.query, candidates);
            assert!(
                !found.is_empty() && found.len() <= candidates,
                "{}",
                lq.query
            );
            assert!(
                found.windows(2).all(|w| w[0].score >= w[1].score),
                "{}",
                lq.query
            );
            let hits: Vec<_> = found
                .iter()
                .map(|h| serde_json::json!([docs[h.doc].name, h.score]))
                .collect();
            rows.push(serde_json::json!({
                "query": lq.query,
                "corrected": ix.corrected_query(&lq.query),
                "expect": lq.expect,
                "hits": hits,
            }));
        }
        out.insert(set.into(), rows.into());
    }
    if let Some(target) = target {
        std::fs::write(target, serde_json::to_string(&out).unwrap()).unwrap();
    }
}
