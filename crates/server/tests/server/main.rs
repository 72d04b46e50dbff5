//! The server's integration tests, as one test binary: the router, a bound server, MCP, the
//! HTTP reference and random bodies.

mod api;
mod bound;
mod common;
mod evaluate;
mod filters;
mod fuzz;
mod hostile;
mod http_reference;
mod mcp;
mod observe;
mod shutdown;
