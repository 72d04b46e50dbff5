"""ckeep.eval against the CLI and pytrec_eval's reference values, in English and Chinese."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import ckeep
from conftest import MODEL, MULTILINGUAL, REPO, cli
from test_study import DATA

REFERENCE = json.loads(
    (REPO / "crates" / "eval" / "tests" / "data" / "pytrec_reference.json").read_text())


def parse_trec(text: str, columns: tuple[int, int, int], cast: type) -> dict:
    """A TREC file as pytrec_eval's dict; a document listed twice keeps its best value."""
    out: dict = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > max(columns):
            q, d, v = (f[i] for i in columns)
            docs = out.setdefault(q, {})
            docs[d] = max(cast(v), docs.get(d, cast(v)))
    return out


def test_metrics_of_dicts_and_files_equal_pytrec_eval_and_the_cli(tmp_path: Path) -> None:
    qrels_file, run_file = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels_file.write_text(REFERENCE["qrels"])
    run_file.write_text(REFERENCE["run"])
    names = ["ndcg@10", "map", "recall@100", "mrr"]
    from_files = ckeep.eval.metrics(qrels_file, run_file, names, per_query=True)
    want = cli("eval", "metrics", "--qrels", str(qrels_file), "--run", str(run_file),
               "--metrics", ",".join(names), "--per-query")
    assert from_files.means == want["means"] and from_files.per_query == want["per_query"]
    qrels = parse_trec(REFERENCE["qrels"], (0, 2, 3), int)
    run = parse_trec(REFERENCE["run"], (0, 2, 4), float)
    from_dicts = ckeep.eval.metrics(qrels, run, names, per_query=True)
    assert from_dicts == from_files
    for qid, values in REFERENCE["expected"].items():
        for m in names:
            assert math.isclose(from_dicts.per_query[qid][m], values[m], abs_tol=1e-9), (qid, m)
    assert "q3" in from_dicts.missing_from_run
    with pytest.raises(ckeep.UsageError, match="unknown metric"):
        ckeep.eval.metrics(qrels, run, "ndcg")
    with pytest.raises(ckeep.UsageError, match="whitespace"):
        ckeep.eval.metrics({"q 1": {"d": 1}}, run)
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 0.5 x\nq1 Q0 d2\n")
    with pytest.raises(ckeep.UsageError, match="line 2: expected"):
        ckeep.eval.metrics(qrels, bad)
    with pytest.raises(ckeep.UsageError, match="not a finite number"):
        ckeep.eval.metrics(qrels, {"q1": {"d1": float("nan")}})


def longdoc_sample(docs: Path, queries: Path, n: int, tmp: Path) -> tuple[Path, Path]:
    """The first ``n`` documents of a long-document set and the queries about them."""
    kept: set[str] = set()
    out_docs, out_queries = tmp / f"{docs.parent.name}-docs.jsonl", tmp / f"{docs.parent.name}-queries.jsonl"
    with docs.open(encoding="utf-8") as f, out_docs.open("w", encoding="utf-8") as o:
        for line in f:
            if len(kept) == n:
                break
            kept.add(json.loads(line)["doc_id"])
            o.write(line)
    with queries.open(encoding="utf-8") as f, out_queries.open("w", encoding="utf-8") as o:
        o.writelines(line for line in f if json.loads(line)["doc_id"] in kept)
    return out_docs, out_queries


