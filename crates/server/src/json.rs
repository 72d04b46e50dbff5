//! The JSON body extractor: every way a body can be wrong gets its own code and a message that
//! says where (line and column) and what.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};

/// A request body parsed as `T` (unknown fields are refused where `T` says so).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        // Required, not assumed: a page on another site can send a body as text/plain or a
        // form without the browser asking the server first, but not as JSON.
        let Some(ct) = req.headers().get(CONTENT_TYPE) else {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "the body must be JSON: send `Content-Type: application/json`",
            ));
        };
        let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or_default().trim();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                format!("the body must be application/json, not `{essence}`"),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::BodyTooLarge,
                    "the request body is larger than the server allows",
                )
            } else {
                ApiError::new(ErrorCode::InvalidJson, format!("the body could not be read: {e}"))
            }
        })?;
        parse(&bytes).map(JsonBody)
    }
}

/// Parses a whole body: syntax errors (including invalid UTF-8 and trailing data) are 400
/// `invalid_json`; a well-formed body of the wrong shape is 422 `invalid_request`.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => {
            return Err(ApiError::new(
                ErrorCode::InvalidJson,
                "the body is empty; a JSON object is expected",
            ));
        }
        // serde would read an array as a struct's fields in order.
        Some(b'[') => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "expected a JSON object, found an array",
            ));
        }
        Some(_) => {}
    }
    serde_json::from_slice(bytes).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Data => ApiError::new(ErrorCode::InvalidRequest, e.to_string()),
            Category::Syntax | Category::Eof | Category::Io => {
                ApiError::new(ErrorCode::InvalidJson, format!("malformed JSON: {e}"))
            }
        }
    })
}
