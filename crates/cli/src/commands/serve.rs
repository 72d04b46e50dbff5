//! `ckeep serve`: the HTTP server over the store.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
#[cfg(feature = "watch")]
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use ckeep_server::{AppState, Limits, ServerConfig};

use super::serving::{init_logging, model_for};
use crate::UsageError;
use crate::flags::MODEL_HELP;
use crate::output::Output;
use clap::Args;
use std::path::PathBuf;

fn read_token(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the token file {}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        bail!(UsageError(format!("the token file {} is empty", path.display())));
    }
    Ok(token)
}

#[cfg(feature = "server")]
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Who answers `POST /ask` (loaded on the first question): a model name, a .gguf file or
    /// an OpenAI-compatible server as URL#MODEL [default: qwen2.5-coder-0.5b-instruct].
    #[arg(long, value_name = "MODEL|URL#MODEL")]
    pub llm: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "HOST:PORT")]
    pub addr: std::net::SocketAddr,
    /// A file holding the bearer token clients must send (first line, trimmed).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Listen beyond loopback without --token-file (anyone who reaches the port can read and
    /// change the store); refused otherwise.
    #[arg(long)]
    pub insecure_no_token: bool,
    /// A host name clients may address the server by (repeatable; `*` for any). Loopback
    /// names and the --addr IP are always served; other names are refused (403), so a web
    /// page that points its own domain at this machine reaches nothing.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// The embedding model (default: the one the store was built with; none: BM25 only).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
    /// Reader connections, i.e. reads that run at once [default: 2 × cores, at least 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub readers: Option<u16>,
    /// Largest request body in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_body_bytes)]
    pub max_body_bytes: usize,
    /// Most documents in one add request.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.max_documents)]
    pub max_documents: usize,
    /// Largest k of a search.
    #[arg(long, value_name = "K", default_value_t = Limits::DEFAULT.max_k, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_K as u64))]
    pub max_k: usize,
    /// Longest query in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_query_bytes, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_QUERY_BYTES as u64))]
    pub max_query_bytes: usize,
    /// Seconds a read may run before it is answered with 503 timeout.
    #[arg(long, value_name = "SECONDS", default_value_t = Limits::DEFAULT.read_timeout.as_secs_f64())]
    pub timeout: f64,
    /// Seconds a request may wait for a free worker before it is answered with 503 overloaded.
    #[arg(long, value_name = "SECONDS", default_value_t = Limits::DEFAULT.queue_timeout.as_secs_f64())]
    pub queue_timeout: f64,
    /// Most requests handled at once; more are answered 503 overloaded at once (memory stays
    /// below about this many request bodies).
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.max_in_flight, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub max_in_flight: usize,
    /// Embed each query on its own instead of batching concurrent queries into one model call.
    #[arg(long)]
    pub no_batch: bool,
    /// Seconds between updates of the HNSW graph of a large collection while writes come in:
    /// vectors written since are inserted, removed ones tombstoned (the graph is rebuilt and
    /// saved when those pass a fifth of it).
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub index_interval: f64,
    /// Seconds within which dense search finds an acknowledged write (near-real-time, like a
    /// search engine's refresh interval; vectors catch up at most twice per interval); BM25
    /// and reads by id see every acknowledged write at once. 0 catches up after every write.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub refresh_interval: f64,
    /// Also keep the store in line with these files or folders while serving (repeatable), as
    /// `ckeep watch` does: each batch of changes is one write, seen whole by every query.
    #[cfg(feature = "watch")]
    #[arg(long, value_name = "PATH")]
    pub watch: Vec<PathBuf>,
    /// With --watch: remove documents whose file is deleted.
    #[cfg(feature = "watch")]
    #[arg(long, requires = "watch")]
    pub prune: bool,
    /// Log lines on stderr: `text` for people, `json` (one object a line) for log collectors.
    /// One line per request (id, method, route, status, latency); the level and targets come
    /// from `CKEEP_LOG` (e.g. `warn`, `info`, `ckeep::http=off`; unset means `info`).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

