//! `ckeep add`: check every input, then chunk, index and store in batches.

use std::process::ExitCode;
use std::time::Instant;

use ckeep_engine::{AddReport, IngestReport, Skipped};
use ckeep_store::DynStore;

use super::ingest::{check_inputs, open_with_model, stage_progress, warn_unspaced};
use crate::flags::{
    ANALYZER_HELP, LoadFlags, PRECISION_HELP, QUANTIZE_HELP, chunker_help, model_long_help,
    parse_analyzer, parse_chunker, parse_fields, parse_quantize, parse_repr, parse_size_unit,
    parse_summarizer, repr_help, summarizer_help,
};
use crate::output::{Output, human_bytes, outln};
use ckeep_text::ChunkerSpec;
use clap::Args;
use std::path::PathBuf;

const ADD_MODELS: &str = "Embed every chunk with this model (default: the store's model, if it has one); recorded in the store, which then only accepts the same model. Given again (`--model A --model B`), the further models' vectors are kept beside the first's, for strategies that fuse them (`models=A+B,mode=hybrid`); without inputs, adds them to an existing store";

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Files or directories; `-` reads standard input as one plain-text document. Without any,
    /// `--model` embeds the chunks of a store built without one, and `--repr`/`--summarizer`
    /// are built for the documents already stored (resumable after an interruption).
    #[arg(required_unless_present_any = ["repr", "summarizer", "model", "fields", "quantize"], value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Which fields of each document to index: `text`, or `title,text` — each chunk indexed
    /// and embedded with its document's title in front (BEIR's convention), and searched that
    /// way unless a strategy names another `repr=`. Kept by the store.
    #[arg(long, value_name = "FIELDS", value_parser = parse_fields)]
    pub fields: Option<ckeep_engine::Fields>,
    /// Also build this representation for every document (repeatable); `plain` is always
    /// built with a model. Kept by the store for documents added later.
    #[arg(long, value_name = "REPR", value_parser = parse_repr, long_help = repr_help())]
    pub repr: Vec<ckeep_engine::Representation>,
    /// Summarize every document this way (repeatable), for the summary-based representations.
    /// Summaries are stored and computed once; an interrupted run resumes.
    #[arg(long, value_name = "SPEC", value_parser = parse_summarizer, long_help = summarizer_help())]
    pub summarizer: Vec<ckeep_engine::Summarizer>,
    /// How to cut documents into chunks (default: the store's chunker, or markdown:256 for a
    /// new store). Sizes of markdown/hierarchy count words (no model tokenizer is configured).
    #[arg(long, value_name = "SPEC", value_parser = parse_chunker, long_help = chunker_help())]
    pub chunker: Option<ChunkerSpec>,
    /// How text becomes search terms, for a new store (a store keeps its own): `standard`
    /// (English), `cjk` (bigrams for Chinese, Japanese, Korean), `jieba` (Chinese words), or
    /// `auto` (from the script of the first documents) [default: the store's, or auto].
    #[arg(long, value_name = "NAME", value_parser = parse_analyzer, long_help = ANALYZER_HELP)]
    pub analyzer: Option<ckeep_engine::AnalyzerChoice>,
    /// What the sizes of markdown, semantic and hierarchy chunkers count: words (each Chinese
    /// or Japanese character, or Hangul syllable, is one) or the model's tokens (needs --model;
    /// the same as `,unit=tokens` in the chunker spec).
    #[arg(long, value_name = "UNIT", value_parser = parse_size_unit)]
    pub size_unit: Option<ckeep_text::chunk::SizeUnit>,
    #[command(flatten)]
    pub load: LoadFlags,
    #[arg(long, value_name = "MODEL", help = ADD_MODELS, long_help = model_long_help(ADD_MODELS))]
    pub model: Vec<String>,
    #[arg(long, value_name = "PRECISION", default_value = "f32", requires = "model", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
    /// Hold the store's vectors in memory as `int8` (a quarter of the RAM) or `binary` (a
    /// thirty-second) for dense search, or as float32 again (`none`): `KIND` for every stored
    /// representation, `REPR=KIND` for one (repeatable). Kept by the store; searches scan the
    /// codes and rescore the best candidates with the float32 vectors, which stay on disk.
    #[arg(long, value_name = "[REPR=]KIND", value_parser = parse_quantize, long_help = QUANTIZE_HELP)]
    pub quantize: Vec<(Option<String>, ckeep_index::Quantization)>,
}

