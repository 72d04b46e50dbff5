//! The id of the request being answered, kept in a task-local by the outermost layer
//! (`observe`) so error bodies and logs deeper down can name it without passing it along.

/// The header that carries the request id, both ways.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

tokio::task_local! {
    /// The id of the request being answered.
    pub(crate) static REQUEST_ID: String;
}

/// The request id of the current request, if any.
pub(crate) fn current() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}
