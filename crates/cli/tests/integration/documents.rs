//! Real documents from Debian's packages (installed or unpacked by scripts/test.sh): the Python
//! documentation's HTML (python3-doc), the Live Systems manual's EPUBs in English and Japanese
//! (live-manual-epub), Word documents and PDFs: the `PreviSat` manual in English and French
//! (previsat) and Lewis Carroll (python3-pattern's test corpora). For each format, search finds
//! a known sentence, its span's bytes are the stored text's, and its element path or page is
//! the one checked by hand (EPUB and DOCX paths against Python's `ElementTree` on the XML; the
//! HTML path against the page source; PDF pages against pypdf). Broken files are named errors
//! that `--keep-going` skips.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{fails, json, ok};

fn python_docs() -> PathBuf {
    let found = std::fs::read_dir("/usr/share/doc")
        .unwrap()
        .flatten()
        .map(|e| e.path().join("html/library/json.html"))
        .find(|p| p.is_file() && p.to_string_lossy().contains("/python3"));
    found
        .expect("python3-doc is installed (scripts/test.sh installs it)")
        .parent()
        .unwrap()
        .to_path_buf()
}

const LIVE_MANUAL: &str = "/usr/share/doc/live-manual/epub";

/// Where scripts/test.sh unpacked the Debian packages that carry Word documents.
pub(crate) fn unpacked() -> PathBuf {
    std::env::var_os("CKEEP_DOCUMENTS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/documents"),
        PathBuf::from,
    )
}

/// The first result of a BM25 search, checked against the stored text: every span's bytes
/// are in the result's text, and there is one location per span.
fn top_hit(store: &Path, query: &str, filter: Option<&str>) -> Value {
    let mut args = vec!["search", query, "--mode", "bm25", "-k", "1"];
    if let Some(f) = filter {
        args.extend(["--filter", f]);
    }
    let res = json(store, &args);
    let hit = res["results"][0].clone();
    let shown = json(store, &["show", hit["doc_id"].as_str().unwrap()]);
    let stored = shown["text"].as_str().unwrap().as_bytes();
    let spans = hit["spans"].as_array().unwrap();
    for span in spans {
        let (start, end) = (span[0].as_u64().unwrap() as usize, span[1].as_u64().unwrap() as usize);
        let bytes = std::str::from_utf8(&stored[start..end]).unwrap();
        assert!(hit["text"].as_str().unwrap().contains(bytes));
    }
    assert_eq!(hit["locations"].as_array().unwrap().len(), spans.len(), "{hit}");
    hit
}

#[test]
#[ignore = "real tier (scripts/test.sh): Debian's python3-doc"]
fn html_pages_give_main_content_heading_paths_and_element_paths() {
    let docs = python_docs();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let pages = [docs.join("json.html"), docs.join("os.html"), docs.join("pathlib.html")];
    let args: Vec<&str> = pages.iter().map(|p| p.to_str().unwrap()).collect();
    let mut add = vec!["add", "--chunker", "paragraphs"];
    add.extend(&args);
    assert_eq!(json(&store, &add)["added"], 3);

    let hit = top_hit(&store, "Serialize obj as a JSON formatted stream to fp", None);
    assert_eq!(hit["doc_id"], args[0]);
    assert!(hit["text"].as_str().unwrap().starts_with("Serialize obj as a JSON formatted stream"));
    assert!(hit["headings"].as_str().unwrap().ends_with("## Basic Usage"), "{hit}");
    assert_eq!(
        hit["locations"][0]["element"],
        "/html/body/div[3]/div[1]/div/div/section/section[1]/dl[1]/dd/p[1]"
    );
    let shown = json(&store, &["show", args[0]]);
    assert_eq!(shown["title"], "json — JSON encoder and decoder — Python 3.11.2 documentation");
    let text = shown["text"].as_str().unwrap();
    assert!(text.starts_with("# json — JSON encoder and decoder"), "navigation is left out");
    assert!(!text.contains("Table of Contents") && !text.contains("¶"));
    assert!(text.contains("```\n>>> import json"), "examples are fenced code");
}

