"""A LlamaIndex retriever over a Context Keeper store (``pip install "ckeep[llama-index]"``).

>>> from ckeep.llama_index import CkeepRetriever
>>> retriever = CkeepRetriever(ckeep.Store("demo"), k=4, mode="hybrid")
>>> engine = RetrieverQueryEngine.from_args(retriever, llm=...)

Each ``NodeWithScore`` holds a ``TextNode`` with the result's text, ``start_char_idx`` and
``end_char_idx`` set to its character span in the stored document (first span's start, last
span's end), and in ``metadata`` the ``doc_id``, ``rank``, ``headings`` and every span in bytes
and in characters. Span lists are kept out of what the LLM and embedders see.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from llama_index.core.base.response.schema import Response
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from . import Result, Store

__all__ = ["CkeepRetriever", "to_ckeep_filter", "to_node"]

# LlamaIndex's operators in Context Keeper's filter (see `ckeep search --help`).
_OPERATORS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.ANY: "$in",  # a list holding any of the values: any element in the list
    FilterOperator.CONTAINS: "$contains",
    FilterOperator.TEXT_MATCH: "$contains",
}


def to_ckeep_filter(filters: MetadataFilters) -> Dict[str, Any]:
    """LlamaIndex ``MetadataFilters`` (every operator but case-insensitive text match, every
    condition, nested) as Context Keeper's filter."""
    parts = [_one(f) if isinstance(f, MetadataFilter) else to_ckeep_filter(f)
             for f in filters.filters]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:
        return {"$not": {"$and": parts}}
    if len(parts) == 1:
        return parts[0]
    return {"$or" if condition == FilterCondition.OR else "$and": parts}


def _one(f: MetadataFilter) -> Dict[str, Any]:
    if f.operator == FilterOperator.ALL:
        return {"$and": [{f.key: {"$contains": v}} for v in f.value]}
    if f.operator == FilterOperator.IS_EMPTY:
        return {"$or": [{f.key: {"$exists": False}}, {f.key: None}, {f.key: []}]}
    op = _OPERATORS.get(f.operator)
    if op is None:
        raise ValueError(f"ckeep filters have no `{f.operator.value}` operator (filter on `{f.key}`)")
    return {f.key: {op: f.value}}

_HIDDEN = ["spans", "char_spans", "chunk_ids", "rank"]


class CkeepRetriever(BaseRetriever):
    """Retrieves from a :class:`ckeep.Store`; keyword arguments go to ``Store.search``
    (``mode``, ``level``, ``aggregate``, ``expand``, ``filter``…). ``filters`` takes
    LlamaIndex ``MetadataFilters``, as its vector-store retrievers do; with a ``filter`` too,
    both must match."""

    def __init__(self, store: Store, k: int = 4, filters: Optional[MetadataFilters] = None,
                 **search_kwargs: Any) -> None:
        self._store = store
        self._k = k
        if filters is not None:
            translated = to_ckeep_filter(filters)
            given = search_kwargs.pop("filter", None)
            search_kwargs["filter"] = translated if given is None else {"$and": [dict(given), translated]}
        self._search_kwargs = search_kwargs
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        results = self._store.search(query_bundle.query_str, k=self._k, **self._search_kwargs)
        return [to_node(r) for r in results]


def to_node(result: Result) -> NodeWithScore:
    """A search result as a LlamaIndex node with its character span and provenance."""
    first, last = result.spans[0], result.spans[-1]
    node = TextNode(
        id_=f"{result.doc_id}#{first.start}-{last.end}",
        text=result.text,
        start_char_idx=first.char_start,
        end_char_idx=last.char_end,
        metadata={k: v for k, v in result.provenance().items() if k != "score"},
        excluded_llm_metadata_keys=list(_HIDDEN),
        excluded_embed_metadata_keys=list(_HIDDEN),
    )
    return NodeWithScore(node=node, score=result.score)


class CkeepQueryEngine(CustomQueryEngine):
    """A query engine that answers with :meth:`ckeep.Store.ask`: ``str(response)`` is the
    answer, ``source_nodes`` the numbered passages of its context (byte ``span`` in their
    metadata), and ``response.metadata`` the whole answer, citations located as byte spans
    included. Keyword arguments go to ``Store.ask`` (``llm="none"``, ``strict``, ``mode``…)."""

    store: Any
    ask_kwargs: Dict[str, Any] = {}

    def __init__(self, store: Store, **ask_kwargs: Any) -> None:
        super().__init__(store=store, ask_kwargs=ask_kwargs)

    def custom_query(self, query_str: str) -> Response:
        answer = self.store.ask(query_str, **self.ask_kwargs)
        nodes = [NodeWithScore(node=TextNode(
            id_=f"{p['doc_id']}#{p['span'][0]}-{p['span'][1]}", text=p["text"],
            metadata={"doc_id": p["doc_id"], "title": p["title"], "span": p["span"],
                      "source": p["number"]},
            excluded_llm_metadata_keys=["span", "source"],
            excluded_embed_metadata_keys=["span", "source"],
        ), score=p["score"]) for p in answer["passages"]]
        return Response(response=answer["answer"], source_nodes=nodes, metadata=answer)
