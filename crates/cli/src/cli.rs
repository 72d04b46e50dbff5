//! The command line's top: global flags and the list of commands, each command's arguments
//! owned by its module in `commands/` (clap parses them into validated values, so a bad spec is
//! a usage error with exit code 2 before anything runs).

use crate::commands::adapt::AdaptArgs;
use crate::commands::add::AddArgs;
use crate::commands::admin::RmArgs;
use crate::commands::ask::AskArgs;
use crate::commands::dedup::DedupArgs;
use crate::commands::embed::EmbedArgs;
use crate::commands::eval::EvalArgs;
use crate::commands::extract::ExtractArgs;
#[cfg(feature = "server")]
use crate::commands::mcp::McpArgs;
use crate::commands::model::ModelArgs;
use crate::commands::pairs::PairsArgs;
use crate::commands::search::SearchArgs;
#[cfg(feature = "server")]
use crate::commands::serve::ServeArgs;
use crate::commands::show::ShowArgs;
use crate::commands::similar::SimilarArgs;
use crate::commands::sync::SyncArgs;
#[cfg(feature = "watch")]
use crate::commands::watch::WatchArgs;
use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "Context Keeper: store long, index short.

Documents are kept whole; they are indexed as small chunks with byte-exact spans; a query finds
the best small pieces and hands back the context with exact provenance.

Exit codes: 0 success, 1 runtime failure (the machine, a server, a bug), 2 the user's error
(arguments, malformed input, no store or model there, a store built otherwise).";

