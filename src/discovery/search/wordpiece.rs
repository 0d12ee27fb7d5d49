//! BERT's uncased tokenization, as the embedding table was built with (`vocab.txt` of
//! all-MiniLM-L6-v2): lower-case, split on whitespace and punctuation (each punctuation mark and
//! each CJK ideograph is a word of its own), then WordPiece greedy longest-match-first with `##`
//! continuations; a word with no full segmentation is unknown (`None`, skipped by the caller).
//! Pure: text in, token ids out.

use std::collections::HashMap;

/// BERT's uncased vocabulary (`vocab.txt` of all-MiniLM-L6-v2), shared by the static embedding,
/// the encoder and the spelling dictionary.
pub const VOCAB_TEXT: &str = include_str!("../../../assets/embedding/vocab.txt");

/// Longest word WordPiece segments (BERT's `max_input_chars_per_word`).
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary: token -> id (line number in `vocab.txt`).
#[derive(Debug, Default)]
pub struct Vocab {
    ids: HashMap<String, u32>,
}

impl Vocab {
    /// From `vocab.txt` text: one token per line, the id is the line number.
    pub fn parse(text: &str) -> Self {
        let ids = text
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        Self { ids }
    }

    /// How many tokens the vocabulary has.
    pub fn token_count(&self) -> usize {
        self.ids.len()
    }

    /// The id of one token (`[CLS]`, `[SEP]`, ...).
    pub fn id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The token ids of a text, in order; words that cannot be segmented are left out.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for word in basic_words(text) {
            self.word_pieces(&word, &mut out);
        }
        out
    }

    /// Push the WordPiece ids of one basic word, or nothing if it has no full segmentation.
    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > MAX_WORD_CHARS {
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        let mut piece = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while end > start {
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[from..to]);
                if let Some(&id) = self.ids.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => pieces.push(id),
                None => return,
            }
            start = end;
        }
        out.extend(pieces);
    }
}

/// BERT's punctuation: ASCII symbols and Unicode punctuation.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_alphanumeric() && !c.is_whitespace() && !c.is_control())
}

/// CJK ideographs are split into single characters, as BERT does.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// BERT's basic tokenizer (uncased): lower-case words, punctuation and CJK split off, control
/// characters dropped.
fn basic_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() || c == '\u{FFFD}' || c == '\0' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else if is_punctuation(c) || is_cjk(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_lowercase().collect());
        } else {
            cur.extend(c.to_lowercase());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocab {
        Vocab::parse("[PAD]\n[UNK]\nlist\nfile\n##s\nun\n##want\n##ed\n,\nrun\n##ning\n")
    }

    #[test]
    fn greedy_longest_match_with_continuations() {
        let v = vocab();
        assert_eq!(v.tokenize("List files"), vec![2, 3, 4]);
        assert_eq!(v.tokenize("unwanted, running"), vec![5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn unknown_words_are_left_out_whole() {
        let v = vocab();
        // "filez" starts with "file" but "##z" is unknown: the whole word is dropped.
        assert_eq!(v.tokenize("filez list"), vec![2]);
        assert!(v.tokenize("").is_empty());
        assert!(v.tokenize(&"s".repeat(500)).is_empty());
    }

    #[test]
    fn basic_split_on_punctuation_and_cjk() {
        assert_eq!(
            basic_words("Read_File(path)\t中文"),
            vec!["read", "_", "file", "(", "path", ")", "中", "文"]
        );
    }
}
