//! Query embeddings batched across concurrent requests.
//!
//! The first caller embeds at once; callers that arrive while a model call runs queue up and
//! are embedded together in the next call, by whichever of them leads it. A lone query waits for
//! nothing, and under load one forward pass serves many queries (the model's matrix products
//! are far more efficient on a batch than on one short query).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use ckeep_embed::{EmbedStats, Embedder, InputKind, ModelInfo, Result, TokenVectors};

/// Most texts embedded in one model call.
const MAX_BATCH_TEXTS: usize = 64;

/// An [`Embedder`] that coalesces concurrent calls into batches.
#[derive(Debug)]
pub struct BatchingEmbedder {
    inner: Arc<dyn Embedder>,
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    queue: VecDeque<Job>,
    results: HashMap<u64, Outcome>,
    leading: bool,
    /// Model calls made and texts they embedded (for the load test's report).
    calls: u64,
    texts: u64,
}

#[derive(Debug)]
struct Job {
    id: u64,
    kind: InputKind,
    texts: Vec<String>,
}

/// A job's vectors, or the error message of the batch it was in (errors are not `Clone`).
type Outcome = std::result::Result<Vec<Vec<f32>>, String>;

impl BatchingEmbedder {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Self { inner, state: Mutex::default(), done: Condvar::new() }
    }

    /// Model calls made so far and the texts they embedded: texts per call is the batching.
    pub fn calls(&self) -> (u64, u64) {
        let s = self.lock();
        (s.calls, s.texts)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs queued jobs of one kind at a time until the queue is empty.
    fn lead<'a>(
        &'a self,
        mut state: std::sync::MutexGuard<'a, State>,
    ) -> std::sync::MutexGuard<'a, State> {
        while let Some(kind) = state.queue.front().map(|j| j.kind) {
            let mut batch = Vec::new();
            let mut count = 0;
            while let Some(job) = state.queue.front() {
                if job.kind != kind || (count > 0 && count + job.texts.len() > MAX_BATCH_TEXTS) {
                    break;
                }
                count += job.texts.len();
                batch.extend(state.queue.pop_front());
            }
            state.calls += 1;
            state.texts += count as u64;
            drop(state);
            let texts: Vec<&str> =
                batch.iter().flat_map(|j| j.texts.iter().map(String::as_str)).collect();
            let outcome = self.inner.embed(&texts, kind).map(|(v, _)| v).map_err(|e| e.to_string());
            state = self.lock();
            match outcome {
                Ok(vectors) => {
                    let mut vectors = vectors.into_iter();
                    for job in &batch {
                        let mine = vectors.by_ref().take(job.texts.len()).collect();
                        state.results.insert(job.id, Ok(mine));
                    }
                }
                Err(message) => {
                    for job in &batch {
                        state.results.insert(job.id, Err(message.clone()));
                    }
                }
            }
            self.done.notify_all();
        }
        state
    }
}

impl Embedder for BatchingEmbedder {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn count_text_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_text_tokens(text)
    }

    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        self.inner.embed_raw(texts)
    }

    fn embed(&self, texts: &[&str], kind: InputKind) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        if texts.len() >= MAX_BATCH_TEXTS {
            return self.inner.embed(texts, kind);
        }
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.queue.push_back(Job {
            id,
            kind,
            texts: texts.iter().map(|t| (*t).to_string()).collect(),
        });
        loop {
            if let Some(outcome) = state.results.remove(&id) {
                return match outcome {
                    Ok(v) => Ok((v, EmbedStats::default())),
                    Err(message) => Err(ckeep_embed::Error::Server {
                        url: self.inner.info().name.clone(),
                        message,
                    }),
                };
            }
            if state.leading {
                state = self.done.wait(state).unwrap_or_else(PoisonError::into_inner);
            } else {
                state.leading = true;
                state = self.lead(state);
                state.leading = false;
                // Jobs queued after the last batch wait for a new leader: wake one of them.
                self.done.notify_all();
            }
        }
    }

    fn token_vectors(&self, texts: &[&str], kind: InputKind) -> Result<Vec<TokenVectors>> {
        self.inner.token_vectors(texts, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deterministic test embedder behind a gate: its first model call blocks until the
    /// test opens the gate, so the test decides what queues up meanwhile.
    #[derive(Debug)]
    struct Gated {
        inner: ckeep_embed::HashingEmbedder,
        gate: Mutex<(usize, bool)>,
        changed: Condvar,
    }

    impl Gated {
        fn wait_until(&self, done: impl Fn(&(usize, bool)) -> bool) {
            let mut g = self.gate.lock().unwrap();
            while !done(&g) {
                g = self.changed.wait(g).unwrap();
            }
        }
        fn open(&self) {
            self.gate.lock().unwrap().1 = true;
            self.changed.notify_all();
        }
    }

    impl Embedder for Gated {
        fn info(&self) -> &ModelInfo {
            self.inner.info()
        }
        fn count_text_tokens(&self, text: &str) -> Option<usize> {
            self.inner.count_text_tokens(text)
        }
        fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
            self.gate.lock().unwrap().0 += 1;
            self.changed.notify_all();
            self.wait_until(|g| g.1);
            self.inner.embed_raw(texts)
        }
        fn token_vectors(&self, texts: &[&str], kind: InputKind) -> Result<Vec<TokenVectors>> {
            self.inner.token_vectors(texts, kind)
        }
    }

    #[test]
    fn queries_that_arrive_during_a_model_call_share_the_next_one() {
        let gated = Arc::new(Gated {
            inner: ckeep_embed::HashingEmbedder::new(64),
            gate: Mutex::new((0, false)),
            changed: Condvar::new(),
        });
        let batching = Arc::new(BatchingEmbedder::new(gated.clone()));
        let queries: Vec<String> =
            (0..48).map(|i| format!("question number {i} about rivers")).collect();
        let got: Vec<(usize, Vec<f32>)> = std::thread::scope(|s| {
            let spawn = |i: usize| {
                let (b, q) = (Arc::clone(&batching), queries[i].as_str());
                s.spawn(move || (i, b.embed(&[q], InputKind::Query).unwrap().0.remove(0)))
            };
            let mut handles = vec![spawn(0)];
            // The first query leads and is now inside the (blocked) model call.
            gated.wait_until(|g| g.0 == 1);
            handles.extend((1..48).map(spawn));
            // A bound only to fail (not hang) if calls stop queuing; passing never waits for it.
            let give_up = std::time::Instant::now() + std::time::Duration::from_mins(1);
            while batching.lock().queue.len() < 47 && std::time::Instant::now() < give_up {
                std::thread::yield_now();
            }
            gated.open();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, v) in got {
            let (alone, _) = gated.inner.embed(&[queries[i].as_str()], InputKind::Query).unwrap();
            assert_eq!(v, alone[0], "query {i} got another query's vector");
        }
        assert_eq!(
            batching.calls(),
            (2, 48),
            "one call for the first query, one for the 47 queued"
        );
    }
}
