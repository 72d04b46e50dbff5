"""The Python examples of the READMEs run as printed: every ``python`` block of the top-level
README and of python/README.md is executed in a scratch directory that holds what the examples
name (``examples/corpus``, and the real data through ``CKEEP_DATA``), and what the
example leaves behind is checked, so a renamed function or argument fails here."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, cli
from test_study import DATA


def python_blocks(page: Path) -> list[str]:
    """The page's fenced ``python`` blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)


@pytest.fixture()
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory laid out as the examples assume: the repository's examples, and the
    evaluation data where CKEEP_DATA says."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "corpus").symlink_to(EXAMPLES)
    monkeypatch.setenv("CKEEP_DATA", str(DATA))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(block: str) -> tuple[dict, str]:
    """Executes one block; its variables and what it printed."""
    names: dict = {"__name__": "__readme__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "<readme>", "exec"), names)  # noqa: S102 - the README is ours
    return names, out.getvalue()


def printed_results(out: str) -> list[str]:
    """The lines the tour's loop printed: rank, doc id, score, char start, text."""
    return [line for line in out.splitlines() if re.match(r"^\d+ \S+ \d+\.\d+ \d+ ", line)]


def test_the_front_page_example_runs(scratch: Path) -> None:
    [block] = python_blocks(REPO / "README.md")
    names, out = run(block)
    lines = printed_results(out)
    assert len(lines) == 3, out
    assert lines[0].startswith("1 "), out
    by_cli = cli("add", str(EXAMPLES), store=scratch / "by-cli")["documents"]
    assert names["store"].stats()["stats"]["documents"] == by_cli > 3


def test_the_python_readme_example_runs(scratch: Path) -> None:
    [block] = python_blocks(REPO / "python" / "README.md")
    names, out = run(block)
    assert len(printed_results(out)) == 3, out
    # The Chinese document added as a dict is searchable in the same store.
    assert [r.doc_id for r in names["store"].search("天气", k=1, mode="bm25")] == ["n1"]
    assert names["vectors"].shape == (2, 384)
    sim = names["sim"]
    assert sim.duplicate and 0.7 <= sim.chunk_pair <= 1.0 and sim.top, sim
    study = names["study"].to_pandas()
    assert len(study) == 4 and any(m.startswith("chunk pair") for m in study.index), study
    cmp = names["cmp"]
    bm25, hybrid = (s.means["ndcg@10"] for s in cmp.strategies)
    assert cmp.queries == 300 and 0.5 < bm25 < 0.8 and 0.5 < hybrid < 0.8, cmp
    assert len(cmp.to_pandas(per_query=True)) == 2 * 300
    assert names["ckeep"].eval.metrics({"q1": {"d1": 1}}, {"q1": {"d1": 2.0, "d2": 1.0}},
                                       ["ndcg@10"]).means["ndcg@10"] == pytest.approx(1.0)
    assert os.path.isdir(scratch / "demo-python")


def test_the_getting_started_one_liner_runs(scratch: Path) -> None:
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    [code] = re.findall(r'`python -c "(.*?)"`', page)
    names, out = run(code)
    assert "examples/corpus/bm25.md" in out, out
    assert names["s"].stats()["stats"]["documents"] > 3
