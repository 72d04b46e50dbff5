"""The usual RAG pipeline, as users glue it together today, for bench/answers.sh.

LangChain's RecursiveCharacterTextSplitter (1,000 characters, 200 overlap, its tutorials'
settings) cuts the documents. BM25 (rank_bm25) ranks the chunks. The top chunks are pasted into
a "cite [n]" prompt until the token budget is spent; tokens are counted by the server's own
tokenizer. The same OpenAI-compatible server that ckeep is given writes the answers: same model,
same budget, same questions. Answers are scored as `ckeep eval answers` scores them (SQuAD
normalisation, CJK by characters), and every question's scores are written to --out for the
paired comparison.

The citations stay unchecked: that is the pipeline being measured against.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
import urllib.request

from langchain_text_splitters import RecursiveCharacterTextSplitter
from rank_bm25 import BM25Okapi

PROMPT = ("Use the following pieces of context to answer the question at the end. If you don't "
          "know the answer, just say that you don't know, don't try to make up an answer. Cite "
          "the pieces you use by their number, like [1].")
ABSTAINED = re.compile(r"don'?t know|do not know|not (?:found|mentioned|provided)|cannot answer",
                       re.I)


def cjk(c: str) -> bool:
    return unicodedata.east_asian_width(c) in "WF" and c.isalpha()


def words(text: str) -> list[str]:
    """Lower-cased words; each CJK character a word (BM25 and scoring alike)."""
    out, word = [], []
    for c in text.lower():
        if cjk(c):
            if word:
                out.append("".join(word))
                word = []
            out.append(c)
        elif c.isalnum():
            word.append(c)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


def normal(text: str) -> list[str]:
    """SQuAD's normalisation (no punctuation, no articles) as tokens, CJK by characters."""
    return [w for w in words(text) if w not in ("a", "an", "the")]


def contains(text: str, gold: str) -> bool:
    t, g = normal(text), normal(gold)
    return bool(g) and any(t[i:i + len(g)] == g for i in range(len(t) - len(g) + 1))


def f1(answer: str, gold: str) -> float:
    a, g = normal(answer), normal(gold)
    left: dict[str, int] = {}
    for w in g:
        left[w] = left.get(w, 0) + 1
    common = 0
    for w in a:
        if left.get(w, 0) > 0:
            left[w] -= 1
            common += 1
    if not common:
        return 0.0
    p, r = common / len(a), common / len(g)
    return 2 * p * r / (p + r)


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as res:
        return json.load(res)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--server", required=True, help="http://HOST:PORT of an OpenAI-compatible server")
    ap.add_argument("--limit", type=int, default=300, help="answerable questions, the first by id")
    ap.add_argument("--budget", type=int, default=1500, help="context tokens")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    docs = [json.loads(line) for line in open(args.docs, encoding="utf-8")]
    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    chunks = [c for d in docs for c in splitter.split_text(d["text"])]
    bm25 = BM25Okapi([words(c) for c in chunks])
    queries = sorted((json.loads(line) for line in open(args.queries, encoding="utf-8")),
                     key=lambda q: q["qid"])
    answerable = [q for q in queries if not q.get("is_impossible")][:args.limit]
    impossible = [q for q in queries if q.get("is_impossible")][:args.limit]

    def tokens(text: str) -> int:
        return len(post(f"{args.server}/tokenize", {"content": text})["tokens"])

    out = []
    for n, q in enumerate(answerable + impossible, 1):
        started = time.time()
        scores = bm25.get_scores(words(q["question"]))
        ranked = sorted(range(len(chunks)), key=lambda i: -scores[i])[:20]
        context, used = [], 0
        for rank, i in enumerate(ranked, 1):
            piece = f"[{rank}] {chunks[i]}"
            cost = tokens(piece)
            if used + cost > args.budget:
                break
            context.append(piece)
            used += cost
        user = "\n\n".join(context) + f"\n\nQuestion: {q['question']}\nHelpful Answer:"
        reply = post(f"{args.server}/v1/chat/completions", {
            "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": user}],
            "max_tokens": 256, "temperature": 0})
        answer = reply["choices"][0]["message"]["content"].strip()
        abstained = bool(ABSTAINED.search(answer))
        gold = [a if isinstance(a, str) else a["text"] for a in q.get("answers", [])]
        given = "" if abstained else answer
        joined = "\n".join(context)
        out.append({
            "qid": q["qid"], "unanswerable": bool(q.get("is_impossible")), "answer": answer,
            "abstained": abstained,
            "accuracy": float(bool(given) and any(contains(given, g) for g in gold)),
            "f1": max((f1(given, g) for g in gold), default=0.0),
            "context_recall": float(any(contains(joined, g) for g in gold)),
            "context_tokens": used, "seconds": time.time() - started,
        })
        print(f"\ranchor: {n}/{len(answerable) + len(impossible)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    json.dump(out, open(args.out, "w", encoding="utf-8"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
