//! Evaluation datasets: the BEIR layout and the "long document" layout.
//!
//! - BEIR: `DIR/corpus.jsonl`, `DIR/queries.jsonl` (`_id`, `text`), `DIR/qrels/<split>.tsv`.
//!   Only queries judged in the split are run.
//! - Long documents: `docs.jsonl` (`doc_id`, `title`, `text`) and `queries.jsonl` (`qid`,
//!   `question`, `doc_id`, optional `pid`, `answers` as strings or `{text, start, end}` objects);
//!   the qrels are document-level (`doc_id` relevant with grade 1) and the answers are kept for
//!   answer containment.
//! - fastbook-benchmark: `fastbook-benchmark.json` with `data/NN_*.ipynb` notebooks (or
//!   `data/chapter_N.txt` where there is no notebook); each chapter is one document, and every
//!   question's gold passages are its answers. Split `chN` keeps chapter N; `all`/`test` keeps all.
//!
//! Every reader lists malformed lines by number; nothing is dropped silently.

use std::path::{Path, PathBuf};

use ckeep_core::Document;
use ckeep_text::Loader;
use ckeep_text::load::{Format, Source};
use serde_json::Value;

use crate::{Error, Qrels};

/// One query of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Query id.
    pub id: String,
    /// Query text.
    pub text: String,
    /// Gold answer strings (long-document layout), for answer containment.
    pub answers: Vec<String>,
}

/// Documents, queries and judgements.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// A short name for reports.
    pub name: String,
    /// The corpus.
    pub docs: Vec<Document>,
    /// Queries to run (those with judgements), in id order.
    pub queries: Vec<Query>,
    /// Judgements.
    pub qrels: Qrels,
    /// Questions the corpus does not answer (SQuAD 2.0's `is_impossible`), in id order:
    /// retrieval metrics leave them out, `eval answers` asks them to score abstention.
    pub unanswerable: Vec<Query>,
    /// Passage-level relevance (`--relevance passage`): each document's passages as
    /// `(passage id, byte span)`; results are then judged by the passage their best chunk
    /// starts in, and the qrels name passages.
    pub passages: std::collections::HashMap<String, Vec<(String, ckeep_core::Span)>>,
    /// Corpus records left out because their text is empty (`FILE:LINE: why`); no system can
    /// retrieve them, and `eval run --strict` refuses the dataset instead.
    pub skipped: Vec<String>,
    /// Spans the queries' `mask` fields removed from the corpus (synthetic sets, see
    /// [`crate::synth`]), so held-out text is not found word for word.
    pub masked: usize,
    /// The fields strategies that name no representation search: title and text for BEIR
    /// (as its published figures index them), the text elsewhere; `--fields` overrides.
    pub fields: ckeep_engine::Fields,
    /// Near-copy families of documents (`families.tsv` beside the corpus), which
    /// `alpha-ndcg@K` and `dup@K` read; empty: every document is its own.
    pub families: crate::Families,
}

impl Dataset {
    /// The passage of document `doc` that byte `at` falls in, if passages are known.
    pub fn passage_at(&self, doc: &str, at: usize) -> Option<&str> {
        self.passages
            .get(doc)?
            .iter()
            .find(|(_, span)| at >= span.start && at < span.end.max(span.start + 1))
            .map(|(pid, _)| pid.as_str())
    }
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path)
        .map_err(|source| Error::Io { path: path.display().to_string(), source })
}

/// The documents of a JSONL corpus, and one message per record left out for its empty text.
/// Any other problem refuses the file, each listed once by line.
fn load_docs(path: &Path) -> Result<(Vec<Document>, Vec<String>), Error> {
    let origin = path.display().to_string();
    let text = read(path)?;
    match Loader::default().jsonl_skipping_empty(&origin, &text) {
        Ok((docs, skipped)) => {
            let skipped = skipped.into_iter().map(|(l, m)| format!("{origin}:{l}: {m}")).collect();
            Ok((docs, skipped))
        }
        Err(ckeep_text::Error::Malformed { origin, problems }) => {
            Err(Error::Malformed { origin, problems })
        }
        Err(e) => Err(Error::Malformed { origin, problems: vec![(0, e.to_string())] }),
    }
}

