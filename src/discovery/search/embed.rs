//! Meaning, not words: a static token embedding in the Model2Vec style. Each WordPiece token of
//! all-MiniLM-L6-v2's vocabulary has one vector (the sentence model run on that token alone,
//! PCA-reduced, Zipf/SIF-weighted, i8-quantised); a text's embedding is the normalised sum of its
//! tokens' vectors, and two texts are as close as the cosine of their embeddings.
//!
//! The table is a general resource tuned on nothing of ours. It ships in the repository
//! (`assets/embedding/minilm-l6.i8.gz`, `assets/embedding/vocab.txt`), is compiled into the
//! binary and decompressed once, on [`preload`](super::preload) or the first index build.
//! Regenerate it with `scripts/distill-embedding.py` (its docstring has the exact pip line and
//! package versions; it is not run by `make test`).

use std::io::Read;
use std::sync::OnceLock;

use flate2::read::GzDecoder;

use super::wordpiece::Vocab;

const TABLE_GZ: &[u8] = include_bytes!("../../../assets/embedding/minilm-l6.i8.gz");
const MAGIC: &[u8; 8] = b"AIBEMB01";

/// Why the bundled table could not be read (a build defect, logged; search goes on lexical only).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("embedding table: cannot decompress: {0}")]
    Decompress(#[from] std::io::Error),
    #[error("embedding table: {0}")]
    Format(&'static str),
}

/// The token vectors: `scale[t] * values[t * dims .. (t + 1) * dims]`.
#[derive(Debug)]
pub struct Table {
    vocab: Vocab,
    dims: usize,
    scale: Vec<f32>,
    values: Vec<i8>,
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

impl Table {
    /// Parse the decompressed table and its vocabulary.
    pub fn parse(raw: &[u8], vocab: Vocab) -> Result<Self, TableError> {
        if raw.get(..8) != Some(MAGIC.as_slice()) {
            return Err(TableError::Format("bad magic"));
        }
        let tokens = read_u32(raw, 8).ok_or(TableError::Format("truncated header"))? as usize;
        let dims = read_u32(raw, 12).ok_or(TableError::Format("truncated header"))? as usize;
        if tokens != vocab.token_count() || dims == 0 {
            return Err(TableError::Format(
                "token count differs from the vocabulary",
            ));
        }
        let scales_end = 16 + tokens * 4;
        if raw.len() != scales_end + tokens * dims {
            return Err(TableError::Format("size does not match the header"));
        }
        let scale = raw[16..scales_end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let values = raw[scales_end..].iter().map(|&b| b as i8).collect();
        Ok(Self {
            vocab,
            dims,
            scale,
            values,
        })
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Add the sum of the text's token vectors to `acc` (length `dims`); the number of tokens.
    pub fn accumulate(&self, text: &str, weight: f32, acc: &mut [f32]) -> usize {
        let ids = self.vocab.tokenize(text);
        for &id in &ids {
            let t = id as usize;
            let s = self.scale[t] * weight;
            let row = &self.values[t * self.dims..(t + 1) * self.dims];
            for (a, &v) in acc.iter_mut().zip(row) {
                *a += s * f32::from(v);
            }
        }
        ids.len()
    }

    /// The normalised embedding of a text; all zeros when it has no known token.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        self.accumulate(text, 1.0, &mut v);
        normalise(&mut v);
        v
    }
}

/// Scale to unit length (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Dot product (the cosine, for unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn load() -> Result<Table, TableError> {
    let mut raw = Vec::new();
    GzDecoder::new(TABLE_GZ).read_to_end(&mut raw)?;
    Table::parse(&raw, Vocab::parse(super::wordpiece::VOCAB_TEXT))
}

/// The bundled table, decoded once per process; `None` (logged) if it cannot be read.
pub fn table() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    TABLE
        .get_or_init(|| match load() {
            Ok(t) => {
                tracing::debug!(dims = t.dims, "tool_search embedding table loaded");
                Some(t)
            }
            Err(e) => {
                tracing::error!(error = %e, "tool_search embedding table unusable; ranking by words only");
                None
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_loads_and_relates_meanings() {
        let t = table().expect("the bundled table decodes");
        assert!(t.dims() >= 64);
        let remove = t.embed("delete a file");
        let erase = t.embed("erase a document");
        let weather = t.embed("weather forecast for tomorrow");
        assert!(
            dot(&remove, &erase) > dot(&remove, &weather),
            "{} vs {}",
            dot(&remove, &erase),
            dot(&remove, &weather)
        );
        // Unknown text embeds to zero, never NaN.
        assert!(t.embed("").iter().all(|&x| x == 0.0));
    }

    #[test]
    fn malformed_tables_are_errors_not_panics() {
        let vocab = || Vocab::parse("a\nb\n");
        assert!(Table::parse(b"", vocab()).is_err());
        assert!(Table::parse(b"AIBEMB01\x02\0\0\0", vocab()).is_err());
        let mut ok = b"AIBEMB01".to_vec();
        ok.extend(2u32.to_le_bytes());
        ok.extend(1u32.to_le_bytes());
        ok.extend(1f32.to_le_bytes());
        ok.extend(2f32.to_le_bytes());
        ok.extend([3u8, 0xFF]);
        let t = Table::parse(&ok, vocab()).unwrap();
        assert_eq!(t.embed("a"), vec![1.0]);
        assert_eq!(t.embed("b"), vec![-1.0]);
        ok.push(0);
        assert!(Table::parse(&ok, vocab()).is_err());
    }
}
