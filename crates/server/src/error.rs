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
    /// The stable code.
    pub code: ErrorCode,
    /// What is wrong, for people.
    pub message: String,
}

/// Every code the server answers with: the API's error contract (also in `/openapi.json`). A
/// type, so a misspelt code does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The body is not JSON (400).
    InvalidJson,
    /// The JSON has the wrong shape (422).
    InvalidRequest,
    /// A field or parameter has a bad value (422).
    InvalidParameter,
    /// The token is missing or wrong (401).
    Unauthorized,
    /// No such route or document (404).
    NotFound,
    /// The route does not take that method (405).
    MethodNotAllowed,
    /// The request conflicts with how the store was built (409).
    Conflict,
    /// The body is over the server's limit (413).
    BodyTooLarge,
    /// The body is not JSON by its content type (415).
    UnsupportedMediaType,
    /// Every worker is busy (503).
    Overloaded,
    /// The request took too long (503).
    Timeout,
    /// The server is stopping (503).
    ShuttingDown,
    /// Our failure or the machine's (500).
    Internal,
}

impl ErrorCode {
    /// Every code, in the order `/openapi.json` lists them.
    pub const ALL: [Self; 13] = [
        Self::InvalidJson,
        Self::InvalidRequest,
        Self::InvalidParameter,
        Self::Unauthorized,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::Conflict,
        Self::BodyTooLarge,
        Self::UnsupportedMediaType,
        Self::Overloaded,
        Self::Timeout,
        Self::ShuttingDown,
        Self::Internal,
    ];

    /// The code as clients see it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::InvalidRequest => "invalid_request",
            Self::InvalidParameter => "invalid_parameter",
            Self::Unauthorized => "unauthorized",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict => "conflict",
            Self::BodyTooLarge => "body_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Overloaded => "overloaded",
            Self::Timeout => "timeout",
            Self::ShuttingDown => "shutting_down",
            Self::Internal => "internal",
        }
    }

    /// The HTTP status it is answered with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::InvalidJson => StatusCode::BAD_REQUEST,
            Self::InvalidRequest | Self::InvalidParameter => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict => StatusCode::CONFLICT,
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Overloaded | Self::Timeout | Self::ShuttingDown => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl ApiError {
    /// An error with `code`, answered with its status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { status: code.status(), code, message: message.into() }
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
        let request_id = crate::request_id::current();
        let id = request_id.as_deref().unwrap_or("-");
        let generic;
        let message = if self.status.is_server_error() && self.code == ErrorCode::Internal {
            tracing::error!(request_id = %id, detail = %self.message, "internal error");
            generic =
                format!("internal error; the server log has the details under request id {id}");
            &generic
        } else {
            &self.message
        };
        let error = Inner { code: self.code.as_str(), message, request_id: request_id.as_deref() };
        (self.status, axum::Json(Body { error })).into_response()
    }
}

impl From<ckeep_engine::Error> for ApiError {
    /// Through [`ckeep_engine::Error::is_user_error`], the rule the CLI's exit codes follow too.
    fn from(err: ckeep_engine::Error) -> Self {
        if err.is_conflict() {
            Self::new(ErrorCode::Conflict, err.to_string())
        } else if err.is_user_error() {
            Self::invalid(err.to_string())
        } else {
            Self::internal(err.to_string())
        }
    }
}

impl From<ckeep_eval::Error> for ApiError {
    /// The engine's errors inside keep their class; the rest by the evaluation's own rule.
    fn from(err: ckeep_eval::Error) -> Self {
        if let ckeep_eval::Error::Engine(e) = err {
            Self::from(e)
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
