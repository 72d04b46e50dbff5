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

from typing import Any, List

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from . import Result, Store

__all__ = ["CkeepRetriever", "to_node"]

_HIDDEN = ["spans", "char_spans", "chunk_ids", "rank"]


class CkeepRetriever(BaseRetriever):
    """Retrieves from a :class:`ckeep.Store`; keyword arguments go to ``Store.search``
    (``mode``, ``level``, ``aggregate``, ``expand``, ``filter``…)."""

    def __init__(self, store: Store, k: int = 4, **search_kwargs: Any) -> None:
        self._store = store
        self._k = k
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
