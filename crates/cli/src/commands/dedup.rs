//! `ckeep dedup`: near-duplicate clusters of the store, with the spans that match.

use std::process::ExitCode;

use ckeep_engine::{DedupOptions, PairModel};

use crate::flags::parse_level;
use crate::output::{Output, outln, snippet};
use ckeep_engine::Level;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Pairs scoring at least this are near-duplicates; with --pair-model, the chunk-pair
    /// score a pair needs to be put to the model (default 0.9, or 0.7 with --pair-model).
    #[arg(long, value_name = "T")]
    pub threshold: Option<f64>,
    /// Decide document pairs by a learned pair model (`ckeep pairs --learn --save-model FILE`,
    /// fitted with the store's model): each candidate pair is scored as `ckeep similar` scores
    /// one, and kept when the model's probability reaches its threshold.
    #[arg(long, value_name = "FILE")]
    pub pair_model: Option<PathBuf>,
    /// doc: document pairs scored by the mean of their top-k chunk cosines; chunk: single
    /// chunk pairs by cosine.
    #[arg(long, value_parser = parse_level, default_value = "doc")]
    pub level: Level,
    /// Chunk pairs averaged for a document pair.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub top_k: usize,
    /// Nearest neighbours looked up per chunk to propose candidates.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub neighbours: usize,
    /// Show the text of the matching chunks.
    #[arg(long)]
    pub explain: bool,
}

pub fn run(
    store: &str,
    args: &DedupArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let mut engine = super::open(store)?;
    let pair_model = args.pair_model.as_deref().map(PairModel::load).transpose()?;
    let spec = if pair_model.is_some() { engine.searcher()?.model_for(None) } else { None };
    if let Some(spec) = spec {
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
    let report =
        ckeep_engine::Dedup::new(&engine).report(&opts, pair_model.as_ref(), args.explain)?;
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
