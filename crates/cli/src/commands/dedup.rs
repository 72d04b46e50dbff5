//! `ckeep dedup`: near-duplicate clusters of the store, with the spans that match.

use std::process::ExitCode;

use ckeep_engine::{DedupOptions, PairModel};

use crate::args::DedupArgs;
use crate::output::{Output, outln, snippet};

pub fn run(
    store: &str,
    args: &DedupArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let mut engine = super::open(store)?;
    let pair_model = args.pair_model.as_deref().map(PairModel::load).transpose()?;
    if pair_model.is_some()
        && let Some(spec) = super::stored_model(&engine.store().manifest()?)
    {
        engine = engine.with_embedder(super::load_model(&spec, no_cache)?);
    }
    let threshold = args
        .threshold
        .map_or_else(|| DedupOptions::default_threshold(pair_model.is_some()), |t| t as f32);
    let opts = DedupOptions {
        threshold,
        level: args.level,
        top_k: args.top_k,
        neighbours: args.neighbours,
    };
    let bar = out.progress(0, "finding near-duplicates");
    let report = engine.dedup_report(&opts, pair_model.as_ref(), args.explain)?;
    bar.finish_and_clear();
    if out.json {
        out.print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let clusters = &report.clusters;
    let documents: usize = clusters.iter().map(|c| c.documents.len()).sum();
    let rule = match &pair_model {
        Some(m) => format!(
            "pair model, probability ≥ {:.3}, candidates from chunk-pair ≥ {threshold:.2}",
            m.threshold
        ),
        None => format!("threshold {threshold:.2}"),
    };
    outln!(
        "{} cluster(s) of near-duplicates over {documents} documents ({rule}, {} level{})",
        clusters.len(),
        args.level,
        if args.level == ckeep_engine::Level::Doc {
            format!(", mean of the top {} chunk pairs", args.top_k)
        } else {
            String::new()
        }
    );
    for (n, c) in clusters.iter().enumerate() {
        outln!();
        outln!("cluster {}: {}", n + 1, c.documents.join(", "));
        for p in &c.pairs {
            outln!("  {:.4}  {}  ↔  {}", p.score, p.a, p.b);
            for m in &p.matches {
                outln!(
                    "          {:.4}  {} {}..{}  ↔  {} {}..{}",
                    m.cosine,
                    p.a,
                    m.a.span.start,
                    m.a.span.end,
                    p.b,
                    m.b.span.start,
                    m.b.span.end
                );
                if let (Some(a), Some(b)) = (&m.a.text, &m.b.text) {
                    outln!("            A {:?}", snippet(a, 70));
                    outln!("            B {:?}", snippet(b, 70));
                }
            }
        }
    }
    out.note(format!("searched in {:.2} s", report.seconds));
    Ok(ExitCode::SUCCESS)
}
