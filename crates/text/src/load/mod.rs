//! Inputs to [`Document`]s: plain text, Markdown, Jupyter notebooks, JSONL (which also reads a
//! BEIR `corpus.jsonl`), HTML, EPUB, DOCX, PDF and directories of those.
//!
//! A file is loaded whole or not at all: one bad JSONL line rejects the file, with every bad line
//! listed, so nothing is silently dropped. Directories are walked recursively in name order,
//! skipping hidden files and whatever `.gitignore`/`.ignore`/`.ckeepignore` files exclude; inside
//! a directory only files with a known text extension are read, while a file named explicitly is
//! read whatever its extension (as plain text when the extension is unknown). Each format that
//! needs parsing has its own file (`jsonl`, `markdown`, `html`, `epub`, `docx`, `pdf`); the
//! extracting ones build their text and source map through `blocks`.

mod archive;
mod blocks;
mod docx;
mod dom;
mod epub;
mod html;
mod jsonl;
mod markdown;
mod pdf;
mod pdf_forms;

use std::io::Read;
use std::path::{Path, PathBuf};

use ckeep_core::Document;

use crate::Error;
use crate::decode::decode;
use markdown::{first_h1, notebook_text};

/// Default largest document accepted: 100 MiB of text.
pub const DEFAULT_MAX_DOC_BYTES: u64 = 100 * 1024 * 1024;

/// A JSONL file, which holds many documents, may be this many times the document limit (1 GB
/// by default): it is read whole and its documents are held together, about twice its size
/// in memory.
pub const JSONL_FILE_FACTOR: u64 = 10;

/// How inputs are read.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Replace invalid UTF-8 with U+FFFD (and warn) instead of rejecting the file.
    pub lossy: bool,
    /// Documents larger than this many bytes are rejected.
    pub max_doc_bytes: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self { lossy: false, max_doc_bytes: DEFAULT_MAX_DOC_BYTES }
    }
}

/// The formats a file can be read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The whole file is one document; title from the file name.
    Plain,
    /// One document; title from the first `# ` heading.
    Markdown,
    /// A Jupyter notebook: markdown cells as they are, code cells as fenced blocks.
    Notebook,
    /// One JSON object per line: `id`/`_id`/`doc_id`, `text`/`contents`, optional `title` and
    /// `metadata`; other fields are kept in the metadata.
    Jsonl,
    /// An HTML page: its main content as Markdown-like blocks, mapped to element paths.
    Html,
    /// An EPUB book: the XHTML of its spine in reading order, read as HTML pages.
    Epub,
    /// A Word document (DOCX): paragraphs, heading styles as headings, tables as rows.
    Docx,
    /// A PDF: each page's text in paragraphs, running headers and footers dropped.
    Pdf,
}

/// The extensions a directory walk reads, for messages.
pub const KNOWN_EXTENSIONS: &str = "txt, md, rst, ipynb, jsonl, html, epub, docx, pdf";

/// Every file extension a directory walk reads (lower case), with the format it is read as: the
/// one table, which the Python package also asks when it tells a path from a text.
pub const EXTENSIONS: &[(&str, Format)] = &[
    ("txt", Format::Plain),
    ("text", Format::Plain),
    ("rst", Format::Plain),
    ("org", Format::Plain),
    ("tex", Format::Plain),
    ("md", Format::Markdown),
    ("markdown", Format::Markdown),
    ("mdx", Format::Markdown),
    ("ipynb", Format::Notebook),
    ("jsonl", Format::Jsonl),
    ("ndjson", Format::Jsonl),
    ("html", Format::Html),
    ("htm", Format::Html),
    ("xhtml", Format::Html),
    ("epub", Format::Epub),
    ("docx", Format::Docx),
    ("pdf", Format::Pdf),
];

impl Format {
    /// The format implied by a file extension, if it is one we read inside directories.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        EXTENSIONS.iter().find(|(e, _)| *e == ext).map(|&(_, format)| format)
    }
}

/// One input source: a file on disk, or standard input read up front.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file and the format it is read as.
    File(PathBuf, Format),
    /// Bytes read from standard input, loaded as plain text with id `stdin`.
    Stdin(Vec<u8>),
}

impl Source {
    /// How messages name this source.
    pub fn name(&self) -> String {
        match self {
            Source::File(p, _) => display_id(p),
            Source::Stdin(_) => "stdin".to_string(),
        }
    }
}

/// What loading one source gave: its documents and any warnings (e.g. lossy decoding).
#[derive(Debug, Default)]
pub struct Loaded {
    /// The documents, in input order.
    pub documents: Vec<Document>,
    /// Things the user should know that did not stop the load.
    pub warnings: Vec<String>,
}

