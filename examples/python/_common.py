"""What the examples share: where the evaluation data is, and printing the CLI's way."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def data_dir() -> Path:
    """``$CKEEP_DATA``, else ``../shared/data`` beside the repository."""
    return Path(os.environ.get("CKEEP_DATA", HERE.parents[2] / "shared" / "data"))


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help="print the figures as the CLI's --json does")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))
