//! `ckeep pairs FILE`: labelled pairs scored by whole-text cosine and by chunk-pair similarity,
//! side by side, at a fixed threshold and optionally at thresholds calibrated on other pairs.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use ckeep_engine::{EmbeddedText, PairScorer};
use ckeep_eval::pair_file::{LabelledPair, PairFile, PairFormat};
use ckeep_eval::pairs::{
    Classification, average_precision, best_threshold, classify, mcnemar, roc_auc, sample,
};

use crate::args::{PairFormatArg, PairsArgs};
use crate::output::{Output, outln};

/// Texts embedded per model call (and progress step).
const TEXTS_PER_BATCH: usize = 4096;

/// Both methods' scores of a set of pairs.
#[derive(Default)]
struct Scored {
    labels: Vec<bool>,
    whole: Vec<f32>,
    chunk: Vec<f32>,
}

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

/// Embeds every text of `sets` (batched, with progress) and scores each pair both ways.
fn score(
    scorer: &PairScorer,
    sets: &[&[LabelledPair]],
    out: &Output,
) -> anyhow::Result<Vec<Scored>> {
    let texts: Vec<&str> =
        sets.iter().flat_map(|s| s.iter().flat_map(|p| [p.a.as_str(), p.b.as_str()])).collect();
    let bar = out.progress(texts.len() as u64, "embedding");
    let mut embedded: Vec<EmbeddedText> = Vec::with_capacity(texts.len());
    for batch in texts.chunks(TEXTS_PER_BATCH) {
        embedded.extend(scorer.embed(batch)?);
        bar.inc(batch.len() as u64);
    }
    bar.finish_and_clear();
    let mut next = embedded.iter();
    Ok(sets
        .iter()
        .map(|set| {
            let mut s = Scored::default();
            for p in *set {
                let (Some(a), Some(b)) = (next.next(), next.next()) else { break };
                let score = scorer.score(a, b);
                s.labels.push(p.label);
                s.whole.push(score.whole);
                s.chunk.push(score.chunk_pair);
            }
            s
        })
        .collect())
}

fn row_json(name: &str, c: &Classification, auc: f64, ap: f64) -> serde_json::Value {
    serde_json::json!({"method": name, "threshold": c.threshold, "accuracy": c.accuracy,
        "accuracy_ci95": [c.accuracy_ci95.0, c.accuracy_ci95.1], "precision": c.precision,
        "recall": c.recall, "f1": c.f1, "roc_auc": auc, "average_precision": ap})
}

/// The pairs to report and the pairs to calibrate on, as the flags say.
fn sets(args: &PairsArgs, out: &Output) -> anyhow::Result<(Vec<LabelledPair>, Vec<LabelledPair>)> {
    let mut report = load(&args.file, args, out)?;
    let mut calibration = match &args.calibrate {
        Some(path) => load(path, args, out)?,
        None => Vec::new(),
    };
    if let Some(fraction) = args.calibrate_split {
        if report.len() < 2 {
            anyhow::bail!(crate::UsageError("--calibrate-split needs at least 2 pairs".into()));
        }
        let order = sample(report.len(), report.len(), args.seed);
        let cut = ((report.len() as f64 * fraction).round() as usize).clamp(1, report.len() - 1);
        let pick = |ids: &[usize]| ids.iter().map(|&i| report[i].clone()).collect::<Vec<_>>();
        calibration = pick(&order[..cut]);
        report = pick(&order[cut..]);
    }
    if let Some(n) = args.sample {
        report =
            sample(report.len(), n, args.seed).into_iter().map(|i| report[i].clone()).collect();
    }
    Ok((report, calibration))
}

fn write_scores(
    path: &std::path::Path,
    report: &[LabelledPair],
    rep: &Scored,
) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(f, "id\tlabel\twhole\tchunk_pair")?;
    for (p, (w, c)) in report.iter().zip(rep.whole.iter().zip(&rep.chunk)) {
        writeln!(f, "{}\t{}\t{w:.6}\t{c:.6}", p.id, u8::from(p.label))?;
    }
    f.flush()?;
    Ok(())
}