/// Every source of a command loaded and checked before anything is written (see
/// [`Loader::check_all`]).
#[derive(Debug, Default)]
pub struct Checked {
    /// The sources that loaded, each with its documents while they fit the memory budget
    /// (`None`: load it again when it is written).
    pub loaded: Vec<(Source, Option<Loaded>)>,
    /// The sources that did not load, with why.
    pub failed: Vec<(Source, Error)>,
    /// The warnings of every source that loaded.
    pub warnings: Vec<String>,
}

impl Checked {
    /// How many documents the loaded sources hold, as far as is known without reloading.
    pub fn documents_known(&self) -> u64 {
        self.loaded.iter().map(|(_, l)| l.as_ref().map_or(0, |l| l.documents.len() as u64)).sum()
    }
}

/// Reads inputs into documents under one set of [`LoadOptions`].
#[derive(Debug, Clone, Default)]
pub struct Loader {
    opts: LoadOptions,
}

impl Loader {
    /// A loader with the given options.
    pub fn new(opts: LoadOptions) -> Self {
        Self { opts }
    }

    /// Expands paths (`-` is standard input) into sources, walking directories.
    pub fn sources(&self, paths: &[PathBuf]) -> Result<Vec<Source>, Error> {
        let mut out = Vec::new();
        for path in paths {
            if path.as_os_str() == "-" {
                // One document: read no further than the limit says it may be.
                let limit = self.opts.max_doc_bytes;
                let mut bytes = Vec::new();
                std::io::stdin()
                    .take(limit.saturating_add(1))
                    .read_to_end(&mut bytes)
                    .map_err(|source| Error::Io { path: path.clone(), source })?;
                if bytes.len() as u64 > limit {
                    return Err(Error::TooLarge { origin: "stdin".into(), size: limit + 1, limit });
                }
                out.push(Source::Stdin(bytes));
                continue;
            }
            let meta = std::fs::metadata(path)
                .map_err(|source| Error::Io { path: path.clone(), source })?;
            if meta.is_dir() {
                walk_dir(path, &mut out)?;
            } else {
                out.push(Source::File(
                    path.clone(),
                    Format::from_path(path).unwrap_or(Format::Plain),
                ));
            }
        }
        Ok(out)
    }

    /// Loads every source once to check it, keeping the documents in memory up to `keep_bytes`
    /// of text (so a small or medium corpus is read once; a larger one is read again when it is
    /// written); `progress` is called after each source.
    pub fn check_all(
        &self,
        sources: Vec<Source>,
        keep_bytes: usize,
        mut progress: impl FnMut(),
    ) -> Checked {
        let mut checked = Checked::default();
        let mut kept_bytes = 0usize;
        for source in sources {
            match self.load(&source) {
                Ok(loaded) => {
                    checked.warnings.extend(loaded.warnings.iter().cloned());
                    let bytes: usize = loaded.documents.iter().map(|d| d.text.len()).sum();
                    let keep = kept_bytes + bytes <= keep_bytes;
                    kept_bytes += if keep { bytes } else { 0 };
                    checked.loaded.push((source, keep.then_some(loaded)));
                }
                Err(e) => checked.failed.push((source, e)),
            }
            progress();
        }
        checked
    }

    /// Loads one source whole, or fails with every problem found in it.
    pub fn load(&self, source: &Source) -> Result<Loaded, Error> {
        let (origin, format, bytes) = match source {
            Source::Stdin(bytes) => ("stdin".to_string(), Format::Plain, bytes.clone()),
            Source::File(path, format) => {
                let origin = display_id(path);
                let size = std::fs::metadata(path)
                    .map_err(|source| Error::Io { path: path.clone(), source })?
                    .len();
                // A JSONL file holds many documents, each held to the document limit.
                let limit = if *format == Format::Jsonl {
                    self.opts.max_doc_bytes.saturating_mul(JSONL_FILE_FACTOR)
                } else {
                    self.opts.max_doc_bytes
                };
                if size > limit {
                    return Err(Error::TooLarge { origin, size, limit });
                }
                let bytes = std::fs::read(path)
                    .map_err(|source| Error::Io { path: path.clone(), source })?;
                (origin, *format, bytes)
            }
        };
        let stem = match source {
            Source::File(p, _) => p.file_stem().map(|s| s.to_string_lossy().into_owned()),
            Source::Stdin(_) => None,
        }
        .unwrap_or_default();
        self.load_bytes(&origin, &stem, format, bytes)
    }

