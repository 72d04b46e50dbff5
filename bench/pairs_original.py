"""The chunk-pair experiment's algorithm in Python with sentence-transformers, for the speed
comparison with `ckeep pairs` (bench/pairs_speed.sh runs both on the same QQP pairs, model
files and thread count).

Two variants, both computing the whole-text cosine and the chunk-pair score of every pair:
- original: as the experiment wrote it, a loop over pairs that chunks each text into windows of
  clamp(words/4, 18, 150) words, encodes each side's chunks and whole text, takes the cosine
  matrix and averages its top k = 3 values;
- batched: the same scores, but every distinct string encoded once in large batches first
  (the best a Python user gets without rewriting the scoring).
Prints one JSON line: pairs, seconds per variant, and the scores' agreement between variants.

Usage: python bench/pairs_original.py MODEL_DIR PAIRS.tsv [LIMIT]
"""

import json
import os
import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

K = 3


def chunks(text):
    words = text.split()
    size = min(max(len(words) // 4, 18), 150)
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)] or [text]


def top_k_mean(a, b):
    sims = (a @ b.T).flatten()
    return float(np.mean(np.sort(sims)[-K:]))


def unit(m):
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def main():
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    model_dir, path = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = 256
    pairs = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 3:
                pairs.append((cols[1], cols[2]))
    pairs = pairs[:limit]
    encode = lambda texts: unit(model.encode(texts, batch_size=32, convert_to_numpy=True))

    started = time.perf_counter()
    original = []
    for a, b in pairs:
        wa, wb = encode([a]), encode([b])
        ca, cb = encode(chunks(a)), encode(chunks(b))
        original.append((float(wa[0] @ wb[0]), top_k_mean(ca, cb)))
    original_s = time.perf_counter() - started

    started = time.perf_counter()
    strings = sorted({s for a, b in pairs for s in [a, b, *chunks(a), *chunks(b)]})
    vectors = dict(zip(strings, encode(strings)))
    batched = []
    for a, b in pairs:
        ca = np.stack([vectors[c] for c in chunks(a)])
        cb = np.stack([vectors[c] for c in chunks(b)])
        batched.append((float(vectors[a] @ vectors[b]), top_k_mean(ca, cb)))
    batched_s = time.perf_counter() - started

    diff = max(abs(x - y) for p, q in zip(original, batched) for x, y in zip(p, q))
    print(json.dumps({"pairs": len(pairs), "original_seconds": original_s,
                      "batched_seconds": batched_s, "max_score_difference": diff,
                      "scores": batched}))


if __name__ == "__main__":
    main()