@pytest.mark.parametrize("name,docs,queries,model", [
    ("squad", DATA / "squad_dev" / "longdoc-v1.1.docs.jsonl",
     DATA / "squad_dev" / "longdoc-v1.1.queries.jsonl", MODEL),
    ("cmrc2018", DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "docs.jsonl",
     DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "queries.jsonl", MULTILINGUAL),
])
def test_run_equals_the_cli(name: str, docs: Path, queries: Path, model: str,
                            tmp_path: Path) -> None:
    docs, queries = longdoc_sample(docs, queries, 3, tmp_path)
    strategies = ["chunker=sentences,mode=bm25,level=doc,agg=max",
                  "chunker=sentences,mode=dense,level=doc,agg=max"]
    want = cli("eval", "run", "--docs", str(docs), "--queries", str(queries), "--model", model,
               "--metrics", "ndcg@10,mrr@10", *[a for s in strategies for a in ("--strategy", s)])
    stages: set[str] = set()
    got = ckeep.eval.run(docs=docs, queries=queries, model=model, metrics=["ndcg@10", "mrr@10"],
                         strategies=strategies, report=tmp_path / "report",
                         progress=lambda stage, done, total: stages.add(stage))
    assert got.queries == want["queries"] > 0
    for g, w in zip(got.strategies, want["strategies"]):
        assert (g.strategy, g.means, g.p_values) == (w["strategy"], w["means"], w["p_values"])
        assert len(g.per_query) == got.queries
        mean = sum(v["ndcg@10"] for v in g.per_query.values()) / got.queries
        assert math.isclose(mean, g.means["ndcg@10"], abs_tol=1e-12)
    assert got.strategy(strategies[1]).means["ndcg@10"] > 0
    assert all(s.strategy in str(got) for s in got.strategies) and "ndcg@10" in str(got)
    assert (tmp_path / "report" / "table.md").is_file() and stages
    # A strategy given as a dict runs as its spec does.
    as_dict = ckeep.eval.run(docs=docs, queries=queries, metrics="ndcg@10",
                             strategies=[{"chunker": "sentences", "mode": "bm25", "level": "doc",
                                          "agg": "max"}])
    assert as_dict.strategies[0].means["ndcg@10"] == got.strategies[0].means["ndcg@10"]


def test_to_pandas_tables(tmp_path: Path) -> None:
    import pandas as pd

    qrels = parse_trec(REFERENCE["qrels"], (0, 2, 3), int)
    run = parse_trec(REFERENCE["run"], (0, 2, 4), float)
    frame = ckeep.eval.metrics(qrels, run, ["ndcg@10", "map"], per_query=True).to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["ndcg@10", "map"]
    assert len(frame) == len(REFERENCE["expected"])
    with pytest.raises(ckeep.UsageError, match="per_query"):
        ckeep.eval.metrics(qrels, run).to_pandas()
    docs, queries = longdoc_sample(DATA / "squad_dev" / "longdoc-v1.1.docs.jsonl",
                                   DATA / "squad_dev" / "longdoc-v1.1.queries.jsonl", 4, tmp_path)
    strategies = ["chunker=sentences,level=doc,agg=max", "chunker=sentences,level=doc,agg=sum"]
    cmp = ckeep.eval.run(docs=docs, queries=queries, strategies=strategies, metrics="ndcg@10,mrr")
    table = cmp.to_pandas()
    assert list(table.index) == [s.strategy for s in cmp.strategies]
    assert list(table.columns) == ["ndcg@10", "mrr", "query_seconds", "context_words"]
    second = cmp.strategy(strategies[1])
    assert table.loc[second.strategy, "mrr"] == second.means["mrr"]
    long = cmp.to_pandas(per_query=True)
    assert long.shape == (2 * cmp.queries, 2)


def test_bad_requests_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(ckeep.UsageError, match="dataset"):
        ckeep.eval.run(strategies=["mode=bm25"])
    with pytest.raises(ckeep.UsageError, match="not a dataset"):
        ckeep.eval.run(tmp_path, strategies=["mode=bm25"])
    with pytest.raises(ckeep.UsageError, match="needs a model"):
        ckeep.eval.run(DATA / "beir_scifact", strategies=["mode=dense"])
    with pytest.raises(ckeep.UsageError, match="strategy"):
        ckeep.eval.run(DATA / "beir_scifact", strategies=["mode=fast"])


def test_beir_datasets_search_titles_unless_fields_say_text(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "Owls", "text": "These birds hunt at night."}\n'
        '{"_id": "d2", "title": "Larks", "text": "These birds sing at dawn."}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "owls"}\n')
    (beir / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    titled = ckeep.eval.run(beir, ["level=doc"], "ndcg@10")
    assert "repr=contextual:title" in titled.strategies[0].strategy
    assert titled.strategies[0].means["ndcg@10"] > 0.99
    text = ckeep.eval.run(beir, ["level=doc"], "ndcg@10", fields="text")
    assert "repr=" not in text.strategies[0].strategy
    assert text.strategies[0].means["ndcg@10"] < 0.01
    want = cli("eval", "run", "--dataset", str(beir), "--strategy", "level=doc",
               "--metrics", "ndcg@10", "--fields", "text")
    assert text.strategies[0].means == want["strategies"][0]["means"]
    with pytest.raises(ckeep.UsageError):
        ckeep.eval.run(beir, ["level=doc"], fields="abstract")
