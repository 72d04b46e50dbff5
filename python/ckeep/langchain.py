"""A LangChain retriever over a Context Keeper store (``pip install "ckeep[langchain]"``), and
a runnable that answers with checked citations.

>>> from ckeep.langchain import CkeepAnswerer, CkeepRetriever
>>> retriever = CkeepRetriever(store=ckeep.Store("demo"), k=4, search_kwargs={"mode": "hybrid"})
>>> docs = retriever.invoke("how does bm25 rank")
>>> answer = CkeepAnswerer(store=ckeep.Store("demo"), llm="none").invoke("what does k1 control?")

Each ``Document`` carries the result's text, and in ``metadata`` its ``doc_id``, ``rank``,
``score``, ``headings``, the byte ``spans`` and the character ``char_spans`` into the stored
document, exactly as :meth:`ckeep.Store.search` returns them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict, Field

from . import Result, Store

__all__ = ["CkeepRetriever", "to_ckeep_filter", "to_document"]


def to_ckeep_filter(flt: Dict[str, Any]) -> Dict[str, Any]:
    """A LangChain filter dict (the operators its PostgreSQL store takes: ``$eq``, ``$ne``,
    ``$lt``, ``$lte``, ``$gt``, ``$gte``, ``$in``, ``$nin``, ``$between``, ``$like``,
    ``$exists``, ``$and``, ``$or``, ``$not``) as Context Keeper's filter, which shares most of
    them: ``$between`` becomes a range, and ``$like`` a prefix (``abc%``) or a containment
    (``%abc%``); other ``$like`` patterns and ``$ilike`` are refused."""
    out: Dict[str, Any] = {}
    for key, value in flt.items():
        if key in ("$and", "$or"):
            out[key] = [to_ckeep_filter(f) for f in value]
        elif key == "$not":
            out[key] = to_ckeep_filter(value)
        elif isinstance(value, dict) and any(k.startswith("$") for k in value):
            out[key] = _operators(key, value)
        else:
            out[key] = value
    return out


def _operators(key: str, ops: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for op, value in ops.items():
        if op == "$between":
            low, high = value
            out["$gte"], out["$lte"] = low, high
        elif op == "$like":
            inner = value.strip("%")
            if "%" in inner or "_" in inner:
                raise ValueError(f"ckeep filters take `$like` as `abc%` or `%abc%` only (`{key}`)")
            out["$contains" if value.startswith("%") else "$prefix"] = inner
        elif op == "$ilike":
            raise ValueError(f"ckeep filters have no case-insensitive match: `$ilike` on `{key}`")
        else:
            out[op] = value
    return out


class CkeepRetriever(BaseRetriever):
    """Retrieves from a :class:`ckeep.Store`; ``search_kwargs`` go to ``Store.search``
    (``mode``, ``level``, ``aggregate``, ``expand``, ``filter``…). A ``filter`` may be a
    LangChain filter dict (see :func:`to_ckeep_filter`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Store
    k: int = 4
    search_kwargs: Dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        kwargs = dict(self.search_kwargs)
        if kwargs.get("filter") is not None:
            kwargs["filter"] = to_ckeep_filter(dict(kwargs["filter"]))
        return [to_document(r) for r in self.store.search(query, k=self.k, **kwargs)]


def to_document(result: Result) -> Document:
    """A search result as a LangChain ``Document`` with its provenance in ``metadata``."""
    first, last = result.spans[0], result.spans[-1]
    return Document(
        id=f"{result.doc_id}#{first.start}-{last.end}",
        page_content=result.text,
        metadata=result.provenance(),
    )


class CkeepAnswerer(Runnable[str, Dict[str, Any]]):
    """A question in, :meth:`ckeep.Store.ask`'s answer out: the answer, its sentences with
    their citations located as byte spans in the stored documents, and the passages used.
    ``llm`` and the other keyword arguments go to ``Store.ask`` (``llm="none"``: the context's
    best sentences; ``"URL#MODEL"``: a chat server)."""

    def __init__(self, store: Store, **ask_kwargs: Any) -> None:
        self.store = store
        self.ask_kwargs = ask_kwargs

    def invoke(self, input: str, config: Optional[RunnableConfig] = None,
               **kwargs: Any) -> Dict[str, Any]:
        return self.store.ask(input, **{**self.ask_kwargs, **kwargs})
