//! `ckeep search`.

use std::process::ExitCode;

use ckeep_engine::SearchResponse;

use crate::flags::StrategyFlags;
use crate::output::{Output, outln, snippet};
use clap::Args;

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The query.
    pub query: String,
    #[command(flatten)]
    pub strategy: StrategyFlags,
    /// Show which chunks and terms matched and each score component.
    #[arg(long)]
    pub explain: bool,
    /// How results are printed without --json: `plain` (ranked, with spans, lines and a
    /// snippet), or `vimgrep` (`DOC_ID:LINE:COLUMN:TEXT`, one result a line, as `rg --vimgrep`
    /// prints: for an editor's quickfix list or a pipe).
    #[arg(long, value_name = "FORMAT", default_value = "plain", value_parser = ["plain", "vimgrep"])]
    pub format: String,
}

pub fn run(
    store: &str,
    args: &SearchArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let engine = super::open(store)?.with_model_cache(!no_cache);
    let req = args.strategy.request(&args.query)?.with_explain(args.explain);
    let res = engine.search(&req)?;
    if args.format == "vimgrep" && !out.json {
        return vimgrep(&res, out);
    }
    render(&res, out)
}

/// One line a result: its document, the line and column its first span starts at, and the
/// start of its text on one line.
fn vimgrep(res: &SearchResponse, out: &Output) -> anyhow::Result<ExitCode> {
    if let Some(why) = &res.no_results {
        out.warn(&why.message);
    }
    for r in &res.results {
        let Some(at) = r.lines.first() else { continue };
        outln!("{}:{}:{}:{}", r.doc_id, at.start, at.column, snippet(&r.text, 240));
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a search's answer: JSON, or a line per result with its snippet and explanation.
fn render(res: &SearchResponse, out: &Output) -> anyhow::Result<ExitCode> {
    if out.json {
        out.print_json(res)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(plan) = &res.filter {
        outln!("{}", plan.describe());
    }
    match (&res.no_results, res.results.is_empty()) {
        // Said even with --quiet: the search could not find anything, whatever the query.
        (Some(why), _) => out.warn(&why.message),
        (None, true) => out.note(format!("no results for {:?} ({})", res.query, res.strategy)),
        (None, false) => {}
    }
    for r in &res.results {
        let spans: Vec<String> =
            r.spans.iter().zip(&r.lines).map(|(span, lines)| format!("{span} {lines}")).collect();
        let heading =
            if r.headings.is_empty() { String::new() } else { format!("  § {}", r.headings) };
        outln!("{:>3}. {:.4}  {}  [{}]{heading}", r.rank, r.score, r.doc_id, spans.join(", "));
        outln!("     {}", snippet(&r.text, 240));
        if let Some(ex) = &r.explain {
            if let Some(agg) = &ex.aggregation {
                outln!("     aggregation: {agg} over {} chunk(s)", ex.chunks.len());
            }
            if let Some(d) = &ex.diversity {
                outln!("     {}", d.describe());
            }
            for c in &ex.chunks {
                let terms: Vec<String> = c
                    .terms
                    .iter()
                    .map(|t| {
                        format!(
                            "{}={:.3} (tf {}, df {}, idf {:.3})",
                            t.term, t.score, t.tf, t.df, t.idf
                        )
                    })
                    .collect();
                let mut parts = Vec::new();
                if let Some(f) = c.fused {
                    parts.push(format!("fused {f:.4}"));
                }
                if let Some(d) = c.dense {
                    let rank = c.dense_rank.map(|r| format!(" (#{r})")).unwrap_or_default();
                    parts.push(format!("cosine {d:.4}{rank}"));
                }
                if let Some(b) = c.bm25 {
                    let rank = c.bm25_rank.map(|r| format!(" (#{r})")).unwrap_or_default();
                    parts.push(format!("bm25 {b:.4}{rank}: {}", terms.join(", ")));
                }
                outln!("     chunk {} [{}] {}", c.chunk_id, c.span, parts.join("; "));
                if !c.lists.is_empty() {
                    let lists: Vec<String> = c
                        .lists
                        .iter()
                        .map(|l| {
                            format!(
                                "{} {:.4} (#{}) +{:.4}",
                                l.list, l.score, l.rank, l.contribution
                            )
                        })
                        .collect();
                    outln!("       fused from: {}", lists.join(", "));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
