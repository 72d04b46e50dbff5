//! Errors as JSON: `{"error": {"code", "message"}}` with a stable `code` clients can branch on.
//! 4xx for the caller's mistakes, 503 when the server is busy, 5xx otherwise only for ours.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ckeep_engine::ErrorBody;
use serde::Serialize;

/// An error answer: the engine's error body ([`ckeep_engine::ErrorBody`]) and the status its
/// code is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code.
    pub code: ErrorCode,
    /// What is wrong, for people.
    pub message: String,
    /// What to do about it, when the engine knows.
    pub hint: Option<String>,
}

/// Every code the server answers with: the engine's, which every front end shares.
pub use ckeep_engine::ErrorCode;

/// The HTTP status of `code`, from the engine's table.
pub fn status_of(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.rendering().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl ApiError {
    /// An error with `code`, answered with its status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { status: status_of(code), code, message: message.into(), hint: None }
    }

    /// The error body clients get, as every front end gives it.
    pub fn body(&self) -> ErrorBody {
        ErrorBody { code: self.code, message: self.message.clone(), hint: self.hint.clone() }
    }

    /// A request field or parameter with a bad value (422).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParameter, message)
    }

    /// A failure of ours or the machine's (500). The message stays in the server's log, under
    /// the request id; the client gets a generic message with that id (internal messages name
    /// files, hosts and database errors that are not the client's business).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

/// An error as the server answers it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct ErrorAnswer {
    error: ErrorWithId,
}

/// The engine's error body, with the request id beside it.
#[derive(Serialize, schemars::JsonSchema)]
struct ErrorWithId {
    #[serde(flatten)]
    body: ErrorBody,
    /// The request's id, also in the `x-request-id` header: the key to the server log.
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
}

impl ApiError {
    /// The body a client may see: a 500's message (which may name files, hosts, database
    /// errors or a remote server's own reply) goes to the log under the request id, and the
    /// client gets that id instead. Every way an error leaves the server (a response, a
    /// stream's `error` event, an evaluation's status) goes through here.
    pub(crate) fn client_body(&self) -> ErrorBody {
        let mut body = self.body();
        if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            let request_id = crate::request_id::current();
            let id = request_id.as_deref().unwrap_or("-");
            tracing::error!(request_id = %id, detail = %self.message, "internal error");
            body.message =
                format!("internal error; the server log has the details under request id {id}");
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.client_body();
        let request_id = crate::request_id::current();
        let error = ErrorWithId { body, request_id };
        (self.status, axum::Json(ErrorAnswer { error })).into_response()
    }
}

impl From<ckeep_engine::Error> for ApiError {
    /// By the error's code, as every front end answers it.
    fn from(err: ckeep_engine::Error) -> Self {
        Self { hint: err.hint(), ..Self::new(err.code(), err.to_string()) }
    }
}

impl From<ckeep_eval::Error> for ApiError {
    /// The engine's errors inside keep their code; the rest by the evaluation's own rule.
    fn from(err: ckeep_eval::Error) -> Self {
        if let ckeep_eval::Error::Engine(e) = err {
            Self::from(e)
        } else {
            Self::new(err.code(), err.to_string())
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
        let res = crate::request_id::REQUEST_ID
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
        let mismatch = ckeep_engine::Error::ChunkerMismatch {
            stored: "a".into(),
            requested: "b".into(),
            asked: ckeep_engine::ChunkerAsked::Strategy,
        };
        assert_eq!(ApiError::from(mismatch).status, StatusCode::CONFLICT);
        // What is not there is the caller's mistake of its own kind, as a missing document is.
        let missing = ckeep_store::Error::NotFound { path: "/x".into() };
        assert_eq!(ApiError::from(missing).status, StatusCode::NOT_FOUND);
        let io = ckeep_store::Error::Io {
            path: "/x".into(),
            source: std::io::Error::other("disk full"),
        };
        assert_eq!(ApiError::from(io).status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
