//! `ckeep stats`, `ckeep rm`, `ckeep check`.

use std::process::ExitCode;

use crate::output::{Output, human_bytes, outln};
use clap::Args;

#[derive(Debug, Args)]
pub struct RmArgs {
    /// Document ids.
    #[arg(required = true, value_name = "DOC_ID")]
    pub ids: Vec<String>,
}

pub fn stats(store: &str, out: &Output) -> anyhow::Result<ExitCode> {
    let summary = super::open(store)?.searcher()?.summary()?;
    if out.json {
        out.print_json(&summary)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (manifest, stats) = (&summary.manifest, &summary.stats);
    outln!("store      {}", summary.store);
    outln!("schema     {} (created by {})", manifest.schema_version, manifest.created_by);
    let default = &summary.default_strategy;
    outln!("default    {} ({})", default.strategy, default.from);
    outln!("chunker    {}", manifest.chunker.as_deref().unwrap_or("-"));
    let id = manifest.analyzer.as_deref().unwrap_or("-");
    let name = ckeep_engine::Analyzer::from_id(id).map_or("", ckeep_engine::Analyzer::name);
    outln!(
        "analyzer   {}",
        if name.is_empty() { id.to_string() } else { format!("{name} ({id})") }
    );
    outln!("model      {}", manifest.model.as_deref().unwrap_or("- (lexical only)"));
    for a in &manifest.adapters {
        outln!("adapter    {}: {}", a.model, a.from);
    }
    outln!("documents  {} ({} of text)", stats.documents, human_bytes(stats.text_bytes));
    outln!("chunks     {} ({} leaves)", stats.chunks, stats.leaf_chunks);
    for f in &stats.lexical {
        outln!(
            "lexical    {}: {} chunks, {} terms, {} postings",
            f.field,
            f.chunks,
            f.terms,
            f.postings
        );
    }
    for r in &stats.representations {
        outln!("vectors    {}: {} vectors, {}", r.name, r.vectors, human_bytes(r.bytes));
    }
    outln!("on disk    {}", human_bytes(stats.disk_bytes));
    Ok(ExitCode::SUCCESS)
}

pub fn rm(store: &str, args: &RmArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let request = ckeep_engine::RemoveRequest::new(&args.ids)?;
    let removed = super::open(store)?.writer().remove(&request)?;
    if out.json {
        out.print_json(&removed)?;
    } else {
        outln!("removed {} document(s)", removed.removed);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn check(store: &str, out: &Output) -> anyhow::Result<ExitCode> {
    let check = super::open(store)?.searcher()?.check()?;
    let (report, graphs) = (&check.report, &check.graphs);
    if out.json {
        out.print_json(&check)?;
    } else if check.ok {
        outln!(
            "ok: {} documents, {} chunks; every span, parent and count checks out",
            report.documents,
            report.chunks
        );
    } else {
        outln!(
            "{} problem(s) in {} documents, {} chunks:",
            report.problems.len(),
            report.documents,
            report.chunks
        );
        for p in &report.problems {
            outln!("  {p}");
        }
    }
    for g in graphs.iter().filter(|g| !out.json && g.problem.is_none()) {
        let behind = match (g.missing, g.removed) {
            (Some(m), Some(r)) => format!(": {m} vectors written and {r} removed since"),
            _ => String::new(),
        };
        let segments = match g.segments {
            0 => String::new(),
            n => format!(" (the whole graph and {n} segments)"),
        };
        if g.current {
            outln!("HNSW graph of `{}`: current, {} rows{segments}", g.representation, g.rows);
        } else {
            outln!(
                "HNSW graph of `{}`: behind{behind}{segments}; the next `ckeep add` or server indexes them",
                g.representation
            );
        }
    }
    Ok(if check.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