/// JSON objects of a JSONL file, with malformed lines collected.
/// A JSON object as read from one JSONL line.
type JsonObject = serde_json::Map<String, Value>;

/// `(line number, message)` of a malformed line.
type Problem = (usize, String);

/// The objects of a JSONL file with their line numbers, and its malformed lines.
type JsonLines = (Vec<(usize, JsonObject)>, Vec<Problem>);

/// Objects of a JSONL file and the lines that are not objects, for the caller to report with
/// its own problems.
fn jsonl(path: &Path) -> Result<JsonLines, Error> {
    let text = read(path)?;
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => out.push((i + 1, o)),
            Ok(_) => problems.push((i + 1, "expected a JSON object".to_string())),
            Err(e) => problems.push((i + 1, format!("invalid JSON: {e}"))),
        }
    }
    Ok((out, problems))
}

fn string_field(obj: &serde_json::Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match obj.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    })
}

/// Loads a BEIR dataset directory with the given qrels split.
pub fn load_beir(dir: &Path, split: &str) -> Result<Dataset, Error> {
    let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
    let qrels = Qrels::read(&qrels_path)?;
    let (docs, skipped) = load_docs(&dir.join("corpus.jsonl"))?;
    let queries_path = dir.join("queries.jsonl");
    let (objects, mut problems) = jsonl(&queries_path)?;
    let mut queries = Vec::new();
    for (line, obj) in objects {
        match (
            string_field(&obj, &["_id", "id", "qid"]),
            string_field(&obj, &["text", "question", "query"]),
        ) {
            (Some(id), Some(text)) => {
                if qrels.0.contains_key(&id) {
                    queries.push(Query { id, text, answers: Vec::new() });
                }
            }
            _ => problems.push((line, "needs `_id` and `text`".to_string())),
        }
    }
    if !problems.is_empty() {
        problems.sort_unstable();
        return Err(Error::Malformed { origin: queries_path.display().to_string(), problems });
    }
    check_judged_queries(&qrels, &queries, &queries_path)?;
    queries.sort_by(|a, b| a.id.cmp(&b.id));
    let name =
        dir.file_name().map_or_else(|| "beir".to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Dataset {
        name: format!("{name}/{split}"),
        docs,
        queries,
        qrels,
        unanswerable: Vec::new(),
        passages: std::collections::HashMap::new(),
        skipped,
        masked: 0,
        fields: ckeep_engine::Fields::TitleText,
        families: families_in(dir)?,
    })
}

/// The near-copy families a dataset directory lists in `families.tsv`, if it has one.
fn families_in(dir: &Path) -> Result<crate::Families, Error> {
    let path = dir.join("families.tsv");
    if path.is_file() { crate::Families::read(&path) } else { Ok(crate::Families::default()) }
}

/// Every judged query must have a text; a judged query without one is an error, not a skip.
fn check_judged_queries(qrels: &Qrels, queries: &[Query], path: &Path) -> Result<(), Error> {
    let missing: Vec<(usize, String)> = qrels
        .0
        .keys()
        .filter(|q| !queries.iter().any(|x| &x.id == *q))
        .take(20)
        .map(|q| (0, format!("judged query `{q}` has no text in this file")))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::Malformed { origin: path.display().to_string(), problems: missing })
    }
}

/// Loads the long-document layout from explicit files, with document-level relevance.
pub fn load_longdoc(docs_path: &Path, queries_path: &Path) -> Result<Dataset, Error> {
    load_longdoc_at(docs_path, queries_path, false)
}

