"""The Python examples in examples/python run end to end on samples of the real data and print
the CLI's figures for the same run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MULTILINGUAL, REPO, cli
from test_study import DATA, LCQMC, QQP

EXAMPLES = REPO / "examples" / "python"


def example(name: str, *args: str) -> str:
    env = dict(os.environ, CKEEP_DATA=str(DATA))
    done = subprocess.run([sys.executable, str(EXAMPLES / name), "--no-progress", *args],
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("pairs,model", [(QQP, "all-MiniLM-L6-v2"), (LCQMC, MULTILINGUAL)])
def test_the_pair_example_prints_the_cli_figures(pairs: Path, model: str) -> None:
    args = ["--sample", "150", "--seed", "7", "--calibrate-split", "0.4", "--model", model]
    got = json.loads(example("qqp_chunk_pair.py", "--pairs", str(pairs), "--json", *args))
    want = cli("pairs", str(pairs), *args)
    for key in ("seconds", "pairs_per_second"):
        del got[key], want[key]
    assert got == want
    table = example("qqp_chunk_pair.py", "--pairs", str(pairs), *args)
    for row in want["results"]:
        assert f"| {row['method']} | {row['threshold']:.3f} | {100 * row['accuracy']:.2f} %" in table


def test_the_fastbook_example_prints_the_cli_table() -> None:
    got = json.loads(example("fastbook_ch1.py", "--json"))
    want = cli("eval", "run", "--dataset", str(DATA / "fastbook_benchmark"), "--split", "ch1",
               "--strategy", "chunker=paragraphs", "--strategy", "chunker=paragraphs:3",
               "--metrics", "contain@1,contain@3,contain@5")
    assert got["queries"] == want["queries"] == 30
    assert len(got["strategies"]) == len(want["strategies"]) == 2
    for g, w in zip(got["strategies"], want["strategies"]):
        assert (g["strategy"], g["means"], g["p_values"]) == (w["strategy"], w["means"], w["p_values"])
    assert "best at k = 3" in example("fastbook_ch1.py")
