"""Gist-style chunk representations on SQuAD long documents: does giving each chunk its
document's summary help rank whole documents?

    python examples/python/gist_squad.py                     # all 10,570 questions (minutes)
    python examples/python/gist_squad.py --queries 500       # the first 500

Each strategy ranks the 48 articles by their best paragraph (dense, all-MiniLM-L6-v2): plain
chunk vectors, chunk vectors averaged with an extractive summary's (Gist's average, weights
0.25 and 0.5), the summary alone, and late chunking. Prints the table ``ckeep eval run`` prints
for the same strategies (README, "Chunk representations on SQuAD long documents").
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import ckeep
from _common import data_dir, parser, print_json

STRATEGIES = [
    "chunker=paragraphs,mode=dense,level=doc",
    "chunker=paragraphs,mode=dense,level=doc,repr=summary-avg:0.25,summarizer=extractive:128",
    "chunker=paragraphs,mode=dense,level=doc,repr=summary-avg:0.5,summarizer=extractive:128",
    "chunker=paragraphs,mode=dense,level=doc,repr=summary,summarizer=extractive:128",
    "chunker=paragraphs,mode=dense,level=doc,repr=late",
]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=0, help="use the first N questions (0: all)")
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    args = p.parse_args()

    squad = data_dir() / "squad_dev"
    queries = squad / "longdoc-v1.1.queries.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        if args.queries:
            subset = Path(tmp) / "queries.jsonl"
            with queries.open(encoding="utf-8") as f:
                subset.write_text("".join(itertools.islice(f, args.queries)), encoding="utf-8")
            queries = subset
        result = ckeep.eval.run(
            docs=squad / "longdoc-v1.1.docs.jsonl", queries=queries, model=args.model,
            strategies=STRATEGIES, metrics="ndcg@1,ndcg@5,ndcg@10,mrr,map,recall@100",
            progress=not args.no_progress)
    if args.json:
        print_json(result.raw)
    else:
        print(f"{result.dataset} — {result.documents} documents, {result.queries} queries")
        print(result)


if __name__ == "__main__":
    main()
