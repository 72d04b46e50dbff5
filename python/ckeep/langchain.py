"""A LangChain retriever over a Context Keeper store (``pip install "ckeep[langchain]"``).

>>> from ckeep.langchain import CkeepRetriever
>>> retriever = CkeepRetriever(store=ckeep.Store("demo"), k=4, search_kwargs={"mode": "hybrid"})
>>> docs = retriever.invoke("how does bm25 rank")

Each ``Document`` carries the result's text, and in ``metadata`` its ``doc_id``, ``rank``,
``score``, ``headings``, the byte ``spans`` and the character ``char_spans`` into the stored
document, exactly as :meth:`ckeep.Store.search` returns them.
"""

from __future__ import annotations

from typing import Any, Dict, List

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from . import Result, Store

__all__ = ["CkeepRetriever", "to_document"]


class CkeepRetriever(BaseRetriever):
    """Retrieves from a :class:`ckeep.Store`; ``search_kwargs`` go to ``Store.search``
    (``mode``, ``level``, ``aggregate``, ``expand``, ``filter``…)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Store
    k: int = 4
    search_kwargs: Dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        return [to_document(r) for r in self.store.search(query, k=self.k, **self.search_kwargs)]


def to_document(result: Result) -> Document:
    """A search result as a LangChain ``Document`` with its provenance in ``metadata``."""
    first, last = result.spans[0], result.spans[-1]
    return Document(
        id=f"{result.doc_id}#{first.start}-{last.end}",
        page_content=result.text,
        metadata=result.provenance(),
    )
