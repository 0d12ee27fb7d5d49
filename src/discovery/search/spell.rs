//! Spelling correction of query words nobody knows ("prjct", "reposotory"): a word that is
//! neither in the catalog, nor in WordNet, nor a whole word of BERT's vocabulary is replaced by
//! the closest word (optimal string alignment distance) of, first, the catalog's own vocabulary,
//! then the English words of BERT's uncased vocabulary (`assets/embedding/vocab.txt`, shipped
//! with the sentence model; its words are in order of frequency, so the first of equally close
//! words is the commonest). General resources only: nothing here is tuned on our queries.
//!
//! Corrected words feed the lexical ranking (as alternatives of the misspelt word) and the
//! embedding and encoder inputs (the misspelt word replaced), where an unknown word would
//! otherwise split into meaningless word pieces. Pure apart from the lazily built dictionary.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use super::wordpiece::VOCAB_TEXT;

/// Shortest word corrected at all (shorter words have too many neighbours).
pub const MIN_LEN: usize = 4;
/// Shortest word corrected at distance 2 (two letters dropped or changed: "prjct").
pub const MIN_LEN_TWO_EDITS: usize = 5;

/// English words by length (in chars), each list in vocabulary (frequency) order.
#[derive(Debug, Default)]
pub struct Dictionary {
    by_len: Vec<Vec<&'static str>>,
    all: HashSet<&'static str>,
}

impl Dictionary {
    /// The whole, purely alphabetic, lower-case words of a WordPiece vocabulary (no `##`
    /// continuations, no `[special]` tokens, no single letters).
    pub fn from_vocab(text: &'static str) -> Self {
        let mut by_len: Vec<Vec<&'static str>> = Vec::new();
        let mut all = HashSet::new();
        for w in text.lines() {
            let n = w.chars().count();
            if n < 2 || !w.chars().all(|c| c.is_ascii_lowercase()) {
                continue;
            }
            if by_len.len() <= n {
                by_len.resize_with(n + 1, Vec::new);
            }
            by_len[n].push(w);
            all.insert(w);
        }
        Self { by_len, all }
    }

    pub fn contains(&self, word: &str) -> bool {
        self.all.contains(word)
    }

    /// Words whose length is within `d` of `len`.
    fn near_len(&self, len: usize, d: usize) -> impl Iterator<Item = &'static str> + '_ {
        let lo = len.saturating_sub(d);
        self.by_len
            .iter()
            .enumerate()
            .filter(move |(n, _)| *n >= lo && *n <= len + d)
            .flat_map(|(_, l)| l.iter().copied())
    }
}

/// The dictionary of the bundled vocabulary (built on first use).
pub fn dictionary() -> &'static Dictionary {
    static DICT: OnceLock<Dictionary> = OnceLock::new();
    DICT.get_or_init(|| Dictionary::from_vocab(VOCAB_TEXT))
}

/// How far a word may be from its correction.
fn max_distance(len: usize) -> usize {
    if len >= MIN_LEN_TWO_EDITS { 2 } else { 1 }
}

/// The first of `candidates` closest to `word` within `limit` edits, with its distance.
fn closest<'a>(
    word: &str,
    limit: usize,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<(&'a str, usize)> {
    let mut best: Option<(&str, usize)> = None;
    for c in candidates {
        let d = strsim::osa_distance(word, c);
        if d == 0 || d > limit {
            continue;
        }
        if best.is_none_or(|(_, b)| d < b) {
            best = Some((c, d));
            if d == 1 {
                break;
            }
        }
    }
    best
}

/// Distinct words whose dictionary neighbour is cached; emptied when full.
const CACHE_CAP: usize = 4096;

/// [`closest`] over the dictionary, cached per word for the process (the scan reads thousands of
/// words; the answer does not depend on the catalog). Only the bundled dictionary is cached.
fn closest_in_dictionary(
    word: &str,
    limit: usize,
    dict: &Dictionary,
) -> Option<(&'static str, usize)> {
    type Cache = Mutex<HashMap<String, Option<(&'static str, usize)>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    if !std::ptr::eq(dict, dictionary()) {
        return closest(word, limit, dict.near_len(word.chars().count(), limit));
    }
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(word).copied()) {
        return hit;
    }
    let found = closest(word, limit, dict.near_len(word.chars().count(), limit));
    if let Ok(mut c) = cache.lock() {
        if c.len() >= CACHE_CAP {
            c.clear();
        }
        c.insert(word.to_string(), found);
    }
    found
}

/// The correction of a lower-case query word, if it is a word nobody knows: the closest catalog
/// word, else the closest dictionary word (the catalog wins a tie). `known` says whether another
/// resource (WordNet) knows the word; `catalog` is the catalog's vocabulary.
pub fn correct(word: &str, catalog: &[String], known: bool, dict: &Dictionary) -> Option<String> {
    let len = word.chars().count();
    if len < MIN_LEN
        || known
        || !word.chars().all(|c| c.is_ascii_lowercase())
        || catalog.iter().any(|c| c == word)
        || dict.contains(word)
    {
        return None;
    }
    let limit = max_distance(len);
    let in_catalog = closest(
        word,
        limit,
        catalog
            .iter()
            .map(String::as_str)
            .filter(|c| c.chars().count().abs_diff(len) <= limit),
    );
    let in_dict = closest_in_dictionary(word, limit, dict);
    match (in_catalog, in_dict) {
        (Some((c, dc)), Some((_, dd))) if dc <= dd => Some(c.to_string()),
        (_, Some((w, _))) => Some(w.to_string()),
        (Some((c, _)), None) => Some(c.to_string()),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict() -> Dictionary {
        Dictionary::from_vocab("[PAD]\n##s\nthe\nwhere\nproject\npact\nfile\nrepository\nfiles\n")
    }

    #[test]
    fn unknown_words_get_the_closest_known_word() {
        let d = dict();
        let none: Vec<String> = Vec::new();
        assert_eq!(correct("whre", &none, false, &d).as_deref(), Some("where"));
        assert_eq!(
            correct("reposotory", &none, false, &d).as_deref(),
            Some("repository")
        );
        // Two edits from both "project" and "pact": the catalog's word wins.
        let catalog = vec!["project".to_string()];
        assert_eq!(
            correct("prjct", &catalog, false, &d).as_deref(),
            Some("project")
        );
    }

    #[test]
    fn known_short_or_far_words_are_left_alone() {
        let d = dict();
        let none: Vec<String> = Vec::new();
        assert_eq!(
            correct("files", &none, false, &d),
            None,
            "in the dictionary"
        );
        assert_eq!(correct("fiel", &none, true, &d), None, "WordNet knows it");
        assert_eq!(correct("fil", &none, false, &d), None, "too short");
        assert_eq!(correct("zzzzzz", &none, false, &d), None, "nothing close");
        assert_eq!(correct("fiel", &none, false, &d).as_deref(), Some("file"));
        assert_eq!(correct("fi1e", &none, false, &d), None, "not a plain word");
    }

    #[test]
    fn the_bundled_vocabulary_is_a_dictionary() {
        let d = dictionary();
        assert!(d.contains("repository") && d.contains("where"));
        assert!(!d.contains("##s") && !d.contains("[CLS]"));
        let none: Vec<String> = Vec::new();
        assert_eq!(
            correct("direcotry", &none, false, d).as_deref(),
            Some("directory")
        );
    }
}
