"""Chunk-pair similarity against whole-text cosine on labelled pairs: the chunk-pair experiment.

    python examples/python/qqp_chunk_pair.py                       # 500 QQP pairs, seed 42
    python examples/python/qqp_chunk_pair.py --sample 0 --calibrate-split 0.5
    python examples/python/qqp_chunk_pair.py --pairs ../shared/data/zh/pairs/lcqmc/dev.tsv \\
        --model multilingual-e5-small                               # the Chinese edition

Prints what ``ckeep pairs FILE --sample N --seed S [--calibrate-split F]`` prints.
"""

from __future__ import annotations

import ckeep
from _common import data_dir, parser, print_json


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pairs", default=str(data_dir() / "qqp" / "dev.tsv"), help="a pair file")
    p.add_argument("--sample", type=int, default=500, help="pairs to sample (0: all)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--calibrate-split", type=float, help="calibrate thresholds on this share")
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    args = p.parse_args()

    study = ckeep.pairs(args.pairs, sample=args.sample or None, seed=args.seed,
                        calibrate_split=args.calibrate_split, model=args.model,
                        progress=not args.no_progress)
    if args.json:
        print_json(study.raw)
        return
    print(f"{args.pairs}: {study.pairs} pairs ({study.duplicates} duplicates); {study.model}, "
          f"chunker {study.chunker}, top-k {study.top_k}\n")
    print("| method, threshold | threshold | accuracy (95 % CI) | precision | recall | F1 | ROC-AUC | AP |")
    print("|---|---|---|---|---|---|---|---|")
    for r in study.results:
        low, high = r.accuracy_ci95
        print(f"| {r.method} | {r.threshold:.3f} | {100 * r.accuracy:.2f} % ({100 * low:.1f}–"
              f"{100 * high:.1f}) | {r.precision:.3f} | {r.recall:.3f} | {r.f1:.3f} | "
              f"{r.roc_auc:.4f} | {r.average_precision:.4f} |")
    print()
    for t in study.mcnemar:
        print(f"McNemar, {t['thresholds']} thresholds: whole text alone right on "
              f"{t['whole_only']}, chunk pair alone on {t['chunk_pair_only']}; "
              f"p = {t['p_value']:.4f}")


if __name__ == "__main__":
    main()
