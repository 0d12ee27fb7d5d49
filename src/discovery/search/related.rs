//! WordNet synonyms for query expansion: the WordNet 3.0 thesaurus (Princeton; every lemma that
//! shares a synset with the word), bundled by the `thesaurus-wordnet` crate (about 3 MB
//! compressed inside the binary, decompressed once, on the first search). A general English
//! resource, tuned on nothing of ours.
//!
//! WordNet is keyed by lemma, so a query word is first reduced to its base forms with WordNet's
//! own detachment rules ("morphy": `deleting` -> `delete`, `files` -> `file`).

use std::collections::HashMap;
use std::sync::OnceLock;

/// The thesaurus: lemma -> `|`-separated synonyms, both borrowed from the decompressed text.
struct Thesaurus {
    entries: HashMap<&'static str, &'static str>,
}

fn thesaurus() -> &'static Thesaurus {
    static THESAURUS: OnceLock<Thesaurus> = OnceLock::new();
    THESAURUS.get_or_init(|| {
        // Decompressed once for the life of the process and shared by every index, so leaking
        // it lets the map borrow from it instead of copying 125,000 entries.
        let text: &'static str = Box::leak(thesaurus_wordnet::uncompress().into_boxed_str());
        let mut entries = HashMap::with_capacity(130_000);
        for line in text.lines() {
            if let Some((word, syns)) = line.split_once('|') {
                entries.insert(word, syns);
            }
        }
        tracing::debug!(entries = entries.len(), "WordNet thesaurus loaded");
        Thesaurus { entries }
    })
}

/// Load the thesaurus now rather than on the first search (for callers that want a
/// predictable first-query latency).
pub fn preload() {
    thesaurus();
}

/// WordNet's detachment rules (morphy) for nouns, verbs and adjectives: suffix -> replacement.
const DETACH: &[(&str, &str)] = &[
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
    ("es", "e"),
    ("es", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("er", ""),
    ("est", ""),
    ("er", "e"),
    ("est", "e"),
];

/// Base forms of a lower-case word that WordNet knows: the word itself and the forms the
/// detachment rules give (with a doubled final consonant undone: `running` -> `run`).
fn lemmas(word: &str) -> Vec<&'static str> {
    let th = thesaurus();
    let mut candidates: Vec<String> = vec![word.to_string()];
    for (suffix, repl) in DETACH {
        if let Some(base) = word.strip_suffix(suffix)
            && base.len() >= 2
        {
            candidates.push(format!("{base}{repl}"));
            let mut last = base.chars().rev();
            if let (Some(a), Some(b)) = (last.next(), last.next())
                && repl.is_empty()
                && a == b
                && base.chars().count() >= 3
            {
                // `a` is the last char, so this cut is on a char boundary.
                candidates.push(base[..base.len() - a.len_utf8()].to_string());
            }
        }
    }
    let mut out: Vec<&'static str> = Vec::new();
    for c in candidates {
        if let Some((&k, _)) = th.entries.get_key_value(c.as_str())
            && !out.contains(&k)
        {
            out.push(k);
        }
    }
    out
}

/// Whether WordNet knows the word (in any inflection).
pub fn is_known(word: &str) -> bool {
    !lemmas(word).is_empty()
}

/// Single-word WordNet synonyms of a lower-case query word (any sense), without the word itself.
pub fn synonyms(word: &str) -> Vec<&'static str> {
    let th = thesaurus();
    let mut out: Vec<&'static str> = Vec::new();
    for lemma in lemmas(word) {
        let Some(syns) = th.entries.get(lemma) else {
            continue;
        };
        for s in syns.split('|') {
            if s.is_empty() || s == word || s.contains([' ', '-', '_', '.', '\'']) {
                continue;
            }
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wordnet_synonyms_come_from_the_bundled_thesaurus() {
        assert!(
            synonyms("delete").contains(&"erase"),
            "{:?}",
            synonyms("delete")
        );
        // Inflected query words reach their lemma.
        assert!(synonyms("deleting").contains(&"erase"));
        assert!(synonyms("repeats").contains(&"echo"));
        // Multi-word synonyms and the word itself are left out.
        assert!(synonyms("remove").iter().all(|s| !s.contains(' ')));
        assert!(!synonyms("remove").contains(&"remove"));
        assert!(synonyms("qqqzzz").is_empty());
    }

    #[test]
    fn lemmas_follow_the_detachment_rules() {
        assert!(lemmas("files").contains(&"file"));
        assert!(lemmas("running").contains(&"run"));
        assert!(lemmas("boxes").contains(&"box"));
        // A doubled multi-byte last letter is cut on a char boundary.
        assert!(lemmas("\u{43CF}\u{43CF}\u{43CF}ing").is_empty());
    }
}
