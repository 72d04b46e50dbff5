//! `ckeep eval synth`: a test set made from the user's own documents (see `ckeep_eval::synth`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use ckeep_core::Document;
use ckeep_eval::synth::{self, Generator, SynthOptions};
use ckeep_store::StoreRead;
use clap::Args;

use crate::UsageError;
use crate::commands::ingest::check_inputs;
use crate::flags::LoadFlags;
use crate::output::{Output, outln};

#[derive(Debug, Args)]
pub struct EvalSynthArgs {
    /// Files or folders to make queries from, read as `ckeep add` reads them (JSONL, Markdown,
    /// text, PDF, HTML, EPUB, DOCX, notebooks). Without --docs or --dataset, the documents of
    /// the store (`--store`).
    #[arg(long, value_name = "PATH", num_args = 1.., conflicts_with = "dataset")]
    pub docs: Vec<PathBuf>,
    /// The documents of an evaluation dataset (any layout `eval run --dataset` reads), to
    /// compare a synthetic set with the dataset's human judgments.
    #[arg(long, value_name = "DIR")]
    pub dataset: Option<PathBuf>,
    /// The split of --dataset (BEIR qrels split; `all` for fastbook-benchmark).
    #[arg(long, default_value = "test", requires = "dataset")]
    pub split: String,
    /// Write queries.jsonl, docs.jsonl and synth.json here: `ckeep eval run --dataset DIR`
    /// scores the set (with its held-out text masked).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Queries to make.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: u32,
    /// Seed of the sampling of documents and passages.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
    /// How queries are made: `ict` (inverse cloze: a sentence taken out of its document is the
    /// query), `title` (a document's title or a Markdown heading is the query) or `llm` (a
    /// language model writes the query a passage answers; see --llm).
    #[arg(long, value_name = "NAME", default_value = "ict", value_parser = parse_generator)]
    pub generator: Generator,
    /// The language model of `--generator llm`: an installed name (`ckeep model pull`), a
    /// `.gguf` file, or an OpenAI-compatible server as `URL#MODEL` (llama.cpp, Ollama, vLLM).
    /// Answers are cached, so a second run asks nothing again.
    #[arg(long, value_name = "MODEL", default_value = "qwen2.5-coder-0.5b-instruct")]
    pub llm: String,
    /// The prompt of `--generator llm`, from a file; `{passage}` stands for the passage
    /// (default: the prompt in the guide docs/guides/own-documents.md).
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,
    #[command(flatten)]
    pub load: LoadFlags,
}

pub(super) fn parse_generator(s: &str) -> Result<Generator, String> {
    s.parse().map_err(|e: ckeep_eval::Error| e.to_string())
}

pub fn run(store: &str, args: &EvalSynthArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let (docs, origin) = documents(store, args, out)?;
    let opts = SynthOptions::new(args.count as usize, args.seed, args.generator);
    let report = if args.generator == Generator::Llm {
        with_llm(&docs, &opts, args, out)?
    } else {
        synth::make(&docs, &opts, &args.out)?
    };
    if let Some(shortfall) = report.shortfall() {
        out.warn(shortfall);
    }
    if out.json {
        out.print_json(&serde_json::json!({
            "source": origin, "out": args.out.display().to_string(), "report": report,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} `{}` queries from {} of {} documents of {origin} (seed {})",
        report.queries,
        report.generator,
        report.documents_used,
        report.documents,
        report.seed
    );
    outln!(
        "checks: {} dropped as near copies within their document, {} as boilerplate (in more \
         than {} other documents); {} other documents judged relevant where the text also stands",
        report.near_copy_dropped,
        report.bleed_dropped,
        opts.max_bleed,
        report.bleed_relevant_added
    );
    if let Some(model) = &report.model {
        outln!("written by {model}; {} unusable answers dropped", report.unusable_answers);
    }
    outln!(
        "{} held-out spans are masked when the set is scored; written to {}",
        report.masked_spans,
        args.out.display()
    );
    outln!(
        "next: ckeep eval run --dataset {} --strategy mode=bm25 --strategy …",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Makes the set with the language model `--llm`, behind the generation cache; a model that
/// fails after some queries leaves them written, and says so.
fn with_llm(
    docs: &[Document],
    opts: &SynthOptions,
    args: &EvalSynthArgs,
    out: &Output,
) -> anyhow::Result<synth::SynthReport> {
    let template = match &args.prompt {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| UsageError(format!("--prompt {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let model = synth::llm::open_model(&args.llm)?;
    let writer = synth::llm::QueryWriter::new(model.as_ref(), template)?;
    let bar = out.progress(opts.count as u64, "asking the model");
    let (queries, report) =
        synth::synthesize_with(docs, opts, Some(&writer), &mut |done, _| bar.set_position(done))?;
    bar.finish_and_clear();
    synth::write(&args.out, docs, &queries, &report)?;
    if let Some(why) = &report.stopped {
        bail!(
            "{why}\n{} queries made before it stopped are in {}",
            report.queries,
            args.out.display()
        );
    }
    Ok(report)
}

/// The documents to make queries from, and what to call where they came from.
fn documents(
    store: &str,
    args: &EvalSynthArgs,
    out: &Output,
) -> anyhow::Result<(Vec<Document>, String)> {
    if let Some(dir) = &args.dataset {
        let data = ckeep_eval::dataset::load(Some(dir), &args.split, None, false)?;
        return Ok((data.docs, data.name));
    }
    if !args.docs.is_empty() {
        let checked = check_inputs(&args.load.inputs(&args.docs), "used", out)?;
        let docs = checked.documents(|_| {}).collect::<Result<Vec<_>, _>>()?;
        return Ok((docs, "the --docs files".into()));
    }
    let engine = super::super::open(store)?;
    let store_read = engine.store();
    let ids = store_read.document_ids()?;
    let bar = out.progress(ids.len() as u64, "reading documents");
    let mut docs = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(d) = store_read.document(&id)? {
            docs.push(d.document);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok((docs, format!("the store {store}")))
}
