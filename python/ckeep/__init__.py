"""Context Keeper from Python: store long, index short.

Documents are kept whole and indexed as small chunks; a search finds the best pieces and hands
back their context with exact spans (byte offsets into the stored text, and character offsets for
Python strings). The engine is the Rust one behind the ``ckeep`` CLI; results equal
``ckeep search --json`` for the same store and query.

>>> import ckeep
>>> store = ckeep.Store("demo")                         # created by the first add
>>> store.add("examples/corpus")                        # files, directories, or texts
>>> for r in store.search("how are chunks scored", k=3):
...     print(r.rank, r.doc_id, r.score, r.spans[0])
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, Union

from ._ckeep import (
    CkeepError,
    ModelError,
    StoreError,
    UsageError,
    __version__,
)
# An error raised in Python (a bad argument found before the engine) has its class's code; one
# from the engine carries its own (`not_found`, `conflict`, …) and a `hint`, as the CLI's and the
# server's JSON errors do.
for _class, _code in (
    (CkeepError, "internal"),
    (StoreError, "internal"),
    (ModelError, "model_unavailable"),
    (UsageError, "invalid_parameter"),
):
    _class.code = _code
    _class.hint = None

from ._ckeep import Embedder as _NativeEmbedder
from ._ckeep import known_extensions as _known_extensions
from ._ckeep import Store as _NativeStore

if TYPE_CHECKING:
    import numpy

from . import _progress, eval
from ._similarity import (
    ChunkPairMatch,
    MatchSide,
    PairResult,
    PairStudy,
    Similarity,
    pairs,
    similar,
)

__all__ = [
    "Chunk",
    "ChunkPairMatch",
    "CkeepError",
    "Embedder",
    "MatchSide",
    "ModelError",
    "PairResult",
    "PairStudy",
    "Result",
    "ResultChunk",
    "Similarity",
    "Span",
    "Store",
    "StoreError",
    "UsageError",
    "__version__",
    "eval",
    "pairs",
    "similar",
]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Span:
    """Where a piece of text sits in its stored document.

    ``start``/``end`` are UTF-8 byte offsets (what the CLI and the server report);
    ``char_start``/``char_end`` index the document as a Python ``str``:
    ``store.show(doc_id)["text"][span.char_start:span.char_end]`` is the text.
    """

    start: int
    end: int
    char_start: int
    char_end: int


@dataclass(frozen=True)
class ResultChunk:
    """A chunk behind a result: its id, its byte span, and its own score."""

    chunk_id: int
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class Result:
    """One search result, as ``ckeep search --json`` gives it."""

    rank: int
    doc_id: str
    score: float
    text: str
    spans: list[Span]
    headings: str = ""
    chunks: list[ResultChunk] = field(default_factory=list)
    explain: dict[str, Any] | None = None
    #: Where each span came from, for documents extracted from a PDF (``{"pages": [3, 4]}``)
    #: or an HTML, EPUB or DOCX file (``{"element": "/html/body/main/p[2]"}``); else empty.
    locations: list[dict[str, Any]] = field(default_factory=list)
    #: Each span's lines in the stored document: ``{"start", "end", "column"}``, from 1 (an
    #: editor's ``path:line``).
    lines: list[dict[str, int]] = field(default_factory=list)

    def provenance(self) -> dict[str, Any]:
        """Where the result comes from, as plain JSON values (for framework metadata): doc id,
        rank, score, headings, spans in bytes and in characters, chunk ids."""
        return {
            "doc_id": self.doc_id,
            "rank": self.rank,
            "score": self.score,
            "headings": self.headings,
            "spans": [[s.start, s.end] for s in self.spans],
            "char_spans": [[s.char_start, s.char_end] for s in self.spans],
            "chunk_ids": [c.chunk_id for c in self.chunks],
            **({"locations": self.locations} if self.locations else {}),
        }

    @classmethod
    def _from_json(cls, r: Mapping[str, Any]) -> Result:
        spans = [
            Span(s[0], s[1], c[0], c[1])
            for s, c in zip(r["spans"], r["char_spans"])
        ]
        chunks = [
            ResultChunk(c["chunk_id"], c["span"][0], c["span"][1], c["score"])
            for c in r["chunks"]
        ]
        return cls(
            rank=r["rank"],
            doc_id=r["doc_id"],
            score=r["score"],
            text=r["text"],
            spans=spans,
            headings=r.get("headings", ""),
            chunks=chunks,
            explain=r.get("explain"),
            locations=r.get("locations", []),
            lines=r.get("lines", []),
        )


@dataclass(frozen=True)
class Chunk:
    """A stored chunk of a document (``ckeep show --chunks --json``)."""

    ordinal: int
    start: int
    end: int
    text: str
    depth: int = 0
    parent: int | None = None
    leaf: bool = True
    headings: list[str] = field(default_factory=list)


def _looks_like_path(text: str) -> bool:
    """A short one-line string with a path separator or a file extension names a file."""
    if "\n" in text or len(text) > 4096:
        return False
    return os.sep in text or "/" in text or Path(text).suffix.lower() in _EXTENSIONS


#: The suffixes ``add`` reads, from the loaders' own table.
_EXTENSIONS = frozenset("." + ext for ext in _known_extensions())


class Store:
    """A Context Keeper store: a directory (SQLite) or a ``postgres://`` URL.

    The store is created by the first :meth:`add`; reading a store that does not exist raises
    :class:`UsageError`. ``model`` overrides the embedding model the store was built with;
    ``cache=False`` skips the shared embedding and summary caches. Every method releases the
    GIL while it works, and searches from several threads run at once.
    """

    def __init__(self, path_or_url: PathLike = ".ckeep", *, model: str | None = None,
                 cache: bool = True) -> None:
        self._native = _NativeStore(os.fspath(path_or_url), model=model, cache=cache)

    @property
    def location(self) -> str:
        """Where the store is, as given."""
        return self._native.location

    def __repr__(self) -> str:
        return f"ckeep.Store({self.location!r})"

    def add(
        self,
        paths_or_texts: PathLike | Iterable[PathLike],
        *,
        chunker: str | None = None,
        model: str | None = None,
        analyzer: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        size_unit: str | None = None,
    ) -> dict[str, Any]:
        """Adds files, directories or texts; returns ``ckeep add --json``'s report.

        A ``pathlib.Path``, or a string naming an existing file or directory, is read like
        ``ckeep add`` reads it (txt, md, ipynb, jsonl, rst). Any other string is the text of a
        document whose id is ``text-`` and a hash of its content, so adding it again changes
        nothing. A string that looks like a path (a separator or a known extension) but does
        not exist raises :class:`UsageError` rather than being stored as text. ``metadata``
        applies to the texts. Every input is checked before any is stored.
        """
        items = [paths_or_texts] if isinstance(paths_or_texts, (str, os.PathLike)) else list(paths_or_texts)
        paths: list[str] = []
        texts: list[str] = []
        for item in items:
            if isinstance(item, os.PathLike) or (isinstance(item, str) and os.path.exists(item)):
                paths.append(os.fspath(item))
            elif isinstance(item, str) and _looks_like_path(item):
                raise UsageError(f"{item}: No such file or directory")
            elif isinstance(item, str):
                texts.append(item)
            else:
                raise UsageError(f"expected a path or a text, got {type(item).__name__}")
        options = dict(chunker=chunker, model=model, analyzer=analyzer, size_unit=size_unit)
        report: dict[str, Any] = {}
        if texts:
            docs = [_text_document(t, metadata) for t in texts]
            report = self.add_documents(docs, **options)
        if paths:
            added = json.loads(self._native.add_paths(paths, **options))
            _warn(added)
            report = _merge(report, added)
        return report

    def add_documents(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        chunker: str | None = None,
        model: str | None = None,
        analyzer: str | None = None,
        size_unit: str | None = None,
    ) -> dict[str, Any]:
        """Adds documents given as dicts with ``id`` and ``text`` (optional ``title`` and
        ``metadata``; other keys are kept as metadata), the rules of a JSONL file."""
        lines = "\n".join(json.dumps(dict(d), ensure_ascii=False) for d in documents)
        out = self._native.add_jsonl(lines, chunker=chunker, model=model, analyzer=analyzer,
                                     size_unit=size_unit)
        report = json.loads(out)
        _warn(report)
        return report

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        level: str | None = None,
        aggregate: str | None = None,
        expand: str | None = None,
        diversify: str | None = None,
        repr: str | None = None,
        summarizer: str | None = None,
        model: str | None = None,
        filter: Mapping[str, Any] | None = None,
        explain: bool = False,
        exact: bool = False,
        strategy: str | None = None,
    ) -> list[Result]:
        """The ``k`` best results for ``query`` (``k`` left out: the store's default strategy's,
        10 unless ``ckeep eval recommend --apply`` recorded another).

        ``mode``: ``bm25`` (default), ``dense``, ``hybrid``, ``hybrid:rrf``, ``hybrid:linear=W``.
        ``level``: ``chunk`` (default) or ``doc``; ``aggregate`` ranks documents from their chunks
        (``max``, ``sum``, ``mean:3``…). ``expand`` grows results into context (``window:1``,
        ``parent``, ``doc``…). ``diversify="mmr:0.5"`` picks the results by maximal marginal
        relevance, so near-copies give way to new content (``explain`` shows each one's
        redundancy penalty). ``filter`` keeps documents whose metadata passes it: ``{"lang": "zh"}``,
        or with operators ``{"year": {"$gte": 2020}}``, ``{"$or": [...]}`` (``ckeep search
        --help`` lists them).
        ``strategy`` is a whole strategy spec (``mode=hybrid,level=doc``) that the other
        arguments override. ``explain`` fills each result's ``explain`` dict.

        No results because the store is empty or no document passes ``filter`` (an unknown key,
        most often) is said by a :class:`UserWarning`; ``search_json`` has it as ``no_results``.
        """
        res = self.search_json(
            query, k=k, mode=mode, level=level, aggregate=aggregate, expand=expand,
            diversify=diversify, repr=repr, summarizer=summarizer, model=model, filter=filter,
            explain=explain, exact=exact, strategy=strategy)
        if "no_results" in res:
            warnings.warn(res["no_results"]["message"], UserWarning, stacklevel=2)
        return [Result._from_json(r) for r in res["results"]]

    def search_json(self, query: str, *, k: int | None = None,
                    filter: Mapping[str, Any] | None = None, explain: bool = False,
                    **options: Any) -> dict[str, Any]:
        """The whole response of :meth:`search` as ``ckeep search --json`` prints it (plus
        ``char_spans`` per result)."""
        unknown = sorted(set(options) - _SEARCH_OPTIONS)
        if unknown:
            raise TypeError(f"search() got unexpected keyword arguments: {', '.join(unknown)}")
        # The strategy's fields as POST /search takes them; what is left out is the store's.
        fields = {key: value for key, value in options.items()
                  if value is not None and value is not False}
        if k is not None:
            fields["k"] = k
        flt = None if filter is None else json.dumps(dict(filter))
        return json.loads(self._native.search(query, json.dumps(fields), filter=flt,
                                              explain=explain))

    def ask(self, question: str, *, llm: str | None = None, context_tokens: int | None = None,
            max_tokens: int | None = None, strict: bool = False,
            filter: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        """An answer from the stored documents with its citations located in them, as
        ``ckeep ask --json`` gives it: ``answer``, ``abstained``, ``sentences`` (each with its
        ``citations``: ``source``, ``quote``, ``verified``, ``doc_id``, byte ``span``, ``match``),
        the numbered ``passages`` of the context, ``tokens`` and ``timings``.

        ``llm``: ``"none"`` answers with the context's best sentences (no model); a chat server
        ``"URL#MODEL"`` (llama.cpp's server, Ollama, vLLM, OpenAI) writes the answer. This wheel
        has no local language model yet, so without ``llm`` the answer is the context's best
        sentences, with a ``note`` saying so (the ``ckeep`` binary uses its installed model).
        ``strict`` leaves out sentences without a located citation.
        The search options (``mode``, ``strategy``, ``k``, …) are :meth:`search`'s.
        """
        unknown = sorted(set(options) - _SEARCH_OPTIONS)
        if unknown:
            raise TypeError(f"ask() got unexpected keyword arguments: {', '.join(unknown)}")
        fields = {key: value for key, value in options.items()
                  if value is not None and value is not False}
        flt = None if filter is None else json.dumps(dict(filter))
        return json.loads(self._native.ask(
            question, json.dumps(fields), llm=llm, context_tokens=context_tokens,
            max_tokens=max_tokens, strict=strict, filter=flt))

    def show(self, doc_id: str) -> dict[str, Any]:
        """A stored document: its id, title, metadata, source, hash, size and ``text``."""
        return json.loads(self._native.show(doc_id))

    def chunks(self, doc_id: str) -> list[Chunk]:
        """A document's chunks in document order, with their spans and text."""
        out = []
        for c in json.loads(self._native.chunks(doc_id)):
            out.append(Chunk(
                ordinal=c["ordinal"], start=c["span"][0], end=c["span"][1],
                text=c["text"], depth=c.get("depth", 0), parent=c.get("parent"),
                leaf=c.get("leaf", True), headings=list(c.get("headings") or []),
            ))
        return out

    def remove(self, doc_ids: str | Sequence[str]) -> int:
        """Removes documents by id; none is removed if any id is unknown."""
        ids = [doc_ids] if isinstance(doc_ids, str) else list(doc_ids)
        return self._native.remove(ids)

    def add_model(self, model: str) -> dict[str, Any]:
        """Keeps a further model's vectors of every stored chunk beside the store's own
        model's (``ckeep add --model OWN --model FURTHER``), so strategies can fuse a dense
        list per model with BM25's: ``search(q, strategy="models=A+B,mode=hybrid")``.
        Documents added later get its vectors too. Returns the embedding stage's report
        (``documents``, ``vectors``, ``seconds``); nothing to do for a model it holds."""
        return json.loads(self._native.add_model(model))

    def quantize(self, kind: str, repr: str | None = None) -> None:
        """Holds the store's vectors compactly for dense search (``ckeep add --quantize``):
        ``"int8"`` (a quarter of the memory), ``"binary"`` (a thirty-second) or ``"none"``
        (float32), for every stored representation or only ``repr``. Kept by the store;
        searches rescore their best candidates with the float32 vectors, which stay on disk
        (strategy keys ``oversample=N``, ``rescore=false``, ``quantize=`` to try one)."""
        self._native.quantize(kind, repr)

    def recommend(
        self,
        *,
        dataset: PathLike | None = None,
        split: str = "test",
        set_out: PathLike | None = None,
        count: int = 200,
        seed: int = 42,
        generator: str = "ict",
        strategies: Sequence[str] = (),
        metric: str = "ndcg@10",
        folds: int = 5,
        model: str | None = None,
        work_dir: str | None = None,
        apply: bool = False,
        progress: Any = None,
    ) -> eval.Recommendation:
        """Which strategy works on this store's documents, as ``ckeep eval recommend``:
        candidates (``strategies``, with ``{a,b}`` groups; default BM25's classic parameters
        and, with a model, dense and fused modes) compared on a test set made from the store
        (``generator``, ``count``, ``seed``; kept in ``set_out``) or on ``dataset``. With
        ``apply``, a winner whose gain is confident becomes the store's default strategy, which
        :meth:`search` (and the LangChain and LlamaIndex retrievers) use when no strategy is
        named; an explicit argument still wins."""
        raw = json.loads(self._native.recommend(
            dataset=None if dataset is None else os.fspath(dataset), split=split,
            set_out=None if set_out is None else os.fspath(set_out), count=count, seed=seed,
            generator=generator, strategies=list(strategies), metric=metric, folds=folds,
            model=model, work_dir=work_dir, apply=apply, progress=_progress.callback(progress)))
        return eval.Recommendation._from_json(raw)

    def adapt(self, *, minutes: float | None = None, queries: int | None = None, seed: int = 42,
              dry_run: bool = False, undo: bool = False, save: PathLike | None = None,
              load: PathLike | None = None, progress: Any = None) -> dict[str, Any]:
        """Adapt the store's embedding models to its documents, as ``ckeep adapt --json``: a
        map of query vectors trained on queries made from the documents, kept only when
        queries held out from training find their sources better with it. The stored vectors
        are not changed; :meth:`search` applies the map. ``undo=True`` removes it (``ckeep
        adapt --undo``), after which searches are exactly as before; ``save`` writes the trained
        map to a file and ``load`` applies one (``--save``, ``--load``)."""
        return json.loads(self._native.adapt(
            minutes=minutes, queries=queries, seed=seed, dry_run=dry_run, undo=undo,
            save=None if save is None else os.fspath(save),
            load=None if load is None else os.fspath(load),
            progress=_progress.callback(progress)))

    def stats(self) -> dict[str, Any]:
        """``ckeep stats --json``: the manifest (chunker, analyzer, model) and the counts."""
        return json.loads(self._native.stats())

    def dedup(self, *, threshold: float | None = None, level: str = "doc", top_k: int = 3,
              neighbours: int = 10, explain: bool = False,
              pair_model: PathLike | None = None) -> dict[str, Any]:
        """Near-duplicate clusters (``ckeep dedup --json``): document pairs whose top-``k``
        chunk pairs average at least ``threshold`` (0.9; ``level="chunk"``: single chunk
        pairs), each with the matching chunks' spans, and their ``text`` with ``explain``.
        With ``pair_model`` (a file ``ckeep pairs --learn --save-model`` wrote), pairs from
        ``threshold`` (then 0.7) on are kept when the model's probability reaches its own
        threshold, as ``ckeep dedup --pair-model`` does. Needs a store built with a model."""
        model = None if pair_model is None else os.fspath(pair_model)
        return json.loads(self._native.dedup(threshold=threshold, level=level, top_k=top_k,
                                             neighbours=neighbours, explain=explain,
                                             pair_model=model))

    def check(self) -> dict[str, Any]:
        """``ckeep check --json``: ``ok`` and a report of every span, parent and count."""
        return json.loads(self._native.check())


# What `Store.search` takes, read once from its signature (search_json refuses anything else).
_SEARCH_OPTIONS = frozenset(inspect.signature(Store.search).parameters)


class Embedder:
    """An embedding model: a name installed by ``ckeep model pull``, a model directory, or an
    OpenAI-compatible server as ``URL#MODEL``. Vectors are cached like the CLI's unless
    ``cache=False``."""

    def __init__(self, name_or_dir: PathLike, *, cache: bool = True) -> None:
        self._native = _NativeEmbedder(os.fspath(name_or_dir), cache=cache)
        self.info: dict[str, Any] = json.loads(self._native.info)

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        return int(self.info["dim"])

    def __repr__(self) -> str:
        return f"ckeep.Embedder({self.info['name']!r}, dim={self.dim})"

    def embed(self, texts: str | Sequence[str], *, kind: str = "passage") -> "numpy.ndarray":
        """A ``(len(texts), dim)`` float32 array, equal to ``ckeep embed --json``'s vectors.

        ``kind``: ``passage`` (text to be searched), ``query`` (with the model's query prompt)
        or ``pair`` (one side of a symmetric comparison).
        """
        if isinstance(texts, str):
            texts = [texts]
        return self._native.embed(list(texts), kind=kind)


def _text_document(text: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    import hashlib

    doc: dict[str, Any] = {
        "id": "text-" + hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest(),
        "text": text,
    }
    if metadata:
        doc["metadata"] = dict(metadata)
    return doc


def _warn(report: dict[str, Any]) -> None:
    """The report's warnings (the engine's words, as the CLI prints them) as Python warnings."""
    for message in report.get("warnings", []):
        warnings.warn(message, UserWarning, stacklevel=3)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two add reports as one: counts summed, lists joined, the rest from the later one."""
    if not a:
        return b
    out = dict(b)
    for key, value in a.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key in b:
            out[key] = value + b[key]
        elif isinstance(value, list) and isinstance(b.get(key), list):
            out[key] = value + b[key]
    return out
