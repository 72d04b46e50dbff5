#!/usr/bin/env python3
"""A retrieval set with injected near-duplicate documents, for measuring diversification.

Reads a BEIR directory (corpus.jsonl, queries.jsonl, qrels/*.tsv) or a long-document directory
(docs.jsonl, queries.jsonl with `doc_id`, as ../shared/data/zh/retrieval/*/dev) and writes a
BEIR directory beside the copies:

- every document judged relevant to a query (in any split) gets two near copies, `ID~1` and
  `ID~2`, and one in ten of the other documents gets one (so copies are not a sign of
  relevance);
- a copy is the original with its sentences perturbed, as the same abstract reappears in a
  preprint, a journal version and an aggregator: copy 1 swaps two neighbouring sentences and
  drops 8 % of the words, copy 2 drops one sentence (not the first) and 8 % of the words, and
  its title gains a suffix. Chinese text, which has no spaces, drops characters instead of
  words. These are perturbed copies, not paraphrases: a real paraphrase would need a model;
- a copy of a relevant document is relevant with the same grade (it carries the same evidence);
- `families.tsv` maps each copy to its original, which `ckeep eval run --metrics
  alpha-ndcg@10,dup@10` reads.

Deterministic (seed 42). Usage: mmr_dups.py SOURCE_DIR OUT_DIR
"""

import json
import random
import re
import sys
from pathlib import Path

DROP = 0.08
OTHER_SHARE = 0.10
SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load(src):
    """(docs as {_id, title, text}, queries as {_id, text}, {split: [(qid, doc, grade)]})."""
    if (src / "corpus.jsonl").exists():
        docs = read_jsonl(src / "corpus.jsonl")
        queries = read_jsonl(src / "queries.jsonl")
        splits = {}
        for qrels in sorted((src / "qrels").glob("*.tsv")):
            rows = []
            for line in qrels.read_text(encoding="utf-8").splitlines()[1:]:
                q, d, g = line.split("\t")
                rows.append((q, d, int(g)))
            splits[qrels.stem] = rows
        return docs, queries, splits
    docs = [{"_id": d["doc_id"], "title": d.get("title", ""), "text": d["text"]}
            for d in read_jsonl(src / "docs.jsonl")]
    queries, rows = [], []
    for q in read_jsonl(src / "queries.jsonl"):
        queries.append({"_id": q["qid"], "text": q["question"]})
        rows.append((q["qid"], q["doc_id"], 1))
    return docs, queries, {"test": rows}


def spaced(text):
    return text.count(" ") > len(text) / 20


def drop_units(text, rng):
    """The text with DROP of its words (or characters, for unspaced scripts) left out."""
    if spaced(text):
        words = text.split(" ")
        kept = [w for w in words if rng.random() >= DROP] or words[:1]
        return " ".join(kept)
    kept = [c for c in text if rng.random() >= DROP] or list(text[:1])
    return "".join(kept)


def copy(doc, n, rng):
    sentences = [s for s in SENTENCE.split(doc["text"]) if s]
    joiner = " " if spaced(doc["text"]) else ""
    if n == 1 and len(sentences) >= 3:
        i = rng.randrange(1, len(sentences) - 1)
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
    if n == 2 and len(sentences) >= 3:
        del sentences[rng.randrange(1, len(sentences))]
    text = drop_units(joiner.join(sentences), rng)
    title = doc.get("title", "")
    if n == 2 and title:
        title = title + (" (preprint)" if spaced(title + " " + doc["text"]) else "（转载）")
    return {"_id": f"{doc['_id']}~{n}", "title": title, "text": text}


def main():
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    rng = random.Random(42)
    docs, queries, splits = load(src)
    relevant = {d for rows in splits.values() for _, d, g in rows if g > 0}
    corpus, families, copies_of = [], [], {}
    for doc in docs:
        corpus.append(doc)
        if doc["_id"] in relevant:
            n = 2
        elif rng.random() < OTHER_SHARE:
            n = 1
        else:
            n = 0
        for i in range(1, n + 1):
            c = copy(doc, i, rng)
            corpus.append(c)
            families.append((c["_id"], doc["_id"]))
            copies_of.setdefault(doc["_id"], []).append(c["_id"])
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in corpus:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    for split, rows in splits.items():
        with open(out / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for q, d, g in rows:
                f.write(f"{q}\t{d}\t{g}\n")
                for c in copies_of.get(d, []) if g > 0 else []:
                    f.write(f"{q}\t{c}\t{g}\n")
    with open(out / "families.tsv", "w", encoding="utf-8") as f:
        f.write("# copy\toriginal\n")
        for c, d in families:
            f.write(f"{c}\t{d}\n")
    print(f"{out}: {len(docs)} documents + {len(families)} near copies "
          f"({len(relevant)} judged relevant documents copied twice)")


if __name__ == "__main__":
    main()
