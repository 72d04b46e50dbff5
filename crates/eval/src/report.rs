//! Comparison tables and report files.

use std::fmt::Write as _;
use std::path::Path;

use crate::Error;
use crate::experiment::Comparison;

/// Values below this p-value are marked significant in tables.
const ALPHA: f64 = 0.05;

/// The comparison as a Markdown table: one row per strategy, one column per metric, the best
/// value of each column in bold, and for every strategy after the first the paired randomisation
/// p-value against the first (`†` when below 0.05).
pub fn markdown_table(c: &Comparison) -> String {
    let mut out = String::new();
    let tokens = c
        .token_model
        .as_ref()
        .map_or(String::new(), |m| format!(" context tokens@{} ({m}) |", c.context_k));
    let _ = writeln!(
        out,
        "| strategy | {} | context words@{} |{tokens}",
        c.metrics.join(" | "),
        c.context_k
    );
    let columns = c.metrics.len() + 1 + usize::from(c.token_model.is_some());
    let _ = writeln!(out, "|---|{}", "---|".repeat(columns));
    let best: Vec<f64> = c
        .metrics
        .iter()
        .enumerate()
        .map(|(m, name)| {
            let means = c.strategies.iter().map(|s| s.evaluation.means[m]);
            match name.parse::<crate::Metric>() {
                Ok(metric) if metric.lower_is_better() => means.fold(f64::INFINITY, f64::min),
                _ => means.fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect();
    for s in &c.strategies {
        let cells: Vec<String> = (0..c.metrics.len())
            .map(|m| {
                let v = s.evaluation.means[m];
                let mut cell = if (v - best[m]).abs() < 1e-12 {
                    format!("**{v:.4}**")
                } else {
                    format!("{v:.4}")
                };
                if let Some(p) = s.p_values[m] {
                    let _ = write!(cell, " (p={p:.3}{})", if p < ALPHA { "†" } else { "" });
                }
                cell
            })
            .collect();
        let tokens = s.context_tokens.map_or(String::new(), |t| format!(" {t:.0} |"));
        let _ = writeln!(
            out,
            "| `{}` | {} | {:.0} |{tokens}",
            s.strategy,
            cells.join(" | "),
            s.context_words
        );
    }
    out
}

/// Writes `table.md`, `results.json` (means, p-values, per-query values), one TREC run file per
/// strategy, and the plots `metrics.svg` and `recall.svg` into `dir`.
pub fn write(dir: &Path, c: &Comparison, qrels: &crate::Qrels) -> Result<(), Error> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut md = format!(
        "# {} — {} documents, {} queries\n\nBest value per column in bold (the lowest for dup@K); p: paired randomisation test against the first strategy (10,000 permutations), † below 0.05.\n\n",
        c.dataset, c.documents, c.queries
    );
    md.push_str(&markdown_table(c));
    let table = dir.join("table.md");
    std::fs::write(&table, md).map_err(io(&table))?;
    let json = dir.join("results.json");
    let text = serde_json::to_string_pretty(c).map_err(|e| io(&json)(std::io::Error::other(e)))?;
    std::fs::write(&json, text).map_err(io(&json))?;
    let plot_error = |path: &Path| {
        let path = path.display().to_string();
        move |e: Box<dyn std::error::Error>| Error::Io {
            path,
            source: std::io::Error::other(e.to_string()),
        }
    };
    let metrics_svg = dir.join("metrics.svg");
    crate::plots::metrics_by_strategy(&metrics_svg, c).map_err(plot_error(&metrics_svg))?;
    let recall_svg = dir.join("recall.svg");
    crate::plots::recall_curves(&recall_svg, c, qrels).map_err(plot_error(&recall_svg))?;
    for (i, s) in c.strategies.iter().enumerate() {
        let path = dir.join(format!("run-{}.trec", i + 1));
        std::fs::write(&path, s.run.to_trec(&format!("ckeep-{}", i + 1))).map_err(io(&path))?;
    }
    Ok(())
}
