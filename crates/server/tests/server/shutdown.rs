//! Stopping a server saves the vector index as it stands, so the next process finds the graph
//! current instead of building it (seconds to minutes at scale). Fast tier: the deterministic
//! test embedder, documents written here.

use std::time::Duration;

use ckeep_engine::{ANN_MIN_VECTORS, Engine};
use ckeep_server::ServerConfig;
use ckeep_store::SqliteStore;
use serde_json::json;

use crate::common::TestServer;

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_server_saves_the_graph_its_writes_need() {
    // The indexer's interval is far off: only the shutdown can bring the graph up to date.
    let config = ServerConfig { index_interval: Duration::from_hours(1), ..Default::default() };
    let server = TestServer::with_model(config, crate::common::test_model());
    let batch = 1000;
    for first in (0..ANN_MIN_VECTORS + 500).step_by(batch) {
        let documents: Vec<_> = (first..first + batch)
            .map(|i| json!({"id": format!("d{i}"), "text": format!("note {i} on topic {} and item {}", i % 97, i % 13)}))
            .collect();
        let (status, added) = server.post("/documents", &json!({"documents": documents})).await;
        assert_eq!(status, 200, "{added}");
    }
    let fresh = || {
        Engine::new(SqliteStore::open(&server.store()).unwrap())
            .with_embedder(crate::common::test_model())
    };
    assert_eq!(fresh().vectors().build().unwrap().len(), 1, "no current graph while serving");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(ckeep_server::serve(listener, server.state.clone(), async {
        let _ = stopped.await;
    }));
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    assert!(fresh().vectors().build().unwrap().is_empty(), "the saved graph is current");
}
