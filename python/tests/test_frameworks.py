"""The LangChain and LlamaIndex retrievers inside a real chain and query engine of the real
packages (langchain-core, llama-index-core), with the fake LLMs those packages ship."""

from __future__ import annotations

from pathlib import Path

import ckeep
import pytest
from ckeep.langchain import CkeepAnswerer
from ckeep.langchain import CkeepRetriever as LangChainRetriever
from ckeep.llama_index import CkeepQueryEngine
from ckeep.llama_index import CkeepRetriever as LlamaIndexRetriever
from ckeep.llama_index import to_ckeep_filter
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

QUESTIONS = ["how do owls hunt", "今天天气怎么样", "相似度"]


def expected(store: ckeep.Store, query: str, **kwargs) -> list[tuple]:
    return [(r.doc_id, r.score, [(s.start, s.end) for s in r.spans],
             [(s.char_start, s.char_end) for s in r.spans], r.text)
            for r in store.search(query, **kwargs)]


def test_langchain_retriever_in_a_chain_keeps_the_spans(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    retriever = LangChainRetriever(store=store, k=3, search_kwargs={"mode": "hybrid"})
    seen: list = []

    def context(docs):
        seen.append(docs)
        return "\n\n".join(d.page_content for d in docs)

    prompt = PromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    chain = {"context": retriever | RunnableLambda(context), "question": RunnablePassthrough()} \
        | prompt | FakeListLLM(responses=["an answer"])
    for question in QUESTIONS:
        assert chain.invoke(question) == "an answer"
        docs = seen.pop()
        got = [(d.metadata["doc_id"], d.metadata["score"], [tuple(s) for s in d.metadata["spans"]],
                [tuple(s) for s in d.metadata["char_spans"]], d.page_content) for d in docs]
        assert got == expected(store, question, k=3, mode="hybrid")
        assert got, question


def test_llama_index_retriever_in_a_query_engine_keeps_the_spans(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    engine = RetrieverQueryEngine.from_args(LlamaIndexRetriever(store, k=3, level="doc"),
                                            llm=MockLLM())
    for question in QUESTIONS:
        response = engine.query(question)
        nodes = response.source_nodes
        want = expected(store, question, k=3, level="doc")
        assert nodes and len(nodes) == len(want)
        for n, (doc_id, score, spans, chars, text) in zip(nodes, want):
            assert (n.node.metadata["doc_id"], n.score, n.node.get_content()) == (doc_id, score, text)
            assert [tuple(s) for s in n.node.metadata["spans"]] == spans
            assert (n.node.start_char_idx, n.node.end_char_idx) == (chars[0][0], chars[-1][1])
            stored = store.show(doc_id)["text"]
            if len(chars) == 1:
                assert stored[n.node.start_char_idx:n.node.end_char_idx] == text


def _years(store: ckeep.Store, doc_ids) -> list:
    return [store.show(d)["metadata"]["year"] for d in doc_ids]


def test_langchain_filters_pass_through_a_chain(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    flt = {"$and": [{"year": {"$between": [2021, 2022]}}, {"topic": {"$like": "soft%"}}]}
    retriever = LangChainRetriever(store=store, k=10, search_kwargs={"filter": flt, "level": "doc", "mode": "dense"})
    seen: list = []
    chain = retriever | RunnableLambda(lambda docs: seen.append(docs) or "ok")
    assert chain.invoke("similarity and search") == "ok"
    ids = [d.metadata["doc_id"] for d in seen.pop()]
    want = [r.doc_id for r in store.search("similarity and search", k=10, level="doc", mode="dense",
                                           filter={"year": {"$gte": 2021, "$lte": 2022},
                                                   "topic": {"$prefix": "soft"}})]
    assert ids == want and ids, ids
    assert all(store.show(d)["metadata"]["topic"] == "software" for d in ids)
    with pytest.raises(ValueError, match="ilike"):
        LangChainRetriever(store=store, search_kwargs={"filter": {"a": {"$ilike": "x"}}}).invoke("x")


def test_llama_index_metadata_filters_pass_through_a_query_engine(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=2021, operator=FilterOperator.GTE),
            MetadataFilters(filters=[MetadataFilter(key="lang", value="zh"),
                                     MetadataFilter(key="lang", value="ja")],
                            condition=FilterCondition.OR),
        ],
        condition=FilterCondition.AND,
    )
    engine = RetrieverQueryEngine.from_args(
        LlamaIndexRetriever(store, k=10, level="doc", mode="dense", filters=filters), llm=MockLLM())
    nodes = engine.query("天气和河流").source_nodes
    ids = [n.node.metadata["doc_id"] for n in nodes]
    assert ids and all(store.show(d)["metadata"]["lang"] in ("zh", "ja") for d in ids), ids
    assert all(y >= 2021 for y in _years(store, ids)), ids
    want = [r.doc_id for r in store.search("天气和河流", k=10, level="doc", mode="dense", filter={
        "year": {"$gte": 2021}, "$or": [{"lang": "zh"}, {"lang": "ja"}]})]
    assert ids == want
    assert to_ckeep_filter(MetadataFilters(
        filters=[MetadataFilter(key="tags", value=["a", "b"], operator=FilterOperator.ALL),
                 MetadataFilter(key="note", value=None, operator=FilterOperator.IS_EMPTY)],
        condition=FilterCondition.NOT)) == {"$not": {"$and": [
            {"$and": [{"tags": {"$contains": "a"}}, {"tags": {"$contains": "b"}}]},
            {"$or": [{"note": {"$exists": False}}, {"note": None}, {"note": []}]}]}}
    with pytest.raises(ValueError, match="text_match_insensitive"):
        to_ckeep_filter(MetadataFilters(filters=[MetadataFilter(
            key="t", value="x", operator=FilterOperator.TEXT_MATCH_INSENSITIVE)]))


def test_a_bad_filter_is_a_usage_error(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    with pytest.raises(ckeep.UsageError, match=r"filter\.year\.\$gtee"):
        store.search("x", filter={"year": {"$gtee": 1}})


@pytest.mark.parametrize("question", ["Why do owls fly almost without a sound?", "长江最后注入哪里？"])
def test_answers_with_located_citations_in_a_chain_and_a_query_engine(cli_store: Path,
                                                                       question: str) -> None:
    store = ckeep.Store(cli_store)
    want = store.ask(question, llm="none")
    assert want["sentences"] and all(s["verified"] for s in want["sentences"]), want
    chain = RunnableLambda(str.strip) | CkeepAnswerer(store=store, llm="none")
    got = chain.invoke(f"  {question} ")
    assert (got["answer"], got["sentences"]) == (want["answer"], want["sentences"])
    response = CkeepQueryEngine(store, llm="none").query(question)
    assert str(response) == want["answer"]
    assert response.metadata["sentences"] == want["sentences"]
    assert [(n.node.metadata["doc_id"], n.node.metadata["span"], n.node.get_content())
            for n in response.source_nodes] == [
        (p["doc_id"], p["span"], p["text"]) for p in want["passages"]]
    for n in response.source_nodes:
        start, end = n.node.metadata["span"]
        assert store.show(n.node.metadata["doc_id"])["text"].encode()[start:end].decode() == \
            n.node.get_content()
