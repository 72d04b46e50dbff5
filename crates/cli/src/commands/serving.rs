//! What `serve` and `mcp` share: logging, and which model a server over a store answers with.

use crate::UsageError;

/// Structured logs on stderr, filtered by `CKEEP_LOG` (`info` when unset; `warn` with `--quiet`).
pub fn init_logging(format: &str, quiet: bool) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("CKEEP_LOG") {
        Ok(spec) => EnvFilter::try_new(&spec).map_err(|e| {
            anyhow::Error::new(UsageError(format!("CKEEP_LOG=`{spec}` is not a log filter: {e}")))
        })?,
        Err(_) => EnvFilter::new(if quiet { "warn" } else { "info" }),
    };
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // Fails only if a subscriber is already set (a second serve in one process): keep that one.
    let _ = if format == "json" { logs.json().try_init() } else { logs.try_init() };
    Ok(())
}

/// The model a server over `store` answers with, by the engine's rule
/// ([`ckeep_engine::Searcher::model_for`]): the flag's, else the one the store was built with
/// (the flag's, or none, for a new store).
pub fn model_for(store: &str, flag: Option<&str>) -> anyhow::Result<Option<String>> {
    match ckeep_store::open(store) {
        Ok(s) => Ok(ckeep_engine::Engine::new(s).searcher()?.model_for(flag)),
        Err(ckeep_store::Error::NotFound { .. }) => Ok(flag.map(str::to_string)),
        Err(e) => Err(e.into()),
    }
}
