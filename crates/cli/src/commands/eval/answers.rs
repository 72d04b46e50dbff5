//! `ckeep eval answers`: answer quality on a set with gold answers, systems side by side.

use std::process::ExitCode;

use anyhow::bail;
use ckeep_engine::{Answerer, Strategy};
use ckeep_eval::answers::{self, Asking, System};
use clap::Args;

use super::compare::{load_dataset, with_indexes};
use crate::flags::{DatasetFlags, parse_strategy, strategy_help};
use crate::output::{Output, outln};

#[derive(Debug, Args)]
#[allow(clippy::doc_markdown)] // help texts show URLs as users type them
pub struct EvalAnswersArgs {
    #[command(flatten)]
    pub data: DatasetFlags,
    /// A retrieval strategy (repeat the flag for several) [default: mode=bm25].
    #[arg(long = "strategy", value_name = "SPEC", value_parser = parse_strategy, long_help = strategy_help())]
    pub strategies: Vec<Strategy>,
    /// Who answers (repeat the flag for several; every strategy is run with each): a model
    /// name or .gguf file, an OpenAI-compatible server as URL#MODEL, or `none` for the
    /// extractive answer [default: the first installed of qwen2.5-coder-1.5b-instruct and
    /// qwen2.5-coder-0.5b-instruct, else `none`].
    #[arg(long = "llm", value_name = "MODEL|URL#MODEL|none")]
    pub llms: Vec<String>,
    /// Tokens of context per answer.
    #[arg(long, value_name = "N", default_value_t = ckeep_engine::DEFAULT_CONTEXT_TOKENS)]
    pub context_tokens: usize,
    /// Answerable questions asked, the first by id (and as many unanswerable ones, where the
    /// set has them).
    #[arg(long, value_name = "N", default_value_t = 300,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub limit: usize,
    /// With --json, also every question's answer and scores.
    #[arg(long)]
    pub per_question: bool,
}

pub(super) fn run(
    args: &EvalAnswersArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let data = load_dataset(&args.data, out)?;
    if data.queries.iter().all(|q| q.answers.is_empty()) {
        bail!(crate::UsageError(format!(
            "{} has no gold answers: `eval answers` needs the long-document layout's `answers` \
             (or fastbook's gold passages)",
            data.name
        )));
    }
    let strategies = if args.strategies.is_empty() {
        vec![Strategy::default()]
    } else {
        args.strategies.clone()
    };
    let llms = if args.llms.is_empty() {
        vec![ckeep_engine::default_llm().unwrap_or("none").to_string()]
    } else {
        args.llms.clone()
    };
    let systems: Vec<System> = strategies
        .iter()
        .flat_map(|s| llms.iter().map(|l| System { strategy: s.clone(), llm: l.clone() }))
        .collect();
    out.note(format!(
        "{}: {} documents, {} answerable and {} unanswerable questions, {} system(s)",
        data.name,
        data.docs.len(),
        data.queries.len().min(args.limit),
        data.unanswerable.len().min(args.limit),
        systems.len()
    ));
    let cache = (!no_cache).then(ckeep_engine::default_generation_cache);
    let mut answerers = |spec: &str| Answerer::load(Some(spec), cache.as_deref());
    let comparison = with_indexes(
        &args.data,
        strategies,
        no_cache,
        out,
        |work, strategies, models, progress| {
            // `--model` reached the strategies: the systems take them back in order.
            let systems: Vec<System> = systems
                .iter()
                .enumerate()
                .map(|(i, s)| System { strategy: strategies[i / llms.len()].clone(), ..s.clone() })
                .collect();
            let mut asking = Asking {
                context_tokens: args.context_tokens,
                limit: args.limit,
                work_dir: work,
                answerers: &mut answerers,
            };
            answers::run(&data, &systems, &mut asking, models, progress)
        },
    )?;
    if out.json {
        out.print_json(&comparison.to_json(args.per_question))?;
    } else {
        outln!(
            "{} — {} answerable, {} unanswerable questions, {} context tokens",
            comparison.dataset,
            comparison.questions,
            comparison.unanswerable,
            comparison.context_tokens
        );
        outln!("{}", comparison.markdown_table());
    }
    Ok(ExitCode::SUCCESS)
}
