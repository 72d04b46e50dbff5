//! Files made to hurt a reader: each once aborted the process (a stack overflow no
//! `catch_unwind` stops), took hundreds of megabytes, or ran for a minute. Each is now a clear
//! error about the file, or read in time linear in its size.

use std::fmt::Write as _;
use std::io::Write;

use super::{Format, LoadOptions, Loader};
use crate::Error;

fn load(format: Format, bytes: Vec<u8>) -> Result<super::Loaded, Error> {
    Loader::default().load_bytes("hostile", "hostile", format, bytes)
}

fn unreadable(format: Format, bytes: Vec<u8>) -> String {
    match load(format, bytes) {
        Err(Error::Unreadable { reason, .. }) => reason,
        other => panic!("expected an unreadable file, got {:?}", other.map(|l| l.documents.len())),
    }
}

/// A PDF of `objects` (numbered from 1; object 1 the catalog): a `(dict, data)` pair with data
/// is a stream.
fn pdf(objects: &[(&str, Option<&str>)]) -> Vec<u8> {
    let objects: Vec<String> = objects
        .iter()
        .map(|(dict, data)| match data {
            Some(data) => ckeep_testkit::pdf::stream(dict, data),
            None => format!("<< {dict} >>"),
        })
        .collect();
    ckeep_testkit::pdf::pdf(&objects)
}

const CATALOG: (&str, Option<&str>) = ("/Type /Catalog /Pages 2 0 R", None);
const PAGES: (&str, Option<&str>) = ("/Type /Pages /Kids [3 0 R] /Count 1", None);
const FONT: &str = "/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>";

/// One page that draws form `Fm0`, whose content is `content`; page and form share one
/// resource dictionary, which names the form itself (as many producers write them).
fn one_form(content: &str) -> Vec<u8> {
    let resources = format!("/Resources << {FONT} /XObject << /Fm0 5 0 R >> >>");
    let page =
        format!("/Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] {resources} /Contents 4 0 R");
    let form = format!("/Type /XObject /Subtype /Form /BBox [0 0 612 792] {resources}");
    pdf(&[CATALOG, PAGES, (&page, None), ("", Some("/Fm0 Do")), (&form, Some(content))])
}

#[test]
fn a_pdf_form_that_draws_itself_is_refused_not_a_stack_overflow() {
    let bytes = one_form("/Fm0 Do");
    assert!(bytes.len() < 1024, "a small file: {} bytes", bytes.len());
    let why = unreadable(Format::Pdf, bytes);
    assert!(why.contains("draws a form that draws itself"), "{why}");
}

#[test]
fn a_pdf_form_shared_resources_that_name_it_is_read() {
    // Only drawing the form from inside itself is a loop.
    let loaded = load(Format::Pdf, one_form("BT /F1 12 Tf 72 700 Td (Drawn by a form) Tj ET"));
    let text = &loaded.unwrap().documents[0].text;
    assert!(text.contains("Drawn by a form"), "{text:?}");
}

#[test]
fn pdf_forms_nested_too_deep_or_drawn_too_often_are_refused() {
    // Forms 5, 6, …: each draws the next (`times` times); the last draws nothing.
    let chain = |forms: usize, times: usize| {
        let draw = vec!["/N Do"; times].join(" ");
        let mut dicts: Vec<(String, Option<String>)> = vec![
            (
                "/Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /N 5 0 R >> >> /Contents 4 0 R"
                    .into(),
                None,
            ),
            (String::new(), Some("/N Do".into())),
        ];
        for k in 0..forms {
            let next = if k + 1 < forms {
                format!("/Resources << /XObject << /N {} 0 R >> >>", 5 + k + 1)
            } else {
                String::new()
            };
            let content = if k + 1 < forms { draw.clone() } else { "BT ET".into() };
            dicts.push((
                format!("/Type /XObject /Subtype /Form /BBox [0 0 1 1] {next}"),
                Some(content),
            ));
        }
        let mut objects: Vec<(&str, Option<&str>)> = vec![CATALOG, PAGES];
        objects.extend(dicts.iter().map(|(d, c)| (d.as_str(), c.as_deref())));
        pdf(&objects)
    };
    let why = unreadable(Format::Pdf, chain(100, 1));
    assert!(why.contains("nests forms more than 32 deep"), "{why}");
    // 2^30 draws if followed: a billion laughs in 30 objects.
    let why = unreadable(Format::Pdf, chain(30, 2));
    assert!(why.contains("more than 100000 forms"), "{why}");
}

#[test]
fn a_pdf_page_tree_that_loops_is_refused() {
    let bytes = pdf(&[
        CATALOG,
        PAGES,
        ("/Type /Page /Parent 5 0 R /MediaBox [0 0 612 792] /Contents 4 0 R", None),
        ("", Some("BT ET")),
        ("/Type /Pages /Parent 5 0 R /Kids [3 0 R] /Count 1", None),
    ]);
    let why = unreadable(Format::Pdf, bytes);
    assert!(why.contains("page tree loops"), "{why}");
    // Found by the fuzzer: a page that is its own parent and lacks a `MediaBox`, which
    // pdf-extract looks for up the tree (a stack overflow, or an endless loop when optimised).
    let bytes = pdf(&[
        CATALOG,
        PAGES,
        ("/Type /Page /Parent 3 0 R /Resources << >> /Contents 4 0 R", None),
        ("", Some("BT ET")),
    ]);
    let why = unreadable(Format::Pdf, bytes);
    assert!(why.contains("page 1's page tree loops"), "{why}");
}

