//! `ckeep similar A B`: one pair, chunk-pair score and whole-text cosine, optionally explained.

use std::process::ExitCode;

use anyhow::Context;
use ckeep_engine::{PairModel, pair_features};

use crate::flags::PairScoring;
use crate::output::{Output, outln, snippet};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SimilarArgs {
    /// First text (a file with --files).
    #[arg(value_name = "A")]
    pub a: String,
    /// Second text (a file with --files).
    #[arg(value_name = "B")]
    pub b: String,
    /// A and B are file paths.
    #[arg(long)]
    pub files: bool,
    /// With --files: replace invalid UTF-8 with U+FFFD (with a warning) instead of refusing.
    #[arg(long, requires = "files")]
    pub lossy: bool,
    #[command(flatten)]
    pub scoring: PairScoring,
    /// Scores at or above this are duplicates.
    #[arg(long, value_name = "T", default_value_t = ckeep_engine::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// List the top chunk pairs with their spans and text.
    #[arg(long)]
    pub explain: bool,
    /// Also give the probability of a duplicate by a pair model `ckeep pairs --learn
    /// --save-model FILE` fitted (with the same model and chunker), and its verdict.
    #[arg(long, value_name = "FILE")]
    pub pair_model: Option<PathBuf>,
}

/// A file's text under the loader's UTF-8 policy (BOM dropped, UTF-16 converted, binary and
/// invalid UTF-8 refused unless `lossy`).
fn read(path: &str, lossy: bool, out: &Output) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    match ckeep_text::decode::decode(bytes, path, lossy) {
        Ok(d) => {
            if d.replaced > 0 {
                out.warn(format!("{path}: {} invalid UTF-8 sequence(s) replaced", d.replaced));
            }
            Ok(d.text)
        }
        Err(ckeep_text::Error::InvalidUtf8 { offset, .. }) => {
            Err(anyhow::Error::new(crate::UsageError(format!(
                "{path} is not UTF-8 (invalid byte at offset {offset}; --lossy replaces bad bytes)"
            ))))
        }
        Err(e) => Err(anyhow::Error::new(crate::UsageError(e.to_string()))),
    }
}

pub fn run(args: &SimilarArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let (a, b) = if args.files {
        (read(&args.a, args.lossy, out)?, read(&args.b, args.lossy, out)?)
    } else {
        (args.a.clone(), args.b.clone())
    };
    for (name, text) in [("A", &a), ("B", &b)] {
        if text.trim().is_empty() {
            anyhow::bail!(crate::UsageError(format!("{name} is empty")));
        }
    }
    let scorer = super::scorer(&args.scoring, no_cache)?;
    let pair_model = args.pair_model.as_deref().map(PairModel::load).transpose()?;
    if let Some(m) = &pair_model {
        m.check(&scorer)?;
    }
    let embedded = scorer.embed(&[&a, &b])?;
    let (ea, eb) = (&embedded[0], &embedded[1]);
    let score = scorer.score(ea, eb);
    // The learned probability and its model's threshold.
    let learned = pair_model.map(|m| (m.probability(&pair_features(&score, &a, &b)), m.threshold));
    if out.json {
        let mut report =
            serde_json::to_value(scorer.report(&a, &b, args.threshold, args.explain)?)?;
        if let Some((probability, threshold)) = learned {
            report["learned"] = serde_json::json!({
                "probability": probability,
                "threshold": threshold,
                "duplicate": probability >= threshold,
            });
        }
        out.print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let duplicate = f64::from(score.chunk_pair) >= args.threshold;
    let pairs = ea.spans.len() * eb.spans.len();
    outln!(
        "chunk-pair score  {:.4}  (mean of the top {} of {pairs} chunk pairs; {} × {} chunks, {})",
        score.chunk_pair,
        score.top.len(),
        ea.spans.len(),
        eb.spans.len(),
        args.scoring.chunker
    );
    outln!("whole-text cosine {:.4}", score.whole);
    for m in &score.more {
        outln!(
            "  by {:<15} whole-text cosine {:.4}, chunk-pair score {:.4}",
            m.model,
            m.whole,
            m.chunk_pair
        );
    }
    outln!(
        "verdict           {} (threshold {:.2}; by whole-text cosine: {})",
        if duplicate { "duplicate" } else { "different" },
        args.threshold,
        if f64::from(score.whole) >= args.threshold { "duplicate" } else { "different" }
    );
    if let Some((probability, threshold)) = learned {
        outln!(
            "learned           {probability:.4} probability of a duplicate: {} (threshold {threshold:.3})",
            if probability >= threshold { "duplicate" } else { "different" }
        );
    }
    if args.explain {
        for p in &score.top {
            let (sa, sb) = (ea.spans[p.a], eb.spans[p.b]);
            outln!("  {:.4}  A {}..{} {:?}", p.cosine, sa.start, sa.end, snippet(sa.slice(&a), 60));
            outln!("          B {}..{} {:?}", sb.start, sb.end, snippet(sb.slice(&b), 60));
        }
    }
    Ok(ExitCode::SUCCESS)
}
