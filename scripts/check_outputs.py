#!/usr/bin/env python3
"""The book's printed outputs, run and compared: every ```console block of the README, the book
(docs/) and the Python README is run in a scratch directory laid out as the repository is
(examples/ and testdata/ copied, the evaluation data at ../shared/data), and what each command
prints must match what the page shows under it.

A block reads as a terminal does: a line `$ COMMAND` is run by bash (stdout and stderr
together), and the lines under it, up to the next `$`, are its output. In an output line `…`
stands for any text (timings, the end of a long line); a line that is `…` alone stands for any
number of lines. A command with no lines under it must only succeed. The commands of one block
run in order in one scratch directory; each block gets its own.

The ckeep run is $CKEEP_BIN, else target/debug/ckeep (built by scripts/build.sh).
Usage: scripts/check_outputs.py [PAGE…]
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pages() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "python" / "README.md"]
    found += sorted((ROOT / "docs").rglob("*.md"))
    return found


def blocks(text: str) -> list[tuple[int, list[str]]]:
    """The ```console blocks of a page: the line number of each, and its lines."""
    out, current, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        fence = line.strip()
        if current is None and fence == "```console":
            current, start = [], n
        elif current is not None and fence == "```":
            out.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
    return out


def steps(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A block's commands, each with the output lines shown under it."""
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first command: {line!r}")
    return out


def pattern(shown: str) -> re.Pattern[str]:
    """A shown output line as a pattern: `…` is any text; trailing spaces do not count."""
    parts = [re.escape(p) for p in shown.rstrip().split("…")]
    return re.compile(".*".join(parts) + r"\Z", re.S)


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether `printed` is what `shown` shows (a `…` line takes any number of lines)."""
    if not shown:
        return not printed
    head, rest = shown[0], shown[1:]
    if head.strip() == "…":
        return any(matches(rest, printed[i:]) for i in range(len(printed) + 1))
    return bool(printed) and bool(pattern(head).match(printed[0].rstrip())) and matches(
        rest, printed[1:])


def scratch(base: Path) -> Path:
    work = base / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    shutil.copytree(ROOT / "testdata", work / "testdata")
    (base / "shared").mkdir()
    data = Path(os.environ.get("CKEEP_DATA", ROOT.parent / "shared" / "data")).resolve()
    (base / "shared" / "data").symlink_to(data)
    return work


def check_block(binary: Path, page: Path, line: int, lines: list[str]) -> list[str]:
    """Runs one block; the problems found, as messages naming the page and line."""
    where = f"{page.relative_to(ROOT)}:{line}"
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        work = scratch(Path(tmp))
        env = dict(os.environ, PATH=f"{binary.parent}:{os.environ['PATH']}",
                   CKEEP_CACHE=str(work / "cache.sqlite"), COLUMNS="100")
        env.pop("CKEEP_STORE", None)
        for command, shown in steps(lines):
            run = subprocess.run(["bash", "-c", command], cwd=work, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            printed = run.stdout.splitlines()
            if run.returncode != 0:
                problems.append(f"{where}: `{command}` failed ({run.returncode}):\n{run.stdout}")
                break
            if shown and not matches(shown, printed):
                problems.append(
                    f"{where}: `{command}` prints what the page does not show.\n"
                    "--- the page shows\n" + "\n".join(shown) +
                    "\n--- ckeep printed\n" + "\n".join(printed))
    return problems


def main() -> int:
    binary = Path(os.environ.get("CKEEP_BIN", ROOT / "target" / "debug" / "ckeep")).resolve()
    if not binary.exists():
        print(f"check_outputs: no ckeep at {binary} (scripts/build.sh builds it)", file=sys.stderr)
        return 1
    chosen = [Path(p).resolve() for p in sys.argv[1:]] or pages()
    problems, checked = [], 0
    for page in chosen:
        for line, lines in blocks(page.read_text(encoding="utf-8")):
            checked += 1
            problems += check_block(binary, page, line, lines)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check_outputs: {checked} console blocks, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
