//! The Model Context Protocol server: the store as tools an agent can call (`ckeep mcp`, over
//! stdio).
//!
//! The tools run the HTTP API's own code on the same workers (the `routes` module's), so a search
//! an agent makes is the search `POST /search` makes: same strategies, limits and errors.
//! Results are JSON (as text and as structured content) carrying doc ids, byte spans and text.
//! Mistakes in a call come back as tool errors the agent can read and correct, not as
//! protocol failures.

use std::path::PathBuf;
use std::sync::Arc;

use ckeep_core::Span;
use ckeep_engine::{McpAnswer, StrategyFields};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ErrorData, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::AppState;
use crate::error::ApiError;
use crate::routes::ask::{self, AskBody};
use crate::routes::documents::{self, NewDocument};
use crate::routes::query::{self, SearchBody, SimilarBody};

/// What an MCP session may do.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// Offer the `add` tool.
    pub allow_write: bool,
    /// The folders `add` may read files and folders under (`ckeep mcp --root`, canonical
    /// paths; none: `add` reads no path). An agent acts for the user on stdio, but the files
    /// it may read are the user's choice, not the agent's: `/etc/passwd` is no document.
    pub roots: Vec<PathBuf>,
}

/// `search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchParams {
    /// What to look for, in any language.
    query: String,
    /// How many results (default 10).
    #[serde(default)]
    k: Option<u64>,
    /// `bm25` (words), `dense` (meaning, needs the store's model) or `hybrid` (both fused).
    /// Default: the store's default strategy.
    #[serde(default)]
    mode: Option<String>,
    /// `chunk` for the best passages, `doc` for whole documents ranked by their chunks.
    #[serde(default)]
    level: Option<String>,
    /// Context handed back around each hit: `none`, `window:W` (W sentences on each side),
    /// `parent` (the enclosing section), `doc` (the whole document) or `merge:R`.
    #[serde(default)]
    expand: Option<String>,
    /// `mmr` (or `mmr:λ`, λ from 0 to 1, default 0.5) to pick results that say different
    /// things: near-copies of a result already picked give way (maximal marginal relevance).
    #[serde(default)]
    diversify: Option<String>,
    /// Only documents whose metadata passes, e.g. `{"lang": "zh"}` (a list value means any
    /// of), `{"year": {"$gte": 2020}}` ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists,
    /// $prefix, $contains) or `{"$or": [{"lang": "zh"}, {"lang": "ja"}]}` ($and, $or, $not).
    #[serde(default)]
    filter: Option<serde_json::Map<String, serde_json::Value>>,
    /// A whole strategy spec (e.g. `mode=hybrid,level=doc,agg=mean:3`); the fields above
    /// override its parts.
    #[serde(default)]
    strategy: Option<String>,
    /// Also say why each result ranks where it does (matched terms, cosine, fused score).
    #[serde(default)]
    explain: bool,
}

/// `ask`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AskParams {
    /// The question, in any language.
    question: String,
    /// Answer with the context's best sentences instead of the language model (fast, no
    /// model needed).
    #[serde(default)]
    extractive: bool,
    /// Leave out the answer's sentences whose citations could not be located.
    #[serde(default)]
    strict: bool,
    /// Tokens of context the answer is written from (default 1500).
    #[serde(default)]
    context_tokens: Option<usize>,
    /// A whole strategy spec for finding the context (default: the store's).
    #[serde(default)]
    strategy: Option<String>,
    /// Only documents whose metadata passes (as `search` takes it).
    #[serde(default)]
    filter: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `show`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShowParams {
    /// The document's id (`doc_id` in search results).
    id: String,
    /// Only these byte spans of its text, each `[start, end]` (e.g. the `spans` of a search
    /// result); default: the whole text.
    #[serde(default)]
    spans: Option<Vec<(usize, usize)>>,
    /// List the document's chunks with their spans, heading paths and text instead.
    #[serde(default)]
    chunks: bool,
}

/// `similar`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SimilarParams {
    /// The first text.
    a: String,
    /// The second text.
    b: String,
    /// List the best-matching chunk pairs with their spans.
    #[serde(default)]
    explain: bool,
}

/// `add`'s arguments: a text, or a path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddParams {
    /// The text of one document (with `id`).
    #[serde(default)]
    text: Option<String>,
    /// The document's id; a stored document with this id is replaced.
    #[serde(default)]
    id: Option<String>,
    /// Its title.
    #[serde(default)]
    title: Option<String>,
    /// Metadata to filter on later, e.g. `{"lang": "en"}`.
    #[serde(default)]
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// Instead of a text: a file or folder on this machine (.txt, .md, .rst, .ipynb, .jsonl);
    /// ids come from the file names, as with `ckeep add`.
    #[serde(default)]
    path: Option<String>,
}

