//! `ckeep search`.

use std::path::Path;
use std::process::ExitCode;

use ckeep_engine::SearchRequest;

use crate::args::SearchArgs;
use crate::output::{Output, outln, snippet};

pub fn run(store: &Path, args: &SearchArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let mut strategy = args.strategy.clone().unwrap_or_default();
    if let Some(k) = args.k {
        strategy.k = k as usize;
    }
    if let Some(mode) = args.mode {
        strategy.mode = mode;
    }
    if let Some(level) = args.level {
        strategy.level = level;
    }
    if let Some(agg) = args.agg {
        strategy.agg = agg;
    }
    let engine = super::open(store)?;
    let req = SearchRequest { query: args.query.clone(), strategy, explain: args.explain };
    let res = engine.search(&req)?;
    if out.json {
        out.print_json(&res)?;
        return Ok(ExitCode::SUCCESS);
    }
    if res.results.is_empty() {
        out.note(format!("no results for {:?} ({})", res.query, res.strategy));
    }
    for r in &res.results {
        let spans: Vec<String> = r.spans.iter().map(ToString::to_string).collect();
        let heading =
            if r.headings.is_empty() { String::new() } else { format!("  § {}", r.headings) };
        outln!("{:>3}. {:.4}  {}  [{}]{heading}", r.rank, r.score, r.doc_id, spans.join(", "));
        outln!("     {}", snippet(&r.text, 240));
        if let Some(ex) = &r.explain {
            if let Some(agg) = &ex.aggregation {
                outln!("     aggregation: {agg} over {} chunk(s)", ex.chunks.len());
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
                outln!(
                    "     chunk {} [{}] bm25 {:.4}: {}",
                    c.chunk_id,
                    c.span,
                    c.bm25,
                    terms.join(", ")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