/// Each document's `paragraphs` (`pid`, `start`, `end` in characters, as Python slices them)
/// as byte spans of its text.
fn passage_spans(
    docs_path: &Path,
    docs: &[Document],
) -> Result<std::collections::HashMap<String, Vec<(String, ckeep_core::Span)>>, Error> {
    let (objects, mut problems) = jsonl(docs_path)?;
    let mut out = std::collections::HashMap::new();
    for (line, obj) in objects {
        let Some(id) = string_field(&obj, &["doc_id", "_id", "id"]) else { continue };
        let Some(Value::Array(paras)) = obj.get("paragraphs") else {
            problems
                .push((line, "passage relevance needs `paragraphs` [{pid, start, end}]".into()));
            continue;
        };
        let Some(doc) = docs.iter().find(|d| d.id == id) else { continue };
        // Character offset → byte offset of the stored text (the loader keeps the text as is).
        let bytes: Vec<usize> =
            doc.text.char_indices().map(|(b, _)| b).chain([doc.text.len()]).collect();
        let mut spans = Vec::new();
        for p in paras {
            let (Some(pid), Some(start), Some(end)) =
                (p["pid"].as_str(), p["start"].as_u64(), p["end"].as_u64())
            else {
                problems.push((line, "a paragraph needs `pid`, `start` and `end`".into()));
                continue;
            };
            match (bytes.get(start as usize), bytes.get(end as usize)) {
                (Some(&s), Some(&e)) if s <= e => {
                    spans.push((pid.to_string(), ckeep_core::Span::new(s, e)));
                }
                _ => problems.push((line, format!("paragraph {pid} is outside the text"))),
            }
        }
        out.insert(id, spans);
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(Error::Malformed { origin: docs_path.display().to_string(), problems })
    }
}

/// Loads the long-document layout; with `passages`, relevance is the query's `pid` (the
/// paragraph that answers it) rather than its document.
#[allow(clippy::too_many_lines)] // one record's checks, in the order the layout states them
pub fn load_longdoc_at(
    docs_path: &Path,
    queries_path: &Path,
    passages: bool,
) -> Result<Dataset, Error> {
    let (mut docs, skipped) = load_docs(docs_path)?;
    let mut qrels = Qrels::default();
    let mut queries = Vec::new();
    let mut unanswerable = Vec::new();
    let mut masks: Vec<(String, bool, usize, usize)> = Vec::new();
    let (objects, mut problems) = jsonl(queries_path)?;
    for (line, obj) in objects {
        let (Some(id), Some(text), Some(doc)) = (
            string_field(&obj, &["qid", "_id", "id"]),
            string_field(&obj, &["question", "text", "query"]),
            string_field(&obj, &["doc_id"]),
        ) else {
            problems.push((line, "needs `qid`, `question` and `doc_id`".to_string()));
            continue;
        };
        let answers = match obj.get("answers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for a in items {
                    match a {
                        Value::String(s) => out.push(s.clone()),
                        Value::Object(o) => match o.get("text") {
                            Some(Value::String(s)) => out.push(s.clone()),
                            _ => problems
                                .push((line, "an answer object needs a `text` string".to_string())),
                        },
                        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => {
                            problems.push((
                                line,
                                "answers must be strings or {text, start, end} objects".to_string(),
                            ));
                        }
                    }
                }
                out
            }
            Some(_) => {
                problems.push((line, "`answers` must be an array".to_string()));
                Vec::new()
            }
        };
        if obj.get("is_impossible") == Some(&Value::Bool(true)) {
            // SQuAD v2 unanswerable questions have no relevant document.
            unanswerable.push(Query { id, text, answers: Vec::new() });
            continue;
        }
        match mask_spans(&obj) {
            Ok(found) => masks.extend(found),
            Err(message) => problems.push((line, message)),
        }
        let judged = if passages {
            let Some(pid) = string_field(&obj, &["pid"]) else {
                problems.push((line, "passage relevance needs a `pid`".to_string()));
                continue;
            };
            vec![pid]
        } else {
            let mut judged = vec![doc];
            match obj.get("relevant") {
                None | Some(Value::Null) => {}
                Some(Value::Array(more)) if more.iter().all(Value::is_string) => {
                    judged.extend(more.iter().filter_map(Value::as_str).map(str::to_string));
                }
                Some(_) => problems.push((line, "`relevant` must be an array of ids".into())),
            }
            judged
        };
        for j in judged {
            qrels.0.entry(id.clone()).or_default().insert(j, 1);
        }
        queries.push(Query { id, text, answers });
    }
    if !problems.is_empty() {
        problems.sort_unstable();
        return Err(Error::Malformed { origin: queries_path.display().to_string(), problems });
    }
    let masked = apply_masks(&mut docs, &masks).map_err(|m| Error::Malformed {
        origin: queries_path.display().to_string(),
        problems: vec![(0, m)],
    })?;
    queries.sort_by(|a, b| a.id.cmp(&b.id));
    queries.dedup_by(|a, b| a.id == b.id);
    unanswerable.sort_by(|a, b| a.id.cmp(&b.id));
    unanswerable.dedup_by(|a, b| a.id == b.id);
    let name = docs_path
        .file_stem()
        .map_or_else(|| "longdoc".to_string(), |n| n.to_string_lossy().into_owned());
    let (name, passages) = if passages {
        (format!("{name} (passages)"), passage_spans(docs_path, &docs)?)
    } else {
        (name, std::collections::HashMap::new())
    };
    Ok(Dataset {
        name,
        docs,
        queries,
        qrels,
        unanswerable,
        passages,
        skipped,
        masked,
        fields: ckeep_engine::Fields::Text,
        families: families_in(docs_path.parent().unwrap_or(Path::new(".")))?,
    })
}