pub fn run(
    store: &str,
    args: &ServeArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let _logs = init_logging(&args.log_format, out.is_quiet())?;
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    let mut config = ServerConfig {
        limits: Limits {
            max_body_bytes: args.max_body_bytes,
            max_documents: args.max_documents,
            max_k: args.max_k,
            max_query_bytes: args.max_query_bytes,
            read_timeout: super::seconds("timeout", args.timeout)?,
            queue_timeout: super::seconds("queue-timeout", args.queue_timeout)?,
            max_in_flight: args.max_in_flight,
            ..Limits::DEFAULT
        },
        token,
        batch_queries: !args.no_batch,
        index_interval: super::seconds("index-interval", args.index_interval)?,
        refresh_interval: Duration::try_from_secs_f64(args.refresh_interval).map_err(|_| {
            anyhow::Error::new(UsageError("--refresh-interval must be 0 or more seconds".into()))
        })?,
        model_cache: !no_cache,
        llm: args.llm.clone(),
        allowed_hosts: ckeep_server::AllowedHosts::new(&args.allow_host).listening_on(args.addr),
        ..ServerConfig::default()
    };
    if let Some(n) = args.readers {
        config.readers = usize::from(n);
    }
    config
        .check_listening(args.addr, args.insecure_no_token)
        .map_err(|e| anyhow::Error::new(UsageError(e.message)))?;
    if config.token.is_none() && !args.addr.ip().is_loopback() {
        out.warn(format!(
            "listening on {} without --token-file: anyone who can reach it can read and change the store",
            args.addr
        ));
    }
    let model = model_for(store, args.model.as_deref())?;
    let embedder = model.as_deref().map(|m| super::load_model(m, no_cache)).transpose()?;
    // Watching starts (and a bad PATH fails) before the server listens.
    #[cfg(feature = "watch")]
    let watch =
        if args.watch.is_empty() { None } else { Some(super::watch::start(store, &args.watch)?) };
    let state = AppState::open(store, embedder, config).map_err(|e| anyhow::anyhow!(e.message))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let addr = listener.local_addr()?;
        if out.json {
            // One line, so a supervising program can read the address before any request.
            let line = serde_json::json!({
                "listening": format!("http://{addr}"),
                "store": store.to_string(),
                "model": model,
            });
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{line}")?;
            stdout.flush()?;
        }
        out.note(format!(
            "ckeep serve: listening on http://{addr} (store {}, model {}); Ctrl-C stops",
            store,
            model.as_deref().unwrap_or("none: BM25 only")
        ));
        #[cfg(feature = "watch")]
        if let Some(watch) = watch {
            let (state, handle) = (Arc::clone(&state), tokio::runtime::Handle::current());
            let prune = args.prune;
            std::thread::Builder::new()
                .name("watch".into())
                .spawn(move || watch_beside(&watch, &state, &handle, prune))?;
        }
        ckeep_server::serve(listener, state, stop_signals(out.is_quiet())).await?;
        out.note("ckeep serve: stopped; every acknowledged write is committed");
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on the first Ctrl-C or SIGTERM, after which the server finishes its requests and
/// saves the vector index (seconds in a large store); a second one ends the process at once.
/// Transactions keep the store whole then: only the graph's save is lost, and the next process
/// carries the stored graph over or builds one.
async fn stop_signals(quiet: bool) {
    ckeep_server::shutdown_signal().await;
    if !quiet {
        eprintln!(
            "ckeep serve: stopping (finishing requests, saving the vector index; Ctrl-C again stops at once)"
        );
    }
    tokio::spawn(async {
        ckeep_server::shutdown_signal().await;
        eprintln!("warning: ckeep serve: stopped at once; the vector index was not saved");
        std::process::exit(130);
    });
}

/// `serve --watch`: the folders synced through the server's writer, batch by batch, so every
/// query sees a batch whole; batches are logged. Runs until the process ends.
#[cfg(feature = "watch")]
fn watch_beside(
    watch: &ckeep_engine::FolderWatch,
    state: &Arc<AppState>,
    runtime: &tokio::runtime::Handle,
    prune: bool,
) {
    use ckeep_engine::Changes;
    let roots = watch.roots();
    let sync = |changes: &Changes| {
        let (roots, changes) = (roots.clone(), changes.clone());
        runtime
            .block_on(state.write(move |engine| {
                let chunker = engine.searcher()?.chunker_for(None, None)?;
                let loader = ckeep_text::Loader::default();
                Ok(engine.writer().sync_changes(&roots, &changes, &loader, &chunker, prune)?)
            }))
            .map_err(|e| anyhow::anyhow!(e.message))
    };
    let synced = |batch: u64, report: &ckeep_engine::ChangesReport, took: Duration| {
        for f in &report.failed {
            tracing::warn!(batch, file = %f, "watch: skipped a file that does not load");
        }
        if batch == 0 || super::watch::eventful(report) {
            let s = &report.sync;
            tracing::info!(
                batch,
                added = s.added.len(),
                replaced = s.replaced.len(),
                removed = s.removed.len(),
                unchanged = s.unchanged,
                ms = took.as_millis(),
                "watch: synced"
            );
        }
    };
    let failed = |e: &anyhow::Error| tracing::warn!(error = %e, "watch: a batch failed");
    let debounce = ckeep_engine::Debounce::default();
    if let Err(e) = super::watch::run_batches(watch, debounce, sync, synced, failed) {
        tracing::error!(error = %e, "watch: the first sync failed; the folders are not followed");
    }
}
