//! The API description served at `/openapi.json` (`OpenAPI` 3.1), made from the handlers' own
//! types: every request and answer schema is derived from the Rust type the handler reads or
//! writes (schemars, whose JSON Schema 2020-12 is `OpenAPI` 3.1's dialect; the MCP tools publish
//! their parameters with it too), and each route is described once, here, beside the router's
//! table ([`crate::ROUTES`]). A test holds the two to each other both ways.

use std::sync::OnceLock;

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::error::{ErrorAnswer, ErrorCode, status_of};
use crate::routes::ask::AskBody;
use crate::routes::documents::{
    AddBody, AddResponse, DocumentPage, GetOptions, ListOptions, PutBody,
};
use crate::routes::evaluate::{EvaluateBody, Evaluation};
use crate::routes::query::{SearchBody, SimilarBody};
use crate::routes::status::{Health, StatsBody};

/// What the API says of itself.
const DESCRIPTION: &str = "Store long, index short: documents kept whole, indexed as small \
    chunks, searched with exact byte spans. When the server has a token, every route needs \
    `Authorization: Bearer TOKEN` except /health, /openapi.json and the playground's page and \
    files (/, /ui/…). The server listens on 127.0.0.1:7700 unless started with another --addr. \
    Errors are `{\"error\": {\"code\", \"message\", \"hint\", \"request_id\"}}`, the object the \
    CLI's `--json` and MCP give too; the codes are listed under components.schemas.ErrorCode.";

/// Schemas by type: answers as they are written, request bodies as they are read (a field
/// with a default is then optional), each named once under `components.schemas`.
struct Schemas {
    answers: SchemaGenerator,
    requests: SchemaGenerator,
}

impl Schemas {
    fn new() -> Self {
        let settings = |contract| {
            let mut s = SchemaSettings::draft2020_12();
            s.definitions_path = "/components/schemas".into();
            s.contract = contract;
            s
        };
        Self {
            answers: SchemaGenerator::new(settings(Contract::Serialize)),
            requests: SchemaGenerator::new(settings(Contract::Deserialize)),
        }
    }

    /// `{"content": {"application/json": {"schema": T}}}` of an answer.
    fn answer<T: JsonSchema>(&mut self) -> Value {
        json!({"application/json": {"schema": self.answers.subschema_for::<T>()}})
    }

    /// A required JSON request body of type `T`.
    fn body<T: JsonSchema>(&mut self, required: bool) -> Value {
        let schema = self.requests.subschema_for::<T>();
        json!({"required": required, "content": {"application/json": {"schema": schema}}})
    }

    /// The query parameters `T` (a struct the handler reads the query string into).
    fn query<T: JsonSchema>(&mut self) -> Vec<Value> {
        let schema = self.requests.root_schema_for::<T>();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema.get("properties").and_then(Value::as_object);
        properties
            .into_iter()
            .flatten()
            .map(|(name, property)| {
                let mut p = property.clone();
                let description = p.as_object_mut().and_then(|o| o.remove("description"));
                let mut param = json!({"name": name, "in": "query", "schema": p});
                if required.contains(&name.as_str()) {
                    param["required"] = true.into();
                }
                if let Some(d) = description {
                    param["description"] = d;
                }
                param
            })
            .collect()
    }

    /// Every named schema, answers' and requests' together (a type read and written alike
    /// has one schema).
    fn components(mut self) -> Map<String, Value> {
        let mut all = self.answers.take_definitions(true);
        for (name, schema) in self.requests.take_definitions(true) {
            all.entry(name).or_insert(schema);
        }
        all
    }
}

/// A path parameter.
fn path_param(name: &str, schema: &Value, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": schema, "description": description})
}

/// An operation: its summary, the answer on success, and the statuses of the errors it gives
/// (each an [`ErrorAnswer`]).
fn operation(
    summary: &str,
    status: u16,
    description: &str,
    content: Option<Value>,
    errors: &[ErrorCode],
) -> Value {
    let mut ok = json!({"description": description});
    if let Some(content) = content {
        ok["content"] = content;
    }
    let mut responses = Map::new();
    responses.insert(status.to_string(), ok);
    for code in errors {
        let status = status_of(*code).as_u16().to_string();
        responses.insert(status, json!({"$ref": "#/components/responses/Error"}));
    }
    json!({"summary": summary, "responses": responses})
}

