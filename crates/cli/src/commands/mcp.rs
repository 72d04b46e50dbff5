//! `ckeep mcp`: the store as Model Context Protocol tools over stdio, for agents.

use std::process::ExitCode;

use anyhow::Context;
use ckeep_server::mcp::McpOptions;
use ckeep_server::{AppState, Limits, ServerConfig};

use super::seconds;
use super::serving::{init_logging, model_for};
use crate::flags::MODEL_HELP;
use crate::output::Output;
use clap::Args;

/// Readers for one agent: its calls come one or a few at a time.
const READERS: usize = 2;

#[cfg(feature = "server")]
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer the `add` tool, so the agent can store texts and files (the store is created if
    /// missing). Without it the agent can only read.
    #[arg(long)]
    pub allow_write: bool,
    /// With --allow-write: a folder whose files and folders `add` may read (repeatable; `..`
    /// and symbolic links that lead out of it are refused) [default: the current directory].
    #[arg(long, value_name = "DIR", requires = "allow_write")]
    pub root: Vec<std::path::PathBuf>,
    /// The embedding model (default: the one the store was built with; none: BM25 only).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
    /// Seconds a tool call may run before it is answered with a timeout error.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Who answers the `ask` tool (loaded on the first question): a model name, a .gguf file
    /// or an OpenAI-compatible server as URL#MODEL [default: qwen2.5-coder-0.5b-instruct].
    #[arg(long, value_name = "MODEL|URL#MODEL")]
    #[allow(clippy::doc_markdown)]
    pub llm: Option<String>,
}

pub fn run(store: &str, args: &McpArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    // Logs on stderr (warnings unless CKEEP_LOG says otherwise); stdout is the protocol's.
    let _logs = init_logging("text", true)?;
    if !args.allow_write {
        // A reader must not create the store it was pointed at by mistake.
        ckeep_store::open(store)?;
    }
    let model = model_for(store, args.model.as_deref())?;
    let embedder = model.as_deref().map(|m| super::load_model(m, no_cache)).transpose()?;
    let config = ServerConfig {
        limits: Limits { read_timeout: seconds("timeout", args.timeout)?, ..Limits::default() },
        readers: READERS,
        model_cache: !no_cache,
        llm: args.llm.clone(),
        ..ServerConfig::default()
    };
    let state = AppState::open(store, embedder, config).map_err(|e| anyhow::anyhow!(e.message))?;
    out.note(format!(
        "ckeep mcp: serving store {store} over stdio (model {}, {}); close stdin to stop",
        model.as_deref().unwrap_or("none: BM25 only"),
        if args.allow_write { "read and write" } else { "read-only" }
    ));
    let roots =
        if args.root.is_empty() { vec![std::path::PathBuf::from(".")] } else { args.root.clone() };
    let roots = roots
        .iter()
        .map(|r| {
            std::fs::canonicalize(r).map_err(|e| {
                anyhow::Error::new(crate::UsageError(format!("--root {}: {e}", r.display())))
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let options = McpOptions { allow_write: args.allow_write, roots };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime
        .block_on(ckeep_server::mcp::serve_stdio(state, options))
        .context("serving MCP over stdio")?;
    Ok(ExitCode::SUCCESS)
}
