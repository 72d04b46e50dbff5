//! The embedding cache: one `SQLite` file keyed by (model fingerprint, hash of the exact input
//! text). Re-adding, re-chunking and evaluating several strategies then never embed the same
//! text twice, across runs and stores.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::{EmbedStats, Embedder, Error, ModelInfo, Result};

/// A persistent cache of vectors.
#[derive(Debug)]
pub struct EmbeddingCache {
    conn: Mutex<Connection>,
    path: String,
}

/// What the cache holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Where it is.
    pub path: String,
    /// Vectors held.
    pub vectors: u64,
    /// Bytes of vector data.
    pub bytes: u64,
    /// Vectors per model fingerprint.
    pub models: Vec<(String, u64)>,
}

impl EmbeddingCache {
    /// `$CKEEP_CACHE`, else `embeddings.sqlite` in `$CKEEP_CACHE_DIR` (default `~/.cache/ckeep`),
    /// beside the generation cache.
    pub fn default_path() -> PathBuf {
        std::env::var_os("CKEEP_CACHE")
            .filter(|v| !v.is_empty())
            .map_or_else(|| ckeep_models::cache_dir().join("embeddings.sqlite"), PathBuf::from)
    }

    /// Opens (creating if needed) the cache at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let fail = |e: &dyn std::fmt::Display| Error::Cache {
            path: shown.clone(),
            message: e.to_string(),
        };
        let conn = ckeep_models::open_cache_db(path).map_err(|e| fail(&e))?;
        Self::init(conn, shown.clone()).map_err(|e| fail(&e))
    }

    /// A cache that lives in memory only.
    pub fn in_memory() -> Result<Self> {
        let conn = Connection::open_in_memory()
            .map_err(|e| Error::Cache { path: ":memory:".into(), message: e.to_string() })?;
        Self::init(conn, ":memory:".into())
            .map_err(|e| Error::Cache { path: ":memory:".into(), message: e.to_string() })
    }

    fn init(conn: Connection, path: String) -> rusqlite::Result<Self> {
        ckeep_models::configure_cache_db(&conn)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS vectors (
                model TEXT NOT NULL,
                text_hash BLOB NOT NULL,
                vec BLOB NOT NULL,
                PRIMARY KEY (model, text_hash)
            ) WITHOUT ROWID;",
        )?;
        Ok(Self { conn: Mutex::new(conn), path })
    }

    fn err(&self, e: &rusqlite::Error) -> Error {
        Error::Cache { path: self.path.clone(), message: e.to_string() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back.
        self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Looks up vectors by text hash.
    fn get(&self, model: &str, hashes: &[[u8; 32]]) -> Result<Vec<Option<Vec<f32>>>> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT vec FROM vectors WHERE model = ?1 AND text_hash = ?2")
            .map_err(|e| self.err(&e))?;
        hashes
            .iter()
            .map(|h| {
                stmt.query_row(params![model, &h[..]], |r| r.get::<_, Vec<u8>>(0))
                    .optional()
                    .map(|b| b.map(|b| from_bytes(&b)))
                    .map_err(|e| self.err(&e))
            })
            .collect()
    }

    /// Stores vectors in one transaction.
    fn put(&self, model: &str, entries: &[([u8; 32], &[f32])]) -> Result<()> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(&e))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO vectors (model, text_hash, vec) VALUES (?1, ?2, ?3)",
                )
                .map_err(|e| self.err(&e))?;
            for (h, v) in entries {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                stmt.execute(params![model, &h[..], bytes]).map_err(|e| self.err(&e))?;
            }
        }
        tx.commit().map_err(|e| self.err(&e))
    }

    /// Counts and sizes.
    pub fn stats(&self) -> Result<CacheStats> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare("SELECT model, count(*), sum(length(vec)) FROM vectors GROUP BY model ORDER BY model")
            .map_err(|e| self.err(&e))?;
        let rows: Vec<(String, i64, i64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(Iterator::collect)
            .map_err(|e| self.err(&e))?;
        Ok(CacheStats {
            path: self.path.clone(),
            vectors: rows.iter().map(|r| r.1 as u64).sum(),
            bytes: rows.iter().map(|r| r.2 as u64).sum(),
            models: rows.into_iter().map(|(m, n, _)| (m, n as u64)).collect(),
        })
    }

    /// Removes every vector (of one model fingerprint, if given); returns how many.
    pub fn clear(&self, model: Option<&str>) -> Result<u64> {
        let conn = self.lock();
        let n = match model {
            Some(m) => conn.execute("DELETE FROM vectors WHERE model = ?1", [m]),
            None => conn.execute("DELETE FROM vectors", []),
        }
        .map_err(|e| self.err(&e))?;
        conn.execute_batch("VACUUM").map_err(|e| self.err(&e))?;
        Ok(n as u64)
    }
}

fn from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// A model behind the cache: only texts never seen before (by this model) reach it, each once
/// even when repeated within a call.
#[derive(Debug, Clone)]
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Option<Arc<EmbeddingCache>>,
}

impl CachedEmbedder {
    /// `inner` with `cache` (or none: every text is embedded, duplicates within a call once).
    pub fn new(inner: Arc<dyn Embedder>, cache: Option<Arc<EmbeddingCache>>) -> Self {
        Self { inner, cache }
    }

    /// The model behind the cache.
    pub fn model(&self) -> &Arc<dyn Embedder> {
        &self.inner
    }
}

impl Embedder for CachedEmbedder {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn count_text_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_text_tokens(text)
    }

    /// Not cached: token vectors are large and read once per document at ingest.
    fn token_vectors(
        &self,
        texts: &[&str],
        kind: crate::InputKind,
    ) -> Result<Vec<crate::TokenVectors>> {
        self.inner.token_vectors(texts, kind)
    }

    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        let model = &self.inner.info().fingerprint;
        let hashes: Vec<[u8; 32]> =
            texts.iter().map(|t| *blake3::hash(t.as_bytes()).as_bytes()).collect();
        let mut out: Vec<Option<Vec<f32>>> = match &self.cache {
            Some(c) => c.get(model, &hashes)?,
            None => vec![None; texts.len()],
        };
        let mut stats = EmbedStats {
            cached: out.iter().filter(|v| v.is_some()).count(),
            ..EmbedStats::default()
        };
        // Distinct missing texts, each embedded once.
        let mut first: HashMap<[u8; 32], usize> = HashMap::new();
        let mut todo: Vec<usize> = Vec::new();
        for (i, h) in hashes.iter().enumerate() {
            if out[i].is_none() && !first.contains_key(h) {
                first.insert(*h, todo.len());
                todo.push(i);
            }
        }
        if !todo.is_empty() {
            let inputs: Vec<&str> = todo.iter().map(|&i| texts[i]).collect();
            let (vectors, s) = self.inner.embed_raw(&inputs)?;
            stats += s;
            if let Some(c) = &self.cache {
                let entries: Vec<([u8; 32], &[f32])> =
                    todo.iter().zip(&vectors).map(|(&i, v)| (hashes[i], v.as_slice())).collect();
                c.put(model, &entries)?;
            }
            for (i, h) in hashes.iter().enumerate() {
                if out[i].is_none() {
                    out[i] = Some(vectors[first[h]].clone());
                }
            }
        }
        Ok((out.into_iter().map(Option::unwrap_or_default).collect(), stats))
    }
}
