"""Chunk-pair similarity from Python: :func:`similar` for two texts and :func:`pairs` for a
labelled-pair study. The figures are the CLI's: ``ckeep similar --json`` and ``ckeep pairs
--json`` give the same numbers for the same inputs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, Tuple, Union

from . import _ckeep, _progress

#: The model, chunker, top-k and threshold of the chunk-pair experiment (the CLI's defaults).
DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CHUNKER = "words:dynamic"
DEFAULT_TOP_K = 3
DEFAULT_THRESHOLD = 0.7

PairsInput = Union[str, "os.PathLike[str]", Iterable[Tuple[str, str, Any]]]


@dataclass(frozen=True)
class MatchSide:
    """One chunk of a matching pair: its index, byte span, character span and text."""

    chunk: int
    start: int
    end: int
    char_start: int
    char_end: int
    text: str


@dataclass(frozen=True)
class ChunkPairMatch:
    """Two chunks, one from each text, and their cosine."""

    cosine: float
    a: MatchSide
    b: MatchSide


@dataclass(frozen=True)
class Similarity:
    """How alike two texts are: the chunk-pair score (mean cosine of the ``top_k`` most
    similar chunk pairs) beside the whole-text cosine, and the verdicts at ``threshold``."""

    chunk_pair: float
    whole: float
    threshold: float
    duplicate: bool
    whole_duplicate: bool
    model: str
    chunker: str
    top_k: int
    chunks: Tuple[int, int]
    top: list[ChunkPairMatch] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _side(s: Mapping[str, Any]) -> MatchSide:
    return MatchSide(s["chunk"], s["span"][0], s["span"][1], s["char_span"][0],
                     s["char_span"][1], s["text"])


def similar(
    a: Union[str, "os.PathLike[str]"],
    b: Union[str, "os.PathLike[str]"],
    *,
    model: str = DEFAULT_MODEL,
    chunker: str = DEFAULT_CHUNKER,
    top_k: int = DEFAULT_TOP_K,
    threshold: float = DEFAULT_THRESHOLD,
    explain: bool = False,
    cache: bool = True,
) -> Similarity:
    """Chunk-pair similarity of two texts; ``pathlib.Path`` arguments are read as files (UTF-8,
    as ``ckeep similar --files``). ``explain`` lists the ``top_k`` chunk pairs with their spans
    and text. Models are loaded once per process."""
    files = isinstance(a, os.PathLike) or isinstance(b, os.PathLike)
    if files and not (isinstance(a, os.PathLike) and isinstance(b, os.PathLike)):
        raise _ckeep.UsageError("give two texts or two paths, not one of each")
    if files:
        a, b = _existing(a), _existing(b)
    raw = json.loads(_ckeep.similar(
        os.fspath(a), os.fspath(b), files=files, model=model, chunker=chunker, top_k=top_k,
        threshold=threshold, explain=explain, cache=cache))
    top = None
    if raw.get("top") is not None:
        top = [ChunkPairMatch(m["cosine"], _side(m["a"]), _side(m["b"])) for m in raw["top"]]
    return Similarity(
        chunk_pair=raw["chunk_pair"], whole=raw["whole"], threshold=raw["threshold"],
        duplicate=raw["duplicate"], whole_duplicate=raw["whole_duplicate"], model=raw["model"],
        chunker=raw["chunker"], top_k=raw["top_k"], chunks=tuple(raw["chunks"]), top=top,
        raw=raw)


@dataclass(frozen=True)
class PairResult:
    """One method at one threshold: ``whole text, fixed``, ``chunk pair, calibrated``…"""

    method: str
    threshold: float
    accuracy: float
    accuracy_ci95: Tuple[float, float]
    precision: float
    recall: float
    f1: float
    roc_auc: float
    average_precision: float


@dataclass(frozen=True)
class PairStudy:
    """A labelled-pair study, as ``ckeep pairs --json`` reports it: each method at the fixed
    threshold and (with calibration pairs) at its calibrated one, and McNemar's test between
    the methods (``mcnemar``: ``thresholds``, ``whole_only``, ``chunk_pair_only``,
    ``p_value``)."""

    pairs: int
    duplicates: int
    calibration_pairs: int
    model: str
    chunker: str
    top_k: int
    results: list[PairResult]
    mcnemar: list[dict[str, Any]]
    seconds: float
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def result(self, method: str) -> PairResult:
        """The row of ``method`` (``chunk pair, calibrated``…)."""
        for r in self.results:
            if r.method == method:
                return r
        raise KeyError(method)

    def to_pandas(self) -> Any:
        """The results as a ``pandas.DataFrame`` indexed by method (needs pandas)."""
        import pandas as pd

        rows = [dict(r.__dict__) for r in self.results]
        return pd.DataFrame(rows).set_index("method")


def _as_pairs(pairs: Iterable[Sequence[Any]]) -> list[tuple[str, str, bool]]:
    out = []
    for i, p in enumerate(pairs):
        if len(p) != 3:
            raise _ckeep.UsageError(f"pair {i}: expected (a, b, label), got {len(p)} items")
        a, b, label = p
        if not isinstance(a, str) or not isinstance(b, str):
            raise _ckeep.UsageError(f"pair {i}: the texts must be strings")
        out.append((a, b, bool(label)))
    return out


def _existing(path: Union[str, "os.PathLike[str]"]) -> str:
    """``path`` as a string, or the caller's mistake if nothing is there."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise _ckeep.UsageError(f"{path}: No such file or directory")
    return path