/// The errors of a route behind the token that reads the store.
const READ: &[ErrorCode] = &[ErrorCode::Unauthorized, ErrorCode::Forbidden, ErrorCode::Overloaded];

/// The errors of a route that takes a JSON body.
const BODY: &[ErrorCode] = &[
    ErrorCode::InvalidJson,
    ErrorCode::Unauthorized,
    ErrorCode::Forbidden,
    ErrorCode::BodyTooLarge,
    ErrorCode::UnsupportedMediaType,
    ErrorCode::InvalidParameter,
    ErrorCode::Overloaded,
];

/// `errors` and `more`, each status once.
fn with(errors: &[ErrorCode], more: &[ErrorCode]) -> Vec<ErrorCode> {
    let mut all: Vec<ErrorCode> = errors.iter().chain(more).copied().collect();
    all.sort_by_key(|c| status_of(*c).as_u16());
    all.dedup_by_key(|c| status_of(*c).as_u16());
    all
}

/// Every route, as `(path, method, operation)`.
#[allow(clippy::too_many_lines)] // one entry per route, each read beside the others
fn routes(s: &mut Schemas) -> Vec<(&'static str, &'static str, Value)> {
    let not_found = with(READ, &[ErrorCode::NotFound]);
    let id = path_param("id", &json!({"type": "string"}), "the document id; may contain slashes");
    let evaluation =
        path_param("id", &json!({"type": "integer", "minimum": 1}), "the evaluation's id");
    let mut health =
        operation("Liveness (no token needed)", 200, "ok", Some(s.answer::<Health>()), &[]);
    health["security"] = json!([]);
    let mut description = operation("This description", 200, "OpenAPI 3.1", None, &[]);
    description["security"] = json!([]);
    let mut list = operation(
        "Document ids in byte order, a page at a time (follow `next` with `after`)",
        200,
        "a page of ids",
        Some(s.answer::<DocumentPage>()),
        &with(READ, &[ErrorCode::InvalidParameter]),
    );
    list["parameters"] = s.query::<ListOptions>().into();
    let mut add = operation(
        "Add or replace documents: one document object, or {documents: [...], chunker?}; acknowledged once committed",
        200,
        "what was added",
        Some(s.answer::<AddResponse>()),
        &with(BODY, &[ErrorCode::Conflict]),
    );
    add["requestBody"] = s.body::<AddBody>(true);
    let mut get = operation(
        "A stored document: whole text, chosen spans (?spans=0-10,20-30) or its chunks (?chunks=true)",
        200,
        "the document",
        Some(s.answer::<ckeep_engine::DocumentView>()),
        &with(&not_found, &[ErrorCode::InvalidParameter]),
    );
    get["parameters"] = s.query::<GetOptions>().into();
    let mut put = operation(
        "Add or replace the document with this id",
        200,
        "what was added",
        Some(s.answer::<AddResponse>()),
        &with(BODY, &[ErrorCode::Conflict]),
    );
    put["requestBody"] = s.body::<PutBody>(true);
    let delete = operation(
        "Remove a document and everything derived from it",
        204,
        "removed",
        None,
        &not_found,
    );
    let mut search = operation(
        "Search: every option of `ckeep search`",
        200,
        "results",
        Some(s.answer::<ckeep_engine::SearchResponse>()),
        &with(BODY, &[ErrorCode::Conflict]),
    );
    search["requestBody"] = s.body::<SearchBody>(true);
    search["responses"]["200"]["headers"] = json!({"Server-Timing": {
        "description": "Where the time went, in milliseconds: `wait` for a reader, `embed` the query (zero for BM25 search), `search` the rest (scoring, ranking, reading the results' text).",
        "schema": {"type": "string", "example": "wait;dur=0.041, embed;dur=0.052, search;dur=1.318"}
    }});
    let mut similar = operation(
        "Chunk-pair similarity of two texts with the server's model",
        200,
        "both scores and the verdicts",
        Some(s.answer::<ckeep_engine::SimilarReport>()),
        BODY,
    );
    similar["requestBody"] = s.body::<SimilarBody>(true);
    let mut ask = operation(
        "An answer from the store's documents with its citations located in them (`ckeep ask`): the context assembled within a token budget, the answer written by the server's language model (`--llm`) or, with `extractive`, taken from the context's best sentences; each citation's quote found in the stored text and given as a byte span. With `stream`, server-sent events instead: `token` events (`{\"text\"}`) as the answer is written, then one `answer` event (this object) or one `error` event (an error body)",
        200,
        "the answer",
        Some(s.answer::<ckeep_engine::Answer>()),
        BODY,
    );
    ask["requestBody"] = s.body::<AskBody>(true);
    ask["responses"]["200"]["content"]["text/event-stream"] = json!({"schema": {"type": "string"}});
    let strategy = operation(
        "What each strategy part can be set to, the defaults and how a filter condition is typed (what the playground builds its controls from)",
        200,
        "the choices",
        Some(s.answer::<ckeep_engine::StrategyChoices>()),
        &[ErrorCode::Unauthorized],
    );
    let mut evaluate = operation(
        "Start what `ckeep eval recommend` does on this store: a test set made from its documents, every candidate strategy run in scratch indexes (one evaluation at a time, at a lower priority than searches)",
        202,
        "the evaluation, started",
        Some(s.answer::<Evaluation>()),
        &with(BODY, &[ErrorCode::Conflict]),
    );
    evaluate["requestBody"] = s.body::<EvaluateBody>(false);
    let mut status = operation(
        "An evaluation's progress, then its recommendation or its error",
        200,
        "the evaluation",
        Some(s.answer::<Evaluation>()),
        &[ErrorCode::Unauthorized, ErrorCode::NotFound],
    );
    status["parameters"] = json!([evaluation]);
    let mut apply = operation(
        "Make a finished evaluation's winner the store's default strategy, when the set shows its gain with confidence (as `--apply`); a winner that needs another chunker is 409",
        200,
        "the evaluation, with `applied`",
        Some(s.answer::<Evaluation>()),
        &with(&not_found, &[ErrorCode::Conflict]),
    );
    apply["parameters"] = json!([evaluation]);
    let metrics = operation(
        "Prometheus metrics: requests by route and status, latency histograms, requests in flight, worker queue depth, busy readers, store generation, documents and chunks",
        200,
        "OpenMetrics text",
        Some(json!({"application/openmetrics-text": {"schema": {"type": "string"}}})),
        READ,
    );
    let stats = operation(
        "The store at a glance: its location, manifest (chunker, analyzer, model, representations) and counts; the shape of `ckeep stats --json`",
        200,
        "the store summary",
        Some(s.answer::<StatsBody>()),
        READ,
    );
    let mut routes = vec![
        ("/health", "get", health),
        ("/openapi.json", "get", description),
        ("/stats", "get", stats),
        ("/metrics", "get", metrics),
        ("/documents", "get", list),
        ("/documents", "post", add),
        ("/documents/{id}", "get", get),
        ("/documents/{id}", "put", put),
        ("/documents/{id}", "delete", delete),
        ("/search", "post", search),
        ("/similar", "post", similar),
        ("/ask", "post", ask),
        ("/strategy", "get", strategy),
        ("/evaluate", "post", evaluate),
        ("/evaluate/{id}", "get", status),
        ("/evaluate/{id}/apply", "post", apply),
    ];
    for (path, _, op) in &mut routes {
        if path.starts_with("/documents/") {
            op["parameters"] = std::iter::once(id.clone())
                .chain(op["parameters"].as_array().cloned().unwrap_or_default())
                .collect();
        }
    }
    routes
}

/// The whole document.
fn document() -> Value {
    let mut schemas = Schemas::new();
    let mut paths = Map::new();
    for (path, method, op) in routes(&mut schemas) {
        let item = paths.entry(path).or_insert_with(|| json!({}));
        item[method] = op;
    }
    let error = schemas.answers.subschema_for::<ErrorAnswer>();
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Context Keeper", "version": env!("CARGO_PKG_VERSION"), "description": DESCRIPTION},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {"Error": {"description": "An error", "content": {"application/json": {"schema": error}}}},
            "schemas": schemas.components(),
        },
        "security": [{"bearer": []}],
        "paths": paths,
    })
}

/// The API description, as served at `/openapi.json` (made once).
pub fn openapi() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| serde_json::to_string_pretty(&document()).unwrap_or_default())
}
