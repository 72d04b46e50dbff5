#!/usr/bin/env python3
"""Every relative link in the README, the book (docs/) and the other top-level documents
points at a file of the repository, and every #anchor at a heading of its page (mdBook's and
GitHub's heading ids: lower-cased, spaces as hyphens, other punctuation dropped). Links inside
code are not links. Prints each broken link and exits 1 if there is one.
Usage: scripts/check_links.py"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose(text, keep_code_spans=False):
    """The text outside fenced code blocks and (unless kept: headings' ids include them) inline
    code spans."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        if fenced:
            out.append("")
        else:
            out.append(line if keep_code_spans else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def heading_id(title):
    title = re.sub(r"`([^`]*)`", r"\1", title).strip().lower()
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
    return "".join(c for c in title.replace(" ", "-") if c.isalnum() or c in "-_")


def anchors(path):
    ids = set()
    for line in prose(path.read_text(encoding="utf-8"), keep_code_spans=True).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            ids.add(heading_id(m.group(1)))
    return ids


def pages():
    yield from (ROOT / name for name in ("README.md", "ARCHITECTURE.md") if (ROOT / name).exists())
    yield ROOT / "python" / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))


def main():
    broken = []
    for page in pages():
        text = prose(page.read_text(encoding="utf-8"))
        for n, line in enumerate(text.split("\n"), 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                where = f"{page.relative_to(ROOT)}:{n}: {target}"
                if not dest.exists():
                    broken.append(f"{where}: no such file")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{where}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    for b in broken:
        print(b, file=sys.stderr)
    print(f"links: {len(broken)} broken" if broken else "links: all resolve")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
