"""`ckeep mcp` driven by the reference Python MCP SDK over stdio: initialise, list the tools,
call them on real stores (SQuAD long documents with MiniLM; CMRC 2018 in Chinese with
multilingual-e5-small), and check that every span handed back is the stored text's bytes."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("CKEEP_DATA", REPO.parent / "shared" / "data"))
BINARY = os.environ.get("CKEEP_BIN", str(REPO / "target" / "debug" / "ckeep"))


def ckeep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BINARY, "--quiet", *args], capture_output=True, text=True, check=False)


def first_docs(path: Path, n: int) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(n), f)]


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


@asynccontextmanager
async def connect(store: Path, *flags: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=BINARY, args=["--store", str(store), "mcp", *flags])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[bool, dict]:
    """A tool's structured answer, and whether it was an error."""
    result = await session.call_tool(tool, args)
    structured = result.structured_content
    text = json.loads(result.content[0].text)
    assert structured == text, "the text content is the structured content as JSON"
    return bool(result.is_error), structured


@pytest.fixture(scope="module")
def squad(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Six SQuAD v1.1 dev articles, paragraph chunks, all-MiniLM-L6-v2; and their texts."""
    tmp = tmp_path_factory.mktemp("squad")
    docs = first_docs(DATA / "squad_dev" / "longdoc-v1.1.docs.jsonl", 6)
    source = write_jsonl(tmp / "docs.jsonl", docs)
    store = tmp / "store"
    done = ckeep("--store", str(store), "add", str(source), "--model", "all-MiniLM-L6-v2",
                 "--chunker", "paragraphs")
    assert done.returncode == 0, done.stderr
    return store, {d["doc_id"]: d["text"] for d in docs}


@pytest.fixture(scope="module")
def cmrc(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Ten CMRC 2018 dev articles (Simplified Chinese), sentence chunks, multilingual-e5-small."""
    tmp = tmp_path_factory.mktemp("cmrc")
    docs = first_docs(DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "docs.jsonl", 10)
    source = write_jsonl(tmp / "docs.jsonl",
                         [{"id": d["doc_id"], "title": d["title"], "text": d["text"]} for d in docs])
    store = tmp / "store"
    done = ckeep("--store", str(store), "add", str(source), "--model", "multilingual-e5-small",
                 "--chunker", "sentences")
    assert done.returncode == 0, done.stderr
    return store, {d["doc_id"]: d["text"] for d in docs}


def queries(path: Path, doc_ids: set[str], n: int) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [q for q in rows if q["doc_id"] in doc_ids][::5][:n]


def span_text(text: str, span: list[int]) -> str:
    start, end = span
    return text.encode("utf-8")[start:end].decode("utf-8")


def test_initialise_list_tools_and_search_squad(squad: tuple[Path, dict[str, str]]) -> None:
    store, texts = squad
    asked = queries(DATA / "squad_dev" / "longdoc-v1.1.queries.jsonl", set(texts), 10)
    assert len(asked) == 10

    async def main() -> None:
        async with connect(store) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"ask", "search", "show", "similar"}, "read-only: no add"
            schema = tools["search"].input_schema
            assert schema["required"] == ["query"]
            assert {"query", "k", "mode", "level", "expand", "filter"} <= set(schema["properties"])
            top = 0
            for q in asked:
                error, res = await call(session, "search", {"query": q["question"], "k": 5,
                                                           "mode": "hybrid", "level": "chunk"})
                assert not error, res
                assert 0 < len(res["results"]) <= 5
                top += res["results"][0]["doc_id"] == q["doc_id"]
                for hit in res["results"]:
                    stored = texts[hit["doc_id"]]
                    parts = [span_text(stored, s) for s in hit["spans"]]
                    assert all(p in hit["text"] for p in parts)
                    # `show` hands back the same bytes for the same spans.
                    error, shown = await call(session, "show", {"id": hit["doc_id"],
                                                                "spans": hit["spans"]})
                    assert not error, shown
                    assert [s["text"] for s in shown["spans"]] == parts
            # Hybrid MiniLM over six articles puts the question's own article first almost always.
            assert top >= 8, f"only {top} of 10 questions found their article first"
            # `ask` (the extractive answer): every citation is the stored bytes at its span.
            for q in asked[:3]:
                error, res = await call(session, "ask", {"question": q["question"],
                                                        "extractive": True})
                assert not error, res
                assert res["sentences"] and not res["abstained"], res
                for s in res["sentences"]:
                    for c in s["citations"]:
                        assert c["verified"] and span_text(texts[c["doc_id"]], c["span"]) == c["quote"]

    anyio.run(main)


def test_search_options_reach_the_engine(squad: tuple[Path, dict[str, str]]) -> None:
    store, texts = squad
    doc_id = next(iter(texts))

    async def main() -> None:
        async with connect(store) as session:
            error, res = await call(session, "search", {"query": "the game", "level": "doc",
                                                       "mode": "bm25", "k": 3})
            assert not error and len(res["results"]) == 3
            assert "level=doc" in res["strategy"] and "mode=bm25" in res["strategy"]
            error, res = await call(session, "search", {"query": "the game", "expand": "doc",
                                                       "k": 1})
            assert not error
            hit = res["results"][0]
            assert hit["text"] == texts[hit["doc_id"]], "expand=doc hands back the whole document"
            # Documents added from JSONL have no metadata: a filter on it matches none.
            error, res = await call(session, "search", {"query": "the game",
                                                       "filter": {"lang": "en"}})
            assert not error and res["results"] == []
            error, shown = await call(session, "show", {"id": doc_id})
            assert not error and shown["text"] == texts[doc_id]
            error, shown = await call(session, "show", {"id": doc_id, "chunks": True})
            assert not error
            for chunk in shown["chunks"]:
                assert chunk["text"] == span_text(texts[doc_id], chunk["span"])

    anyio.run(main)