/// The MCP service over one store.
#[derive(Debug, Clone)]
pub struct McpServer {
    state: Arc<AppState>,
    options: McpOptions,
    tool_router: ToolRouter<Self>,
}

/// A tool's JSON answer, or its error as the engine's table says MCP answers it: a tool error
/// the agent reads and can correct its call by, or a JSON-RPC error; either carries the error
/// body every front end gives.
fn answer(result: Result<serde_json::Value, ApiError>) -> Result<CallToolResult, ErrorData> {
    let e = match result {
        Ok(value) => return Ok(CallToolResult::structured(value)),
        Err(e) => e,
    };
    let body = e.body().to_json();
    match e.code.rendering().mcp {
        McpAnswer::ToolError => Ok(CallToolResult::structured_error(body)),
        McpAnswer::Protocol(code) => {
            Err(ErrorData::new(rmcp::model::ErrorCode(code), e.message, Some(body)))
        }
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::internal(e.to_string()))
}

#[tool_router]
impl McpServer {
    /// A service over `state`; `add` is offered only when `options` allow writes.
    pub fn new(state: Arc<AppState>, options: McpOptions) -> Self {
        let mut tool_router = Self::tool_router();
        if !options.allow_write {
            tool_router.remove_route("add");
        }
        Self { state, options, tool_router }
    }

    /// Search the store; each result has the document id, score, byte spans and their text.
    #[tool(
        description = "Search the documents in this Context Keeper store. Returns the best \
        passages (level=chunk) or documents (level=doc), best first; each result has `doc_id`, \
        `score`, byte `spans` into the stored document and their `text` (grown by `expand`). \
        Use `show` with a result's doc_id and spans to read more.",
        annotations(read_only_hint = true)
    )]
    async fn search(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let body = SearchBody {
            query: p.query,
            strategy: StrategyFields {
                strategy: p.strategy,
                k: p.k,
                mode: p.mode,
                level: p.level,
                expand: p.expand,
                diversify: p.diversify,
                ..StrategyFields::default()
            },
            explain: p.explain,
            filter: p.filter.map(query::RequestFilter::Object),
            ..SearchBody::default()
        };
        answer(query::run_search(&self.state, body).await.and_then(|r| to_value(&r)))
    }

    /// A stored document: the whole text, chosen spans of it, or its chunks.
    #[tool(
        description = "Read a stored document by id: its title, metadata and whole text; or \
        only the given byte spans (as returned by `search`); or its chunks with their spans \
        and heading paths.",
        annotations(read_only_hint = true)
    )]
    async fn show(
        &self,
        Parameters(p): Parameters<ShowParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let spans = p.spans.map(|spans| {
            spans
                .into_iter()
                .map(|(start, end)| {
                    if start <= end {
                        Ok(Span { start, end })
                    } else {
                        Err(ApiError::invalid(format!("span {start}-{end} ends before it starts")))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        });
        let result = match spans.transpose() {
            Ok(spans) => documents::read_document(&self.state, p.id, p.chunks, spans)
                .await
                .and_then(|v| to_value(&v)),
            Err(e) => Err(e),
        };
        answer(result)
    }

    /// An answer with citations located in the stored documents.
    #[tool(
        description = "Answer a question from the documents in this store, with checked \
        citations: the best passages are assembled within a token budget, the server's \
        language model (or, with `extractive`, the passages' best sentences) answers, and each \
        citation's quote is located in the stored text and returned as a byte span with \
        `verified`. `abstained` is true when the sources do not answer; `passages` are the \
        numbered context either way.",
        annotations(read_only_hint = true)
    )]
    async fn ask(&self, Parameters(p): Parameters<AskParams>) -> Result<CallToolResult, ErrorData> {
        let body = AskBody {
            question: p.question,
            strategy: StrategyFields { strategy: p.strategy, ..StrategyFields::default() },
            filter: p.filter.map(query::RequestFilter::Object),
            context_tokens: p.context_tokens,
            strict: p.strict,
            extractive: p.extractive,
            ..AskBody::default()
        };
        let result = match body.into_request() {
            Ok((request, extractive)) => {
                ask::run_ask(&self.state, request, extractive).await.and_then(|a| to_value(&a))
            }
            Err(e) => Err(e),
        };
        answer(result)
    }

    /// Chunk-pair similarity of two texts.
    #[tool(
        description = "How similar two texts are: the mean cosine of their best-matching chunk \
        pairs (chunk-pair score, robust to length and order) and the whole-text cosine. \
        Needs the store's embedding model.",
        annotations(read_only_hint = true)
    )]
    async fn similar(
        &self,
        Parameters(p): Parameters<SimilarParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let body = SimilarBody { a: p.a, b: p.b, explain: p.explain, ..SimilarBody::default() };
        answer(query::run_similar(&self.state, body).await.and_then(|r| to_value(&r)))
    }

    /// Adds a text or the files under a path.
    #[tool(
        description = "Add a document to the store (or replace the one with the same id): \
        either `text` with an `id` (and optional title and metadata), or a `path` to a file \
        or folder on this machine. Returns the ids added and the chunks made.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true)
    )]
    async fn add(&self, Parameters(p): Parameters<AddParams>) -> Result<CallToolResult, ErrorData> {
        answer(self.add_documents(p).await)
    }
}

