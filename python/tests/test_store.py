"""Store from Python against the CLI on the same store: the same results, spans and reports."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import pytest

import ckeep
from conftest import CORPUS_JSONL, EXAMPLES, MODEL, cli

QUERIES = ["owls hunting at night", "baking bread", "天气", "相似度"]
MODES = ["bm25", "dense", "hybrid", "hybrid:linear=0.5"]
LEVELS = [("chunk", None), ("doc", "max"), ("doc", "mean:3")]


def test_the_readme_example_runs(tmp_path: Path) -> None:
    store = ckeep.Store(tmp_path / "demo")
    report = store.add(EXAMPLES)
    assert report["added"] == report["documents"] > 0
    results = store.search("bm25", k=3)
    assert 0 < len(results) <= 3
    assert results[0].doc_id.endswith("bm25.md")
    assert "BM25" in results[0].text


def test_a_search_without_k_takes_the_stores_default(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    cli("add", str(CORPUS_JSONL), "--chunker", "sentences", store=store_dir)
    # The default `ckeep eval recommend --apply` would record, written where it records it.
    db = sqlite3.connect(store_dir / "ckeep.sqlite")
    (manifest,) = db.execute("SELECT value FROM meta WHERE key = 'manifest'").fetchone()
    manifest = json.loads(manifest)
    manifest["default_strategy"] = "mode=bm25,level=chunk,k=2"
    manifest["default_strategy_from"] = "a test"
    db.execute("UPDATE meta SET value = ? WHERE key = 'manifest'", (json.dumps(manifest),))
    db.commit()
    db.close()
    store = ckeep.Store(store_dir)
    # Words of five chunks ("the" alone is a stop word: no results whatever k is).
    query = "owls larks night sound dawn fields bread"
    assert len(store.search(query)) == 2
    assert store.search_json(query)["strategy"] == "mode=bm25,level=chunk,k=2"
    assert len(store.search(query, k=4)) == 4, "an explicit k still wins"
    assert cli("search", query, store=store_dir)["strategy"] == "mode=bm25,level=chunk,k=2"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("level,agg", LEVELS)
def test_results_equal_the_cli_json(cli_store: Path, mode: str, level: str, agg: str | None) -> None:
    store = ckeep.Store(cli_store)
    for query in QUERIES:
        args = ["search", query, "--mode", mode, "--level", level, "-k", "5"]
        kwargs = {"mode": mode, "level": level, "k": 5}
        if agg:
            args += ["--aggregate", agg]
            kwargs["aggregate"] = agg
        want = cli(*args, store=cli_store)
        got = store.search_json(query, **kwargs)
        for r in got["results"]:
            del r["char_spans"]
        assert got == want, (query, mode, level)
        # The dataclasses carry the same values.
        results = store.search(query, **kwargs)
        assert [(r.doc_id, r.score, [(s.start, s.end) for s in r.spans]) for r in results] == [
            (r["doc_id"], r["score"], [tuple(s) for s in r["spans"]]) for r in want["results"]
        ]


def test_explain_and_filters_match_the_cli(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    want = cli("search", "birds", "--explain", "--filter", "topic=birds", store=cli_store)
    got = store.search_json("birds", explain=True, filter={"topic": "birds"})
    for r in got["results"]:
        del r["char_spans"]
    assert got == want
    assert all(r.explain and r.explain["mode"] == "bm25" for r in store.search("birds", explain=True))


def test_no_results_for_a_reason_is_said_as_the_cli_says_it(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    cli("add", str(CORPUS_JSONL), store=store_dir)
    store = ckeep.Store(store_dir)
    want = cli("search", "天气", "--filter", "topc=birds", store=store_dir)
    assert want["no_results"]["unknown_keys"] == ["topc"]
    with pytest.warns(UserWarning, match="no document has the key `topc`"):
        assert store.search("天气", filter={"topc": "birds"}) == []
    got = store.search_json("天气", filter={"topc": "birds"})
    assert got["no_results"] == want["no_results"]
    # A search that finds something says nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.search("owls", filter={"topic": "birds"})


@pytest.mark.parametrize("query", ["owls hunting at night", "天气"])
def test_diversified_results_match_the_cli(cli_store: Path, query: str) -> None:
    store = ckeep.Store(cli_store)
    args = ["search", query, "--mode", "hybrid", "--diversify", "mmr:0.5", "--explain", "-k", "4"]
    want = cli(*args, store=cli_store)
    got = store.search_json(query, mode="hybrid", diversify="mmr:0.5", explain=True, k=4)
    for r in got["results"]:
        del r["char_spans"]
    assert got == want
    penalties = [r["explain"]["diversity"] for r in got["results"]]
    assert penalties and penalties[0]["redundancy"] == 0 and penalties[0]["similarity"] == "vectors"
    assert all(p["similar_to"] is not None for p in penalties[1:])
    with pytest.raises(ckeep.UsageError, match="from 0 to 1"):
        store.search(query, diversify="mmr:2")


def test_character_spans_index_python_strings(cli_store: Path) -> None:
    store = ckeep.Store(cli_store)
    results = store.search("天气", k=3)
    assert results, "the Chinese query finds the weather document"
    for r in results:
        text = store.show(r.doc_id)["text"]
        raw = text.encode("utf-8")
        pieces = [text[s.char_start:s.char_end] for s in r.spans]
        assert pieces == [raw[s.start:s.end].decode("utf-8") for s in r.spans]
        assert "".join(pieces) in r.text or r.text.startswith(pieces[0])


def test_adding_from_python_builds_the_store_the_cli_builds(tmp_path: Path, cli_store: Path) -> None:
    store = ckeep.Store(tmp_path / "py")
    docs = [json.loads(line) for line in CORPUS_JSONL.read_text(encoding="utf-8").splitlines()]
    report = store.add_documents(docs, model=MODEL, chunker="sentences")
    assert report["added"] == len(docs) and report["model"] == MODEL
    ours, theirs = store.stats(), cli("stats", store=cli_store)
    assert ours["manifest"] == theirs["manifest"]
    for key in ("documents", "chunks", "leaf_chunks", "text_bytes", "representations"):
        assert ours["stats"][key] == theirs["stats"][key], key
    want = cli("show", "owls", "--chunks", store=cli_store)["chunks"]
    got = store.chunks("owls")
    assert [(c.start, c.end, c.text) for c in got] == [
        (c["span"][0], c["span"][1], c["text"]) for c in want
    ]
    # Adding the same documents again changes nothing.
    again = store.add_documents(docs)
    assert again["unchanged"] == len(docs) and again["added"] == 0
    assert store.check()["ok"]


def test_texts_paths_metadata_and_removal(tmp_path: Path) -> None:
    store = ckeep.Store(tmp_path / "s")
    report = store.add(["Glaciers carve valleys over thousands of years.", "今天天气很好，我们去公园散步。"],
                       metadata={"kind": "note"})
    assert report["added"] == 2 and report["analyzer"] in ("standard", "jieba", "cjk")
    hits = store.search("glaciers", filter={"kind": "note"})
    assert hits[0].doc_id.startswith("text-")
    assert store.show(hits[0].doc_id)["metadata"] == {"kind": "note"}
    again = store.add("Glaciers carve valleys over thousands of years.", metadata={"kind": "note"})
    assert again["unchanged"] == 1 and again["added"] == 0
    assert store.add(EXAMPLES / "bm25.md")["added"] == 1
    assert store.remove(hits[0].doc_id) == 1
    assert store.stats()["stats"]["documents"] == 2


def test_extracted_documents_carry_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tea.html").write_text(
        "<html><body><nav>Home</nav><main><h1>Tea</h1><p>Oolong is partly oxidised.</p>"
        "<p>乌龙茶产于福建。</p></main></body></html>", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    store = ckeep.Store(tmp_path / "s")
    assert store.add("tea.html", analyzer="cjk", chunker="sentences")["added"] == 1, "a bare name is a path"
    hit = store.search("乌龙茶", mode="bm25")[0]
    assert hit.text == "乌龙茶产于福建。"
    assert hit.locations == [{"element": "/html/body/main/p[2]"}]
    assert hit.provenance()["locations"] == hit.locations
    plain = ckeep.Store(tmp_path / "plain")
    plain.add(["Glaciers carve valleys."])
    assert plain.search("glaciers")[0].locations == []
    assert "locations" not in plain.search("glaciers")[0].provenance()


def test_bad_input_raises_and_loses_nothing(tmp_path: Path) -> None:
    store = ckeep.Store(tmp_path / "s")
    store.add_documents([{"id": "a", "text": "alpha beta"}])
    with pytest.raises(ckeep.UsageError, match="empty text"):
        store.add_documents([{"id": "b", "text": "gamma"}, {"id": "c", "text": "  "}])
    with pytest.raises(ckeep.UsageError, match="duplicate id"):
        store.add_documents([{"id": "d", "text": "x"}, {"id": "d", "text": "y"}])
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 au lait")
    with pytest.raises(ckeep.UsageError, match="UTF-8"):
        store.add([EXAMPLES / "bm25.md", bad])
    with pytest.raises(ckeep.UsageError, match="No such file"):
        store.add("missing/notes.md")
    with pytest.raises(ckeep.UsageError, match="analyzer"):
        store.add_documents([{"id": "e", "text": "x"}], analyzer="cjk")
    # The refused analyzer does not stick to the store's next call, which warns instead.
    with pytest.warns(UserWarning, match="1 document.* mostly Chinese"):
        report = store.add_documents([{"id": "zh", "text": "今天天气很好，我们去公园散步吧。"}])
    assert report["unspaced_under_standard"] == 1
    store.remove(["zh"])
    assert store.stats()["stats"]["documents"] == 1
    assert store.check()["ok"]
    with pytest.raises(ckeep.UsageError) as bad_mode:
        store.search("alpha", mode="sideways")
    assert bad_mode.value.code == "invalid_parameter"
    with pytest.raises(ckeep.UsageError, match="no document"):
        store.show("zzz")
    with pytest.raises(ckeep.UsageError, match="nothing was removed") as missing:
        store.remove(["a", "zzz"])
    assert (missing.value.code, missing.value.hint) == (
        "not_found",
        "search the store to see the ids it holds",
    )
    with pytest.raises(ckeep.UsageError):
        ckeep.Store(tmp_path / "nowhere").search("alpha")
    with pytest.raises(ckeep.ModelError):
        store.search("alpha", mode="dense", model=str(tmp_path / "no-such-model"))
    assert issubclass(ckeep.UsageError, ckeep.CkeepError)
    assert store.search("alpha")[0].doc_id == "a"


@pytest.mark.parametrize("kind", ["int8", "binary"])
def test_a_quantised_store_answers_as_the_cli_and_as_float32(tmp_path: Path, cli_store: Path,
                                                              kind: str) -> None:
    docs = [json.loads(line) for line in CORPUS_JSONL.read_text(encoding="utf-8").splitlines()]
    store = ckeep.Store(tmp_path / "q")
    store.add_documents(docs, model=MODEL, chunker="sentences")
    store.quantize(kind)
    assert store.stats()["manifest"]["quantize"] == {"plain": kind}
    for query in QUERIES:  # English, Chinese
        got = [(h.doc_id, h.score) for h in store.search(query, mode="dense", k=3)]
        floats = cli("search", query, "--mode", "dense", "-k", "3", store=cli_store)["results"]
        assert got == [(r["doc_id"], pytest.approx(r["score"], abs=1e-6)) for r in floats], query
    with pytest.raises(ckeep.UsageError):
        store.quantize("int4")
    with pytest.raises(ckeep.UsageError):
        store.quantize("int8", repr="late")
    store.quantize("none")
    assert "quantize" not in store.stats()["manifest"]


@pytest.mark.parametrize("query", ["owls hunting at night", "天气"])
def test_a_further_model_fuses_as_the_cli_fuses(tmp_path: Path, query: str) -> None:
    """``Store.add_model`` keeps a second model's vectors (potion-base-8M beside MiniLM); a
    ``models=A+B`` strategy then answers from Python as from the CLI over a store the CLI
    built with both, in English and Chinese."""
    docs = [json.loads(line) for line in CORPUS_JSONL.read_text(encoding="utf-8").splitlines()]
    store = ckeep.Store(tmp_path / "two")
    store.add_documents(docs, model=MODEL, chunker="sentences")
    report = store.add_model("potion-base-8M")
    assert report["documents"] == len(docs) and report["vectors"] > 0
    assert store.add_model("potion-base-8M")["documents"] == 0
    assert [m["name"] for m in store.stats()["manifest"]["extra_models"]] == ["potion-base-8M"]
    cli_store = tmp_path / "cli"
    cli("add", str(CORPUS_JSONL), "--model", MODEL, "--model", "potion-base-8M", "--chunker", "sentences",
        store=cli_store)
    strategy = f"models={MODEL}+potion-base-8M,mode=hybrid:linear=0.3+0.3,level=doc,k=5"
    got = store.search_json(query, strategy=strategy, explain=True)
    for r in got["results"]:
        del r["char_spans"]
    want = cli("search", query, "--strategy", strategy, "--explain", store=cli_store)
    assert got == want
    lists = {part["list"] for part in got["results"][0]["explain"]["chunks"][0]["lists"]}
    assert "potion-base-8M" in lists, lists
    with pytest.raises(ckeep.UsageError):
        store.search(query, strategy=f"models={MODEL}+test-hash-32,mode=hybrid")


@pytest.mark.parametrize("question", ["Why do owls fly almost without a sound?",
                                      "长江最后注入哪里？", "桜の見頃はどのくらいですか？"])
def test_ask_gives_the_clis_answer_with_located_citations(cli_store: Path, question: str) -> None:
    store = ckeep.Store(cli_store)
    got = store.ask(question, llm="none")
    want = cli("ask", question, "--llm", "none", store=cli_store)
    for key in ("answer", "abstained", "sentences", "strategy", "context"):
        assert got[key] == want[key], key
    assert [p["doc_id"] for p in got["passages"]] == [p["doc_id"] for p in want["passages"]]
    texts = {d["id"]: d["text"] for d in map(json.loads, CORPUS_JSONL.read_text().splitlines())}
    for sentence in got["sentences"]:
        for c in sentence["citations"]:
            text = texts[c["doc_id"]].encode()
            assert text[c["span"][0]:c["span"][1]].decode() == c["quote"]
    with pytest.raises(ckeep.UsageError):
        store.ask("  ", llm="none")
    with pytest.raises(TypeError):
        store.ask(question, llm="none", colour="red")


def test_an_adapted_store_searches_as_the_cli_and_undo_restores_it(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    cli("add", str(CORPUS_JSONL), "--model", MODEL, store=store_dir)
    store = ckeep.Store(store_dir)
    query = "how are documents ranked by term frequency"
    before = store.search_json(query, mode="dense", k=5)
    # The guard decides whether a trained map is kept; this test needs one, so it trains one
    # without applying it and loads it.
    saved = tmp_path / "adapter.safetensors"
    report = store.adapt(dry_run=True, save=saved, seed=3)
    losses = report["models"][0]["losses"]
    assert losses[-1] < losses[0], losses
    assert store.stats()["manifest"].get("adapters") is None
    assert store.adapt(load=saved)["loaded"]["model"] == MODEL
    got = store.search_json(query, mode="dense", k=5)
    want = cli("search", query, "--mode", "dense", "-k", "5", store=store_dir)

    def ranking(res: dict) -> list[tuple[str, str]]:
        return [(r["doc_id"], f"{r['score']:.6f}") for r in res["results"]]

    assert ranking(got) == ranking(want)
    assert ranking(got) != ranking(before)
    assert store.adapt(undo=True)["removed"][0]["model"] == MODEL
    assert store.search_json(query, mode="dense", k=5)["results"] == before["results"]
    with pytest.raises(ckeep.UsageError):
        store.adapt(minutes=0)
