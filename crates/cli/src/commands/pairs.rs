//! `ckeep pairs FILE`: labelled pairs scored by whole-text cosine and by chunk-pair similarity,
//! side by side, at a fixed threshold and optionally at thresholds calibrated on other pairs
//! (the study itself is [`ckeep_eval::pair_study`], shared with Python).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use ckeep_eval::pair_file::{LabelledPair, PairFile, PairFormat};
use ckeep_eval::pair_study::{PairScores, PairSelection, learn, study};

use crate::flags::{PairScoring, parse_fraction};
use crate::output::{Output, outln};
use clap::Args;
use std::path::PathBuf;

fn format(args: &PairsArgs) -> PairFormat {
    match args.format {
        Some(PairFormatArg::Tsv) => PairFormat::Tsv,
        Some(PairFormatArg::Csv) => PairFormat::Csv,
        Some(PairFormatArg::Jsonl) => PairFormat::Jsonl,
        None => PairFormat::from_path(&args.file).unwrap_or(PairFormat::Tsv),
    }
}

fn load(
    path: &std::path::Path,
    args: &PairsArgs,
    out: &Output,
) -> anyhow::Result<Vec<LabelledPair>> {
    let file = PairFile::read(path, format(args), &args.columns)?;
    if file.repaired_lines > 0 {
        out.warn(format!(
            "{}: {} line(s) with invalid UTF-8, read with U+FFFD in place of the bad bytes",
            path.display(),
            file.repaired_lines
        ));
    }
    if file.pairs.is_empty() {
        anyhow::bail!(crate::UsageError(format!("{} has no pairs", path.display())));
    }
    Ok(file.pairs)
}

/// Every pair's id, label, both scores and the features a learned score reads (named as the
/// saved model names them), as TSV.
fn write_scores(
    path: &std::path::Path,
    report: &[LabelledPair],
    scores: &PairScores,
    features: &[String],
) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(f, "id\tlabel\twhole\tchunk_pair\t{}", features.join("\t"))?;
    for (i, p) in report.iter().enumerate() {
        let (w, c) = (scores.whole[i], scores.chunk[i]);
        write!(f, "{}\t{}\t{w:.6}\t{c:.6}", p.id, u8::from(p.label))?;
        for x in &scores.features[i] {
            write!(f, "\t{x:.6}")?;
        }
        writeln!(f)?;
    }
    f.flush()?;
    Ok(())
}

/// Pair file layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PairFormatArg {
    Tsv,
    Csv,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The labelled pairs.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// File layout (default: from the extension, else tsv).
    #[arg(long, value_enum)]
    pub format: Option<PairFormatArg>,
    /// Fields: for tsv/csv the roles in column order (label, a, b, id; `-` skips a column); for
    /// jsonl ROLE=KEY pairs such as `label=is_duplicate,a=question1,b=question2`.
    #[arg(long, value_name = "LIST", default_value = "label,a,b,id")]
    pub columns: ckeep_eval::pair_file::Columns,
    #[command(flatten)]
    pub scoring: PairScoring,
    /// Fixed threshold: scores at or above it are duplicates.
    #[arg(long, value_name = "T", default_value_t = ckeep_engine::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// Also choose each method's best threshold on this file (same format and columns) and
    /// report FILE's pairs at it.
    #[arg(long, value_name = "DEV_FILE", conflicts_with = "calibrate_split")]
    pub calibrate: Option<PathBuf>,
    /// Calibrate on this fraction of FILE's pairs (a seeded random split) and report the rest.
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub calibrate_split: Option<f64>,
    /// Use a random sample of N pairs of FILE (after any split), drawn with --seed.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// Seed of --sample and --calibrate-split.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Write every reported pair's id, label, scores and learned-score features here (TSV).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also learn a pair score: logistic regression over whole-text cosine, chunk-pair score and
    /// best chunk pair (of every --model), and the texts' words (length ratio, overlap,
    /// containment, lengths, words one side lacks). Fitted on the calibration pairs, or,
    /// without any, cross-validated over FILE's pairs (--folds); never judged on pairs it was
    /// fitted on.
    #[arg(long)]
    pub learn: bool,
    /// Folds of --learn without calibration pairs.
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u16).range(2..=100))]
    pub folds: u16,
    /// Save the learned model (JSON; fitted on every pair it may learn from) for
    /// `ckeep similar --pair-model`.
    #[arg(long, value_name = "FILE", requires = "learn")]
    pub save_model: Option<PathBuf>,
}