#[test]
#[ignore = "real tier (scripts/test.sh): Debian's live-manual-epub"]
fn epub_books_in_english_and_japanese() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let en = format!("{LIVE_MANUAL}/live-manual.en.epub");
    let ja = format!("{LIVE_MANUAL}/live-manual.ja.epub");
    let added = json(&store, &["add", &en, &ja, "--analyzer", "cjk", "--chunker", "paragraphs"]);
    assert_eq!(added["added"], 2);
    let path = "OEBPS/customizing-run-time-behaviours.xhtml#/html/body/div/div[50]/p";

    let hit =
        top_hit(&store, "reboot into your live medium with the boot parameter persistence", None);
    assert_eq!(hit["doc_id"], en.as_str());
    assert_eq!(
        hit["text"],
        "Now, reboot into your live medium with the boot parameter \"persistence\"."
    );
    assert_eq!(hit["locations"][0]["element"], path);
    assert!(hit["headings"].as_str().unwrap().contains("Customizing run time behaviours"));

    let hit =
        top_hit(&store, "ブートパラメータ「persistence」を指定して Live メディアでリブート", None);
    assert_eq!(hit["doc_id"], ja.as_str());
    assert_eq!(
        hit["text"],
        "ブートパラメータ「persistence」を指定して Live メディアでリブートします。"
    );
    assert_eq!(hit["locations"][0]["element"], path);
    assert_eq!(json(&store, &["show", &ja])["title"], "Live システムマニュアル");
}