/// A query's `mask` spans: `(doc_id, in the title, start, end)` in characters.
fn mask_spans(obj: &JsonObject) -> Result<Vec<(String, bool, usize, usize)>, String> {
    let items = match obj.get("mask") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("`mask` must be an array".into()),
    };
    items
        .iter()
        .map(|m| match (m["doc_id"].as_str(), m["start"].as_u64(), m["end"].as_u64()) {
            (Some(doc), Some(start), Some(end)) if start <= end => {
                let title = match m.get("field").and_then(Value::as_str) {
                    None | Some("text") => false,
                    Some("title") => true,
                    Some(other) => return Err(format!("unknown mask field `{other}`")),
                };
                Ok((doc.to_string(), title, start as usize, end as usize))
            }
            _ => Err("a mask needs `doc_id`, `start` and `end` (start ≤ end)".into()),
        })
        .collect()
}

/// Removes every masked span (characters of the text or title) from its document; the number
/// removed. A span outside its document, or naming no document, is an error: the set was made
/// from other documents.
fn apply_masks(
    docs: &mut [Document],
    masks: &[(String, bool, usize, usize)],
) -> Result<usize, String> {
    let mut by_doc: std::collections::HashMap<&str, Vec<(bool, usize, usize)>> =
        std::collections::HashMap::new();
    for (doc, title, start, end) in masks {
        by_doc.entry(doc.as_str()).or_default().push((*title, *start, *end));
    }
    let mut removed = 0;
    for doc in docs.iter_mut() {
        let Some(spans) = by_doc.remove(doc.id.as_str()) else { continue };
        for title in [false, true] {
            let field = if title { &mut doc.title } else { &mut doc.text };
            let mut spans: Vec<(usize, usize)> =
                spans.iter().filter(|s| s.0 == title).map(|s| (s.1, s.2)).collect();
            spans.sort_unstable();
            spans.dedup();
            let bytes: Vec<usize> =
                field.char_indices().map(|(b, _)| b).chain([field.len()]).collect();
            let mut kept = String::with_capacity(field.len());
            let mut at = 0;
            for (start, end) in spans {
                let (Some(&s), Some(&e)) = (bytes.get(start), bytes.get(end)) else {
                    return Err(format!("mask {start}..{end} is outside document `{}`", doc.id));
                };
                if s >= at {
                    kept.push_str(&field[at..s]);
                }
                at = at.max(e);
                removed += 1;
            }
            kept.push_str(&field[at..]);
            *field = kept;
        }
    }
    if let Some(doc) = by_doc.keys().next() {
        return Err(format!("a mask names document `{doc}`, which is not in the corpus"));
    }
    Ok(removed)
}

