"""Would fine-tuning the encoder itself on a store's own documents help where `ckeep adapt`'s
query map does not? This trains all-MiniLM-L6-v2 in PyTorch on pairs of the kinds `ckeep
adapt` makes, drawn here from SciFact's 5,183 abstracts (two inverse-cloze sentences per
abstract, whose source is the title and the abstract without the sentence, and the title, whose
source is the abstract), with the contrastive loss of sentence-transformers'
MultipleNegativesRankingLoss (in-batch negatives, scale 20), optionally one hard negative per
pair mined by the untrained model, and scores dense retrieval of whole abstracts on SciFact's
300 test queries before and after.

The training settings are sentence-transformers' defaults for this loss (AdamW, learning rate
2e-5, 10 % linear warm-up, batch 32), fixed before the first run; nothing is chosen on the test
queries. The untrained model's score here equals `ckeep eval run`'s for
`mode=dense,model=all-MiniLM-L6-v2,chunker=whole,level=doc` (0.6451), so the two are comparable.

Usage: adapt_encoder.py MODEL_DIR DATA_DIR WORK_DIR --pairs N --max-len N --negatives 0|1
Writes WORK_DIR/base.json and WORK_DIR/tuned-….json (per-query nDCG@10) and prints the scores
with the 95 % paired bootstrap interval of the difference.
"""

import argparse
import json
import math
import random
import re
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer

SCALE = 20.0
BATCH = 32
LEARNING_RATE = 2e-5
QUERY_TOKENS = 64
DOC_TOKENS = 256


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("data")
    ap.add_argument("work", type=Path)
    ap.add_argument("--pairs", type=int, default=3000)
    ap.add_argument("--max-len", type=int, default=128, help="source tokens in training")
    ap.add_argument("--negatives", type=int, choices=(0, 1), default=0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    scifact = Path(args.data) / "beir_scifact"
    docs = [json.loads(line) for line in open(scifact / "corpus.jsonl")]
    texts = [(d["title"] + " " + d["text"]).strip() for d in docs]
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model)

    def embed(batch_texts, max_len, grad=False, batch=64):
        out = []
        for i in range(0, len(batch_texts), batch):
            b = tok(batch_texts[i : i + batch], padding=True, truncation=True,
                    max_length=max_len, return_tensors="pt")
            with torch.set_grad_enabled(grad):
                h = model(**b).last_hidden_state
                m = b["attention_mask"].unsqueeze(-1).float()
                out.append(F.normalize((h * m).sum(1) / m.sum(1), dim=-1))
        return torch.cat(out)

    def evaluate():
        """Per-query nDCG@10 on the test queries, and the abstracts' vectors."""
        model.eval()
        vectors = embed(texts, DOC_TOKENS)
        queries = {}
        for line in open(scifact / "queries.jsonl"):
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
        rel = {}
        for line in list(open(scifact / "qrels" / "test.tsv"))[1:]:
            q, c, s = line.rstrip("\n").split("\t")
            rel.setdefault(q, {})[c] = int(s)
        qids = sorted(rel)
        top = (embed([queries[q] for q in qids], DOC_TOKENS) @ vectors.T).topk(10, dim=1).indices
        ids = [d["_id"] for d in docs]
        scores = []
        for row, q in zip(top.tolist(), qids):
            dcg = sum(rel[q].get(ids[j], 0) / math.log2(r + 2) for r, j in enumerate(row))
            ideal = sorted(rel[q].values(), reverse=True)[:10]
            scores.append(dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal)))
        return scores, vectors

    t = time.time()
    base, base_vectors = evaluate()
    json.dump(base, open(args.work / "base.json", "w"))
    print(f"untrained: nDCG@10 {mean(base):.4f} ({time.time() - t:.0f} s)", flush=True)

    pairs = []
    for di, d in enumerate(docs):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", d["text"]) if len(s.split()) >= 5]
        if len(sentences) > 1:
            for s in rng.sample(sentences, 2):
                pairs.append((s, (d["title"] + " " + d["text"].replace(s, " ")).strip(), di))
        if d["title"]:
            pairs.append((d["title"], d["text"], di))
    rng.shuffle(pairs)
    print(f"{len(pairs)} pairs made; training on {min(args.pairs, len(pairs))}", flush=True)
    pairs = pairs[: args.pairs]
    negatives = []
    if args.negatives:
        # One of the untrained model's top documents, ranks 3 to 10 and not the source's own,
        # so that a passage that also answers is less likely to be taken for a negative.
        model.eval()
        top = (embed([p[0] for p in pairs], QUERY_TOKENS) @ base_vectors.T).topk(12, dim=1)
        for p, row in zip(pairs, top.indices.tolist()):
            negatives.append(texts[rng.choice([j for j in row[2:] if j != p[2]][:8])])

    opt = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    steps = math.ceil(len(pairs) / BATCH)
    warmup = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    model.train()
    t = time.time()
    for step in range(steps):
        b = pairs[step * BATCH : (step + 1) * BATCH]
        sources = [p[1] for p in b] + negatives[step * BATCH : step * BATCH + len(b)]
        q = embed([p[0] for p in b], QUERY_TOKENS, grad=True, batch=BATCH)
        p = embed(sources, args.max_len, grad=True, batch=len(sources))
        loss = F.cross_entropy(SCALE * q @ p.T, torch.arange(len(b)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"step {step + 1}/{steps} loss {loss.item():.4f} ({time.time() - t:.0f} s)",
                  flush=True)
    trained_s = time.time() - t
    tuned, _ = evaluate()
    name = f"tuned-{len(pairs)}-{args.max_len}-neg{args.negatives}.json"
    json.dump(tuned, open(args.work / name, "w"))
    low, high = paired_interval(base, tuned, rng)
    print(f"trained {steps} steps in {trained_s:.0f} s")
    print(f"SciFact test nDCG@10, whole abstracts, dense: untrained {mean(base):.4f}, "
          f"fine-tuned {mean(tuned):.4f}, difference {mean(tuned) - mean(base):+.4f} "
          f"[{low:+.4f}, {high:+.4f}] (95 % paired bootstrap)")


def mean(xs):
    return sum(xs) / len(xs)


def paired_interval(before, after, rng, rounds=2000):
    diffs = [a - b for a, b in zip(after, before)]
    means = sorted(mean([diffs[rng.randrange(len(diffs))] for _ in diffs]) for _ in range(rounds))
    return means[int(rounds * 0.025)], means[int(rounds * 0.975) - 1]


if __name__ == "__main__":
    main()
