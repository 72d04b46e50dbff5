//! The OpenAI-compatible client against a mock HTTP server (mockito), and the embedding cache in
//! front of it: what reaches the server is exactly what was never embedded before.

use std::sync::{Arc, Mutex};

use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache, HttpEmbedder, InputKind};

/// Every input text the server was asked to embed, in order.
type Seen = Arc<Mutex<Vec<String>>>;

/// A mock `/v1/embeddings` (mockito) for model `test-model`: the vector of a text is
/// `[bytes, words, 1]`; a request with a text containing `FAIL` gets a 500. The server lives as
/// long as the returned guard.
fn server() -> (mockito::ServerGuard, String, Seen) {
    let mut server = mockito::Server::new();
    let url = format!("{}/v1", server.url());
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let inputs = |req: &mockito::Request| -> Vec<String> {
        let body: serde_json::Value = serde_json::from_slice(req.body().unwrap()).unwrap();
        serde_json::from_value(body["input"].clone()).unwrap()
    };
    let fails = move |req: &mockito::Request| inputs(req).iter().any(|t| t.contains("FAIL"));
    let json = mockito::Matcher::PartialJson(serde_json::json!({"model": "test-model"}));
    server
        .mock("POST", "/v1/embeddings")
        .match_body(json.clone())
        .match_request(fails)
        .with_status(500)
        .with_body(r#"{"error": "model crashed"}"#)
        .create();
    server
        .mock("POST", "/v1/embeddings")
        .match_body(json)
        .match_request(move |req| !fails(req))
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            let texts = inputs(req);
            let data: Vec<serde_json::Value> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let v = [t.len() as f32, t.split_whitespace().count() as f32, 1.0];
                    serde_json::json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            log.lock().unwrap().extend(texts);
            serde_json::json!({"data": data, "usage": {"prompt_tokens": 7}}).to_string().into()
        })
        .create();
    (server, url, seen)
}

#[test]
fn http_client_batches_and_keeps_order() {
    let (_server, url, seen) = server();
    let model = HttpEmbedder::from_spec(&format!("{url}#test-model")).unwrap();
    assert_eq!(model.info().dim, 3);
    assert_eq!(model.info().name, "test-model");
    let texts: Vec<String> = (0..70).map(|i| "word ".repeat(i + 1)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (vectors, stats) = model.embed(&refs, InputKind::Document).unwrap();
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(v, &[texts[i].len() as f32, (i + 1) as f32, 1.0]);
    }
    // 70 inputs in requests of 32: three requests, each reporting 7 tokens.
    assert_eq!(stats.tokens, 21);
    assert_eq!(seen.lock().unwrap().len(), 1 + 70, "the probe, then every input once");
}

#[test]
fn server_errors_are_reported_with_status() {
    let (_server, url, _) = server();
    let model = HttpEmbedder::from_spec(&format!("{url}#test-model")).unwrap();
    let err = model.embed_raw(&["ok", "FAIL here"]).unwrap_err().to_string();
    assert!(
        err.contains("HTTP 500") && err.contains("model crashed") && err.contains(&url),
        "{err}"
    );
    let err = HttpEmbedder::from_spec("http://127.0.0.1:9/v1#x").unwrap_err().to_string();
    assert!(err.contains("127.0.0.1:9"), "{err}");
}

#[test]
fn cache_embeds_each_text_once_across_calls_and_runs() {
    let (_server, url, seen) = server();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let model: Arc<dyn Embedder> =
        Arc::new(HttpEmbedder::from_spec(&format!("{url}#test-model")).unwrap());
    let cached = CachedEmbedder::new(
        Arc::clone(&model),
        Some(Arc::new(EmbeddingCache::open(&path).unwrap())),
    );
    let (a, s1) = cached.embed_raw(&["alpha beta", "gamma", "alpha beta"]).unwrap();
    assert_eq!((s1.cached, seen.lock().unwrap().len()), (0, 1 + 2), "duplicates embedded once");
    assert_eq!(a[0], a[2]);
    // A new process: the cache file answers; only the new text reaches the server.
    let reopened = CachedEmbedder::new(model, Some(Arc::new(EmbeddingCache::open(&path).unwrap())));
    let (b, s2) = reopened.embed_raw(&["gamma", "delta", "alpha beta"]).unwrap();
    assert_eq!(s2.cached, 2);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["dimension probe", "alpha beta", "gamma", "delta"]
    );
    assert_eq!((b[0].clone(), b[2].clone()), (a[1].clone(), a[0].clone()));
    let stats = EmbeddingCache::open(&path).unwrap().stats().unwrap();
    assert_eq!((stats.vectors, stats.bytes), (3, 3 * 3 * 4));
}
