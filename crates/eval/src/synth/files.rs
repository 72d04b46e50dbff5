//! A synthetic set on disk: the long-document layout `eval run` reads, and the report.

use std::path::Path;

use ckeep_core::Document;

use super::{SynthOptions, SynthQuery, SynthReport, synthesize};
use crate::Error;

/// Makes a set from `docs` and writes it into `dir` (see [`synthesize`] and [`write`](fn@write)).
pub fn make(docs: &[Document], opts: &SynthOptions, dir: &Path) -> Result<SynthReport, Error> {
    let (queries, report) = synthesize(docs, opts)?;
    write(dir, docs, &queries, &report)?;
    Ok(report)
}

/// Writes a set: `queries.jsonl` (long-document layout, with `mask`), `docs.jsonl` (the corpus
/// as read, unmasked, so `eval run --dataset DIR` scores it) and `synth.json` (the report).
/// Each file is written beside its name and renamed into place, so a failure leaves no half file.
///
/// # Panics
/// Never: the queries and the report are plain data, which always serialize.
pub fn write(
    dir: &Path,
    docs: &[Document],
    queries: &[SynthQuery],
    report: &SynthReport,
) -> Result<(), Error> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut docs_jsonl = String::new();
    for d in docs {
        let mut line = serde_json::json!({"doc_id": d.id, "title": d.title, "text": d.text});
        if !d.metadata.is_null() {
            line["metadata"] = d.metadata.clone();
        }
        docs_jsonl.push_str(&line.to_string());
        docs_jsonl.push('\n');
    }
    let mut queries_jsonl = String::new();
    for q in queries {
        queries_jsonl.push_str(&serde_json::to_string(q).expect("plain data serializes"));
        queries_jsonl.push('\n');
    }
    let report_json = serde_json::to_string_pretty(report).expect("plain data serializes") + "\n";
    for (name, text) in
        [("docs.jsonl", docs_jsonl), ("queries.jsonl", queries_jsonl), ("synth.json", report_json)]
    {
        let path = dir.join(name);
        let partial = dir.join(format!(".{name}.partial"));
        std::fs::write(&partial, text).map_err(io(&partial))?;
        std::fs::rename(&partial, &path).map_err(io(&path))?;
    }
    Ok(())
}
