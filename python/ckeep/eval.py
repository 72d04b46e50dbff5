"""Evaluation from Python: compare retrieval strategies on a dataset (:func:`run`, as ``ckeep
eval run``) and score any system's run against relevance judgements (:func:`metrics`, as
``ckeep eval metrics``). The metrics are ``trec_eval``'s definitions, so figures match
``pytrec_eval`` and the CLI.

>>> from ckeep import eval
>>> cmp = eval.run("data/beir_scifact", strategies=["mode=bm25", "mode=hybrid"],
...                model="all-MiniLM-L6-v2", metrics=["ndcg@10", "recall@100"])
>>> print(cmp)                # the CLI's table
>>> cmp.to_pandas()           # one row per strategy

On your own documents, without judgments: :func:`synth` makes a test set (as ``ckeep eval
synth``), and :meth:`ckeep.Store.recommend` compares strategies on one (as ``ckeep eval
recommend``) and can make the winner the store's default.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _ckeep, _progress
from ._similarity import _existing

__all__ = ["Candidate", "Comparison", "Evaluation", "Recommendation", "StrategyScores",
           "metrics", "run", "synth"]

PathLike = Union[str, "os.PathLike[str]"]
StrategySpec = Union[str, Mapping[str, Any]]


def _metric_list(metrics: str | Sequence[str] | None) -> Optional[str]:
    if metrics is None or isinstance(metrics, str):
        return metrics
    return ",".join(metrics)


def _strategy(spec: StrategySpec) -> str:
    """A strategy spec from a string (``mode=hybrid,level=doc``) or a dict of its parts."""
    if isinstance(spec, str):
        return spec
    return ",".join(f"{k}={v}" for k, v in spec.items())


@dataclass(frozen=True)
class StrategyScores:
    """One strategy's results: mean per metric, the paired randomisation test's p-value
    against the first strategy (``None`` for the first), query time, the mean words (and
    tokens, if counted) of context handed back, and every query's values."""

    strategy: str
    means: dict[str, float]
    p_values: dict[str, Optional[float]]
    query_seconds: float
    context_words: float
    context_tokens: Optional[float]
    per_query: dict[str, dict[str, float]] = field(repr=False)


@dataclass(frozen=True)
class Comparison:
    """Strategies compared on one dataset: ``ckeep eval run --json``. ``str()`` gives the
    CLI's table."""

    dataset: str
    documents: int
    queries: int
    metrics: list[str]
    strategies: list[StrategyScores]
    table: str = field(repr=False)
    given: list[str] = field(default_factory=list, repr=False)
    context_k: int = 10
    token_model: Optional[str] = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __str__(self) -> str:
        return self.table

    def strategy(self, spec: StrategySpec) -> StrategyScores:
        """The results of a strategy, named as it was given to :func:`run` or as reported."""
        spec = _strategy(spec)
        for given, s in zip(self.given, self.strategies):
            if spec in (given, s.strategy):
                return s
        raise KeyError(spec)

    def to_pandas(self, *, per_query: bool = False) -> Any:
        """A ``pandas.DataFrame`` (needs pandas): one row per strategy with its means,
        ``query_seconds`` and ``context_words``; with ``per_query``, one row per strategy and
        query (a two-level index) with that query's values."""
        import pandas as pd

        if per_query:
            rows = [
                {"strategy": s.strategy, "query": q, **values}
                for s in self.strategies for q, values in s.per_query.items()
            ]
            return pd.DataFrame(rows, columns=["strategy", "query", *self.metrics]).set_index(
                ["strategy", "query"])
        rows = [
            {"strategy": s.strategy, **s.means, "query_seconds": s.query_seconds,
             "context_words": s.context_words}
            for s in self.strategies
        ]
        columns = ["strategy", *self.metrics, "query_seconds", "context_words"]
        return pd.DataFrame(rows, columns=columns).set_index("strategy")


