//! The playground: a static web page at `/` (HTML, CSS and JavaScript modules compiled into the
//! binary, no external resources) that uses the JSON API like any other client. The page itself
//! holds no data, so it is served without a token; its API calls carry one.
//!
//! Every answer carries a strict Content-Security-Policy: scripts and styles only from this
//! server (no inline code), connections only to it, images also from `blob:` (the plots of a
//! report opened from disk), and no framing.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorCode};

/// The page's policy: nothing inline, nothing from elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' blob:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The page's files: name, content type, content.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.css", "text/css; charset=utf-8", include_str!("../ui/app.css")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("../ui/app.js")),
    ("api.js", "text/javascript; charset=utf-8", include_str!("../ui/api.js")),
    ("text.js", "text/javascript; charset=utf-8", include_str!("../ui/text.js")),
    ("strategy.js", "text/javascript; charset=utf-8", include_str!("../ui/strategy.js")),
    ("results.js", "text/javascript; charset=utf-8", include_str!("../ui/results.js")),
    ("similar.js", "text/javascript; charset=utf-8", include_str!("../ui/similar.js")),
    ("ask.js", "text/javascript; charset=utf-8", include_str!("../ui/ask.js")),
    ("evaluate.js", "text/javascript; charset=utf-8", include_str!("../ui/evaluate.js")),
    ("recommend.js", "text/javascript; charset=utf-8", include_str!("../ui/recommend.js")),
    ("store.js", "text/javascript; charset=utf-8", include_str!("../ui/store.js")),
];

const INDEX: &str = include_str!("../ui/index.html");

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut res = ([(CONTENT_TYPE, content_type)], body).into_response();
    let headers = res.headers_mut();
    headers.insert(
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        HeaderName::from_static("referrer-policy"),
        HeaderValue::from_static("no-referrer"),
    );
    // The files change with the binary; a reload after an upgrade must not mix versions.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// `GET /`: the playground.
pub(crate) async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

/// `GET /ui/{file}`: its scripts and style sheet.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => page(content_type, body),
        None => ApiError::new(ErrorCode::NotFound, format!("the playground has no file `{name}`"))
            .into_response(),
    }
}