/// Loads the fastbook-benchmark layout (see the module docs).
pub fn load_fastbook(dir: &Path, split: &str) -> Result<Dataset, Error> {
    let path = dir.join("fastbook-benchmark.json");
    let bad = |msg: String| Error::Malformed {
        origin: path.display().to_string(),
        problems: vec![(0, msg)],
    };
    let chapter_filter: Option<u64> = match split {
        "all" | "test" => None,
        s => Some(
            s.strip_prefix("ch")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| bad(format!("unknown split `{s}`: expected chN, all or test")))?,
        ),
    };
    let json: Value =
        serde_json::from_str(&read(&path)?).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let items = json
        .get("questions")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `questions` array".into()))?;
    let mut qrels = Qrels::default();
    let mut queries = Vec::new();
    let mut chapters = std::collections::BTreeSet::new();
    for (i, q) in items.iter().enumerate() {
        let (Some(chapter), Some(number), Some(text)) =
            (q["chapter"].as_u64(), q["question_number"].as_u64(), q["question_text"].as_str())
        else {
            return Err(bad(format!(
                "question {i} needs chapter, question_number and question_text"
            )));
        };
        if chapter_filter.is_some_and(|c| c != chapter) {
            continue;
        }
        let answers: Vec<String> = q["answer_context"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["context"].as_array().into_iter().flatten())
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        let id = format!("ch{chapter}-q{number:02}");
        qrels.0.entry(id.clone()).or_default().insert(format!("chapter_{chapter}"), 1);
        queries.push(Query { id, text: text.to_string(), answers });
        chapters.insert(chapter);
    }
    let mut docs = Vec::new();
    for c in chapters {
        let notebook = std::fs::read_dir(dir.join("data"))
            .map_err(|source| Error::Io { path: dir.join("data").display().to_string(), source })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.extension().is_some_and(|e| e == "ipynb")
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{c:02}_")))
            });
        let source = match notebook {
            Some(nb) => Source::File(nb, Format::Notebook),
            None => Source::File(dir.join(format!("data/chapter_{c}.txt")), Format::Plain),
        };
        let mut loaded = Loader::default().load(&source).map_err(|e| bad(e.to_string()))?.documents;
        let mut doc = loaded.pop().ok_or_else(|| bad(format!("chapter {c} has no text")))?;
        doc.id = format!("chapter_{c}");
        docs.push(doc);
    }
    queries.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Dataset {
        name: format!("fastbook-benchmark/{split}"),
        docs,
        queries,
        qrels,
        unanswerable: Vec::new(),
        passages: std::collections::HashMap::new(),
        skipped: Vec::new(),
        masked: 0,
        fields: ckeep_engine::Fields::Text,
        families: crate::Families::default(),
    })
}

/// A dataset as `ckeep eval run` takes it: a directory (any layout [`load_dir`] knows, with
/// `split`), or a documents file and a queries file in the long-document layout, judged by
/// document or (with `passage_relevance`) by the passage that answers.
pub fn load(
    dir: Option<&Path>,
    split: &str,
    files: Option<(&Path, &Path)>,
    passage_relevance: bool,
) -> Result<Dataset, Error> {
    match (dir, files) {
        (Some(dir), None) => load_dir(dir, split),
        (None, Some((docs, queries))) => load_longdoc_at(docs, queries, passage_relevance),
        _ => Err(Error::Invalid(
            "give a dataset directory, or a documents file and a queries file".into(),
        )),
    }
}

/// Finds a dataset's layout in a directory: BEIR if it has `corpus.jsonl`, fastbook-benchmark if
/// it has `fastbook-benchmark.json`, else long-document files `docs.jsonl` + `queries.jsonl`.
pub fn load_dir(dir: &Path, split: &str) -> Result<Dataset, Error> {
    if dir.join("corpus.jsonl").is_file() {
        return load_beir(dir, split);
    }
    if dir.join("fastbook-benchmark.json").is_file() {
        return load_fastbook(dir, split);
    }
    let (docs, queries): (PathBuf, PathBuf) = (dir.join("docs.jsonl"), dir.join("queries.jsonl"));
    if docs.is_file() && queries.is_file() {
        let mut data = load_longdoc(&docs, &queries)?;
        if let Some(name) = dir.file_name() {
            data.name = name.to_string_lossy().into_owned();
        }
        return Ok(data);
    }
    Err(Error::Malformed {
        origin: dir.display().to_string(),
        problems: vec![(0, "not a dataset: expected corpus.jsonl + queries.jsonl + qrels/ (BEIR) or docs.jsonl + queries.jsonl".into())],
    })
}
