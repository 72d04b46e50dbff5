"""The fastbook chapter-1 study: which chunks answer the 30 chapter-1 questions of
fastbook-benchmark over ``01_intro.ipynb``?

    python examples/python/fastbook_ch1.py                          # BM25, as fastbookRAG did
    python examples/python/fastbook_ch1.py --model all-MiniLM-L6-v2 # and dense and hybrid

``contain@k``: a gold passage occurs in one of the top k chunks. Prints the table ``ckeep eval
run --dataset …/fastbook_benchmark --split ch1`` prints for the same strategies.
"""

from __future__ import annotations

import ckeep
from _common import data_dir, parser, print_json


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--model", help="also run dense and hybrid retrieval with this model")
    args = p.parse_args()

    strategies = ["chunker=paragraphs", "chunker=paragraphs:3"]
    if args.model:
        strategies += ["chunker=paragraphs:3,mode=dense", "chunker=paragraphs:3,mode=hybrid"]
    result = ckeep.eval.run(data_dir() / "fastbook_benchmark", split="ch1", model=args.model,
                            strategies=strategies, metrics="contain@1,contain@3,contain@5",
                            progress=not args.no_progress)
    if args.json:
        print_json(result.raw)
        return
    print(f"{result.dataset} — {result.documents} documents, {result.queries} queries")
    print(result)
    best = max(result.strategies, key=lambda s: s.means["contain@3"])
    print(f"\nbest at k = 3: {best.strategy} ({100 * best.means['contain@3']:.1f} %)")


if __name__ == "__main__":
    main()
