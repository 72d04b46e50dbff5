//! `ckeep show`: the stored text byte for byte, or its chunks.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use ckeep_engine::DocumentPart;

use crate::output::{Output, outln, snippet};
use clap::Args;

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The document id.
    pub doc_id: String,
    /// List the chunks with their spans, depth, parent and heading path instead of the text.
    #[arg(long)]
    pub chunks: bool,
}

pub fn run(store: &str, args: &ShowArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let part = if args.chunks { DocumentPart::Chunks } else { DocumentPart::Text };
    let view = super::open(store)?.searcher()?.view(&args.doc_id, part)?;
    if out.json {
        out.print_json(&view)?;
    } else if let Some(chunks) = &view.chunks {
        for c in chunks {
            let ch = &c.chunk.chunk;
            let parent = ch.parent.map_or("-".to_string(), |p| p.to_string());
            let heading = if ch.headings.is_empty() {
                String::new()
            } else {
                format!("  § {}", ch.heading_path())
            };
            let location = c.location.as_ref().map(|l| format!("  @ {l}")).unwrap_or_default();
            outln!(
                "#{:<4} depth {} parent {:>4} {:>14}{}{heading}{location}",
                ch.ordinal,
                ch.depth,
                parent,
                ch.span.to_string(),
                if ch.leaf { "" } else { "  (parent)" }
            );
            outln!("      {}", snippet(&c.text, 200));
        }
    } else {
        // Exactly the stored bytes through a pipe; a terminal also gets the newline the text
        // may lack, so the prompt does not land on its last line.
        let text = view.text.unwrap_or_default();
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        if !text.ends_with('\n') && stdout.is_terminal() {
            stdout.write_all(b"\n")?;
        }
        stdout.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