    /// Loads `bytes` as a file of `format` would be, named `origin` in messages and titled
    /// `stem` when the format gives no title: what [`Loader::load`] does once a file is read,
    /// for bytes that never were a file (a fuzzer's, a request's).
    pub fn load_bytes(
        &self,
        origin: &str,
        stem: &str,
        format: Format,
        bytes: Vec<u8>,
    ) -> Result<Loaded, Error> {
        let (origin, stem) = (origin.to_string(), stem.to_string());
        // Packaged formats are read from their bytes; their text is extracted, not decoded.
        let packaged = match format {
            Format::Epub => {
                Some(epub::book(&bytes, self.opts.max_doc_bytes).map(|b| (b.title, b.blocks)))
            }
            Format::Docx => {
                Some(docx::word(&bytes, self.opts.max_doc_bytes).map(|w| (w.title, w.blocks)))
            }
            Format::Pdf => Some(pdf::document(&bytes).map(|b| (String::new(), b))),
            Format::Plain | Format::Markdown | Format::Notebook | Format::Jsonl | Format::Html => {
                None
            }
        };
        if let Some(extracted) = packaged {
            let (title, blocks) =
                extracted.map_err(|reason| Error::Unreadable { origin: origin.clone(), reason })?;
            let title = if title.is_empty() { stem } else { title };
            let documents = vec![self.extracted(&origin, title, blocks)?];
            return Ok(Loaded { documents, warnings: Vec::new() });
        }
        let mut loaded = Loaded::default();
        let bytes = if format == Format::Html {
            html::decode_legacy(bytes, &origin, &mut loaded.warnings)
        } else {
            bytes
        };
        let decoded = decode(bytes, &origin, self.opts.lossy)?;
        if decoded.replaced > 0 {
            loaded.warnings.push(format!(
                "{origin}: replaced {} invalid UTF-8 sequence(s) with U+FFFD",
                decoded.replaced
            ));
        }
        let text = decoded.text;
        loaded.documents = match format {
            Format::Plain => vec![self.single(&origin, stem, text)?],
            Format::Markdown => {
                let title = first_h1(&text).unwrap_or(stem);
                vec![self.single(&origin, title, text)?]
            }
            Format::Notebook => {
                let text = notebook_text(&text).map_err(|m| Error::Malformed {
                    origin: origin.clone(),
                    problems: vec![(0, m)],
                })?;
                let title = first_h1(&text).unwrap_or(stem);
                vec![self.single(&origin, title, text)?]
            }
            Format::Jsonl => self.jsonl(&origin, &text)?,
            Format::Epub | Format::Docx | Format::Pdf => {
                unreachable!("read from their bytes above")
            }
            Format::Html => {
                let page = html::page(&text, "", blocks::Blocks::default())
                    .map_err(|reason| Error::Unreadable { origin: origin.clone(), reason })?;
                let title = if page.title.is_empty() { stem } else { page.title };
                vec![self.extracted(&origin, title, page.blocks)?]
            }
        };
        Ok(loaded)
    }

    fn single(&self, origin: &str, title: String, text: String) -> Result<Document, Error> {
        self.check_text(origin, &text)?;
        let mut doc = Document::new(origin, title, text);
        doc.source = origin.to_string();
        Ok(doc)
    }

    /// A document of extracted text, its source map in the metadata (no text at all is
    /// [`Error::Empty`], as for any file).
    fn extracted(
        &self,
        origin: &str,
        title: String,
        blocks: blocks::Blocks,
    ) -> Result<Document, Error> {
        let (text, metadata) = blocks.finish();
        let mut doc = self.single(origin, title, text)?;
        doc.metadata = metadata;
        Ok(doc)
    }

    fn check_text(&self, origin: &str, text: &str) -> Result<(), Error> {
        if text.trim().is_empty() {
            return Err(Error::Empty { origin: origin.to_string() });
        }
        if text.len() as u64 > self.opts.max_doc_bytes {
            return Err(Error::TooLarge {
                origin: origin.to_string(),
                size: text.len() as u64,
                limit: self.opts.max_doc_bytes,
            });
        }
        Ok(())
    }
}

/// The file a stored document's `source` names, if the loader made it from a file a directory
/// walk reads: the path itself (`notes/a.md`), or a JSONL file without its `:LINE`. Sources that
/// name no such file (`stdin`, or what a server's client sent) give `None`, so `sync` never
/// prunes them.
pub fn source_file(source: &str) -> Option<&Path> {
    let path = Path::new(source);
    if source != "stdin" && Format::from_path(path).is_some() {
        return Some(path);
    }
    let (file, line) = source.rsplit_once(':')?;
    let file = Path::new(file);
    let numbered = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
    (numbered && Format::from_path(file) == Some(Format::Jsonl)).then_some(file)
}

/// A path as a document id: as given, without a leading `./`.
fn display_id(path: &Path) -> String {
    let s = path.to_string_lossy();
    s.strip_prefix("./").unwrap_or(&s).to_string()
}

fn walk_dir(dir: &Path, out: &mut Vec<Source>) -> Result<(), Error> {
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(true)
        .require_git(false)
        .add_custom_ignore_filename(".ckeepignore")
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| Error::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(format) = Format::from_path(entry.path()) {
            out.push(Source::File(entry.into_path(), format));
        }
    }
    Ok(())
}

