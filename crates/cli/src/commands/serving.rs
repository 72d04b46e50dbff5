//! What `serve` and `mcp` share: logging, and which model a server over a store answers with.

use crate::UsageError;

/// Structured logs on stderr, filtered by `CKEEP_LOG` (`info` when unset; `warn` with `--quiet`).
pub fn init_logging(format: &str, quiet: bool) -> anyhow::Result<ckeep_server::logs::LogGuard> {
    use ckeep_server::logs::LogFormat;
    let format = if format == "json" { LogFormat::Json } else { LogFormat::Text };
    let filter = std::env::var("CKEEP_LOG").ok();
    ckeep_server::logs::init(filter.as_deref(), quiet, format)
        .map_err(|e| anyhow::Error::new(UsageError(e)))
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
