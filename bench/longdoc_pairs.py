"""Long-text near-duplicate pairs built from real articles, where chunk-pair scoring should help.

Sources: the 48 SQuAD v1.1 dev articles and the 60 WikiText-2 test articles (108 documents of
450-10,000 words) from CKEEP_DATA (default ../shared/data). For every document D, one positive
pair per kind:
  insert   D vs D with a paragraph of another document inserted at a random paragraph break
  remove   D vs D with one random paragraph (not the first) removed
  shuffle  D vs D with the sentences of every paragraph shuffled
  excerpt  D vs a contiguous 150-250-word excerpt from D's second half
and one negative: D vs its nearest other document by TF-IDF cosine (a same-topic document; for
`excerpt`, an excerpt of that document). Seeded, so every run writes the same pairs.

Writes OUT/{insert,remove,shuffle,excerpt}.jsonl with label, a, b, id.
Usage: python3 bench/longdoc_pairs.py OUT
"""

import json
import math
import os
import random
import re
import sys
from collections import Counter

DATA = os.environ.get("CKEEP_DATA", os.path.join(os.path.dirname(__file__), "../../shared/data"))


def documents():
    docs = []
    for line in open(f"{DATA}/squad_dev/longdoc-v1.1.docs.jsonl"):
        d = json.loads(line)
        docs.append((f"squad/{d['doc_id']}", [p.strip() for p in d["text"].split("\n") if p.strip()]))
    for line in open(f"{DATA}/wikitext2_test/articles.jsonl"):
        d = json.loads(line)
        paras = [p.strip() for p in d["text"].split("\n") if p.strip() and not p.strip().startswith("=")]
        docs.append((f"wikitext/{d['id']}", paras))
    return [(i, p) for i, p in docs if len(p) >= 3]


def tfidf_nearest(docs):
    bags = [Counter(re.findall(r"[a-z]{3,}", " ".join(p).lower())) for _, p in docs]
    df = Counter(t for b in bags for t in b)
    n = len(bags)
    vecs = []
    for b in bags:
        v = {t: c * math.log(n / df[t]) for t, c in b.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({t: x / norm for t, x in v.items()})
    nearest = []
    for i, v in enumerate(vecs):
        best = max((j for j in range(n) if j != i), key=lambda j: sum(x * vecs[j].get(t, 0.0) for t, x in v.items()))
        nearest.append(best)
    return nearest


def sentences(paragraph):
    return re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", paragraph)


def excerpt(paras, rng):
    words = " ".join(paras).split()
    size = rng.randint(150, 250)
    start = rng.randint(len(words) // 2, max(len(words) // 2, len(words) - size))
    return " ".join(words[start:start + size])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20261123)
    docs = documents()
    nearest = tfidf_nearest(docs)
    text = lambda paras: "\n\n".join(paras)
    files = {k: open(f"{out}/{k}.jsonl", "w") for k in ["insert", "remove", "shuffle", "excerpt"]}
    for i, (doc_id, paras) in enumerate(docs):
        other_id, other = docs[nearest[i]]
        donor = docs[rng.choice([j for j in range(len(docs)) if j != i])][1]
        at = rng.randint(1, len(paras) - 1)
        variants = {
            "insert": text(paras[:at] + [rng.choice(donor)] + paras[at:]),
            "remove": text(paras[:at] + paras[at + 1:]),
            "shuffle": text([" ".join(rng.sample(s, len(s))) for s in map(sentences, paras)]),
            "excerpt": excerpt(paras, rng),
        }
        for kind, variant in variants.items():
            negative = excerpt(other, rng) if kind == "excerpt" else text(other)
            for label, b, tag in [(1, variant, kind), (0, negative, other_id)]:
                row = {"label": label, "a": text(paras), "b": b, "id": f"{doc_id}~{tag}"}
                files[kind].write(json.dumps(row) + "\n")
    for f in files.values():
        f.close()
    print(f"{len(docs)} documents; {2 * len(docs)} pairs per kind in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
