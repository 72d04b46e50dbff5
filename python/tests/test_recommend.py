"""A test set from the store's own documents, a recommendation, and the default it leaves:
the same figures as the CLI, used by Store.search and the LangChain retriever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ckeep
from ckeep.langchain import CkeepRetriever
from conftest import cli
from test_study import DATA

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data")


def scifact(tmp_path: Path, n: int) -> Path:
    lines = (DATA / "beir_scifact" / "corpus.jsonl").read_text().splitlines()[:n]
    path = tmp_path / "scifact.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_synth_writes_the_set_the_cli_writes(tmp_path: Path) -> None:
    docs = scifact(tmp_path, 300)
    report = ckeep.eval.synth(tmp_path / "py", docs, count=50, seed=7)
    assert report["queries"] == 50 and report["generator"] == "ict"
    by_cli = cli("eval", "synth", "--docs", str(docs), "--out", str(tmp_path / "cli"),
                 "--count", "50", "--seed", "7")
    assert by_cli["report"] == report
    assert (tmp_path / "py" / "queries.jsonl").read_text() == \
        (tmp_path / "cli" / "queries.jsonl").read_text()
    scored = ckeep.eval.run(tmp_path / "py", ["mode=bm25,level=doc"], "ndcg@10")
    assert scored.queries == 50 and 0.3 < scored.strategies[0].means["ndcg@10"] < 1.0
    with pytest.raises(ckeep.UsageError, match="unknown generator"):
        ckeep.eval.synth(tmp_path / "x", docs, generator="magic")


def test_recommend_applies_a_confident_winner_that_search_then_uses(tmp_path: Path) -> None:
    docs = scifact(tmp_path, 300)
    store = ckeep.Store(tmp_path / "s")
    store.add(docs)
    rec = store.recommend(count=100)
    assert rec.candidates[0].strategy == "mode=bm25,level=chunk,k=10"
    assert not rec.applied
    by_cli = cli("eval", "recommend", "--count", "100", store=tmp_path / "s")
    assert by_cli["recommendation"]["winner"] == rec.winner
    assert [c["mean"] for c in by_cli["recommendation"]["candidates"]] == \
        [c.mean for c in rec.candidates]
    assert rec.confident and rec.best.strategy == "mode=bm25,k1=1.2,b=0.75,level=chunk,k=10"
    assert list(rec.to_pandas().index) == [c.strategy for c in rec.candidates]

    applied = store.recommend(count=100, apply=True)
    assert applied.applied
    assert store.stats()["default_strategy"]["strategy"] == rec.best.strategy
    found = store.search_json("tumour growth", explain=True)
    assert found["strategy"] == rec.best.strategy
    assert found["default_strategy"]["from"].startswith("ckeep eval recommend")
    assert store.search_json("tumour growth", strategy="mode=bm25")["strategy"] == \
        "mode=bm25,level=chunk,k=10"

    # The LangChain retriever names no strategy, so the store's default ranks its documents.
    got = CkeepRetriever(store=store, k=3).invoke("tumour growth")
    assert [(d.metadata["doc_id"], d.metadata["score"]) for d in got] == \
        [(r.doc_id, r.score) for r in store.search("tumour growth", k=3)]
    classic = store.search("tumour growth", k=3, strategy="mode=bm25,k1=1.2,b=0.75")
    assert [r.score for r in classic] == [d.metadata["score"] for d in got]
