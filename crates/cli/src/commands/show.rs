//! `ckeep show`: the stored text byte for byte, or its chunks.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use ckeep_core::{Location, SourceMap};
use ckeep_store::StoreRead;
use serde::Serialize;

use crate::output::{Output, outln, snippet};
use clap::Args;

#[derive(Serialize)]
struct ChunkOut<'a> {
    #[serde(flatten)]
    chunk: &'a ckeep_store::StoredChunk,
    text: &'a str,
    /// Where the chunk came from in the source file (PDF, HTML, EPUB, DOCX).
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<Location>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The document id.
    pub doc_id: String,
    /// List the chunks with their spans, depth, parent and heading path instead of the text.
    #[arg(long)]
    pub chunks: bool,
}

pub fn run(store: &str, args: &ShowArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let engine = super::open(store)?;
    let searcher = engine.searcher()?;
    let store = searcher.store();
    let doc = searcher.document(&args.doc_id)?;
    let text = &doc.document.text;
    let chunks = if args.chunks { store.chunks_of(&args.doc_id)? } else { Vec::new() };
    let map = SourceMap::of(&doc.document.metadata);
    let locate = |span| map.as_ref().map(|m| m.locate(span));
    if out.json {
        let chunk_out: Vec<ChunkOut<'_>> = chunks
            .iter()
            .map(|c| ChunkOut {
                chunk: c,
                text: c.chunk.span.slice(text),
                location: locate(c.chunk.span),
            })
            .collect();
        let mut value = doc.describe();
        if args.chunks {
            value["chunks"] = serde_json::to_value(&chunk_out)?;
        } else {
            value["text"] = serde_json::Value::String(text.clone());
        }
        out.print_json(&value)?;
    } else if args.chunks {
        for c in &chunks {
            let ch = &c.chunk;
            let parent = ch.parent.map_or("-".to_string(), |p| p.to_string());
            let heading = if ch.headings.is_empty() {
                String::new()
            } else {
                format!("  § {}", ch.heading_path())
            };
            let location = locate(ch.span).map(|l| format!("  @ {l}")).unwrap_or_default();
            outln!(
                "#{:<4} depth {} parent {:>4} {:>14}{}{heading}{location}",
                ch.ordinal,
                ch.depth,
                parent,
                ch.span.to_string(),
                if ch.leaf { "" } else { "  (parent)" }
            );
            outln!("      {}", snippet(ch.span.slice(text), 200));
        }
    } else {
        // Exactly the stored bytes through a pipe; a terminal also gets the newline the text
        // may lack, so the prompt does not land on its last line.
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        if !text.ends_with('\n') && stdout.is_terminal() {
            stdout.write_all(b"\n")?;
        }
        stdout.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