def run(
    dataset: Optional[PathLike] = None,
    strategies: Iterable[StrategySpec] = ("mode=bm25",),
    metrics: str | Sequence[str] | None = None,
    *,
    split: str = "test",
    docs: Optional[PathLike] = None,
    queries: Optional[PathLike] = None,
    relevance: str = "doc",
    model: Optional[str] = None,
    work_dir: Optional[str] = None,
    report: Optional[PathLike] = None,
    count_tokens: Optional[str] = None,
    cache: bool = True,
    progress: _progress.Progress = None,
    fields: Optional[str] = None,
) -> Comparison:
    """Indexes ``dataset`` once per chunker and model, runs every strategy, and compares them.

    ``dataset`` is a directory (BEIR, long-document or fastbook-benchmark layout; ``split``
    picks the qrels), or give ``docs`` and ``queries`` files (long-document layout,
    ``relevance="passage"`` to judge answering passages). ``strategies`` are specs as ``ckeep
    eval run --strategy`` takes them (or dicts of their parts); the first is the baseline of
    the significance tests. ``model`` serves strategies that need one and name none.
    ``metrics``: a list or comma-separated string (default ``ckeep eval``'s). ``report`` writes
    the CLI's report directory (tables, runs, plots). Indexes are built in a temporary
    directory unless ``work_dir`` (a directory or a PostgreSQL URL) is given. Strategies that
    name no ``repr=`` search ``fields``: ``"title,text"`` (each chunk with its document's title,
    the default for BEIR datasets, as their published figures index them) or ``"text"`` (the
    default for other layouts).
    """
    if dataset is None and (docs is None or queries is None):
        raise _ckeep.UsageError("give a dataset directory, or both docs and queries")
    given = [_strategy(s) for s in strategies]
    raw = json.loads(_ckeep.eval_run(
        dataset=None if dataset is None else os.fspath(dataset), split=split,
        docs=None if docs is None else os.fspath(docs),
        queries=None if queries is None else os.fspath(queries), relevance=relevance,
        strategies=given, metrics=_metric_list(metrics),
        model=model, work_dir=work_dir, report_dir=None if report is None else os.fspath(report),
        count_tokens=count_tokens, cache=cache, progress=_progress.callback(progress),
        fields=fields))
    strategies_out = [StrategyScores(
        strategy=s["strategy"], means=s["means"], p_values=s["p_values"],
        query_seconds=s["query_seconds"], context_words=s["context_words"],
        context_tokens=s["context_tokens"], per_query=s["per_query"]) for s in raw["strategies"]]
    return Comparison(
        dataset=raw["dataset"], documents=raw["documents"], queries=raw["queries"],
        metrics=raw["metrics"], strategies=strategies_out, table=raw["table"], given=given,
        context_k=raw["context_k"], token_model=raw["token_model"], raw=raw)


@dataclass(frozen=True)
class Evaluation:
    """A run scored against qrels: ``ckeep eval metrics --json``. ``queries`` counts the scored
    queries; judged queries without results are listed in ``missing_from_run`` and not
    averaged in."""

    queries: int
    metrics: list[str]
    means: dict[str, float]
    missing_from_run: list[str]
    per_query: Optional[dict[str, dict[str, float]]] = field(default=None, repr=False)

    def to_pandas(self) -> Any:
        """Every query's values as a ``pandas.DataFrame`` indexed by query (needs pandas and
        ``per_query=True``)."""
        import pandas as pd

        if self.per_query is None:
            raise _ckeep.UsageError("score with per_query=True to get per-query values")
        return pd.DataFrame.from_dict(self.per_query, orient="index", columns=self.metrics)


def _trec_qrels(qrels: Mapping[str, Mapping[str, int]]) -> str:
    return "".join(
        f"{_token(q)} 0 {_token(d)} {int(g)}\n" for q, docs in qrels.items() for d, g in docs.items())


def _trec_run(run: Mapping[str, Mapping[str, float]]) -> str:
    return "".join(
        f"{_token(q)} Q0 {_token(d)} 0 {float(s)!r} python\n"
        for q, docs in run.items() for d, s in docs.items())


def _token(id: Any) -> str:
    """An id as one TREC field: ids with whitespace cannot be written in the format."""
    text = str(id)
    if not text or any(c.isspace() for c in text):
        raise _ckeep.UsageError(f"id {text!r} is empty or has whitespace")
    return text


