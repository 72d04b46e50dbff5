//! `ckeep search`.

use std::process::ExitCode;

use ckeep_engine::{MetadataFilter, SearchRequest, SearchResponse, StrategyOverrides};

use crate::flags::{
    MODEL_HELP, parse_agg, parse_diversify, parse_expansion, parse_filter, parse_level, parse_mode,
    parse_repr_list, parse_strategy, parse_summarizer, repr_help, strategy_help,
};
use crate::output::{Output, outln, snippet};
use ckeep_engine::{Level, Mode, Strategy};
use ckeep_index::Aggregation;
use clap::Args;

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The query.
    pub query: String,
    /// Number of results [default: 10, or the strategy's k].
    #[arg(short, long, value_parser = clap::value_parser!(u64).range(1..=ckeep_engine::MAX_K as u64))]
    pub k: Option<u64>,
    /// Scoring mode.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Return chunks, or documents ranked by their chunks.
    #[arg(long, value_parser = parse_level)]
    pub level: Option<Level>,
    /// How chunk scores become a document score with --level doc: max, mean:K (mean of the
    /// best K chunks) or sum; over the best 1,000 chunks of the query.
    #[arg(long = "aggregate", alias = "agg", value_name = "AGG", value_parser = parse_agg)]
    pub agg: Option<Aggregation>,
    /// After ranking, grow each hit into its context: window:W (W sentences on each side),
    /// parent, doc, or merge:R (auto-merge into parents when more than R of their children are
    /// hits). Overlapping contexts of one document are merged.
    #[arg(long, value_name = "EXPANSION", value_parser = parse_expansion)]
    pub expand: Option<ckeep_engine::Expansion>,
    /// Diversify the results by maximal marginal relevance: `mmr[:λ[:N]]` picks the k results
    /// one by one from the best N (default max(4k, 40)) by λ·relevance − (1−λ)·similarity to
    /// those already picked (λ default 0.5; 1 keeps the plain ranking). --explain shows each
    /// result's redundancy penalty.
    #[arg(long, value_name = "MMR", value_parser = parse_diversify)]
    pub diversify: Option<ckeep_engine::Diversify>,
    /// Exact dense scan even for collections searched through the HNSW graph (20,000+ vectors).
    #[arg(long)]
    pub exact: bool,
    /// The representation searched (default plain); R+R… fuses document rankings (with
    /// --level doc).
    #[arg(long, value_name = "REPR", value_parser = parse_repr_list, long_help = repr_help())]
    pub repr: Option<String>,
    /// The summaries a summary-based representation uses (default: the store's only one).
    #[arg(long, value_name = "SPEC", value_parser = parse_summarizer)]
    pub summarizer: Option<ckeep_engine::Summarizer>,
    /// Reorder the top results by a reranker server's scores: `URL[#MODEL]` of the `/rerank`
    /// API (TEI, Jina, Cohere and compatible servers; key from `CKEEP_API_KEY`).
    #[arg(long, value_name = "URL")]
    pub rerank: Option<String>,
    /// How many results the reranker scores.
    #[arg(long, value_name = "N", requires = "rerank", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_K as u64))]
    pub rerank_k: Option<usize>,
    /// A whole strategy spec; the flags above override its parts.
    #[arg(long, value_name = "SPEC", value_parser = parse_strategy, long_help = strategy_help())]
    pub strategy: Option<Strategy>,
    /// Show which chunks and terms matched and each score component.
    #[arg(long)]
    pub explain: bool,
    // The help is the engine's, which the playground shows too; the flag may be repeated.
    #[arg(long, value_name = "FILTER", value_parser = parse_filter,
        help = ckeep_engine::MetadataFilter::CONDITION_HELP)]
    pub filter: Vec<ckeep_engine::MetadataFilter>,
    /// The model for dense search (default: the one the store was built with).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
}

impl SearchArgs {
    /// The strategy's parts given as flags.
    fn parts(&self) -> anyhow::Result<StrategyOverrides> {
        let repr = self.repr.as_deref().map(ckeep_engine::parse_representations);
        Ok(StrategyOverrides {
            k: self.k.map(|k| k as usize),
            mode: self.mode,
            level: self.level,
            agg: self.agg,
            expand: self.expand,
            diversify: self.diversify,
            repr: repr.transpose().map_err(anyhow::Error::msg)?,
            summarizer: self.summarizer.clone(),
            model: self.model.clone(),
            // The flag only switches exact scans on.
            exact: self.exact.then_some(true),
            rerank: self.rerank.clone(),
            rerank_k: self.rerank_k,
        })
    }
}

pub fn run(
    store: &str,
    args: &SearchArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let engine = super::open(store)?.with_model_cache(!no_cache);
    let filter = (!args.filter.is_empty()).then(|| MetadataFilter::all(args.filter.clone()));
    let mut req = SearchRequest::new(&args.query)
        .with_parts(args.parts()?)
        .with_explain(args.explain)
        .with_filter(filter);
    req.strategy.clone_from(&args.strategy);
    let res = engine.search(&req)?;
    render(&res, out)
}

/// Prints a search's answer: JSON, or a line per result with its snippet and explanation.
fn render(res: &SearchResponse, out: &Output) -> anyhow::Result<ExitCode> {
    if out.json {
        out.print_json(res)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(plan) = &res.filter {
        outln!("{}", plan.describe());
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
            if let Some(d) = &ex.diversity {
                outln!("     {}", d.describe());
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
                if !c.lists.is_empty() {
                    let lists: Vec<String> = c
                        .lists
                        .iter()
                        .map(|l| {
                            format!(
                                "{} {:.4} (#{}) +{:.4}",
                                l.list, l.score, l.rank, l.contribution
                            )
                        })
                        .collect();
                    outln!("       fused from: {}", lists.join(", "));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