pub fn run(args: &PairsArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let calibration = match &args.calibrate {
        Some(path) => load(path, args, out)?,
        None => Vec::new(),
    };
    let selection = PairSelection {
        calibrate_split: args.calibrate_split,
        sample: args.sample,
        seed: args.seed,
    };
    let (report, calibration) = selection.apply(load(&args.file, args, out)?, calibration)?;
    let scorer = super::scorer(&args.scoring, no_cache)?;
    let bar = out.progress(0, "embedding");
    let mut progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let mut result = study(&scorer, &report, &calibration, args.threshold, &mut progress)?;
    bar.finish_and_clear();
    if args.learn {
        let model = learn(&scorer, &mut result, usize::from(args.folds), args.seed)?;
        if let Some(path) = &args.save_model {
            std::fs::write(path, serde_json::to_string_pretty(&model)? + "\n")
                .with_context(|| format!("writing the pair model to {}", path.display()))?;
            out.note(format!("pair model written to {}", path.display()));
        }
    }
    result.file = Some(args.file.display().to_string());
    if let Some(path) = &args.out {
        let features = ckeep_engine::pair_feature_names(&scorer.model_names()[1..]);
        write_scores(path, &report, &result.scores, &features)?;
    }
    if out.json {
        out.print_json(&result)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{}: {} pairs ({} duplicates){}; {}, chunker {}, top-k {}",
        args.file.display(),
        result.pairs,
        result.duplicates,
        if calibration.is_empty() {
            String::new()
        } else {
            format!("; thresholds calibrated on {} other pairs", calibration.len())
        },
        result.model,
        result.chunker,
        result.top_k
    );
    outln!();
    outln!(
        "| method, threshold | threshold | accuracy (95 % CI) | precision | recall | F1 | ROC-AUC | AP |"
    );
    outln!("|---|---|---|---|---|---|---|---|");
    for r in &result.results {
        let c = &r.classification;
        outln!(
            "| {} | {:.3} | {:.2} % ({:.1}–{:.1}) | {:.3} | {:.3} | {:.3} | {:.4} | {:.4} |",
            r.method,
            c.threshold,
            100.0 * c.accuracy,
            100.0 * c.accuracy_ci95.0,
            100.0 * c.accuracy_ci95.1,
            c.precision,
            c.recall,
            c.f1,
            r.roc_auc,
            r.average_precision
        );
    }
    outln!();
    for t in &result.mcnemar {
        outln!(
            "McNemar, {} thresholds: whole text alone right on {}, chunk pair alone on {}; p {}",
            t.thresholds,
            t.whole_only,
            t.chunk_pair_only,
            if t.p_value < 1e-4 { "< 0.0001".to_string() } else { format!("= {:.4}", t.p_value) }
        );
    }
    if let Some(t) = &result.learned_vs_whole {
        outln!(
            "McNemar, learned vs {}: learned alone right on {}, whole text alone on {}; p {}",
            t.against,
            t.learned_only,
            t.whole_only,
            if t.p_value < 1e-4 { "< 0.0001".to_string() } else { format!("= {:.4}", t.p_value) }
        );
    }
    let scored = result.pairs + result.calibration_pairs;
    out.note(format!(
        "{} texts embedded and {scored} pairs scored in {:.2} s ({:.0} pairs/s)",
        2 * scored,
        result.seconds,
        result.pairs_per_second
    ));
    Ok(ExitCode::SUCCESS)
}
