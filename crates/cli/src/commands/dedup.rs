//! `ckeep dedup`: near-duplicate clusters of the store, with the spans that match.

use std::process::ExitCode;
use std::time::Instant;

use ckeep_engine::{DedupOptions, DuplicateCluster, MatchedChunk};
use ckeep_store::StoreRead;

use crate::args::DedupArgs;
use crate::output::{Output, outln, snippet};

pub fn run(store: &str, args: &DedupArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let engine = super::open(store)?;
    let opts = DedupOptions {
        threshold: args.threshold as f32,
        level: args.level,
        top_k: args.top_k,
        neighbours: args.neighbours,
    };
    let bar = out.progress(0, "finding near-duplicates");
    let started = Instant::now();
    let clusters = engine.dedup(&opts)?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let doc_keys = |id: &str| engine.store().document(id).ok().flatten().map(|d| d.key);
    let text = |doc: &str, m: &MatchedChunk| -> String {
        doc_keys(doc).and_then(|k| engine.store().span_text(k, m.span).ok()).unwrap_or_default()
    };
    if out.json {
        let mut v = serde_json::to_value(&clusters)?;
        if args.explain {
            add_texts(&mut v, &clusters, &text);
        }
        out.print_json(&serde_json::json!({
            "threshold": args.threshold, "level": args.level.to_string(), "top_k": args.top_k,
            "seconds": seconds, "clusters": v,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let documents: usize = clusters.iter().map(|c| c.documents.len()).sum();
    outln!(
        "{} cluster(s) of near-duplicates over {documents} documents (threshold {:.2}, {} level{})",
        clusters.len(),
        args.threshold,
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
                if args.explain {
                    outln!("            A {:?}", snippet(&text(&p.a, &m.a), 70));
                    outln!("            B {:?}", snippet(&text(&p.b, &m.b), 70));
                }
            }
        }
    }
    out.note(format!("searched in {seconds:.2} s"));
    Ok(ExitCode::SUCCESS)
}

/// Adds each matching chunk's text to the JSON clusters.
fn add_texts(
    v: &mut serde_json::Value,
    clusters: &[DuplicateCluster],
    text: &dyn Fn(&str, &MatchedChunk) -> String,
) {
    for (cv, c) in v.as_array_mut().into_iter().flatten().zip(clusters) {
        for (pv, p) in cv["pairs"].as_array_mut().into_iter().flatten().zip(&c.pairs) {
            for (mv, m) in pv["matches"].as_array_mut().into_iter().flatten().zip(&p.matches) {
                mv["a"]["text"] = text(&p.a, &m.a).into();
                mv["b"]["text"] = text(&p.b, &m.b).into();
            }
        }
    }
}