#[derive(Debug, Parser)]
#[command(name = "ckeep", version, about = ABOUT, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
#[allow(clippy::doc_markdown)] // help texts show URLs as users type them
pub struct Global {
    /// The store: a directory (the embedded SQLite store) or a PostgreSQL database as
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (PostgreSQL with pgvector; see
    /// docs/postgres.md).
    #[arg(
        long,
        global = true,
        env = "CKEEP_STORE",
        default_value = ".ckeep",
        value_name = "DIR|URL"
    )]
    pub store: String,
    /// Print one JSON document on stdout (logs and progress go to stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bars or notes on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Do not read or write the embedding cache (`$CKEEP_CACHE`, default
    /// `~/.cache/ckeep/embeddings.sqlite`).
    #[arg(long, global = true)]
    pub no_cache: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add files, directories, JSONL corpora or stdin (`-`) to the store.
    ///
    /// Formats by extension: .txt/.rst (plain), .md (Markdown), .ipynb (Jupyter: markdown cells as
    /// they are, code cells as fenced blocks), .jsonl (one document per line with `id`/`_id`/
    /// `doc_id`, `text`/`contents`, optional title and metadata; BEIR corpus.jsonl works as is),
    /// .html/.htm (the main content, headings as Markdown), .pdf (the text layer, page by page,
    /// running headers and footers dropped), .epub (chapters in reading order) and .docx
    /// (paragraphs, headings and tables). Directories are walked recursively, skipping hidden
    /// files and .gitignore/.ckeepignore entries.
    ///
    /// All inputs are checked before anything is written: a bad input (invalid UTF-8, binary,
    /// empty, too large, malformed JSONL lines) stops the command and leaves the store as it was,
    /// unless --keep-going skips it. Re-adding an unchanged document is a no-op; a changed one
    /// replaces the stored version.
    Add(AddArgs),
    /// Bring the store in line with files and folders: add new files, replace changed ones.
    ///
    /// Files are read as `add` reads them and compared by content hash, so an unchanged file
    /// costs a read and nothing else. With --prune, documents whose file is gone from under a
    /// PATH (or whose JSONL line is gone) are removed. Every input is checked before anything
    /// is written, each batch is one transaction, so an interrupted sync leaves every document
    /// old or new and running it again finishes the job. Document ids are paths as given, so
    /// sync from the directory you added from (or give absolute paths).
    Sync(SyncArgs),
    /// Keep the store in line with files and folders while running: sync once, then sync each
    /// change as it happens.
    ///
    /// File-system events are gathered until none came for --debounce seconds (at most one
    /// second after the first), and each batch is synced like `sync` limited to the paths that
    /// changed: one transaction when it fits one ingest batch, so `ckeep serve` on the same
    /// store shows each batch whole. Files that do not load yet (a PDF being written) are
    /// reported and their stored documents kept. With --prune, documents whose file is deleted
    /// are removed. --json prints one line per batch. Ctrl-C stops; every batch written is
    /// committed, and a batch cut short is written again by the next `watch` or `sync`.
    #[cfg(feature = "watch")]
    Watch(WatchArgs),
    /// Search the store.
    Search(Box<SearchArgs>),
    /// Answer a question from the store's documents, citing them: every quote is located in
    /// the stored text and shown as a byte span, or marked as not found.
    ///
    /// The store is searched (its default strategy, or the flags'), the best passages that fit
    /// --context-tokens become numbered sources, and a language model answers from them
    /// (streamed as it writes), citing each sentence with a source's number and exact words.
    /// Each quote is looked for in the stored document: exactly, then with whitespace, case and
    /// width folded, then with a few slips. When the sources do not hold the answer, it says so
    /// and lists them. `--llm none` answers without a model: the context's best sentences.
    Ask(Box<AskArgs>),
    /// Print a stored document byte for byte, or its chunks with spans.
    Show(ShowArgs),
    /// Print the text `add` would store for files, without a store: what a PDF, HTML, EPUB or
    /// DOCX file becomes, with its pages or element paths under --json; --stats measures it.
    Extract(ExtractArgs),
    /// Counts and sizes of the store.
    Stats,
    /// Remove documents by id.
    Rm(RmArgs),
    /// Verify the store: spans inside documents, parents present, counts consistent, and each
    /// saved HNSW graph whole and current.
    Check,
    /// Evaluate: score a run, or compare strategies on a dataset.
    Eval(EvalArgs),
    /// Print the embeddings of texts (for pipelines and parity checks).
    Embed(EmbedArgs),
    /// List, install and inspect embedding models.
    Model(ModelArgs),
    /// Compare two texts by chunk-pair similarity: both are cut into word windows, every window
    /// embedded, and the score is the mean cosine of the top-k most similar window pairs; the
    /// whole-text cosine is shown beside it.
    Similar(SimilarArgs),
    /// Score labelled text pairs (duplicate or not) by whole-text cosine and by chunk-pair
    /// similarity, side by side: accuracy (95 % interval), precision, recall and F1 at a
    /// threshold, ROC-AUC, average precision, and McNemar's test between the two.
    ///
    /// A threshold calibrated with --calibrate FILE or --calibrate-split F is chosen on pairs
    /// that are not the ones reported.
    Pairs(PairsArgs),
    /// Find near-duplicate documents (or passages) in the store: each chunk's nearest stored
    /// neighbours propose candidate pairs (through the HNSW graph for large stores), which are
    /// scored by chunk-pair similarity and grouped into clusters with their matching spans.
    Dedup(DedupArgs),
    /// Adapt the store's embedding models to its documents: a map of query vectors is trained
    /// on queries made from the documents (inverse cloze sentences and titles, as `eval synth`
    /// makes them) against their source passages and hard negatives mined by the store's own
    /// searches. Stored vectors stay as they are. Queries from a fifth of the documents are
    /// held out; the map is kept only when they find their sources better with it (95 %
    /// paired interval above zero). --undo removes it.
    Adapt(AdaptArgs),
    /// Serve the store over HTTP with a JSON API (described at /openapi.json).
    ///
    /// Binds 127.0.0.1 by default. With --token-file, every API request needs
    /// `Authorization: Bearer TOKEN`; open without it are /health, /openapi.json and the
    /// playground's page and files (/ and /ui/*), which hold no data. SIGINT or SIGTERM stops
    /// accepting requests, lets those in flight finish, saves the vector index and waits for
    /// the last write to commit; a second signal stops at once. The store is created if
    /// missing.
    #[cfg(feature = "server")]
    Serve(ServeArgs),
    /// Serve the store to AI agents over the Model Context Protocol (stdio).
    ///
    /// Tools: search (query, k, mode, level, expand, filter), show (a document, chosen spans of
    /// it, or its chunks) and similar (two texts); with --allow-write also add (a text, or a
    /// file or folder). Results carry doc ids, byte spans and text. stdout carries the
    /// protocol; logs go to stderr. Register it with an agent as the command
    /// `ckeep --store DIR mcp`.
    #[cfg(feature = "server")]
    Mcp(McpArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every command and subcommand, with its path (`eval run`).
    fn commands() -> Vec<(String, clap::Command)> {
        let mut all = Vec::new();
        let mut todo = vec![(String::new(), Cli::command())];
        while let Some((path, cmd)) = todo.pop() {
            for sub in cmd.get_subcommands() {
                todo.push((format!("{path} {}", sub.get_name()).trim().to_string(), sub.clone()));
            }
            all.push((path, cmd));
        }
        all
    }

    // clap indents an option's long help by ten columns and wraps at 100; a table row longer
    // than 90 characters wraps at column 10 and breaks the table ("each\n a").
    #[test]
    fn help_tables_fit_without_wrapping() {
        let mut long = Vec::new();
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string);
                for paragraph in help.unwrap_or_default().split("\n\n") {
                    let lines: Vec<&str> = paragraph.lines().collect();
                    // A paragraph of one line is prose, which clap wraps well.
                    if lines.len() < 2 {
                        continue;
                    }
                    for line in lines.iter().filter(|l| l.chars().count() > 90) {
                        long.push(format!("{path} --{}: {line}", arg.get_id()));
                    }
                }
            }
        }
        assert!(long.is_empty(), "help rows longer than 90 characters:\n{}", long.join("\n"));
    }

    #[test]
    fn each_option_states_its_default_once() {
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments().filter(|a| !a.get_default_values().is_empty()) {
                let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string);
                assert!(
                    !help.unwrap_or_default().contains("[default:"),
                    "{path} --{}: clap prints the default; the help says one too",
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
