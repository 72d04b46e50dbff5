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

    /// A failure of ours or the machine's (500). The message stays in the server's log, under
    /// the request id; the client gets a generic message with that id (internal messages name
    /// files, hosts and database errors that are not the client's business).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new("internal", message)
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
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let request_id = crate::observe::current_request_id();
        let id = request_id.as_deref().unwrap_or("-");
        let generic;
        let message = if self.status.is_server_error() && self.code == "internal" {
            tracing::error!(request_id = %id, detail = %self.message, "internal error");
            generic =
                format!("internal error; the server log has the details under request id {id}");
            &generic
        } else {
            &self.message
        };
        let error = Inner { code: self.code, message, request_id: request_id.as_deref() };
        (self.status, axum::Json(Body { error })).into_response()
    }
}

impl From<ckeep_engine::Error> for ApiError {
    /// Through [`ckeep_engine::Error::is_user_error`], the rule the CLI's exit codes follow too.
    fn from(err: ckeep_engine::Error) -> Self {
        if err.is_conflict() {
            Self::new("conflict", err.to_string())
        } else if err.is_user_error() {
            Self::invalid(err.to_string())
        } else {
            Self::internal(err.to_string())
        }
    }
}

impl From<ckeep_store::Error> for ApiError {
    fn from(err: ckeep_store::Error) -> Self {
        Self::from(ckeep_engine::Error::from(err))
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn internal_details_stay_in_the_log_and_the_client_gets_the_request_id() {
        let err =
            ApiError::internal("PostgreSQL: FATAL: password authentication failed at /srv/db");
        let res = crate::observe::REQUEST_ID
            .scope("req-7".to_string(), async move { err.into_response() })
            .await;
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(!message.contains("PostgreSQL") && !message.contains("/srv"), "{message}");
        assert!(message.contains("req-7"), "{message}");
        assert_eq!(v["error"]["request_id"], "req-7");
        assert_eq!(v["error"]["code"], "internal");
    }

    #[test]
    fn user_errors_are_4xx_by_the_engines_rule() {
        let load = ckeep_engine::Error::Load(ckeep_text::Error::Empty { origin: "x".into() });
        assert_eq!(ApiError::from(load).status, StatusCode::UNPROCESSABLE_ENTITY);
        let mismatch =
            ckeep_engine::Error::ChunkerMismatch { stored: "a".into(), requested: "b".into() };
        assert_eq!(ApiError::from(mismatch).status, StatusCode::CONFLICT);
        let missing = ckeep_store::Error::NotFound { path: "/x".into() };
        assert_eq!(ApiError::from(missing).status, StatusCode::UNPROCESSABLE_ENTITY);
        let io = ckeep_store::Error::Io {
            path: "/x".into(),
            source: std::io::Error::other("disk full"),
        };
        assert_eq!(ApiError::from(io).status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
