//! `ckeep eval`: score a run (`metrics`), compare strategies on a dataset (`run`), choose a
//! strategy's parameters by cross-validation (`tune`), make a test set from documents (`synth`), and
//! recommend a strategy for a store (`recommend`), and score answers end to end (`answers`).

mod answers;
mod compare;
mod recommend;
mod run;
mod synth;
mod tune;

use std::process::ExitCode;

use crate::flags::eval_help;
use answers::EvalAnswersArgs;
use clap::{Args, Subcommand};
use recommend::EvalRecommendArgs;
use run::{EvalMetricsArgs, EvalRunArgs};
use synth::EvalSynthArgs;
use tune::EvalTuneArgs;

use crate::output::Output;

#[derive(Debug, Args)]
#[command(after_long_help = eval_help(), after_help = eval_help())]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: EvalCommand,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Score an existing TREC run against qrels (TREC or BEIR TSV), from any system.
    #[command(after_help = eval_help())]
    Metrics(EvalMetricsArgs),
    /// Index a dataset once per chunker, run every strategy, and compare them in one table.
    ///
    /// Datasets: a BEIR directory (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), a directory
    /// with docs.jsonl + queries.jsonl (long documents), those two files named with --docs and
    /// --queries, or a fastbook-benchmark directory (--split chN for one chapter). Each strategy after the first gets a paired randomisation test against
    /// the first (10,000 permutations).
    #[command(after_help = eval_help())]
    Run(EvalRunArgs),
    /// Choose a strategy's parameters by k-fold cross-validation over queries, and report only
    /// out-of-fold scores: each fold's queries are scored by the candidate that did best on the
    /// other folds, so no query is scored by parameters chosen on it.
    ///
    /// Candidates come from --strategy specs with `{a,b,…}` groups (fusion weight, RRF k,
    /// aggregation, expansion, representation). Prints each fold's choice with its training
    /// and held-out means, the out-of-fold mean with a paired randomisation test against the
    /// first candidate, and — marked as optimistic — the best candidate over all queries.
    #[command(after_help = eval_help())]
    Tune(EvalTuneArgs),
    /// Make a test set from your own documents (a store's, files', or a dataset's), with no
    /// human judgments: queries, the documents that answer them, and answer text, in the
    /// long-document layout `eval run` reads.
    ///
    /// Generators need no model: `ict` takes a sentence out of its document as the query,
    /// `title` asks a document's title or headings. The held-out text is masked from the corpus
    /// when the set is scored, so it is not found word for word. A query whose text stands
    /// nearly word for word elsewhere in its document is dropped; one that stands in up to three
    /// other documents makes them relevant too (and is masked there), in more it is dropped.
    Synth(EvalSynthArgs),
    /// Which strategy works on this store's documents: candidates compared on a test set made
    /// from them (or --dataset), with each one's margin over the store's default (95 % paired
    /// bootstrap interval, randomisation test), cost (ms per query, index size) and an
    /// out-of-fold estimate of choosing this way; --apply makes the winner the store's default.
    Recommend(EvalRecommendArgs),
    /// Answer quality end to end on a set with gold answers (SQuAD v1.1/v2.0 and CMRC/DRCD in
    /// the long-document layout, fastbook): every question asked of each strategy and answerer
    /// (`ckeep ask`), scored on answer accuracy (a gold answer in the answer, SQuAD
    /// normalisation, CJK by characters), token F1, context recall (a gold answer in the
    /// assembled context), citation precision (located citations on a gold answer), abstention
    /// on unanswerable questions, time and tokens; systems after the first get 95 % paired
    /// bootstrap intervals. Generations are cached, so a second run is cheap.
    Answers(EvalAnswersArgs),
}

pub fn run(
    cmd: &EvalCommand,
    store: &str,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    match cmd {
        EvalCommand::Synth(a) => synth::run(store, a, out),
        EvalCommand::Recommend(a) => recommend::run(store, a, no_cache, out),
        EvalCommand::Metrics(a) => run::metrics(a, out),
        EvalCommand::Run(a) => run::run_strategies(a, no_cache, out),
        EvalCommand::Tune(a) => tune::run(a, no_cache, out),
        EvalCommand::Answers(a) => answers::run(a, no_cache, out),
    }
}