#[test]
#[ignore = "real tier (scripts/test.sh): Word documents from Debian's previsat and python3-pattern"]
fn word_documents_in_english_and_french() {
    let root = unpacked();
    let manuals = root.join("usr/share/Astropedia/PreviSat/doc");
    let carroll = root.join("usr/share/doc/python3-pattern/test/corpora/carroll-lookingglass.docx");
    let en = manuals.join("PreviSat_en.docx");
    let fr = manuals.join("PreviSat_fr.docx");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let files = [&en, &fr, &carroll].map(|p| p.to_str().unwrap());
    let added = json(&store, &["add", files[0], files[1], files[2], "--chunker", "sentences"]);
    assert_eq!(added["added"], 3);

    let hit = top_hit(&store, "free open source software to track artificial satellites", None);
    assert_eq!(hit["doc_id"], en.to_str().unwrap());
    assert_eq!(
        hit["text"],
        "PreviSat is free open source software to track artificial satellites on a world map."
    );
    assert_eq!(hit["locations"][0]["element"], "/w:document/w:body/w:p[42]");
    assert_eq!(
        hit["headings"], "# Overview",
        "heading styles (`heading 1`, id Titre1) are headings"
    );

    let hit =
        top_hit(&store, "logiciel libre permettant de suivre les satellites artificiels", None);
    assert_eq!(hit["doc_id"], fr.to_str().unwrap());
    assert_eq!(hit["locations"][0]["element"], "/w:document/w:body/w:p[42]");
    assert_eq!(hit["headings"], "# Présentation");

    let hit = top_hit(&store, "What volcano said the King", None);
    assert_eq!(hit["doc_id"], carroll.to_str().unwrap());
    assert_eq!(hit["text"], "'What volcano?'", "UAX #29 ends a sentence after ?'");
    assert_eq!(hit["locations"][0]["element"], "/w:document/w:body/w:p[27]");

    let text = json(&store, &["show", en.to_str().unwrap()])["text"].as_str().unwrap().to_string();
    assert!(text.starts_with("# Overview"), "the table of contents is left out");
    assert!(text.contains("| "), "tables are rows");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PDFs from Debian's previsat and python3-pattern"]
fn pdf_pages_in_english_and_french() {
    let root = unpacked();
    let manuals = root.join("usr/share/Astropedia/PreviSat/doc");
    let carroll = root.join("usr/share/doc/python3-pattern/test/corpora/carroll-wonderland.pdf");
    let (en, fr) = (manuals.join("PreviSat_en.pdf"), manuals.join("PreviSat_fr.pdf"));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let files = [&en, &fr, &carroll].map(|p| p.to_str().unwrap());
    let added = json(&store, &["add", files[0], files[1], files[2], "--chunker", "paragraphs"]);
    assert_eq!(added["added"], 3);

    let hit = top_hit(&store, "free open source software to track artificial satellites", None);
    assert_eq!(hit["doc_id"], files[0]);
    assert!(hit["text"].as_str().unwrap().starts_with(
        "PreviSat is free open source software to track artificial satellites on a world map. It is developed"
    ));
    assert_eq!(hit["locations"][0]["pages"], serde_json::json!([3]));
    let hit =
        top_hit(&store, "logiciel libre permettant de suivre les satellites artificiels", None);
    assert_eq!(hit["doc_id"], files[1]);
    assert_eq!(hit["locations"][0]["pages"], serde_json::json!([3]));
    let hit = top_hit(&store, "Curiouser and curiouser cried Alice", None);
    assert_eq!(hit["doc_id"], files[2]);
    assert_eq!(hit["locations"][0]["pages"], serde_json::json!([10]));

    // Running headers and page numbers are gone; lines are joined into paragraphs.
    let text = json(&store, &["show", files[2]])["text"].as_str().unwrap().to_string();
    assert!(text.split("\n\n").all(|block| !block.trim().chars().all(|c| c.is_ascii_digit())));
    assert!(!text.contains("CHAPTER"), "the running title of even pages (`18 CHAPTER 1. …`)");
    assert!(text.contains("leave off this minute"), "ligatures (ﬀ) are letters again");
    let chunks = ok(&store, &["show", files[2], "--chunks"]);
    assert!(chunks.contains("@ p. 10"), "show --chunks gives pages");
}

/// A well-formed one-page PDF whose page draws nothing: what a scan without OCR looks like to a
/// text extractor.
fn textless_pdf() -> Vec<u8> {
    use ckeep_testkit::pdf::{pdf, stream};
    pdf(&[
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".into(),
        stream("", ""),
    ])
}

#[test]
#[ignore = "real tier (scripts/test.sh): Debian's live-manual-epub and previsat"]
fn broken_files_are_named_and_skippable() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(format!("{LIVE_MANUAL}/live-manual.en.epub")).unwrap();
    let books = dir.path().join("books");
    std::fs::create_dir(&books).unwrap();
    std::fs::write(books.join("truncated.epub"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(books.join("whole.epub"), &bytes).unwrap();
    std::fs::write(
        books.join("empty.html"),
        "<html><body><nav>only navigation</nav></body></html>",
    )
    .unwrap();
    let manual =
        std::fs::read(unpacked().join("usr/share/Astropedia/PreviSat/doc/PreviSat_en.pdf"))
            .unwrap();
    std::fs::write(books.join("truncated.pdf"), &manual[..manual.len() / 2]).unwrap();
    std::fs::write(books.join("scanned.pdf"), textless_pdf()).unwrap();
    let store = dir.path().join("s");
    let (code, err) = fails(&store, &["add", books.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("truncated.epub") && err.contains("not an EPUB"), "{err}");
    assert!(err.contains("empty.html") && err.contains("empty"), "{err}");
    assert!(err.contains("truncated.pdf: not a readable PDF"), "{err}");
    assert!(err.contains("scanned.pdf: no text layer"), "{err}");
    assert!(!store.exists() || json(&store, &["stats"])["stats"]["documents"] == 0);
    let added = json(&store, &["add", books.to_str().unwrap(), "--keep-going"]);
    assert_eq!(added["added"], 1);
    assert_eq!(added["skipped"].as_array().unwrap().len(), 4);
}

#[test]
fn extract_prints_the_text_add_would_store() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tea.html");
    std::fs::write(
        &page,
        "<html><head><title>Tea</title></head><body><nav>Home</nav><main><h1>Oolong</h1>\
         <p>Oolong is partly oxidised.</p><p>乌龙茶产于福建。</p></main></body></html>",
    )
    .unwrap();
    let unused_store = dir.path().join("never-made");
    let text = ok(&unused_store, &["extract", page.to_str().unwrap()]);
    assert_eq!(text, "# Oolong\n\nOolong is partly oxidised.\n\n乌龙茶产于福建。\n");
    let doc = &json(&unused_store, &["extract", page.to_str().unwrap()])["documents"][0];
    assert_eq!(doc["title"], "Tea");
    assert_eq!(doc["metadata"]["source_map"]["paths"][2], "/html/body/main/p[2]");
    let stats = json(&unused_store, &["extract", "--stats", page.to_str().unwrap()]);
    assert_eq!(stats["formats"]["html"]["documents"], 1);
    assert!(!unused_store.exists(), "extract needs no store");
    let broken = dir.path().join("broken.pdf");
    std::fs::write(&broken, b"%PDF-1.7 nothing else").unwrap();
    let (code, err) = fails(&unused_store, &["extract", broken.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("broken.pdf: not a readable PDF"), "{err}");
}
