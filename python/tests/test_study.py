"""Pair similarity, pair studies and near-duplicates from Python against the CLI: the same
figures for the same inputs, in English and Chinese, on real data from $CKEEP_DATA."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ckeep
from conftest import MODEL, MULTILINGUAL, cli

DATA = Path(os.environ.get("CKEEP_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
QQP = DATA / "qqp" / "dev.tsv"
LCQMC = DATA / "zh" / "pairs" / "lcqmc" / "dev.tsv"

A = "Owls hunt at night. Their soft feathers make their flight silent, so mice do not hear them coming."
B = "At night the owl hunts. Mice cannot hear an owl approach, because its feathers silence its flight."
ZH_A = "猫头鹰在夜间捕猎。它们柔软的羽毛让飞行悄无声息，老鼠听不到它们靠近。"
ZH_B = "夜里猫头鹰出来捕食。因为羽毛柔软，它飞行时没有声音，老鼠察觉不到。"


def head(path: Path, n: int, tmp: Path) -> Path:
    """The first ``n`` lines of a pair file, as a file of its own."""
    out = tmp / path.name
    with path.open("rb") as f:  # QQP has a line of invalid UTF-8, read as the CLI reads it
        out.write_bytes(b"".join(line for _, line in zip(range(n), f)))
    return out


@pytest.mark.parametrize("a,b,model", [(A, B, MODEL), (ZH_A, ZH_B, MULTILINGUAL)])
def test_similar_equals_the_cli(a: str, b: str, model: str) -> None:
    want = cli("similar", a, b, "--model", model, "--explain", "--top-k", "2")
    got = ckeep.similar(a, b, model=model, explain=True, top_k=2)
    for m in got.raw["top"]:
        for side in ("a", "b"):
            del m[side]["char_span"]
    assert got.raw == want
    assert (got.chunk_pair, got.whole, got.duplicate) == (
        want["chunk_pair"], want["whole"], want["duplicate"])
    assert got.top is not None and len(got.top) == min(2, got.chunks[0] * got.chunks[1])
    for m in got.top:
        # Character spans index the Python strings; byte spans index their UTF-8.
        assert a[m.a.char_start:m.a.char_end] == m.a.text
        assert b[m.b.char_start:m.b.char_end] == m.b.text
        assert b.encode()[m.b.start:m.b.end].decode() == m.b.text


def test_similar_reads_files_like_the_cli(tmp_path: Path) -> None:
    fa, fb = tmp_path / "a.txt", tmp_path / "b.txt"
    fa.write_text(ZH_A, encoding="utf-8")
    fb.write_bytes(b"\xef\xbb\xbf" + ZH_B.encode())  # a BOM, dropped as the loaders drop it
    got = ckeep.similar(fa, fb, model=MULTILINGUAL)
    want = cli("similar", "--files", str(fa), str(fb), "--model", MULTILINGUAL)
    assert (got.chunk_pair, got.whole) == (want["chunk_pair"], want["whole"])
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 au lait")
    with pytest.raises(ckeep.UsageError, match="not UTF-8|invalid"):
        ckeep.similar(bad, fb, model=MULTILINGUAL)
    with pytest.raises(ckeep.UsageError, match="two texts or two paths"):
        ckeep.similar(fa, ZH_B, model=MULTILINGUAL)
    with pytest.raises(ckeep.UsageError, match="empty"):
        ckeep.similar("  ", ZH_B, model=MULTILINGUAL)


@pytest.mark.parametrize("source,model", [(QQP, MODEL), (LCQMC, MULTILINGUAL)])
def test_pair_study_equals_the_cli(source: Path, model: str, tmp_path: Path) -> None:
    pairs_file = head(source, 120, tmp_path)
    want = cli("pairs", str(pairs_file), "--model", model, "--calibrate-split", "0.5")
    seen: list[tuple[str, int, int]] = []
    got = ckeep.pairs(pairs_file, model=model, calibrate_split=0.5,
                      progress=lambda *p: seen.append(p))
    for key in ("seconds", "pairs_per_second"):
        del got.raw[key], want[key]
    assert got.raw == want
    assert [r.method for r in got.results] == [
        "whole text, fixed", "chunk pair, fixed", "whole text, calibrated", "chunk pair, calibrated"]
    assert got.result("chunk pair, calibrated").accuracy == want["results"][3]["accuracy"]
    table = got.to_pandas()
    assert table.loc["whole text, fixed", "roc_auc"] == want["results"][0]["roc_auc"]
    # Progress came from inside the call: every text counted, the last report complete.
    assert seen and seen[-1] == ("embedding", 240, 240)
    assert all(a[1] <= b[1] for a, b in zip(seen, seen[1:]))


def test_pairs_in_memory_score_as_the_file_does(tmp_path: Path) -> None:
    pairs_file = head(LCQMC, 40, tmp_path)
    rows = [line.rstrip("\n").split("\t") for line in pairs_file.open(encoding="utf-8")]
    assert len(rows) == 40 and all(len(r) == 4 for r in rows)
    tuples = [(a, b, label == "1") for label, a, b, _ in rows]
    from_file = ckeep.pairs(pairs_file, model=MULTILINGUAL, calibrate=pairs_file)
    in_memory = ckeep.pairs(tuples, model=MULTILINGUAL, calibrate=tuples)
    assert from_file.results == in_memory.results
    assert from_file.raw["file"] == str(pairs_file) and "file" not in in_memory.raw
    with pytest.raises(ckeep.UsageError, match="pair 1: expected"):
        ckeep.pairs([("a", "b", 1), ("a", "b")], model=MULTILINGUAL)
    with pytest.raises(ckeep.UsageError, match="No such file"):
        ckeep.pairs(tmp_path / "missing.tsv", model=MULTILINGUAL)
    with pytest.raises(ckeep.UsageError):
        ckeep.pairs(tuples, model=MULTILINGUAL, chunker="no-such-chunker")


def near_duplicate_store(tmp: Path) -> tuple[Path, list[tuple[str, str]]]:
    """A store (built by the CLI) of real Chinese and English documents, two of each an
    excerpt of another, and which pairs those are."""
    sources = [
        DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "docs.jsonl",
        DATA / "squad_dev" / "longdoc-v1.1.docs.jsonl",
    ]
    docs, expected = [], []
    for source in sources:
        with source.open(encoding="utf-8") as f:
            originals = [json.loads(line) for _, line in zip(range(4), f)]
        for d in originals:
            docs.append({"id": d["doc_id"], "text": d["text"][:1500]})
        excerpt = originals[0]["text"][:1500]
        docs.append({"id": originals[0]["doc_id"] + "-copy", "text": excerpt[: len(excerpt) // 2]})
        expected.append((originals[0]["doc_id"], originals[0]["doc_id"] + "-copy"))
    jsonl = tmp / "docs.jsonl"
    jsonl.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                     encoding="utf-8")
    store = tmp / "store"
    cli("add", str(jsonl), "--model", MULTILINGUAL, "--chunker", "sentences", store=store)
    return store, expected


def test_dedup_equals_the_cli(tmp_path: Path) -> None:
    path, expected = near_duplicate_store(tmp_path)
    store = ckeep.Store(path)
    for kwargs, args in [
        ({"threshold": 0.9, "explain": True}, ["--threshold", "0.9", "--explain"]),
        ({"threshold": 0.95, "level": "chunk"}, ["--threshold", "0.95", "--level", "chunk"]),
    ]:
        got = store.dedup(**kwargs)
        want = cli("dedup", *args, store=path)
        del got["seconds"], want["seconds"]
        assert got == want
    report = store.dedup(threshold=0.9, explain=True)
    found = {tuple(sorted((p["a"], p["b"]))) for c in report["clusters"] for p in c["pairs"]}
    assert {tuple(sorted(e)) for e in expected} <= found, found
    for cluster in report["clusters"]:
        for pair in cluster["pairs"]:
            for m in pair["matches"]:
                for side in ("a", "b"):
                    text = store.show(pair[side])["text"].encode()
                    start, end = m[side]["span"]
                    assert text[start:end].decode() == m[side]["text"]
    with pytest.raises(ckeep.UsageError, match="level"):
        store.dedup(level="page")


def test_dedup_by_a_pair_model_equals_the_cli(tmp_path: Path) -> None:
    # A store of both questions of the last 150 LCQMC dev pairs; the model is fitted on others.
    lines = LCQMC.read_text(encoding="utf-8").splitlines()
    docs = []
    for n, line in enumerate(lines[-150:]):
        _, a, b, _ = line.split("\t")
        docs += [{"id": f"{n}a", "text": a}, {"id": f"{n}b", "text": b}]
    jsonl = tmp_path / "questions.jsonl"
    jsonl.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    fit = tmp_path / "fit.tsv"
    fit.write_text("\n".join(lines[:1000]) + "\n", encoding="utf-8")
    model = tmp_path / "lcqmc-model.json"
    cli("pairs", str(fit), "--model", MULTILINGUAL, "--learn", "--save-model", str(model))
    path = tmp_path / "store"
    cli("add", str(jsonl), "--model", MULTILINGUAL, store=path)
    store = ckeep.Store(path)
    got = store.dedup(pair_model=model, explain=True)
    want = cli("dedup", "--pair-model", str(model), "--explain", store=path)
    del got["seconds"], want["seconds"]
    assert got == want
    assert got["threshold"] == pytest.approx(0.7), "candidates from the learned floor"
    # Kept pairs are ones the model calls duplicates; most are the dev file's own pairs.
    threshold = json.loads(model.read_text())["threshold"]
    pairs = [p for c in got["clusters"] for p in c["pairs"]]
    assert len(pairs) >= 20, pairs
    assert all(p["score"] >= threshold for p in pairs), pairs
    labelled = sum(p["a"][:-1] == p["b"][:-1] for p in pairs)
    assert labelled * 2 > len(pairs), pairs
    with pytest.raises(ckeep.UsageError, match="document pairs"):
        store.dedup(pair_model=model, level="chunk")
    with pytest.raises(ckeep.UsageError):
        store.dedup(pair_model=tmp_path / "missing.json")
