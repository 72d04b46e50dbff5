//! `ckeep`: Context Keeper's command line. Store long, index short.

mod cli;
mod commands;
#[cfg(test)]
mod documented;

mod flags;
mod output;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::output::Output;

/// An error caused by how the command was called (exit code 2), as opposed to a failure while
/// doing the work (exit code 1): the engine's, so every front end classifies it alike.
pub use ckeep_engine::UsageError;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && asks_for_json(std::env::args_os()) => {
            // With --json, a command line clap refuses is answered like any other mistake.
            let body = usage_body(&e);
            Output::new(true, false).error(&body);
            return ExitCode::from(body.code.exit_code());
        }
        Err(e) => {
            // clap prints help/version on stdout and errors on stderr, with exit code 0 or 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let out = Output::new(cli.global.json, cli.global.quiet);
    match run(&cli, &out) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // One table for every error type (the engine's, with the evaluation's on top): the
            // server's statuses, MCP's answers and Python's exception classes follow it too.
            let body = ckeep_eval::Error::body(err.as_ref(), output::error_message(&err));
            out.error(&body);
            ExitCode::from(body.code.exit_code())
        }
    }
}

/// Whether a command line that did not parse asked for `--json` (before any `--`, after which
/// words are values).
fn asks_for_json(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    args.skip(1).take_while(|a| a != "--").any(|a| a == "--json")
}

/// clap's refusal as the error body every front end answers with: `invalid_parameter`, its
/// first line the message, the rest (possible values, where to read more) the hint.
fn usage_body(e: &clap::Error) -> ckeep_engine::ErrorBody {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines.next().unwrap_or("invalid command line");
    let hint: Vec<&str> = lines.collect();
    ckeep_engine::ErrorBody {
        code: ckeep_engine::ErrorCode::InvalidParameter,
        message: message.strip_prefix("error: ").unwrap_or(message).to_string(),
        hint: (!hint.is_empty()).then(|| hint.join(" ")),
    }
}

/// A reader that stopped reading (`ckeep search … | head`) is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) || err
        .downcast_ref::<serde_json::Error>()
        .is_some_and(|e| e.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
}

fn run(cli: &Cli, out: &Output) -> anyhow::Result<ExitCode> {
    let store = cli.global.store.as_str();
    match &cli.command {
        Command::Add(a) => commands::add::run(store, a, cli.global.no_cache, out),
        Command::Sync(a) => commands::sync::run(store, a, cli.global.no_cache, out),
        #[cfg(feature = "watch")]
        Command::Watch(a) => commands::watch::run(store, a, cli.global.no_cache, out),
        Command::Search(a) => commands::search::run(store, a, cli.global.no_cache, out),
        Command::Ask(a) => commands::ask::run(store, a, cli.global.no_cache, out),
        Command::Show(a) => commands::show::run(store, a, out),
        Command::Extract(a) => commands::extract::run(a, out),
        Command::Stats => commands::admin::stats(store, out),
        Command::Rm(a) => commands::admin::rm(store, a, out),
        Command::Check => commands::admin::check(store, out),
        Command::Eval(e) => {
            commands::eval::run(&e.command, &cli.global.store, cli.global.no_cache, out)
        }
        Command::Embed(a) => commands::embed::run(a, cli.global.no_cache, out),
        Command::Model(m) => commands::model::run(&m.command, out),
        Command::Similar(a) => commands::similar::run(a, cli.global.no_cache, out),
        Command::Pairs(a) => commands::pairs::run(a, cli.global.no_cache, out),
        Command::Dedup(a) => commands::dedup::run(store, a, cli.global.no_cache, out),
        Command::Adapt(a) => commands::adapt::run(store, a, cli.global.no_cache, out),
        #[cfg(feature = "server")]
        Command::Serve(a) => commands::serve::run(store, a, cli.global.no_cache, out),
        #[cfg(feature = "server")]
        Command::Mcp(a) => commands::mcp::run(store, a, cli.global.no_cache, out),
    }
}
