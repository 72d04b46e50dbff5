//! The accept loop: HTTP/1.1 connections served by hyper with two bounds axum's own `serve`
//! does not set. A connection must send a request's headers within
//! [`Limits::header_timeout`](crate::Limits) of starting to wait for them (also between
//! requests on a kept-alive connection), so a client that opens connections and sends
//! nothing, or a byte a minute, is dropped; and at most
//! [`Limits::max_connections`](crate::Limits) are open at once (further ones wait in the
//! kernel's queue), so such clients cannot take every file descriptor either.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tower::ServiceExt;

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and waits for
/// the connections' requests in flight to be answered.
pub(crate) async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: Duration,
    max_connections: usize,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let open = Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&open).acquire_owned() => permit,
            () = &mut shutdown => break,
        };
        let Ok(permit) = permit else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was taken: wait a
                // moment instead of spinning, as hyper's and axum's loops do.
                tracing::debug!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = tower::service_fn(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(Body::new);
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            app.clone().oneshot(req)
        });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