impl AddArgs {
    /// The model spec asked for first, with its precision.
    pub fn model(&self) -> Option<String> {
        self.model.first().map(|m| self.precision.apply(m))
    }

    /// The further models asked for, with their precision.
    pub fn further_models(&self) -> impl Iterator<Item = String> + '_ {
        self.model.iter().skip(1).map(|m| self.precision.apply(m))
    }
}

pub fn run(store: &str, args: &AddArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if args.paths.is_empty() {
        return derive_only(store, args, no_cache, out, started);
    }
    // Pass 1: load and check every input before touching the store.
    let checked = check_inputs(&args.load.inputs(&args.paths), "added", out)?;
    let (skipped, warnings) = (checked.skipped.clone(), checked.warnings.clone());

    // Pass 2: chunk, index and write in batches.
    let mut engine =
        open_with_model(store, args.model().as_deref(), args.analyzer, no_cache, true)?;
    let chunker = engine.searcher()?.chunker_for(args.chunker.as_ref(), args.size_unit)?;
    let bar = out.progress(checked.documents_known(), "indexing");
    let mut ingest = engine.writer().ingest(&chunker)?;
    require(&mut ingest, args)?;
    checked.add_to(&mut ingest, |reread| {
        bar.inc_length(reread);
        bar.inc(1);
    })?;
    let report = ingest.finish_with(&mut stage_progress(&bar))?;
    let ending = Ending { store, chunker: &chunker, no_cache, started, skipped, warnings };
    end(&mut engine, args, report, &bar, ending, out)
}

/// `ckeep add --model … / --repr … / --summarizer …` without inputs: embeds the stored chunks
/// of a store built without a model, and builds the representations and summaries for the
/// stored documents; resumable, like every derivation.
fn derive_only(
    store: &str,
    args: &AddArgs,
    no_cache: bool,
    out: &Output,
    started: Instant,
) -> anyhow::Result<ExitCode> {
    let mut engine =
        open_with_model(store, args.model().as_deref(), args.analyzer, no_cache, false)?;
    let chunker = engine.searcher()?.chunker_for(None, None)?;
    let bar = out.progress(0, "deriving");
    let adopted = if engine.embedder().is_some() {
        Some(engine.writer().adopt_model(&mut stage_progress(&bar))?)
    } else {
        None
    };
    let ingest = {
        let mut ingest = engine.writer().ingest(&chunker)?;
        require(&mut ingest, args)?;
        ingest
    };
    let mut report = ingest.finish_with(&mut stage_progress(&bar))?;
    if let Some(stage) = adopted.filter(|s| s.documents > 0) {
        report.vectors += stage.vectors;
        report.derived.insert(0, stage);
    }
    let ending = Ending {
        store,
        chunker: &chunker,
        no_cache,
        started,
        skipped: Vec::new(),
        warnings: Vec::new(),
    };
    end(&mut engine, args, report, &bar, ending, out)
}

/// What an `add` run knows when its documents are written, for [`end`].
struct Ending<'a> {
    store: &'a str,
    chunker: &'a ChunkerSpec,
    no_cache: bool,
    started: Instant,
    skipped: Vec<Skipped>,
    warnings: Vec<String>,
}

