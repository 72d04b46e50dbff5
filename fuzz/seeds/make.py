#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/seeds/TARGET/NAME): small valid inputs of each
format, and the hostile files of issue 82, so the fuzzer starts from both. Run from anywhere;
the files are committed, this says where each came from."""
import io
import json
import pathlib
import zipfile

HERE = pathlib.Path(__file__).resolve().parent


def put(target: str, name: str, data: bytes | str) -> None:
    folder = HERE / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)


def zput(z: zipfile.ZipFile, name: str, data: str) -> None:
    """A deflated member with a fixed date, so the seeds are the same bytes on every run."""
    z.writestr(zipfile.ZipInfo(name, (2026, 12, 7, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)


def pdf(objects: list[tuple[str, str | None]]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, (d, data) in enumerate(objects):
        offsets.append(len(out))
        body = f"<< {d} /Length {len(data)} >>\nstream\n{data}\nendstream" if data is not None else f"<< {d} >>"
        out += f"{i + 1} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for at in offsets:
        out += f"{at:010} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


CATALOG = ("/Type /Catalog /Pages 2 0 R", None)
PAGES = ("/Type /Pages /Kids [3 0 R] /Count 1", None)
FONT = "/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>"
res = f"/Resources << {FONT} /XObject << /Fm0 5 0 R >> >>"
page = f"/Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] {res} /Contents 4 0 R"
put("load_pdf", "text.pdf", pdf([CATALOG, PAGES, (page, None), ("", "BT /F1 12 Tf 72 700 Td (Owls hunt at night.) Tj ET"),
                                 (f"/Type /XObject /Subtype /Form /BBox [0 0 1 1] {res}", "BT ET")]))
put("load_pdf", "form.pdf", pdf([CATALOG, PAGES, (page, None), ("", "/Fm0 Do"),
                                 (f"/Type /XObject /Subtype /Form /BBox [0 0 612 792] {res}",
                                  "BT /F1 12 Tf 72 700 Td (Drawn by a form) Tj ET")]))
# Found by load_pdf: a page that is its own parent and has no MediaBox (pdf-extract climbed
# the tree for it for ever).
put("load_pdf", "self-parent.pdf", pdf([CATALOG, PAGES, ("/Type /Page /Parent 3 0 R /Resources << >> /Contents 4 0 R", None),
                                        ("", "BT ET")]))
put("load_pdf", "self-drawing-form.pdf", pdf([CATALOG, PAGES, (page, None), ("", "/Fm0 Do"),
                                              (f"/Type /XObject /Subtype /Form /BBox [0 0 1 1] {res}", "/Fm0 Do")]))

HTML = ("<!doctype html><html><head><title>Tea</title></head><body><nav>Home</nav><main><h1>Tea</h1>"
        "<p>Oolong is <em>partly</em> oxidised.</p><ul><li>green<ol><li>Assam</li></ol></li></ul>"
        "<table><tr><th>a</th></tr><tr><td>乌龙茶</td></tr></table><pre>code</pre></main></body></html>")
put("load_html", "page.html", HTML)
put("load_html", "deep.html", "<div>" * 300 + "x" + "</div>" * 300)
put("load_html", "misnested.html", "<p>a<b>b<p>c</b>d<table><tr><td>x</table><i><b>y</i>z</b>")


def epub(parts: list[tuple[str, str]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        zput(z, "mimetype", "application/epub+zip")
        zput(z, "META-INF/container.xml",
                   '<container><rootfiles><rootfile full-path="OEBPS/book.opf"/></rootfiles></container>')
        items = "".join(f'<item id="p{i}" href="{n}" media-type="application/xhtml+xml"/>' for i, (n, _) in enumerate(parts))
        spine = "".join(f'<itemref idref="p{i}"/>' for i in range(len(parts)))
        zput(z, "OEBPS/book.opf", f"<package><metadata><dc:title xmlns:dc='http://purl.org/dc/elements/1.1/'>Book</dc:title>"
                                     f"</metadata><manifest>{items}</manifest><spine>{spine}</spine></package>")
        for n, t in parts:
            zput(z, f"OEBPS/{n}", t)
    return buf.getvalue()


put("load_epub", "book.epub", epub([("a.xhtml", HTML), ("b.xhtml", "<html><body><p>長江の流れ</p></body></html>")]))
put("load_epub", "deep.epub", epub([("deep.xhtml", "<html><body>" + "<div>" * 50_000 + "x" + "</div>" * 50_000 + "</body></html>")]))

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    zput(z, "_rels/.rels", '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
               '<Relationship Id="r" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
               'Target="word/document.xml"/></Relationships>')
    zput(z, "word/styles.xml", f'<w:styles xmlns:w="{W}"><w:style w:styleId="H1"><w:name w:val="heading 1"/></w:style></w:styles>')
    zput(z, "word/document.xml", f'<w:document xmlns:w="{W}"><w:body>'
               '<w:p><w:pPr><w:pStyle w:val="H1"/></w:pPr><w:r><w:t>Owls</w:t></w:r></w:p>'
               '<w:p><w:r><w:t>Owls hunt </w:t></w:r><w:r><w:tab/><w:t>at night.</w:t></w:r></w:p>'
               '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>猫头鹰</w:t></w:r></w:p></w:tc></w:tr></w:tbl></w:body></w:document>')
put("load_docx", "doc.docx", buf.getvalue())

put("load_notebook", "notebook.ipynb", json.dumps({"cells": [
    {"cell_type": "markdown", "source": ["# Owls\n", "They hunt at night."]},
    {"cell_type": "code", "source": "print('hoot')", "outputs": []}], "metadata": {}, "nbformat": 4}))
put("load_jsonl", "docs.jsonl", '{"id": "a", "text": "Owls hunt at night.", "metadata": {"year": 2020}}\n'
                                '{"_id": 2, "contents": "猫头鹰在夜间捕猎。", "title": "猫头鹰"}\n')

for i, f in enumerate(["year>=2020 and (lang=zh or lang=ja) and not draft=true", "lang in [zh, ja]",
                       "source^=docs/guides", "tags~rust", "author exists", 'date<"2024-01-01"',
                       "区 = 东区", "year NOT IN [2020, 2021]"]):
    put("filter_text", f"f{i}", f)
for i, f in enumerate([{"year": {"$gte": 2020, "$lt": 2022}}, {"$or": [{"lang": "zh"}, {"$not": {"lang": "en"}}]},
                       {"tags": {"$in": ["a", "b"]}}, {"path": {"$prefix": "docs/"}}, {"lang": ["en", "de"]}]):
    put("filter_json", f"f{i}", json.dumps(f))
for i, s in enumerate(["mode=bm25,level=doc,agg=max,k=10", "chunker=hierarchy:512,128,mode=hybrid:linear=0.5",
                       "mode=hybrid:linear={0.3,0.5},agg={max,mean:3}", "mode=dense,expand=window:2,diversify=mmr:0.7",
                       "mode=bm25,k1=1.2,b=0.75,rerank_k=20,quantize=int8,oversample=3"]):
    put("strategy", f"s{i}", s)
for i, b in enumerate([{"mode": "hybrid", "k": 5, "level": "doc"}, {"strategy": "mode=bm25", "expand": "parent"},
                       {"k1": 0.9, "b": 0.4, "diversify": "mmr"}]):
    put("search_fields", f"b{i}", json.dumps(b))
