"""The extraction benchmark's Python side (bench/extract.sh): the widely used extractors on the
same files as `ckeep extract` — pypdf for PDF, BeautifulSoup (lxml) for HTML, python-docx for
DOCX, ebooklib with BeautifulSoup for EPUB — timed per format, and the agreement of the two
texts per file.

  extract_reference.py run LIST OUT.json      time every file of LIST, write texts and figures
  extract_reference.py agree CKEEP.json OUT.json   token F1 of ckeep's texts against the reference's
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path


def pdf_text(path: str) -> tuple[str, int]:
    from pypdf import PdfReader

    reader = PdfReader(path)
    pages = [page.extract_text() or "" for page in reader.pages]
    return "\n\n".join(pages), len(pages)


def html_text(markup: bytes) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "lxml")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return soup.get_text("\n")


def docx_text(path: str) -> str:
    import docx

    document = docx.Document(path)
    parts = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            parts.append(" | ".join(cell.text for cell in row.cells))
    return "\n\n".join(parts)


def epub_text(path: str) -> str:
    import ebooklib
    from ebooklib import epub

    book = epub.read_epub(path)
    return "\n\n".join(html_text(item.get_content()) for item in book.get_items_of_type(ebooklib.ITEM_DOCUMENT))


def extract(path: str) -> tuple[str, int]:
    suffix = Path(path).suffix.lower()
    if suffix == ".pdf":
        return pdf_text(path)
    if suffix in (".html", ".htm", ".xhtml"):
        return html_text(Path(path).read_bytes()), 0
    if suffix == ".docx":
        return docx_text(path), 0
    if suffix == ".epub":
        return epub_text(path), 0
    raise ValueError(f"unknown format: {path}")


FORMATS = {".pdf": "pdf", ".html": "html", ".htm": "html", ".xhtml": "html", ".docx": "docx", ".epub": "epub"}


def run(list_path: str, out_path: str) -> None:
    files = [line for line in Path(list_path).read_text().splitlines() if line]
    stats: dict[str, dict] = defaultdict(lambda: {"files": 0, "failed": 0, "bytes_in": 0, "bytes_out": 0, "pages": 0, "seconds": 0.0})
    texts = {}
    for path in files:
        fmt = FORMATS[Path(path).suffix.lower()]
        s = stats[fmt]
        s["files"] += 1
        s["bytes_in"] += Path(path).stat().st_size
        started = time.perf_counter()
        try:
            text, pages = extract(path)
        except Exception as e:  # noqa: BLE001 - a failure is a figure here
            s["failed"] += 1
            s["seconds"] += time.perf_counter() - started
            print(f"reference failed on {path}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        s["seconds"] += time.perf_counter() - started
        s["bytes_out"] += len(text.encode("utf-8"))
        s["pages"] += pages
        texts[path] = text
    Path(out_path).write_text(json.dumps({"formats": stats, "texts": texts}, ensure_ascii=False))


TOKEN = re.compile(r"\w+", re.UNICODE)


def f1(a: str, b: str) -> float:
    """Token F1 of two texts (lower-cased word multisets): 1.0 when they hold the same words."""
    ta, tb = Counter(TOKEN.findall(a.lower())), Counter(TOKEN.findall(b.lower()))
    common = sum((ta & tb).values())
    if not ta and not tb:
        return 1.0
    if common == 0:
        return 0.0
    precision, recall = common / sum(ta.values()), common / sum(tb.values())
    return 2 * precision * recall / (precision + recall)


def agree(ckeep_path: str, reference_path: str) -> None:
    ours = {d["doc_id"]: d["text"] for d in json.loads(Path(ckeep_path).read_text())["documents"]}
    theirs = json.loads(Path(reference_path).read_text())["texts"]
    by_format: dict[str, list[float]] = defaultdict(list)
    for path, text in theirs.items():
        if path in ours:
            by_format[FORMATS[Path(path).suffix.lower()]].append(f1(ours[path], text))
    for fmt, scores in sorted(by_format.items()):
        scores.sort()
        print(f"{fmt:<6} files both read {len(scores):>4}  token F1 mean {sum(scores) / len(scores):.3f}  median {scores[len(scores) // 2]:.3f}  min {scores[0]:.3f}")


if __name__ == "__main__":
    {"run": run, "agree": agree}[sys.argv[1]](*sys.argv[2:])
