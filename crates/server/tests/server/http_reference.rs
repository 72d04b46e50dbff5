//! The book's HTTP API reference (`docs/reference/http.md`) is rendered from the `OpenAPI` document
//! the server serves, so the two cannot drift: this test renders the page and fails when the
//! committed one differs. `CKEEP_BLESS=1 cargo test -p ckeep-server --test server http_reference`
//! rewrites it after a change to the API (`src/openapi.rs`, or the types it names).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

/// The page as committed.
fn page_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/http.md")
}

/// The methods in the order a reader expects them.
const METHODS: [&str; 4] = ["get", "post", "put", "delete"];

/// The schema `schema` refers to (`$ref` into `components.schemas`), or itself.
fn resolve<'a>(api: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => &api["components"]["schemas"][name],
        None => schema,
    }
}

/// A schema's type in a few words: `string`, `array of Span`, `integer ≥ 1`, `one of: a, b`.
fn type_of(schema: &Value) -> String {
    if let Some(target) = schema["$ref"].as_str() {
        let name = target.rsplit('/').next().unwrap_or(target);
        return format!("[{name}](#{})", name.to_lowercase());
    }
    if let Some(value) = schema["const"].as_str() {
        return format!("`{value}`");
    }
    if let Some(options) = schema["oneOf"].as_array().or_else(|| schema["anyOf"].as_array()) {
        return options.iter().map(type_of).collect::<Vec<_>>().join(" or ");
    }
    let one = |t: &str| match t {
        "array" => format!("array of {}", type_of(&schema["items"])),
        t => t.to_string(),
    };
    let mut out = match &schema["type"] {
        Value::String(t) => one(t),
        Value::Array(types) => {
            types.iter().filter_map(Value::as_str).map(one).collect::<Vec<_>>().join(" or ")
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => "any".to_string(),
    };
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> =
            values.iter().map(|v| format!("`{}`", v.as_str().unwrap_or_default())).collect();
        let _ = write!(out, ": {}", values.join(", "));
    }
    match (schema["minimum"].as_i64(), schema["maximum"].as_i64()) {
        (Some(min), Some(max)) => {
            let _ = write!(out, ", {min}–{max}");
        }
        (Some(min), None) => {
            let _ = write!(out, " ≥ {min}");
        }
        (None, Some(max)) => {
            let _ = write!(out, " ≤ {max}");
        }
        (None, None) => {}
    }
    if let (Some(min), Some(max)) = (schema["minLength"].as_i64(), schema["maxLength"].as_i64()) {
        let _ = write!(out, ", {min}–{max} characters");
    }
    if let Some(default) = schema.get("default") {
        let _ = write!(out, " (default `{default}`)");
    }
    out
}

/// A table cell: pipes escaped, never empty.
fn cell(text: &str) -> String {
    if text.is_empty() { "–".to_string() } else { text.replace('|', "\\|").replace('\n', " ") }
}

/// An object schema's fields as a table; the fields of objects inside it (in arrays or not)
/// get their own rows, dotted.
fn fields(out: &mut String, api: &Value, schema: &Value) {
    out.push_str("| field | type | required | meaning |\n|---|---|---|---|\n");
    field_rows(out, api, schema, "");
    out.push('\n');
}

fn field_rows(out: &mut String, api: &Value, schema: &Value, prefix: &str) {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else { return };
    for (name, field) in properties {
        let _ = writeln!(
            out,
            "| `{prefix}{name}` | {} | {} | {} |",
            cell(&type_of(field)),
            if required.contains(&name.as_str()) { "yes" } else { "" },
            cell(field["description"].as_str().unwrap_or_default())
        );
        // A field's own object, or its array's, or its optional one's (`anyOf` with null).
        let inner =
            field["anyOf"].as_array().and_then(|o| o.iter().find(|s| !s["type"].eq("null")));
        let nested = resolve(api, inner.unwrap_or(field));
        let nested =
            if nested["items"].is_object() { resolve(api, &nested["items"]) } else { nested };
        // Two levels down at most: deeper types have their own section.
        if nested["properties"].is_object() && prefix.matches('.').count() < 2 {
            field_rows(out, api, nested, &format!("{prefix}{name}."));
        }
    }
}

