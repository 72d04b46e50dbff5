"""The LangChain and LlamaIndex retrievers inside a real chain and query engine of the real
packages (langchain-core, llama-index-core), with the fake LLMs those packages ship."""

from __future__ import annotations

from pathlib import Path

import ckeep
from ckeep.langchain import CkeepRetriever as LangChainRetriever
from ckeep.llama_index import CkeepRetriever as LlamaIndexRetriever
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

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