/// How both kinds of `add` end: the further models, quantisation, then the report.
fn end(
    engine: &mut ckeep_engine::Engine<DynStore>,
    args: &AddArgs,
    mut report: IngestReport,
    bar: &indicatif::ProgressBar,
    ending: Ending<'_>,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    add_further_models(engine, args, &mut report, ending.no_cache, bar)?;
    bar.finish_and_clear();
    quantize(engine, args)?;
    let seconds = ending.started.elapsed().as_secs_f64();
    let model = engine.embedder().map(|e| e.info().clone());
    let analyzer = engine.searcher()?.analyzer()?;
    let run = Run {
        store: ending.store,
        chunker: ending.chunker,
        analyzer,
        model: model.as_ref(),
        seconds,
    };
    print_report(&run, report, ending.skipped, ending.warnings, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Records what every document gets: `--repr`, `--summarizer`, and the representation
/// `--fields` stands for, which also becomes what searches use by default.
fn require(ingest: &mut ckeep_engine::Ingest<'_, DynStore>, args: &AddArgs) -> anyhow::Result<()> {
    let fields = args.fields.and_then(ckeep_engine::Fields::representation);
    let reprs: Vec<_> = args.repr.iter().copied().chain(fields).collect();
    ingest.require(&reprs, &args.summarizer)?;
    if let Some(f) = args.fields {
        ingest.set_default_repr(f.representation())?;
    }
    Ok(())
}

/// Adds the models after the first `--model` to the store (embedding what lacks their
/// vectors), reported as derivation stages.
fn add_further_models(
    engine: &mut ckeep_engine::Engine<DynStore>,
    args: &AddArgs,
    report: &mut ckeep_engine::IngestReport,
    no_cache: bool,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<()> {
    for spec in args.further_models() {
        let model = super::load_model(&spec, no_cache)?;
        let stage = engine.writer().add_model(model, &mut stage_progress(bar))?;
        if stage.documents > 0 {
            report.vectors += stage.vectors;
            report.derived.push(stage);
        }
    }
    Ok(())
}

/// Records `--quantize` in the store, once the representations it names exist.
fn quantize(engine: &mut ckeep_engine::Engine<DynStore>, args: &AddArgs) -> anyhow::Result<()> {
    for (repr, kind) in &args.quantize {
        engine.writer().set_quantization(repr.as_deref(), *kind)?;
    }
    Ok(())
}

/// The settings an `add` ran with.
struct Run<'a> {
    store: &'a str,
    chunker: &'a ckeep_text::ChunkerSpec,
    analyzer: Option<ckeep_engine::Analyzer>,
    model: Option<&'a ckeep_embed::ModelInfo>,
    seconds: f64,
}

/// Prints what `add` did: the engine's [`AddReport`] under `--json`.
fn print_report(
    run: &Run<'_>,
    ingest: IngestReport,
    skipped: Vec<Skipped>,
    warnings: Vec<String>,
    out: &Output,
) -> anyhow::Result<()> {
    let Run { store, chunker, analyzer, model, seconds } = *run;
    warn_unspaced(&ingest, out);
    let full =
        AddReport::new(store, chunker, analyzer, model.map(|m| m.name.clone()), ingest, seconds)
            .with_inputs(skipped, warnings);
    let report = &full.ingest;
    if out.json {
        out.print_json(&full)?;
    } else {
        outln!(
            "{} added, {} replaced, {} unchanged of {} documents; {} chunks ({}) with {chunker} in {seconds:.2} s",
            report.added,
            report.replaced,
            report.unchanged,
            report.documents,
            report.chunks,
            human_bytes(report.bytes),
        );
        if let Some(chosen) = &report.analyzer_chosen {
            outln!(
                "analyzer {chosen}, chosen from the documents' script (--analyzer on a new store to choose)"
            );
        }
        if let Some(m) = model {
            outln!(
                "{} chunk vectors with {} ({} from the cache){}",
                report.vectors,
                m.name,
                report.cached_vectors,
                if report.truncated > 0 {
                    format!(
                        "; {} chunks were longer than the model's {} tokens and embedded from their start",
                        report.truncated,
                        m.max_tokens.unwrap_or(0)
                    )
                } else {
                    String::new()
                }
            );
        }
        for st in &report.derived {
            outln!(
                "{}: {} documents, {} vectors{} in {:.1} s",
                st.stage,
                st.documents,
                st.vectors,
                if st.generated_tokens > 0 {
                    format!(
                        ", {} tokens generated ({:.1} tokens/s)",
                        st.generated_tokens,
                        st.generated_tokens as f64 / st.seconds.max(1e-9)
                    )
                } else {
                    String::new()
                },
                st.seconds
            );
        }
    }
    Ok(())
}