def metrics(
    qrels: Union[PathLike, Mapping[str, Mapping[str, int]]],
    run: Union[PathLike, Mapping[str, Mapping[str, float]]],
    metrics: str | Sequence[str] | None = None,
    *,
    per_query: bool = False,
) -> Evaluation:
    """Scores ``run`` against ``qrels``. Each is a file (TREC qrels or BEIR TSV; a TREC run) or
    a dict in ``pytrec_eval``'s shape: ``{qid: {doc_id: grade}}`` and
    ``{qid: {doc_id: score}}``. Runs are ranked by score, ties as ``trec_eval`` breaks them."""
    args: dict[str, Any] = {}
    if isinstance(qrels, (str, os.PathLike)):
        args["qrels_path"] = _existing(qrels)
    else:
        args["qrels_text"] = _trec_qrels(qrels)
    if isinstance(run, (str, os.PathLike)):
        args["run_path"] = _existing(run)
    else:
        args["run_text"] = _trec_run(run)
    raw = json.loads(_ckeep.eval_metrics(**args, metrics=_metric_list(metrics),
                                         per_query=per_query))
    return Evaluation(queries=raw["queries"], metrics=raw["metrics"], means=raw["means"],
                      missing_from_run=raw["missing_from_run"], per_query=raw.get("per_query"))


def synth(
    out: PathLike,
    paths: Optional[PathLike | Iterable[PathLike]] = None,
    *,
    dataset: Optional[PathLike] = None,
    split: str = "test",
    store: Optional[PathLike] = None,
    count: int = 200,
    seed: int = 42,
    generator: str = "ict",
    llm: str = "qwen2.5-coder-0.5b-instruct",
    prompt: Optional[str] = None,
    progress: _progress.Progress = None,
) -> dict[str, Any]:
    """Makes a test set from documents, as ``ckeep eval synth``: files or folders (``paths``,
    read as ``add`` reads them), an evaluation ``dataset``'s documents, or a ``store``'s.
    Writes ``queries.jsonl``, ``docs.jsonl`` and ``synth.json`` into ``out``, so
    ``run(out, ...)`` scores it (held-out text masked); returns the report (queries made, and
    what the near-copy and bleed checks dropped or judged). ``generator``: ``"ict"`` (a held-
    out sentence is the query), ``"title"`` (titles and headings) or ``"llm"`` (the language
    model ``llm`` writes the query a passage answers, asked with ``prompt``, a text holding
    ``{passage}``)."""
    if paths is not None and not isinstance(paths, (str, os.PathLike)):
        path_list: Optional[list[str]] = [os.fspath(p) for p in paths]
    else:
        path_list = None if paths is None else [os.fspath(paths)]
    raw = json.loads(_ckeep.eval_synth(
        os.fspath(out), paths=path_list, dataset=None if dataset is None else os.fspath(dataset),
        split=split, store=None if store is None else os.fspath(store), count=count, seed=seed,
        generator=generator, llm=llm, prompt=prompt, progress=_progress.callback(progress)))
    return raw["report"]


@dataclass(frozen=True)
class Candidate:
    """One candidate of :class:`Recommendation`: its mean, its margin over the store's default
    with a 95 % paired bootstrap interval and a randomisation test's p, and its cost."""

    strategy: str
    mean: float
    margin: float
    margin_ci: tuple[float, float]
    p_value: float
    query_ms: float
    index_bytes: int


@dataclass(frozen=True)
class Recommendation:
    """``ckeep eval recommend --json``: the candidates (the first is the store's default), the
    ``winner`` (best mean), whether its gain is ``confident`` (interval above zero), the
    out-of-fold worth of choosing this way, and whether it was ``applied``."""

    dataset: str
    queries: int
    metric: str
    candidates: list[Candidate]
    winner: int
    confident: bool
    out_of_fold: float
    folds: int
    applied: bool

    @property
    def best(self) -> Candidate:
        """The recommended candidate."""
        return self.candidates[self.winner]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` (needs pandas): one row per candidate."""
        import pandas as pd

        rows = [{"strategy": c.strategy, self.metric: c.mean, "margin": c.margin,
                 "ci_low": c.margin_ci[0], "ci_high": c.margin_ci[1], "p_value": c.p_value,
                 "query_ms": c.query_ms, "index_bytes": c.index_bytes} for c in self.candidates]
        return pd.DataFrame(rows).set_index("strategy")

    @classmethod
    def _from_json(cls, raw: dict[str, Any]) -> "Recommendation":
        r = raw["recommendation"]
        return cls(dataset=r["dataset"], queries=r["queries"], metric=r["metric"],
                   candidates=[Candidate(strategy=c["strategy"], mean=c["mean"],
                                         margin=c["margin"], margin_ci=tuple(c["margin_ci"]),
                                         p_value=c["p_value"], query_ms=c["query_ms"],
                                         index_bytes=c["index_bytes"]) for c in r["candidates"]],
                   winner=r["winner"], confident=r["confident"], out_of_fold=r["out_of_fold"],
                   folds=r["folds"], applied=raw["applied"])
