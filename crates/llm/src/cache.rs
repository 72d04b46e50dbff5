//! A cache of generations keyed by (model, exact prompt): a document summarised once is never
//! summarised again by the same model, whichever store or chunker asks (LLM summaries cost
//! seconds each).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::{Error, Generation, Generator, Prompt, Result};

/// A generator behind a cache file.
#[derive(Debug)]
pub struct CachedGenerator {
    inner: Box<dyn Generator>,
    conn: Mutex<Connection>,
    path: String,
}

/// The default cache file: `$CKEEP_CACHE_DIR/generations.sqlite`, else
/// `~/.cache/ckeep/generations.sqlite`.
pub fn default_path() -> PathBuf {
    ckeep_models::cache_dir().join("generations.sqlite")
}

impl CachedGenerator {
    /// `inner` behind the cache at `path` (created if missing).
    pub fn open(inner: Box<dyn Generator>, path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let err = |e: &dyn std::fmt::Display| Error::Cache {
            path: shown.clone(),
            message: e.to_string(),
        };
        let conn = ckeep_models::open_cache_db(path).map_err(|e| err(&e))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS generations (
                 model TEXT NOT NULL, prompt BLOB NOT NULL, text TEXT NOT NULL,
                 prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
                 PRIMARY KEY (model, prompt)
             ) WITHOUT ROWID;",
        )
        .map_err(|e| err(&e))?;
        Ok(Self { inner, conn: Mutex::new(conn), path: shown })
    }

    fn key(prompt: &Prompt) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        for part in [prompt.system.as_bytes(), prompt.user.as_bytes()] {
            h.update(&(part.len() as u64).to_le_bytes()).update(part);
        }
        h.update(&(prompt.max_tokens as u64).to_le_bytes());
        *h.finalize().as_bytes()
    }
}

impl Generator for CachedGenerator {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn generate(&self, prompt: &Prompt) -> Result<Generation> {
        let err =
            |e: rusqlite::Error| Error::Cache { path: self.path.clone(), message: e.to_string() };
        let key = Self::key(prompt);
        let hit = {
            let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conn.query_row(
                "SELECT text, prompt_tokens, completion_tokens FROM generations WHERE model = ?1 AND prompt = ?2",
                params![self.inner.name(), key.as_slice()],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)),
            )
            .optional()
            .map_err(err)?
        };
        if let Some((text, p, c)) = hit {
            return Ok(Generation {
                text,
                prompt_tokens: p as usize,
                completion_tokens: c as usize,
                seconds: 0.0,
                cached: true,
            });
        }
        let g = self.inner.generate(prompt)?;
        let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        conn.execute(
            "INSERT OR REPLACE INTO generations (model, prompt, text, prompt_tokens, completion_tokens) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![self.inner.name(), key.as_slice(), g.text, g.prompt_tokens as i64, g.completion_tokens as i64],
        )
        .map_err(err)?;
        Ok(g)
    }
}
