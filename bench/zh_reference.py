"""The Python reference beside `ckeep eval run` on the Chinese passage-QA sets (bench/zh_eval.sh):
the same paragraphs as retrieval units, the same questions and the same metric definitions.

- BM25: bm25s (its defaults: Lucene BM25, k1 1.5, b 0.75) over jieba's search-mode tokens,
  lower-cased, punctuation and whitespace dropped, as a Python user would set it up;
- dense: sentence-transformers on multilingual-e5-small's dequantised weights (bench/e5_hf.py),
  `query: ` / `passage: ` prompts, exact cosine.

Documents are ranked by their best paragraph (max), over each query's best 1,000 paragraphs:
nDCG@10 and MRR@10 against the question's article. contain@k: a gold answer string occurs in one
of the top k paragraphs. Prints one JSON object per method.

Usage: python zh_reference.py SPLIT_DIR HF_MODEL_DIR [bm25|dense]...
"""
import json
import math
import os
import re
import sys
import time

import numpy as np

DEPTH = 1000
split, model_dir = sys.argv[1], sys.argv[2]
methods = sys.argv[3:] or ["bm25", "dense"]
threads = int(os.environ.get("BENCH_THREADS", "2"))

docs = [json.loads(line) for line in open(os.path.join(split, "docs.jsonl"), encoding="utf-8")]
queries = [json.loads(line) for line in open(os.path.join(split, "queries.jsonl"), encoding="utf-8")]
units, owner = [], []
for d in docs:
    for p in d["paragraphs"]:
        units.append(d["text"][p["start"]:p["end"]])
        owner.append(d["doc_id"])


def evaluate(ranked_units):
    """Means of nDCG@10, MRR@10 and contain@1/3/5 over queries, from each query's unit ranking."""
    sums = dict(ndcg10=0.0, mrr10=0.0, contain1=0.0, contain3=0.0, contain5=0.0)
    for q, ranking in zip(queries, ranked_units):
        seen, doc_rank = set(), None
        for i in ranking[:DEPTH]:
            if owner[i] in seen:
                continue
            seen.add(owner[i])
            if owner[i] == q["doc_id"]:
                doc_rank = len(seen)
                break
        if doc_rank is not None and doc_rank <= 10:
            sums["ndcg10"] += 1 / math.log2(doc_rank + 1)
            sums["mrr10"] += 1 / doc_rank
        answers = [a["text"] for a in q["answers"]]
        for k in (1, 3, 5):
            if any(a in units[i] for i in ranking[:k] for a in answers):
                sums[f"contain{k}"] += 1
    return {k: round(v / len(queries), 4) for k, v in sums.items()}


PUNCT = re.compile(r"^[\W_]+$", re.UNICODE)


def bm25():
    import bm25s
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()

    def tokens(text):
        return [t.lower() for t in jieba.cut_for_search(text) if t.strip() and not PUNCT.match(t)]

    started = time.perf_counter()
    corpus = [tokens(u) for u in units]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    indexed = time.perf_counter() - started
    started = time.perf_counter()
    ranked = []
    k = min(DEPTH, len(units))
    for q in queries:
        ids, _ = retriever.retrieve([tokens(q["question"])], k=k, show_progress=False)
        ranked.append(list(ids[0]))
    return ranked, {"index_s": round(indexed, 2), "query_s": round(time.perf_counter() - started, 2)}


def dense():
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    started = time.perf_counter()
    passages = model.encode(units, prompt_name="passage", batch_size=32, normalize_embeddings=True)
    indexed = time.perf_counter() - started
    started = time.perf_counter()
    qs = model.encode([q["question"] for q in queries], prompt_name="query", batch_size=64,
                      normalize_embeddings=True)
    scores = qs @ passages.T
    ranked = [list(np.argsort(-row, kind="stable")[:DEPTH]) for row in scores]
    return ranked, {"index_s": round(indexed, 2), "query_s": round(time.perf_counter() - started, 2)}


for method in methods:
    ranked, timing = {"bm25": bm25, "dense": dense}[method]()
    print(json.dumps({"split": split, "method": method, **evaluate(ranked), **timing}))
