//! JSONL input: one document per line, all lines or none.

use std::collections::HashMap;

use ckeep_core::Document;
use serde_json::{Map, Value};

use super::Loader;
use crate::Error;
use crate::error::MAX_PROBLEMS;

/// A line left out, and why: `(line number, message)`.
pub type LineProblem = (usize, String);

impl Loader {
    /// Documents from JSONL text (one object per line with `id` and `text`, optional `title`
    /// and `metadata`), named `origin` in messages: every line is checked and all problems
    /// reported at once. Programs that hold documents in memory use it to get the file rules.
    pub fn jsonl(&self, origin: &str, text: &str) -> Result<Vec<Document>, Error> {
        self.jsonl_lines(origin, text, false).map(|(docs, _)| docs)
    }

    /// [`Loader::jsonl`], but records whose text is empty or blank are left out and returned
    /// as `(line, message)` instead of refusing the file: real collections have a few (BEIR's
    /// Cranfield has two), and an evaluation should say so and go on. Every other problem
    /// still refuses the file.
    pub fn jsonl_skipping_empty(
        &self,
        origin: &str,
        text: &str,
    ) -> Result<(Vec<Document>, Vec<LineProblem>), Error> {
        self.jsonl_lines(origin, text, true)
    }

    fn jsonl_lines(
        &self,
        origin: &str,
        text: &str,
        skip_empty: bool,
    ) -> Result<(Vec<Document>, Vec<LineProblem>), Error> {
        let mut docs = Vec::new();
        let mut skipped = Vec::new();
        let mut problems = Vec::new();
        let mut first_line_of: HashMap<String, usize> = HashMap::new();
        for (i, line) in text.split('\n').enumerate() {
            let line_no = i + 1;
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() {
                continue;
            }
            match self.jsonl_record(origin, line_no, line) {
                Ok(doc) => {
                    if let Some(first) = first_line_of.get(&doc.id) {
                        problems.push((
                            line_no,
                            format!("duplicate id `{}` (first seen on line {first})", doc.id),
                        ));
                    } else {
                        first_line_of.insert(doc.id.clone(), line_no);
                        docs.push(doc);
                    }
                }
                Err(LineError::Empty(msg)) if skip_empty => skipped.push((line_no, msg)),
                Err(LineError::Empty(msg) | LineError::Bad(msg)) => problems.push((line_no, msg)),
            }
            if problems.len() >= MAX_PROBLEMS {
                problems.push((0, "… stopped after this many problems".to_string()));
                break;
            }
        }
        if !problems.is_empty() {
            return Err(Error::Malformed { origin: origin.to_string(), problems });
        }
        if docs.is_empty() {
            return Err(Error::Empty { origin: origin.to_string() });
        }
        Ok((docs, skipped))
    }

    fn jsonl_record(
        &self,
        origin: &str,
        line_no: usize,
        line: &str,
    ) -> Result<Document, LineError> {
        let mut obj: Map<String, Value> = match serde_json::from_str(line) {
            Ok(Value::Object(obj)) => obj,
            Ok(other) => {
                return Err(bad(format!("expected a JSON object, found {}", kind_of(&other))));
            }
            Err(e) => return Err(bad(format!("invalid JSON: {e}"))),
        };
        let id = match take_first(&mut obj, &["id", "_id", "doc_id"]) {
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(bad(format!(
                    "`id` must be a non-empty string or number, found {}",
                    kind_of(&other)
                )));
            }
            None => return Err(bad("missing `id` (also accepted: `_id`, `doc_id`)".into())),
        };
        let text = match take_first(&mut obj, &["text", "contents"]) {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(bad(format!("`text` must be a string, found {}", kind_of(&other))));
            }
            None => return Err(bad("missing `text` (also accepted: `contents`)".into())),
        };
        let title = match obj.remove("title") {
            Some(Value::String(s)) => s,
            None | Some(Value::Null) => String::new(),
            Some(other) => {
                return Err(bad(format!("`title` must be a string, found {}", kind_of(&other))));
            }
        };
        let mut metadata = match obj.remove("metadata") {
            Some(Value::Object(m)) => m,
            None | Some(Value::Null) => Map::new(),
            Some(other) => {
                return Err(bad(format!(
                    "`metadata` must be an object, found {}",
                    kind_of(&other)
                )));
            }
        };
        // Fields we do not interpret are kept, not dropped.
        metadata.extend(obj);
        let origin = format!("{origin}:{line_no}");
        if text.trim().is_empty() {
            return Err(LineError::Empty(format!("document `{id}` has empty text")));
        }
        self.check_text(&origin, &text).map_err(|e| bad(e.to_string()))?;
        let mut doc = Document::new(id, title, text);
        doc.metadata = if metadata.is_empty() { Value::Null } else { Value::Object(metadata) };
        doc.source = origin;
        Ok(doc)
    }
}

/// Why a JSONL line gave no document.
enum LineError {
    /// Its text is empty or blank.
    Empty(String),
    /// It is malformed.
    Bad(String),
}

fn bad(message: String) -> LineError {
    LineError::Bad(message)
}

fn take_first(obj: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
    keys.iter().find_map(|k| obj.remove(*k))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