/// One route and method: summary, parameters, body, answers.
fn operation(
    out: &mut String,
    api: &Value,
    path: &str,
    method: &str,
    op: &Value,
    shared: &[Value],
) {
    let _ = writeln!(out, "### `{} {path}`\n", method.to_uppercase());
    let _ = writeln!(out, "{}\n", op["summary"].as_str().unwrap_or_default());
    let params: Vec<&Value> =
        shared.iter().chain(op["parameters"].as_array().into_iter().flatten()).collect();
    if !params.is_empty() {
        out.push_str("| parameter | in | type | meaning |\n|---|---|---|---|\n");
        for p in params {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                p["name"].as_str().unwrap_or_default(),
                p["in"].as_str().unwrap_or_default(),
                cell(&type_of(&p["schema"])),
                cell(p["description"].as_str().unwrap_or_default())
            );
        }
        out.push('\n');
    }
    let body = resolve(api, &op["requestBody"]["content"]["application/json"]["schema"]);
    if let Some(options) = body["oneOf"].as_array().or_else(|| body["anyOf"].as_array()) {
        out.push_str("Body, one of:\n\n");
        for option in options {
            let option = resolve(api, option);
            if option["properties"].is_object() {
                out.push_str("- a JSON object:\n\n");
                fields(out, api, option);
            } else {
                let _ = writeln!(out, "- {}\n", type_of(option));
            }
        }
    } else if body["properties"].is_object() {
        out.push_str("Body, a JSON object:\n\n");
        fields(out, api, body);
    } else if !body.is_null() {
        let _ = writeln!(out, "Body: {}.\n", type_of(body));
    }
    let mut errors = Vec::new();
    for (status, answer) in op["responses"].as_object().into_iter().flatten() {
        if answer["$ref"].is_string() {
            errors.push(status.as_str());
            continue;
        }
        let schema = &answer["content"]["application/json"]["schema"];
        let shape = if schema.is_null() { String::new() } else { format!(": {}", type_of(schema)) };
        let _ = writeln!(
            out,
            "- **{status}** {}{shape}",
            answer["description"].as_str().unwrap_or_default()
        );
        for (name, header) in answer["headers"].as_object().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  - header `{name}`: {}",
                header["description"].as_str().unwrap_or_default()
            );
        }
    }
    if !errors.is_empty() {
        let _ = writeln!(out, "- **{}**: an [ErrorAnswer](#erroranswer)", errors.join(", "));
    }
    out.push('\n');
}

