//! The server's log lines on stderr, written by a thread of their own. A request logs a line on
//! an async worker; written there, a stderr nobody drains (a stalled supervisor, `2>&1 | less`,
//! a test harness) fills its pipe after about 64 KB and blocks every worker in `write(2)`, and
//! the server stops answering, `/health` included. So lines wait in a bounded queue instead,
//! and when it is full they are dropped and counted (`ckeep_log_lines_dropped_total` in
//! `/metrics`): logging never stalls serving.

use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// Lines that may wait for stderr: about 200 KB of ordinary request lines.
pub const QUEUED_LINES: usize = 1_024;

/// Lines dropped because the queue was full, since the logs were set up.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Keeps the log thread; dropping it writes out the lines still queued.
#[derive(Debug)]
#[must_use = "the log thread stops when this is dropped"]
pub struct LogGuard {
    _thread: Option<WorkerGuard>,
}

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// For people.
    Text,
    /// One JSON object a line, for log collectors.
    Json,
}

/// Sets up the process's logs on stderr: `filter` is `CKEEP_LOG`'s value (`None`: `info`, or
/// `warn` when `quiet`). The error is a filter that does not parse, in words for the user.
pub fn init(filter: Option<&str>, quiet: bool, format: LogFormat) -> Result<LogGuard, String> {
    let filter = match filter {
        Some(spec) => EnvFilter::try_new(spec)
            .map_err(|e| format!("CKEEP_LOG=`{spec}` is not a log filter: {e}"))?,
        None => EnvFilter::new(if quiet { "warn" } else { "info" }),
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("ckeep-log")
        .finish(std::io::stderr());
    let counter = writer.error_counter();
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    // Fails only if a subscriber is already set (a second server in one process): keep that
    // one, and its counter.
    let set = match format {
        LogFormat::Json => logs.json().try_init(),
        LogFormat::Text => logs.try_init(),
    };
    if set.is_err() {
        return Ok(LogGuard { _thread: None });
    }
    let _ = DROPPED.set(counter);
    Ok(LogGuard { _thread: Some(guard) })
}

/// Log lines dropped so far because stderr did not keep up.
pub fn dropped_lines() -> u64 {
    DROPPED.get().map_or(0, |c| c.dropped_lines() as u64)
}
