//! Ranking for `tool_search`: BM25F over deferred entries (name, words of the name, description,
//! parameter names), with light stemming, a small synonym expansion on the query side, and exact
//! selection by name. Pure: documents in, ranked hits out.

use std::collections::HashMap;

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
/// Field weights (BM25F): words of the name matter most, then parameter names, then description.
const W_NAME: f32 = 3.0;
const W_PARAM: f32 = 1.5;
const W_DESC: f32 = 1.0;
/// Weight of a synonym relative to the word the query used.
const SYNONYM_WEIGHT: f32 = 0.4;
/// Only the head of long descriptions is indexed (the first sentences carry the purpose).
const DESC_MAX_WORDS: usize = 120;

/// Split an identifier or text into lower-case words: on non-alphanumerics, `_`, `-`, and
/// camelCase / letter-digit boundaries.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() && c.is_ascii_digit())
                || (p.is_ascii_digit() && c.is_alphabetic());
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
        prev = Some(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A light suffix stemmer: enough to match plurals and verb forms (`files`/`file`,
/// `listing`/`list`, `created`/`create`, `repositories`/`repository`).
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_string();
    }
    let mut s: &str = word;
    if let Some(base) = s.strip_suffix("ies")
        && base.len() >= 3
    {
        return format!("{base}y");
    }
    for suf in ["ing", "ed", "es", "s"] {
        if let Some(base) = s.strip_suffix(suf) {
            if suf == "s" && (base.ends_with('s') || base.ends_with('u') || base.ends_with('i')) {
                continue;
            }
            if base.len() >= 3 {
                s = base;
                break;
            }
        }
    }
    // `create`/`creat`, `file`/`fil`: drop a final e so both forms meet.
    if let Some(base) = s.strip_suffix('e')
        && base.len() >= 3
    {
        s = base;
    }
    // `running` -> `runn` -> `run`
    let b = s.as_bytes();
    if b.len() >= 4 && b[b.len() - 1] == b[b.len() - 2] && !matches!(b[b.len() - 1], b's' | b'l') {
        s = &s[..s.len() - 1];
    }
    s.to_string()
}

/// Words too common in tool descriptions and queries to carry meaning.
fn is_stopword(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "the"
            | "and"
            | "or"
            | "of"
            | "to"
            | "in"
            | "on"
            | "for"
            | "with"
            | "by"
            | "is"
            | "are"
            | "be"
            | "it"
            | "its"
            | "this"
            | "that"
            | "from"
            | "as"
            | "at"
            | "i"
            | "me"
            | "my"
            | "we"
            | "you"
            | "your"
            | "can"
            | "do"
            | "does"
            | "how"
            | "what"
            | "which"
            | "want"
            | "need"
            | "please"
            | "some"
            | "all"
            | "any"
            | "into"
            | "if"
            | "tool"
            | "mcp"
    )
}

/// Stemmed index terms of a text.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stopword(w))
        .map(|w| stem(&w))
        .collect()
}

/// Query-side synonyms (by stem): a few equivalences common in tool catalogs.
fn synonyms(term: &str) -> &'static [&'static str] {
    match term {
        "repo" => &["repository"],
        "repository" => &["repo"],
        "dir" | "folder" => &["directory"],
        "directory" => &["folder", "dir"],
        "delet" | "remov" | "eras" => &["delet", "remov"],
        "find" | "look" | "lookup" => &["search", "get"],
        "search" => &["find", "query"],
        "fetch" | "retriev" | "obtain" => &["get", "read"],
        "get" => &["fetch", "read"],
        "show" | "view" | "display" | "see" => &["get", "read", "list"],
        "read" => &["get"],
        "open" => &["read", "get", "creat"],
        "modify" | "modifi" | "chang" | "alter" => &["edit", "updat", "chang", "diff", "status"],
        "edit" => &["updat", "modify"],
        "updat" => &["edit"],
        "make" | "add" | "new" => &["creat"],
        "creat" => &["add", "new"],
        "pr" => &["pull", "request"],
        "ticket" | "bug" => &["issu"],
        "issu" => &["ticket"],
        "commit" => &["log", "history"],
        "history" => &["log", "commit"],
        "log" => &["history", "commit"],
        "download" | "scrap" | "browse" => &["fetch", "url"],
        "url" | "webpag" | "websit" | "web" | "link" | "http" | "https" | "www" | "internet" => {
            &["url", "fetch", "web"]
        }
        "clock" | "now" | "dat" => &["time", "current"],
        "timezon" | "zone" => &["timezon", "time"],
        "convert" | "translat" => &["convert"],
        "move" | "renam" => &["move", "renam"],
        "copy" | "duplicat" => &["copy"],
        "size" | "metadata" | "stat" => &["info", "metadata"],
        "info" => &["metadata"],
        "entity" => &["entity", "node"],
        "relationship" | "connect" => &["relation"],
        "memory" | "remember" | "knowledg" => &["memory", "graph", "entity"],
        "echo" | "repeat" => &["echo"],
        "sum" | "plus" => &["add"],
        "branch" => &["branch", "checkout"],
        "stag" => &["add"],
        "diff" | "differ" => &["diff"],
        _ => &[],
    }
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
}

impl SearchIndex {
    pub fn build(docs: Vec<SearchDoc>) -> Self {
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(docs.len());
        let mut by_name = HashMap::new();
        let mut by_short: HashMap<String, Vec<usize>> = HashMap::new();
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
            for t in terms(&d.name) {
                add(t, W_NAME, &mut len);
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

    /// Rank documents for a free-text query; the top `limit` hits, best first. A query equal to a
    /// tool's exact name puts that tool first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        if self.docs.is_empty() || limit == 0 {
            return Vec::new();
        }
        // Query terms with weights: the query's own terms at 1, synonyms lower.
        let mut qterms: HashMap<String, f32> = HashMap::new();
        for t in terms(query) {
            for s in synonyms(&t) {
                let e = qterms.entry(s.to_string()).or_default();
                *e = e.max(SYNONYM_WEIGHT);
            }
            qterms.insert(t, 1.0);
        }
        let mut scores = vec![0f32; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (t, qw) in &qterms {
            let Some(list) = self.postings.get(t) else {
                continue;
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
                *slot += qw * s;
            }
        }
        let looks_like_name = !query.trim().contains(char::is_whitespace);
        if let Some(exact) = looks_like_name.then(|| self.find_name(query)).flatten() {
            if scores[exact] == 0.0 {
                touched.push(exact as u32);
            }
            scores[exact] += 1_000.0;
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
mod tests {
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
        ix.doc(h[0].doc).unwrap().name.clone()
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
        assert_eq!(top(&ix, "download a web page"), "mcp__fetch__fetch");
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
}