/// The whole page.
fn render(api: &Value) -> String {
    let mut out = String::from(
        "# HTTP API\n\n\
         <!-- Rendered from the server's OpenAPI document (crates/server/src/openapi.rs and the types it \
         names) by crates/server/tests/server/http_reference.rs; after a change, run `CKEEP_BLESS=1 cargo test -p ckeep-server --test server http_reference`. -->\n\n",
    );
    let _ = writeln!(
        out,
        "`ckeep serve` answers JSON over HTTP. This page is rendered from the OpenAPI {} document \
         the server itself serves at `GET /openapi.json` (API version {}), and a test fails when \
         the two differ. The [server guide](../guides/server.md) shows it in use.\n",
        api["openapi"].as_str().unwrap_or_default(),
        api["info"]["version"].as_str().unwrap_or_default()
    );
    let _ = writeln!(out, "{}\n", api["info"]["description"].as_str().unwrap_or_default());
    let paths = api["paths"].as_object().cloned().unwrap_or_default();
    out.push_str("## Routes\n\n| route | what it does |\n|---|---|\n");
    for (path, item) in &paths {
        for method in METHODS.iter().filter(|m| item.get(**m).is_some()) {
            let anchor = format!("{method}-{path}")
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect::<String>();
            let _ = writeln!(
                out,
                "| [`{} {path}`](#{anchor}) | {} |",
                method.to_uppercase(),
                cell(item[*method]["summary"].as_str().unwrap_or_default())
            );
        }
    }
    out.push('\n');
    for (path, item) in &paths {
        let shared = item["parameters"].as_array().cloned().unwrap_or_default();
        for method in METHODS.iter().filter(|m| item.get(**m).is_some()) {
            operation(&mut out, api, path, method, &item[*method], &shared);
        }
    }
    out.push_str("## Schemas\n\n");
    let schemas: Map<String, Value> =
        api["components"]["schemas"].as_object().cloned().unwrap_or_default();
    for (name, schema) in &schemas {
        let _ = writeln!(out, "### {name}\n");
        if let Some(description) = schema["description"].as_str() {
            let _ = writeln!(out, "{description}\n");
        }
        if schema["properties"].is_object() {
            fields(&mut out, api, schema);
        } else {
            let _ = writeln!(out, "{}.\n", type_of(schema));
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[test]
fn the_http_reference_is_the_openapi_document() {
    let api: Value = serde_json::from_str(ckeep_server::openapi()).unwrap();
    let rendered = render(&api);
    let path = page_path();
    if std::env::var_os("CKEEP_BLESS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/reference/http.md is not what the OpenAPI document renders to; run \
         `CKEEP_BLESS=1 cargo test -p ckeep-server --test server http_reference` and commit the page"
    );
}

#[test]
fn every_route_and_schema_reaches_the_page() {
    let api: Value = serde_json::from_str(ckeep_server::openapi()).unwrap();
    let page = render(&api);
    for (path, item) in api["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys().filter(|m| *m != "parameters") {
            let heading = format!("### `{} {path}`", method.to_uppercase());
            assert!(page.contains(&heading), "{heading} missing");
        }
    }
    for name in api["components"]["schemas"].as_object().unwrap().keys() {
        assert!(page.contains(&format!("### {name}\n")), "schema {name} missing");
    }
    // A nested field and an enum reach their table.
    assert!(page.contains("| `results.doc_id` | string |"), "{page}");
    assert!(page.contains("`invalid_json`"), "{page}");
}

/// The keys of `value` that `schema` (an object schema) does not list.
fn undocumented<'a>(value: &'a Value, schema: &Value) -> Vec<&'a str> {
    let listed = schema["properties"].as_object().cloned().unwrap_or_default();
    value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .filter(|k| !listed.contains_key(*k))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn real_answers_use_only_documented_fields() {
    let api: Value = serde_json::from_str(ckeep_server::openapi()).unwrap();
    let schemas = &api["components"]["schemas"];
    let server = crate::common::TestServer::with_model(
        ckeep_server::ServerConfig::default(),
        crate::common::test_model(),
    );
    let (status, report) =
        server.post("/documents", &serde_json::json!({"documents": crate::common::corpus()})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(undocumented(&report, &schemas["AddResponse"]), Vec::<&str>::new());
    let response = &schemas["SearchResponse"];
    let result = resolve(&api, &response["properties"]["results"]["items"]);
    let chunk = resolve(&api, &result["properties"]["chunks"]["items"]);
    for (query, extra) in [("retrieval", "level=doc"), ("检索", "level=chunk,expand=window:1")] {
        let request = serde_json::json!({"query": query, "strategy": format!("mode=hybrid,{extra}"), "explain": true});
        let (status, answer) = server.post("/search", &request).await;
        assert_eq!(status, 200, "{answer}");
        let results = answer["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{query}: {answer}");
        assert_eq!(undocumented(&answer, response), Vec::<&str>::new());
        for hit in results {
            assert_eq!(undocumented(hit, result), Vec::<&str>::new(), "{hit}");
            for c in hit["chunks"].as_array().into_iter().flatten() {
                assert_eq!(undocumented(c, chunk), Vec::<&str>::new(), "{c}");
            }
        }
    }
}
