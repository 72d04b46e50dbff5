//! `ckeep search`.

use std::process::ExitCode;

use ckeep_engine::{SearchRequest, StrategyOverrides};
use ckeep_store::StoreRead;

use crate::args::SearchArgs;
use crate::output::{Output, outln, snippet};

pub fn run(
    store: &str,
    args: &SearchArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let mut strategy = args.strategy.clone().unwrap_or_default();
    let repr = args.repr.as_deref().map(ckeep_engine::parse_representations);
    StrategyOverrides {
        k: args.k.map(|k| k as usize),
        mode: args.mode,
        level: args.level,
        agg: args.agg,
        expand: args.expand,
        repr: repr.transpose().map_err(anyhow::Error::msg)?,
        summarizer: args.summarizer.clone(),
        model: args.model.clone(),
        // The flag only switches exact scans on.
        exact: args.exact.then_some(true),
    }
    .apply(&mut strategy);
    if args.rerank.is_some() {
        strategy.rerank.clone_from(&args.rerank);
    }
    if let Some(k) = args.rerank_k {
        strategy.rerank_k = k;
    }
    let mut engine = super::open(store)?;
    // The model is loaded only when the query needs it.
    if strategy.mode.needs_model() {
        let spec = match &strategy.model {
            Some(m) => Some(m.clone()),
            None => super::stored_model(&engine.store().manifest()?),
        };
        if let Some(spec) = spec {
            engine = engine.with_embedder(super::load_model(&spec, no_cache)?);
        }
    }
    let filter = (!args.filter.is_empty())
        .then(|| ckeep_engine::MetadataFilter(args.filter.iter().cloned().collect()));
    let req = SearchRequest { query: args.query.clone(), strategy, explain: args.explain, filter };
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
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