impl McpServer {
    async fn add_documents(&self, p: AddParams) -> Result<serde_json::Value, ApiError> {
        let docs = match (p.text, p.path) {
            (Some(text), None) => {
                let Some(id) = p.id else {
                    return Err(ApiError::invalid("a `text` needs an `id`"));
                };
                let doc = NewDocument {
                    id,
                    text,
                    title: p.title.unwrap_or_default(),
                    metadata: p.metadata,
                    source: Some("mcp".to_string()),
                };
                vec![doc.into_document(0)?]
            }
            (None, Some(path)) if !self.options.roots.is_empty() => {
                if p.id.is_some() || p.title.is_some() || p.metadata.is_some() {
                    return Err(ApiError::invalid(
                        "`id`, `title` and `metadata` go with `text`; a `path` names its own",
                    ));
                }
                load_path(path, self.options.roots.clone()).await?
            }
            (None, Some(_)) => {
                return Err(ApiError::invalid(
                    "this server does not read paths; send the document as `text`",
                ));
            }
            _ => return Err(ApiError::invalid("give either `text` (with `id`) or `path`")),
        };
        let value = documents::ingest(&self.state, docs, None).await?;
        self.state.wrote();
        Ok(value)
    }
}

/// Every document under `path`, loaded as `ckeep add` loads it (off the async threads), when
/// the path, with `..` and symbolic links resolved, is under one of `roots`. (A folder's walk
/// follows no symbolic link, so nothing under it leaves it.)
async fn load_path(
    path: String,
    roots: Vec<PathBuf>,
) -> Result<Vec<ckeep_core::Document>, ApiError> {
    if path.trim().is_empty() || path == "-" {
        return Err(ApiError::invalid("`path` must name a file or folder"));
    }
    tokio::task::spawn_blocking(move || {
        let resolved = std::fs::canonicalize(&path).map_err(|e| {
            ApiError::new(crate::error::ErrorCode::NotFound, format!("`{path}`: {e}"))
        })?;
        if !roots.iter().any(|root| resolved.starts_with(root)) {
            let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            return Err(ApiError::invalid(format!(
                "`{path}` is outside the folders this server reads ({}); start it with --root \
                 DIR to read another",
                roots.join(", ")
            )));
        }
        let inputs = ckeep_engine::Inputs::new(vec![PathBuf::from(&path)]);
        let docs = inputs.check("added", || {})?.documents(|_| {}).collect::<Result<_, _>>()?;
        Ok(docs)
    })
    .await
    .map_err(|e| ApiError::internal(format!("loading {e}")))?
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = String::from(
            "Context Keeper: search a store of long documents indexed as small chunks. \
             `search` finds passages or documents with exact byte spans; `show` reads a \
             document or spans of it; `similar` scores two texts.",
        );
        if self.options.allow_write {
            instructions.push_str(" `add` stores a new document.");
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("ckeep", env!("CARGO_PKG_VERSION"))
                    .with_title("Context Keeper"),
            )
            .with_instructions(instructions)
    }
}

/// Serves MCP over stdin and stdout until the client closes the stream, then saves the vector
/// index and waits for the last write to commit. Logs must go to stderr: stdout carries the protocol.
pub async fn serve_stdio(state: Arc<AppState>, options: McpOptions) -> std::io::Result<()> {
    let indexer = state.spawn_indexer();
    let server = McpServer::new(Arc::clone(&state), options);
    let result = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running.waiting().await.map(|_| ()).map_err(std::io::Error::other),
        Err(e) => Err(std::io::Error::other(e)),
    };
    indexer.finish().await;
    state.workers.drain().await;
    result
}
