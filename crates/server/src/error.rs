//! Errors as JSON: `{"error": {"code", "message"}}` with a stable `code` clients can branch on.
//! 4xx for the caller's mistakes, 503 when the server is busy, 5xx otherwise only for ours.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code (see [`CODES`]).
    pub code: &'static str,
    /// What is wrong, for people.
    pub message: String,
}

/// Every code the server answers with, and its status: the API's error contract (also in
/// `/openapi.json`).
pub const CODES: &[(&str, u16)] = &[
    ("invalid_json", 400),
    ("invalid_request", 422),
    ("invalid_parameter", 422),
    ("unauthorized", 401),
    ("not_found", 404),
    ("method_not_allowed", 405),
    ("conflict", 409),
    ("body_too_large", 413),
    ("unsupported_media_type", 415),
    ("overloaded", 503),
    ("timeout", 503),
    ("shutting_down", 503),
    ("internal", 500),
];

impl ApiError {
    /// An error with `code`, whose status comes from [`CODES`].
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        let status = CODES
            .iter()
            .find(|(c, _)| *c == code)
            .and_then(|(_, s)| StatusCode::from_u16(*s).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Self { status, code, message: message.into() }
    }

    /// A request field or parameter with a bad value (422).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid_parameter", message)
    }

    /// A failure of ours (500); the message is logged and returned.
    pub fn internal(message: impl Into<String>) -> Self {
        let e = Self::new("internal", message);
        eprintln!("ckeep serve: internal error: {}", e.message);
        e
    }
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body { error: Inner { code: self.code, message: &self.message } };
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<ckeep_engine::Error> for ApiError {
    fn from(err: ckeep_engine::Error) -> Self {
        use ckeep_engine::Error as E;
        match &err {
            E::Strategy { .. } | E::Invalid(_) | E::ModelRequired(_) | E::Load(_) => {
                Self::invalid(err.to_string())
            }
            E::ChunkerMismatch { .. }
            | E::ModelMismatch { .. }
            | E::AnalyzerMismatch { .. }
            | E::AnalyzerUnknown { .. } => Self::new("conflict", err.to_string()),
            E::Embed(ckeep_embed::Error::NotFound(_)) => Self::invalid(err.to_string()),
            E::Store(_) | E::Embed(_) | E::Llm(_) | _ => Self::internal(err.to_string()),
        }
    }
}

impl From<ckeep_store::Error> for ApiError {
    fn from(err: ckeep_store::Error) -> Self {
        Self::from(ckeep_engine::Error::from(err))
    }
}
