//! One error model for every front end: each error at or below the engine has a stable
//! [`ErrorCode`] (given by `error`), and each code one row of the table
//! ([`ErrorCode::rendering`]) that says how
//! every front end answers it — the CLI's exit code, the HTTP status, the MCP answer, the
//! Python exception class — with one JSON shape ([`ErrorBody`]) everywhere: `{"error": {"code",
//! "message", "hint"}}` (HTTP adds the request id). The CLI, the server, MCP and Python render
//! from here; none classifies an error itself.

use serde::Serialize;

/// What went wrong, as clients branch on it: the same code whichever front end answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A body that is not JSON (HTTP's own).
    InvalidJson,
    /// JSON of the wrong shape: an unknown or missing field (HTTP's own).
    InvalidRequest,
    /// A value the caller gave is wrong: an option, a strategy, a query, an input file.
    InvalidParameter,
    /// The token is missing or wrong (HTTP's own).
    Unauthorized,
    /// The request names a host the server does not serve, or comes from another site's page
    /// (HTTP's own: DNS rebinding and cross-site requests).
    Forbidden,
    /// What was named is not there: a document, a store, a path.
    NotFound,
    /// The route does not take that method (HTTP's own).
    MethodNotAllowed,
    /// The request conflicts with how the store was built (chunker, analyzer, model).
    Conflict,
    /// The body is over the server's limit (HTTP's own).
    BodyTooLarge,
    /// The body is not JSON by its content type (HTTP's own).
    UnsupportedMediaType,
    /// An embedding or language model the caller named cannot be found or used.
    ModelUnavailable,
    /// A model failed while running (or a model server did).
    ModelFailed,
    /// Every worker is busy (a server's).
    Overloaded,
    /// The request took too long (a server's).
    Timeout,
    /// The server is stopping.
    ShuttingDown,
    /// The store, the machine or our code failed.
    Internal,
}

/// How an MCP server answers an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpAnswer {
    /// A tool result marked as an error (`isError`), its content the error body: the agent
    /// reads it and can correct its call.
    ToolError,
    /// A JSON-RPC error with this code, the error body as its `data`: the call could not be
    /// served at all.
    Protocol(i32),
}

/// How every front end renders one code: a row of the one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendering {
    /// Whether the caller is at fault.
    pub user: bool,
    /// The CLI's exit code: 2 for the caller's fault, 1 otherwise.
    pub exit: u8,
    /// The HTTP status.
    pub http: u16,
    /// The MCP answer.
    pub mcp: McpAnswer,
    /// The Python exception class (in `ckeep`).
    pub python: &'static str,
}

/// JSON-RPC's "internal error".
const JSONRPC_INTERNAL: i32 = -32603;

impl ErrorCode {
    /// Every code, in the order `/openapi.json` lists them.
    pub const ALL: [Self; 16] = [
        Self::InvalidJson,
        Self::InvalidRequest,
        Self::InvalidParameter,
        Self::Unauthorized,
        Self::Forbidden,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::Conflict,
        Self::BodyTooLarge,
        Self::UnsupportedMediaType,
        Self::ModelUnavailable,
        Self::ModelFailed,
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
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict => "conflict",
            Self::BodyTooLarge => "body_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::ModelUnavailable => "model_unavailable",
            Self::ModelFailed => "model_failed",
            Self::Overloaded => "overloaded",
            Self::Timeout => "timeout",
            Self::ShuttingDown => "shutting_down",
            Self::Internal => "internal",
        }
    }

    /// The table: how each front end answers this code.
    pub fn rendering(self) -> Rendering {
        let user = |http| Rendering {
            user: true,
            exit: 2,
            http,
            mcp: McpAnswer::ToolError,
            python: "UsageError",
        };
        let runtime = |http| Rendering {
            user: false,
            exit: 1,
            http,
            mcp: McpAnswer::Protocol(JSONRPC_INTERNAL),
            python: "StoreError",
        };
        match self {
            Self::InvalidJson => user(400),
            Self::InvalidRequest | Self::InvalidParameter => user(422),
            Self::Unauthorized => user(401),
            Self::Forbidden => user(403),
            Self::NotFound => user(404),
            Self::MethodNotAllowed => user(405),
            Self::Conflict => user(409),
            Self::BodyTooLarge => user(413),
            Self::UnsupportedMediaType => user(415),
            Self::ModelUnavailable => Rendering { python: "ModelError", ..user(422) },
            Self::ModelFailed => Rendering { python: "ModelError", ..runtime(500) },
            // A busy or stopping server: the call may be made again; the agent should know.
            Self::Overloaded | Self::Timeout | Self::ShuttingDown => {
                Rendering { mcp: McpAnswer::ToolError, ..runtime(503) }
            }
            Self::Internal => runtime(500),
        }
    }

    /// Whether the caller is at fault.
    pub fn is_user(self) -> bool {
        self.rendering().user
    }

    /// The process exit code for it.
    pub fn exit_code(self) -> u8 {
        self.rendering().exit
    }

    /// A model's error: the caller named one that is not there or not usable, or it failed.
    pub(crate) fn of_model(user: bool) -> Self {
        if user { Self::ModelUnavailable } else { Self::ModelFailed }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as every front end shows it, inside `{"error": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    /// The stable code.
    pub code: ErrorCode,
    /// What is wrong, for people.
    pub message: String,
    /// What to do about it, when the engine knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl ErrorBody {
    /// `{"error": body}`, the JSON every front end answers with.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "error": self })
    }
}

/// A caller's mistake that a front end finds itself (a bad option value): `invalid_parameter`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    /// The table, row by row: code, exit code, HTTP status, MCP answer, Python class.
    #[test]
    fn every_code_has_one_row_for_every_front_end() {
        use McpAnswer::{Protocol, ToolError};
        use {ErrorCode as C, ErrorCode::*};
        let rows: [(C, u8, u16, McpAnswer, &str); 16] = [
            (InvalidJson, 2, 400, ToolError, "UsageError"),
            (InvalidRequest, 2, 422, ToolError, "UsageError"),
            (InvalidParameter, 2, 422, ToolError, "UsageError"),
            (Unauthorized, 2, 401, ToolError, "UsageError"),
            (Forbidden, 2, 403, ToolError, "UsageError"),
            (NotFound, 2, 404, ToolError, "UsageError"),
            (MethodNotAllowed, 2, 405, ToolError, "UsageError"),
            (Conflict, 2, 409, ToolError, "UsageError"),
            (BodyTooLarge, 2, 413, ToolError, "UsageError"),
            (UnsupportedMediaType, 2, 415, ToolError, "UsageError"),
            (ModelUnavailable, 2, 422, ToolError, "ModelError"),
            (ModelFailed, 1, 500, Protocol(-32603), "ModelError"),
            (Overloaded, 1, 503, ToolError, "StoreError"),
            (Timeout, 1, 503, ToolError, "StoreError"),
            (ShuttingDown, 1, 503, ToolError, "StoreError"),
            (Internal, 1, 500, Protocol(-32603), "StoreError"),
        ];
        assert_eq!(rows.map(|r| r.0), C::ALL);
        for (code, exit, http, mcp, python) in rows {
            let r = code.rendering();
            assert_eq!((r.exit, r.http, r.mcp, r.python), (exit, http, mcp, python), "{code}");
            assert_eq!(r.user, exit == 2, "{code}");
        }
    }
}
