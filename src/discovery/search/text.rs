//! Text analysis for the `tool_search` ranking: splitting identifiers and prose into words,
//! dropping stopwords, and stemming with the Snowball English stemmer (`rust-stemmers`).

use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

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

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The Snowball (Porter 2) English stem of a lower-case word: `files`/`file`,
/// `listing`/`list`, `created`/`create`, `repositories`/`repository` meet.
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// Words too common in tool descriptions and queries to carry meaning: English function words,
/// request phrasing ("I want", "please", "how do I"), and the two words every catalog entry
/// shares ("tool", "mcp").
pub fn is_stopword(w: &str) -> bool {
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
            | "was"
            | "be"
            | "been"
            | "it"
            | "its"
            | "this"
            | "that"
            | "these"
            | "those"
            | "there"
            | "from"
            | "as"
            | "at"
            | "i"
            | "me"
            | "my"
            | "we"
            | "our"
            | "us"
            | "you"
            | "your"
            | "can"
            | "could"
            | "would"
            | "should"
            | "will"
            | "do"
            | "does"
            | "did"
            | "how"
            | "what"
            | "which"
            | "who"
            | "where"
            | "when"
            | "want"
            | "need"
            | "like"
            | "please"
            | "some"
            | "all"
            | "any"
            | "into"
            | "if"
            | "so"
            | "just"
            | "tool"
            | "mcp"
    )
}

/// Stemmed index terms of a text, stopwords removed.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stopword(w))
        .map(|w| stem(&w))
        .collect()
}

/// Query words (lower-case, stopwords removed, not stemmed: the thesaurus is keyed by words).
/// A URL in the query stands for the words "url" and "web", not for its host and path.
pub fn query_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        let lower = token.to_lowercase();
        if ["http://", "https://", "www."]
            .iter()
            .any(|p| lower.starts_with(p))
        {
            out.extend(["url".to_string(), "web".to_string()]);
        } else {
            out.extend(words(token).into_iter().filter(|w| !is_stopword(w)));
        }
    }
    out
}

/// Whether two words are one edit apart (insertion, deletion, substitution or transposition of
/// adjacent letters): a typo.
pub fn one_edit_apart(a: &str, b: &str) -> bool {
    a.len().abs_diff(b.len()) <= 4 && strsim::osa_distance(a, b) == 1
}
