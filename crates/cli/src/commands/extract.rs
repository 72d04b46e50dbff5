//! `ckeep extract`: the text the loaders make of files, without a store; `--stats` gives the
//! extraction benchmark's figures per format.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use ckeep_core::SourceMap;
use ckeep_text::load::{Format, Source};
use serde::Serialize;

use crate::UsageError;
use crate::flags::LoadFlags;
use crate::output::{Output, outln};
use clap::Args;
use std::path::PathBuf;

/// One format's figures.
#[derive(Debug, Default, Serialize)]
struct FormatStats {
    files: u64,
    failed: u64,
    documents: u64,
    bytes_in: u64,
    bytes_out: u64,
    pages: u64,
    seconds: f64,
}

#[derive(Serialize)]
struct Extracted<'a> {
    doc_id: &'a str,
    title: &'a str,
    text: &'a str,
    metadata: &'a serde_json::Value,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Files or directories, read as `add` reads them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print, per format, files, documents, bytes in and out, pages and throughput instead of
    /// the text (the extraction benchmark's figures).
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub load: LoadFlags,
}

pub fn run(args: &ExtractArgs, out: &Output) -> anyhow::Result<ExitCode> {
    if args.paths.iter().any(|p| p.as_os_str() == "-") {
        bail!(UsageError("extract reads files and folders; pipe text to `ckeep add -`".into()));
    }
    let inputs = args.load.inputs(&args.paths);
    let (loader, sources) = (inputs.loader(), inputs.sources()?);
    let bar = out.progress(sources.len() as u64, "extracting");
    let mut stats: BTreeMap<&'static str, FormatStats> = BTreeMap::new();
    let mut loaded = Vec::new();
    let mut failures = Vec::new();
    for source in &sources {
        let Source::File(path, format) = source else { continue };
        let entry = stats.entry(format_name(*format)).or_default();
        entry.files += 1;
        entry.bytes_in += std::fs::metadata(path).map_or(0, |m| m.len());
        let started = Instant::now();
        let result = loader.load(source);
        entry.seconds += started.elapsed().as_secs_f64();
        match result {
            Ok(l) => {
                for w in &l.warnings {
                    out.warn(w);
                }
                for doc in &l.documents {
                    entry.documents += 1;
                    entry.bytes_out += doc.text.len() as u64;
                    let map = SourceMap::of(&doc.metadata);
                    entry.pages += map.and_then(|m| m.pages.last().copied()).map_or(0, u64::from);
                }
                if !args.stats {
                    loaded.extend(l.documents);
                }
            }
            Err(e) => {
                entry.failed += 1;
                failures.push(e);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let failures: Vec<&ckeep_text::Error> = failures.iter().collect();
    inputs.refuse_unless_skipping(&failures, "extracted")?;
    for f in &failures {
        out.warn(format!("skipped: {f}"));
    }
    if args.stats {
        print_stats(&stats, out)?;
    } else if out.json {
        let docs: Vec<Extracted<'_>> = loaded
            .iter()
            .map(|d| Extracted {
                doc_id: &d.id,
                title: &d.title,
                text: &d.text,
                metadata: &d.metadata,
            })
            .collect();
        out.print_json(&serde_json::json!({"documents": docs}))?;
    } else {
        let several = loaded.len() > 1;
        for doc in &loaded {
            if several {
                outln!("==> {} <==", doc.id);
            }
            outln!("{}", doc.text);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Plain => "text",
        Format::Markdown => "markdown",
        Format::Notebook => "notebook",
        Format::Jsonl => "jsonl",
        Format::Html => "html",
        Format::Epub => "epub",
        Format::Docx => "docx",
        Format::Pdf => "pdf",
    }
}

fn print_stats(stats: &BTreeMap<&'static str, FormatStats>, out: &Output) -> anyhow::Result<()> {
    if out.json {
        return out.print_json(&serde_json::json!({"formats": stats}));
    }
    outln!(
        "{:<9} {:>6} {:>6} {:>10} {:>10} {:>7} {:>8} {:>8} {:>8}",
        "format",
        "files",
        "failed",
        "MB in",
        "MB text",
        "pages",
        "seconds",
        "MB/s",
        "pages/s"
    );
    for (name, s) in stats {
        let mb = |b: u64| b as f64 / 1e6;
        let secs = s.seconds.max(1e-9);
        outln!(
            "{name:<9} {:>6} {:>6} {:>10.2} {:>10.2} {:>7} {:>8.2} {:>8.2} {:>8}",
            s.files,
            s.failed,
            mb(s.bytes_in),
            mb(s.bytes_out),
            s.pages,
            s.seconds,
            mb(s.bytes_in) / secs,
            if s.pages > 0 { format!("{:.0}", s.pages as f64 / secs) } else { "-".into() }
        );
    }
    Ok(())
}
