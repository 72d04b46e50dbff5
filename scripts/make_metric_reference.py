#!/usr/bin/env python3
"""Generates crates/eval/tests/data/pytrec_reference.json: random graded qrels and runs scored by
pytrec_eval (trec_eval's definitions), for the metric parity test in crates/eval/tests.

The runs include score ties, duplicate documents (a lower-scored repeat that must not count
twice), queries missing from the run or from the qrels, judged queries without any relevant
document, and fewer results than the cut-off. pytrec_eval takes a dict, so it sees each
document once with its best score, which is what our reader keeps.

Usage: python3 -m venv /tmp/pte && /tmp/pte/bin/pip install pytrec-eval-terrier==0.5.11
       /tmp/pte/bin/python scripts/make_metric_reference.py
"""
import json
import random
from pathlib import Path

import pytrec_eval

CUTS = [1, 3, 5, 10, 100]
MEASURES = {"ndcg_cut", "recip_rank", "map", "map_cut", "recall", "P", "success"}
OURS = {  # pytrec_eval name -> ours
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTS},
    **{f"map_cut_{k}": f"map@{k}" for k in CUTS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTS},
    **{f"P_{k}": f"p@{k}" for k in CUTS},
    **{f"success_{k}": f"hit@{k}" for k in CUTS},
    "recip_rank": "mrr",
    "map": "map",
}


def main() -> None:
    rng = random.Random(20261122)
    qrels, run_lines = {}, []
    for q in range(150):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(400)}" for _ in range(rng.randrange(1, 60))]
        if q % 10 != 1:  # q1, q11, ... are in the run only
            judged = rng.sample(range(400), rng.randrange(1, 25))
            # q2, q12, ... have judgements but nothing relevant
            qrels[qid] = {f"d{d}": (0 if q % 10 == 2 else rng.choice([0, 0, 1, 1, 2, 3])) for d in judged}
            # make sure some judged documents are retrieved
            docs += [d for d in qrels[qid] if rng.random() < 0.5]
        if q % 10 == 3:  # judged but not run
            continue
        if q % 10 == 4:  # fewer results than most cut-offs
            docs = docs[:3]
        for d in docs:
            score = round(rng.random() * 4) / 4  # coarse scores: many ties
            run_lines.append((qid, d, score))
        if docs and q % 5 == 0:  # a duplicate with a lower score
            run_lines.append((qid, docs[0], -1.0))
    best = {}
    for qid, d, s in run_lines:
        best.setdefault(qid, {})
        best[qid][d] = max(s, best[qid].get(d, float("-inf")))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"{m}.{','.join(map(str, CUTS))}" if m not in ("recip_rank", "map") else m for m in MEASURES})
    results = evaluator.evaluate(best)
    expected = {qid: {OURS[k]: v for k, v in vals.items() if k in OURS} for qid, vals in results.items()}
    out = {
        "generator": "scripts/make_metric_reference.py with pytrec_eval " + getattr(pytrec_eval, "__version__", "(pytrec-eval-terrier)"),
        "qrels": "".join(f"{q} 0 {d} {g}\n" for q, docs in sorted(qrels.items()) for d, g in sorted(docs.items())),
        "run": "".join(f"{q} Q0 {d} {i} {s} ref\n" for i, (q, d, s) in enumerate(run_lines)),
        "expected": expected,
    }
    path = Path(__file__).resolve().parent.parent / "crates/eval/tests/data/pytrec_reference.json"
    path.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(f"{path}: {len(expected)} queries, {len(OURS)} metrics")


if __name__ == "__main__":
    main()