pub fn run(args: &PairsArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let (report, calibration) = sets(args, out)?;
    let scorer = super::similar::scorer(&args.scoring, no_cache)?;
    let started = Instant::now();
    let mut scored = score(&scorer, &[&report, &calibration], out)?;
    let seconds = started.elapsed().as_secs_f64();
    let cal = scored.pop().unwrap_or_default();
    let rep = scored.pop().context("scores")?;
    let thresholds: Vec<(&str, f64, f64)> =
        std::iter::once(("fixed", args.threshold, args.threshold))
            .chain((!cal.labels.is_empty()).then(|| {
                (
                    "calibrated",
                    best_threshold(&cal.whole, &cal.labels),
                    best_threshold(&cal.chunk, &cal.labels),
                )
            }))
            .collect();
    let (auc_w, auc_c) = (roc_auc(&rep.whole, &rep.labels), roc_auc(&rep.chunk, &rep.labels));
    let (ap_w, ap_c) =
        (average_precision(&rep.whole, &rep.labels), average_precision(&rep.chunk, &rep.labels));
    let mut rows = Vec::new();
    let mut tests = Vec::new();
    for (kind, tw, tc) in &thresholds {
        let w = classify(&rep.whole, &rep.labels, *tw);
        let c = classify(&rep.chunk, &rep.labels, *tc);
        tests.push((*kind, mcnemar(&w.correct, &c.correct)));
        rows.push((format!("whole text, {kind}"), w, auc_w, ap_w));
        rows.push((format!("chunk pair, {kind}"), c, auc_c, ap_c));
    }
    if let Some(path) = &args.out {
        write_scores(path, &report, &rep)?;
    }
    let duplicates = rep.labels.iter().filter(|l| **l).count();
    let texts = 2 * (report.len() + calibration.len());
    if out.json {
        out.print_json(&serde_json::json!({
            "file": args.file, "pairs": report.len(), "duplicates": duplicates,
            "calibration_pairs": calibration.len(), "model": scorer.embedder().info().name,
            "chunker": args.scoring.chunker.to_string(), "top_k": args.scoring.top_k,
            "results": rows.iter().map(|(n, c, auc, ap)| row_json(n, c, *auc, *ap)).collect::<Vec<_>>(),
            "mcnemar": tests.iter().map(|(k, t)| serde_json::json!({"thresholds": k, "whole_only": t.only_first, "chunk_pair_only": t.only_second, "p_value": t.p_value})).collect::<Vec<_>>(),
            "seconds": seconds, "pairs_per_second": (report.len() + calibration.len()) as f64 / seconds,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{}: {} pairs ({duplicates} duplicates){}; {}, chunker {}, top-k {}",
        args.file.display(),
        report.len(),
        if calibration.is_empty() {
            String::new()
        } else {
            format!("; thresholds calibrated on {} other pairs", calibration.len())
        },
        scorer.embedder().info().name,
        args.scoring.chunker,
        args.scoring.top_k
    );
    outln!();
    outln!(
        "| method, threshold | threshold | accuracy (95 % CI) | precision | recall | F1 | ROC-AUC | AP |"
    );
    outln!("|---|---|---|---|---|---|---|---|");
    for (name, c, auc, ap) in &rows {
        outln!(
            "| {name} | {:.3} | {:.2} % ({:.1}–{:.1}) | {:.3} | {:.3} | {:.3} | {auc:.4} | {ap:.4} |",
            c.threshold,
            100.0 * c.accuracy,
            100.0 * c.accuracy_ci95.0,
            100.0 * c.accuracy_ci95.1,
            c.precision,
            c.recall,
            c.f1
        );
    }
    outln!();
    for (kind, t) in &tests {
        outln!(
            "McNemar, {kind} thresholds: whole text alone right on {}, chunk pair alone on {}; p {}",
            t.only_first,
            t.only_second,
            if t.p_value < 1e-4 { "< 0.0001".to_string() } else { format!("= {:.4}", t.p_value) }
        );
    }
    out.note(format!(
        "{texts} texts embedded and {} pairs scored in {seconds:.2} s ({:.0} pairs/s)",
        report.len() + calibration.len(),
        (report.len() + calibration.len()) as f64 / seconds
    ));
    Ok(ExitCode::SUCCESS)
}