/// An EPUB whose spine reads `parts` (member name, XHTML), deflated.
fn epub(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    let mut add = |name: &str, bytes: &[u8]| {
        zip.start_file(name, deflated).unwrap();
        zip.write_all(bytes).unwrap();
    };
    add("mimetype", b"application/epub+zip");
    add(
        "META-INF/container.xml",
        br#"<container><rootfiles><rootfile full-path="book.opf"/></rootfiles></container>"#,
    );
    let (mut items, mut spine) = (String::new(), String::new());
    for (i, (name, _)) in parts.iter().enumerate() {
        let item = format!(r#"<item id="p{i}" href="{name}" media-type="application/xhtml+xml"/>"#);
        items.push_str(&item);
        write!(spine, r#"<itemref idref="p{i}"/>"#).unwrap();
    }
    let opf =
        format!("<package><metadata/><manifest>{items}</manifest><spine>{spine}</spine></package>");
    add("book.opf", opf.as_bytes());
    for (name, bytes) in parts {
        add(name, bytes);
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn an_epub_nested_50000_deep_is_refused_early() {
    let page =
        format!("<html><body>{}x{}</body></html>", "<div>".repeat(50_000), "</div>".repeat(50_000));
    let bytes = epub(&[("deep.xhtml", page.as_bytes())]);
    assert!(bytes.len() < 4096, "a small file: {} bytes", bytes.len());
    let why = unreadable(Format::Epub, bytes);
    assert!(why.contains("deep.xhtml: its elements nest more than 256 deep"), "{why}");
}

#[test]
fn an_epub_bomb_stops_while_it_inflates() {
    // Four parts of 95 MB each, about 0.4 MB zipped: the first part is cut at 100 times its
    // compressed size, never inflated whole.
    let part = vec![b' '; 95 << 20];
    let names = ["a.xhtml", "b.xhtml", "c.xhtml", "d.xhtml"];
    let parts: Vec<(&str, &[u8])> = names.iter().map(|n| (*n, part.as_slice())).collect();
    let bytes = epub(&parts);
    drop(part);
    assert!(bytes.len() < 1 << 20, "{} bytes zipped", bytes.len());
    let why = unreadable(Format::Epub, bytes);
    assert!(why.contains("a.xhtml inflates to more than 100 times its compressed size"), "{why}");
    // Parts that compress as text does, but more of them than the document limit holds.
    let text: Vec<u8> = (0..200_000u32).flat_map(|i| format!("<p>{i}</p>").into_bytes()).collect();
    let parts: Vec<(&str, &[u8])> = names.iter().map(|n| (*n, text.as_slice())).collect();
    let small = Loader::new(LoadOptions { max_doc_bytes: 4 << 20, ..LoadOptions::default() });
    match small.load_bytes("hostile", "hostile", Format::Epub, epub(&parts)) {
        Err(Error::Unreadable { reason, .. }) => {
            assert!(reason.contains("inflate to more than 4194304 bytes in all"), "{reason}");
        }
        other => panic!("{:?}", other.map(|l| l.documents.len())),
    }
}

#[test]
fn a_docx_nested_too_deep_is_refused() {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    let w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
    let body = format!(
        r#"<w:document xmlns:w="{w}"><w:body>{}<w:p><w:r><w:t>x</w:t></w:r></w:p>{}</w:body></w:document>"#,
        "<w:sdt><w:sdtContent>".repeat(20_000),
        "</w:sdtContent></w:sdt>".repeat(20_000)
    );
    for (name, text) in [("_rels/.rels", rels), ("word/document.xml", body.as_str())] {
        zip.start_file(name, options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    let why = unreadable(Format::Docx, zip.finish().unwrap().into_inner());
    assert!(why.contains("word/document.xml: its elements nest more than 256 deep"), "{why}");
}

#[test]
fn flat_pages_of_many_paragraphs_read_whole() {
    // 80,000 siblings: each block's path names its position, counted once per page.
    let mut html = String::new();
    for i in 0..80_000 {
        write!(html, "<p>p{i}</p>").unwrap();
    }
    let loaded = load(Format::Html, format!("<body>{html}</body>").into_bytes()).unwrap();
    let doc = &loaded.documents[0];
    assert!(doc.text.starts_with("p0\n\np1") && doc.text.ends_with("p79999"));
    let map = ckeep_core::SourceMap::of(&doc.metadata).unwrap();
    let at = doc.text.find("p79999").unwrap();
    let place = map.locate(ckeep_core::Span::new(at, at + 6));
    assert_eq!(place.element.as_deref(), Some("/html/body/p[80000]"));
}

#[test]
fn jsonl_files_and_standard_input_are_held_to_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.jsonl");
    let line = r#"{"id": "a", "text": "short"}"#;
    std::fs::write(&path, format!("{line}\n").repeat(3)).unwrap();
    let loader = Loader::new(LoadOptions { max_doc_bytes: 8, ..LoadOptions::default() });
    let source = super::Source::File(path, Format::Jsonl);
    assert!(matches!(loader.load(&source), Err(Error::TooLarge { limit: 80, .. })));
}
