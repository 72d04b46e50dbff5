"""Shared fixtures: the repository's corpora, the CLI binary to compare against, stores built
by the CLI. Real models come from $CKEEP_MODELS (installed by scripts/test.sh)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS_JSONL = REPO / "testdata" / "corpus.jsonl"
EXAMPLES = REPO / "examples" / "corpus"
MODEL = "all-MiniLM-L6-v2"
MULTILINGUAL = "multilingual-e5-small"


def ckeep_bin() -> str:
    return os.environ.get("CKEEP_BIN", str(REPO / "target" / "debug" / "ckeep"))


def cli(*args: str, store: Path | None = None) -> dict:
    """Runs the CLI with --json and returns its answer."""
    cmd = [ckeep_bin(), "--json", "--quiet"]
    if store is not None:
        cmd += ["--store", str(store)]
    done = subprocess.run(cmd + list(args), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="session")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """testdata/corpus.jsonl (English, Chinese, Japanese) added by the CLI with MiniLM."""
    store = tmp_path_factory.mktemp("cli") / "store"
    cli("add", str(CORPUS_JSONL), "--model", MODEL, "--chunker", "sentences", store=store)
    return store
