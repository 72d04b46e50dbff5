//! SVG plots for reports, drawn with `plotters` (SVG backend only: no fonts or system
//! libraries needed).

use std::path::Path;

use plotters::prelude::*;

use crate::experiment::Comparison;
use crate::{Metric, Qrels, evaluate};

/// Recall is plotted at these cut-offs.
const CURVE_CUTOFFS: [usize; 10] = [1, 2, 3, 5, 10, 20, 30, 50, 75, 100];

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    PALETTE[i % PALETTE.len()]
}

/// Grouped bars: one group per metric, one bar per strategy (`S1`, `S2`, … as in the table).
pub fn metrics_by_strategy(path: &Path, c: &Comparison) -> PlotResult {
    let n_metrics = c.metrics.len();
    let n_strategies = c.strategies.len().max(1);
    let root = SVGBackend::new(path, (160 * n_metrics as u32 + 200, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: metric by strategy", c.dataset), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(45)
        .build_cartesian_2d(-0.5f64..n_metrics as f64 - 0.5, 0f64..1.3)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n_metrics)
        .x_label_formatter(&|x| {
            // Groups are centred on whole numbers; label only those ticks.
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                c.metrics.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_labels(7)
        .y_label_formatter(&|y| if *y <= 1.0 + 1e-9 { format!("{y:.1}") } else { String::new() })
        .y_desc("mean")
        .draw()?;
    let width = 0.8 / n_strategies as f64;
    for (si, s) in c.strategies.iter().enumerate() {
        let col = color(si);
        chart
            .draw_series(s.evaluation.means.iter().enumerate().map(|(m, v)| {
                let x0 = m as f64 - 0.4 + si as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v.clamp(0.0, 1.0))], col.filled())
            }))?
            .label(format!("S{}: {}", si + 1, s.strategy))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], col.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Recall@k against k for every strategy.
pub fn recall_curves(path: &Path, c: &Comparison, qrels: &Qrels) -> PlotResult {
    let root = SVGBackend::new(path, (720, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_k = CURVE_CUTOFFS[CURVE_CUTOFFS.len() - 1];
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: recall@k", c.dataset), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d((1f64..max_k as f64).log_scale(), 0f64..1.0)?;
    chart.configure_mesh().x_desc("k").y_desc("recall@k").draw()?;
    let metrics: Vec<Metric> = CURVE_CUTOFFS.iter().map(|k| Metric::Recall(*k)).collect();
    for (si, s) in c.strategies.iter().enumerate() {
        let eval = evaluate(qrels, &s.run, &metrics);
        let col = color(si);
        let points: Vec<(f64, f64)> =
            CURVE_CUTOFFS.iter().zip(&eval.means).map(|(k, v)| (*k as f64, *v)).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), col.stroke_width(2)))?
            .label(format!("S{}: {}", si + 1, s.strategy))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], col.stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, col.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}