def test_mistakes_are_tool_errors_the_agent_can_read(squad: tuple[Path, dict[str, str]]) -> None:
    store, texts = squad
    doc_id = next(iter(texts))

    async def main() -> None:
        async with connect(store) as session:
            error, res = await call(session, "search", {"query": "x", "mode": "fuzzy"})
            assert error and "mode" in res["error"]["message"]
            error, res = await call(session, "search", {"query": "   "})
            # The engine's words, as the CLI and HTTP give them (one error model).
            assert error and res["error"]["message"] == "the query is empty"
            error, res = await call(session, "show", {"id": "no-such-doc"})
            assert error and res["error"]["code"] == "not_found"
            length = len(texts[doc_id].encode("utf-8"))
            error, res = await call(session, "show", {"id": doc_id,
                                                     "spans": [[0, length + 1]]})
            assert error and "not inside" in res["error"]["message"]
            # The session goes on after errors.
            error, res = await call(session, "search", {"query": "the game", "k": 1})
            assert not error and len(res["results"]) == 1

    anyio.run(main)


def test_chinese_search_and_similar(cmrc: tuple[Path, dict[str, str]]) -> None:
    store, texts = cmrc
    asked = queries(DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "queries.jsonl", set(texts), 8)
    assert len(asked) == 8

    async def main() -> None:
        async with connect(store) as session:
            found = {"bm25": 0, "dense": 0}
            for q in asked:
                for mode in found:
                    error, res = await call(session, "search", {"query": q["question"], "k": 3,
                                                               "mode": mode})
                    assert not error, res
                    found[mode] += q["doc_id"] in {h["doc_id"] for h in res["results"]}
                    for hit in res["results"]:
                        for s in hit["spans"]:
                            assert span_text(texts[hit["doc_id"]], s) in hit["text"]
            assert found["bm25"] >= 6 and found["dense"] >= 6, found
            a, b = list(texts.values())[:2]
            error, same = await call(session, "similar", {"a": a, "b": a})
            assert not error and same["chunk_pair"] > 0.99 and same["whole"] > 0.99
            error, other = await call(session, "similar", {"a": a, "b": b})
            assert not error and other["chunk_pair"] < same["chunk_pair"]

    anyio.run(main)


def test_add_only_with_allow_write(tmp_path: Path) -> None:
    store = tmp_path / "store"
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tea.md").write_text("# Tea\n\nOolong is a partly oxidised tea from Fujian.\n")

    async def main() -> None:
        async with connect(store, "--allow-write", "--root", str(tmp_path)) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            assert tools == {"ask", "search", "show", "similar", "add"}
            text = "乌龙茶是一种半发酵茶，主要产于福建和台湾。"
            error, res = await call(session, "add", {"id": "oolong-zh", "text": text,
                                                    "metadata": {"lang": "zh"}})
            assert not error and res["ids"] == ["oolong-zh"], res
            error, res = await call(session, "add", {"path": str(folder)})
            assert not error and len(res["ids"]) == 1, res
            tea_id = res["ids"][0]
            error, res = await call(session, "search", {"query": "乌龙茶产于哪里", "mode": "bm25",
                                                       "filter": {"lang": "zh"}})
            assert not error and [h["doc_id"] for h in res["results"]] == ["oolong-zh"]
            assert res["results"][0]["text"] == text
            error, res = await call(session, "search", {"query": "oxidised tea", "mode": "bm25"})
            assert not error and res["results"][0]["doc_id"] == tea_id
            assert "Oolong is a partly oxidised tea" in res["results"][0]["text"]
            error, res = await call(session, "add", {"text": "no id"})
            assert error and "`id`" in res["error"]["message"]
            error, res = await call(session, "add", {"path": str(tmp_path / "missing")})
            assert error and "missing" in res["error"]["message"]
            # Only under --root: not a file elsewhere, nor one reached by `..` or a link.
            (folder / "passwd.txt").symlink_to("/etc/passwd")
            beside = tmp_path.parent / f"{tmp_path.name}-beside.md"
            beside.write_text("# Beside\n\nNot under the root.\n")
            for outside in ["/etc/passwd", str(folder / ".." / ".." / beside.name),
                            str(folder / "passwd.txt")]:
                error, res = await call(session, "add", {"path": outside})
                assert error and "outside the folders" in res["error"]["message"], (outside, res)

    anyio.run(main)
    # What the agent added is in the store for every other front end.
    done = ckeep("--store", str(store), "show", "oolong-zh")
    assert done.returncode == 0 and done.stdout.startswith("乌龙茶")
    assert ckeep("--store", str(store), "check").returncode == 0


def test_a_reader_refuses_a_missing_store(tmp_path: Path) -> None:
    done = ckeep("--store", str(tmp_path / "nothing"), "mcp")
    assert done.returncode == 2
    assert "nothing" in done.stderr and not (tmp_path / "nothing").exists()
    assert done.stdout == "", "stdout belongs to the protocol"
