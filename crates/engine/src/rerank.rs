//! A rerank stage: the top `rerank_k` results of a search scored again by a reranker server
//! (a cross-encoder behind the common `/rerank` API) and reordered by its scores.
//!
//! The request carries the query and the candidates' texts under both names servers use
//! (`documents` for Cohere- and Jina-style servers, `texts` for Hugging Face TEI); the answer
//! is read in either shape: `{"results": [{"index", "relevance_score"}]}` or
//! `[{"index", "score"}]`. Results beyond `rerank_k` keep their order after the reranked ones.

use std::time::Duration;

use ckeep_models::openai::OpenAiClient;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::request::{SearchRequest, SearchResponse};
use crate::strategy::Strategy;

/// How long a reranker may take for one query's candidates.
const TIMEOUT: Duration = Duration::from_mins(2);
/// Largest answer read from a reranker.
const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// `(candidate index, score)` pairs from a reranker's answer, whichever shape it has.
fn parse_scores(
    answer: &Value,
    candidates: usize,
) -> std::result::Result<Vec<(usize, f32)>, String> {
    let items = match answer {
        Value::Array(items) => items,
        Value::Object(o) => match o.get("results").or_else(|| o.get("data")) {
            Some(Value::Array(items)) => items,
            _ => return Err("expected `results`: [{index, relevance_score}]".into()),
        },
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            return Err("expected a list of {index, score}".into());
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let index = item["index"].as_u64().map(|i| i as usize).filter(|&i| i < candidates);
        let score = item["relevance_score"].as_f64().or_else(|| item["score"].as_f64());
        match (index, score) {
            (Some(i), Some(s)) => out.push((i, s as f32)),
            _ => return Err(format!("an item without a valid index and score: {item}")),
        }
    }
    Ok(out)
}

/// The strategy a rerank stage needs ranked first: `strategy` asking for at least `rerank_k`
/// results (the strategy itself when it has no rerank stage).
pub(crate) fn first_stage(strategy: &Strategy) -> std::borrow::Cow<'_, Strategy> {
    if strategy.rerank.is_none() {
        return std::borrow::Cow::Borrowed(strategy);
    }
    let mut inner = strategy.clone();
    inner.k = strategy.k.max(strategy.rerank_k);
    std::borrow::Cow::Owned(inner)
}

/// `response`, the first stage's answer to `query` by `strategy` (see [`first_stage`]), with
/// its top `rerank_k` reordered by the reranker's scores (which become their scores), cut to
/// `k`; as it was when `strategy` has no rerank stage. Called once the store's read snapshot
/// is let go: the server may take its time.
pub(crate) fn reranked(
    query: &str,
    strategy: &Strategy,
    mut response: SearchResponse,
) -> Result<SearchResponse> {
    let Some(spec) = strategy.rerank.as_deref() else { return Ok(response) };
    let head = strategy.rerank_k.min(response.results.len());
    if head > 0 {
        let client = OpenAiClient::from_spec(spec, "rerank", TIMEOUT)
            .map_err(|e| Error::Invalid(format!("rerank={spec}: {}", e.message)))?;
        let texts: Vec<&str> = response.results[..head].iter().map(|r| r.text.as_str()).collect();
        let body = serde_json::json!({
            "query": query,
            "documents": texts,
            "texts": texts,
            "top_n": head,
            "return_documents": false,
        });
        let answer: Value = client
            .post(body, MAX_ANSWER_BYTES, "a rerank answer")
            .map_err(|e| Error::Server(e.to_string()))?;
        let scores = parse_scores(&answer, head)
            .map_err(|m| Error::Server(format!("{}: {m}", client.url())))?;
        let mut scored: Vec<Option<f32>> = vec![None; head];
        for (i, s) in scores {
            scored[i] = Some(s);
        }
        if let Some(missing) = scored.iter().position(Option::is_none) {
            return Err(Error::Server(format!(
                "{}: no score for candidate {missing} of {head}",
                client.url()
            )));
        }
        let rest = response.results.split_off(head);
        let mut reranked: Vec<_> = response.results.drain(..).zip(scored).collect();
        // Stable: equal scores keep the first-stage order.
        reranked.sort_by(|a, b| b.1.unwrap_or(0.0).total_cmp(&a.1.unwrap_or(0.0)));
        response.results = reranked
            .into_iter()
            .map(|(mut r, s)| {
                r.score = s.unwrap_or(0.0);
                r
            })
            .chain(rest)
            .collect();
    }
    response.results.truncate(strategy.k);
    for (i, r) in response.results.iter_mut().enumerate() {
        r.rank = i + 1;
    }
    response.strategy = strategy.to_string();
    Ok(response)
}

/// A search in its two stages, timed as a whole: `open` gives the strategy `req` resolves to
/// and a snapshot `S` to rank in; `ranked` answers the first stage there (asking for
/// `rerank_k` results when the strategy reranks); then, with the snapshot let go, the rerank
/// stage (if the strategy has one) reorders its answer.
pub(crate) fn staged<T>(
    req: &SearchRequest,
    open: impl FnOnce() -> Result<(Strategy, T)>,
    ranked: impl FnOnce(T, &Strategy) -> Result<SearchResponse>,
) -> Result<SearchResponse> {
    let started = std::time::Instant::now();
    let (strategy, snapshot) = open()?;
    let first = ranked(snapshot, &first_stage(&strategy))?;
    let mut response = reranked(&req.query, &strategy, first)?;
    response.timing.total = started.elapsed();
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_answer_shapes_are_read() {
        let cohere = serde_json::json!({"results": [
            {"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.2}
        ]});
        assert_eq!(parse_scores(&cohere, 2).unwrap(), [(1, 0.9), (0, 0.2)]);
        let tei = serde_json::json!([{"index": 0, "score": 0.5}]);
        assert_eq!(parse_scores(&tei, 1).unwrap(), [(0, 0.5)]);
        assert!(parse_scores(&serde_json::json!([{"index": 5, "score": 1.0}]), 2).is_err());
        assert!(parse_scores(&serde_json::json!({"oops": 1}), 2).is_err());
    }
}