#[cfg(test)]
mod hostile_tests;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    fn load_one(path: &Path) -> Result<Loaded, Error> {
        let loader = Loader::default();
        let sources = loader.sources(&[path.to_path_buf()])?;
        loader.load(&sources[0])
    }

    #[test]
    fn jsonl_reads_id_variants_and_keeps_extra_fields() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "c.jsonl",
            b"{\"_id\": \"a\", \"title\": \"T\", \"text\": \"x y\", \"metadata\": {}}\n\n{\"doc_id\": 7, \"text\": \"z\", \"lang\": \"en\"}\r\n",
        );
        let docs = load_one(&p).unwrap().documents;
        assert_eq!(docs.len(), 2);
        assert_eq!((docs[0].id.as_str(), docs[0].title.as_str()), ("a", "T"));
        assert_eq!(docs[0].metadata, Value::Null);
        assert_eq!(docs[1].id, "7");
        assert_eq!(docs[1].metadata, serde_json::json!({"lang": "en"}));
        assert!(docs[1].source.ends_with("c.jsonl:3"));
    }

    #[test]
    fn jsonl_reports_every_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "bad.jsonl",
            b"{\"id\":\"a\",\"text\":\"ok\"}\n{oops\n[1]\n{\"id\":\"b\"}\n{\"id\":\"a\",\"text\":\"again\"}\n{\"id\":\"c\",\"text\":\" \"}\n",
        );
        let Err(Error::Malformed { problems, .. }) = load_one(&p) else {
            panic!("expected Malformed")
        };
        let lines: Vec<usize> = problems.iter().map(|p| p.0).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6]);
        assert!(problems[3].1.contains("duplicate id `a` (first seen on line 1)"));
        assert!(problems[4].1.contains("empty text"));
    }

    #[test]
    fn notebook_keeps_code_as_fenced_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let nb = serde_json::json!({
            "metadata": {"kernelspec": {"language": "python"}},
            "cells": [
                {"cell_type": "markdown", "source": ["# Intro\n", "Some text."]},
                {"cell_type": "code", "source": "print(1)", "outputs": [{"text": "1"}]},
                {"cell_type": "markdown", "source": "   "},
            ]
        });
        let p = write(dir.path(), "n.ipynb", nb.to_string().as_bytes());
        let doc = &load_one(&p).unwrap().documents[0];
        assert_eq!(doc.text, "# Intro\nSome text.\n\n```python\nprint(1)\n```");
        assert_eq!(doc.title, "Intro");
    }

    #[test]
    fn bad_inputs_are_named_errors() {
        let dir = tempfile::tempdir().unwrap();
        let empty = write(dir.path(), "empty.txt", b"  \n\n");
        assert!(matches!(load_one(&empty), Err(Error::Empty { .. })));
        let bin = write(dir.path(), "b.txt", b"abc\x00def");
        assert!(matches!(load_one(&bin), Err(Error::Binary { .. })));
        let nb = write(dir.path(), "x.ipynb", b"{\"cells\": 3}");
        assert!(matches!(load_one(&nb), Err(Error::Malformed { .. })));
        let big = write(dir.path(), "big.txt", b"0123456789");
        let loader = Loader::new(LoadOptions { max_doc_bytes: 5, ..LoadOptions::default() });
        let src = loader.sources(&[big]).unwrap();
        assert!(matches!(loader.load(&src[0]), Err(Error::TooLarge { size: 10, limit: 5, .. })));
    }

    #[test]
    fn source_file_names_files_a_walk_reads() {
        let cases = [
            ("docs/a.md", Some("docs/a.md")),
            ("c.jsonl:12", Some("c.jsonl")),
            ("dir:x/c.ndjson:3", Some("dir:x/c.ndjson")),
            ("notes.txt:3", None),
            ("c.jsonl:", None),
            ("stdin", None),
            ("mcp", None),
            ("image.png", None),
        ];
        for (source, file) in cases {
            assert_eq!(source_file(source), file.map(Path::new), "{source}");
        }
    }

    #[test]
    fn directories_skip_hidden_ignored_and_unknown_files() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "b.md", b"# B\ntext");
        write(dir.path(), "a.txt", b"a");
        write(dir.path(), "sub/c.txt", b"c");
        write(dir.path(), ".hidden.txt", b"h");
        write(dir.path(), "skip.txt", b"s");
        write(dir.path(), "image.png", b"\x89PNG");
        write(dir.path(), ".ckeepignore", b"skip.txt\n");
        let names: Vec<String> = Loader::default()
            .sources(&[dir.path().to_path_buf()])
            .unwrap()
            .iter()
            .map(|s| Path::new(&s.name()).file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt", "b.md", "c.txt"]);
    }
}