def _source(pairs: Any) -> dict[str, Any]:
    if isinstance(pairs, (str, os.PathLike)):
        return {"file": _existing(pairs)}
    return {"pairs": _as_pairs(pairs)}


def pairs(
    pairs: PairsInput,
    *,
    calibrate: PairsInput | None = None,
    calibrate_split: float | None = None,
    sample: int | None = None,
    seed: int = 42,
    model: str = DEFAULT_MODEL,
    chunker: str = DEFAULT_CHUNKER,
    top_k: int = DEFAULT_TOP_K,
    threshold: float = DEFAULT_THRESHOLD,
    format: str | None = None,
    columns: str | None = None,
    cache: bool = True,
    progress: _progress.Progress = None,
) -> PairStudy:
    """Scores labelled pairs by whole-text cosine and by chunk-pair similarity.

    ``pairs`` is a pair file (TSV/CSV/JSONL, read as ``ckeep pairs`` reads it, with ``format``
    and ``columns``) or ``(a, b, label)`` tuples. Thresholds are calibrated on ``calibrate``
    (a file or tuples) or on a seeded ``calibrate_split`` of the pairs; ``sample`` reports a
    seeded sample. ``progress=True`` shows a bar; a callable gets ``(stage, done, total)``.
    """
    kwargs: dict[str, Any] = _source(pairs)
    if calibrate is not None:
        cal = _source(calibrate)
        kwargs.update({f"calibrate_{k}": v for k, v in cal.items()})
    raw = json.loads(_ckeep.pairs(
        **kwargs, format=format, columns=columns, calibrate_split=calibrate_split,
        sample=sample, seed=seed, model=model, chunker=chunker, top_k=top_k,
        threshold=threshold, cache=cache, progress=_progress.callback(progress)))
    results = [PairResult(
        method=r["method"], threshold=r["threshold"], accuracy=r["accuracy"],
        accuracy_ci95=tuple(r["accuracy_ci95"]), precision=r["precision"], recall=r["recall"],
        f1=r["f1"], roc_auc=r["roc_auc"], average_precision=r["average_precision"])
        for r in raw["results"]]
    return PairStudy(
        pairs=raw["pairs"], duplicates=raw["duplicates"],
        calibration_pairs=raw["calibration_pairs"], model=raw["model"], chunker=raw["chunker"],
        top_k=raw["top_k"], results=results, mcnemar=raw["mcnemar"], seconds=raw["seconds"],
        raw=raw)
