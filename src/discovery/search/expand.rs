//! Query-word expansion that does not depend on the catalog: abbreviations and POSIX command
//! names, PowerShell verb groups and WordNet synonyms (at most [`MAX_SYNONYMS`]), all stemmed.
//! Computed once per distinct word and cached for the process (bounded), so a repeated query
//! word costs one map lookup instead of WordNet lookups and a dozen stemmings.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::text::{stem, terms};
use super::{lexicon, related};

/// Weight of a WordNet synonym relative to the word the query used.
const SYNONYM_WEIGHT: f32 = 0.5;
/// Weight of a verb of the same PowerShell verb group.
const VERB_WEIGHT: f32 = 0.5;
/// Weight of an abbreviation's expansion (same meaning, different spelling).
const ABBREVIATION_WEIGHT: f32 = 0.9;
/// WordNet synonyms kept per word (its most common senses come first), so a word with dozens
/// of rare senses cannot flood the query.
pub const MAX_SYNONYMS: usize = 24;
/// Distinct words cached; the cache is emptied when it is full.
const CACHE_CAP: usize = 8192;

/// A query word's catalog-independent alternatives.
#[derive(Debug)]
pub struct Expansion {
    /// The word's own stem.
    pub own: String,
    /// Whether WordNet knows the word (an unknown word may be a typo).
    pub known: bool,
    /// Alternatives: stems that must all match (a phrase) and the weight.
    pub alternatives: Vec<(Vec<String>, f32)>,
}

fn compute(word: &str) -> Expansion {
    let own = stem(word);
    let mut alternatives: Vec<(Vec<String>, f32)> = Vec::new();
    let push = |stems: Vec<String>, weight: f32, alts: &mut Vec<(Vec<String>, f32)>| {
        if stems.is_empty() || (stems.len() == 1 && stems[0] == own) {
            return;
        }
        if !alts.iter().any(|(s, _)| *s == stems) {
            alts.push((stems, weight));
        }
    };
    for long in lexicon::expansions(word) {
        push(terms(long), ABBREVIATION_WEIGHT, &mut alternatives);
    }
    for v in lexicon::verbs(word) {
        push(vec![stem(v)], VERB_WEIGHT, &mut alternatives);
    }
    for syn in related::synonyms(word).into_iter().take(MAX_SYNONYMS) {
        push(vec![stem(syn)], SYNONYM_WEIGHT, &mut alternatives);
    }
    Expansion {
        known: related::is_known(word),
        own,
        alternatives,
    }
}

/// The expansion of a lower-case query word (cached).
pub fn expand(word: &str) -> Arc<Expansion> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Expansion>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(c) = cache.lock()
        && let Some(e) = c.get(word)
    {
        return e.clone();
    }
    let e = Arc::new(compute(word));
    if let Ok(mut c) = cache.lock() {
        if c.len() >= CACHE_CAP {
            c.clear();
        }
        c.insert(word.to_string(), e.clone());
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions_are_stemmed_capped_and_cached() {
        let e = expand("folder");
        assert_eq!(e.own, "folder");
        assert!(e.known);
        assert!(
            e.alternatives
                .iter()
                .any(|(s, w)| s == &vec!["directori".to_string()] && *w == ABBREVIATION_WEIGHT)
        );
        assert!(
            e.alternatives
                .iter()
                .filter(|(_, w)| *w == SYNONYM_WEIGHT)
                .count()
                <= MAX_SYNONYMS
        );
        assert!(Arc::ptr_eq(&e, &expand("folder")));
        let unknown = expand("qqqzzz");
        assert!(!unknown.known && unknown.alternatives.is_empty());
    }
}
