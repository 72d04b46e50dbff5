//! A cache of generations keyed by (model, exact prompt): a document summarised once is never
//! summarised again by the same model, whichever store or chunker asks (LLM summaries cost
//! seconds each).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::{Error, Generation, Generator, Prompt, Result, Sink};

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
        // Keys of answers not cut at their first line are the same as before the option existed.
        if prompt.one_line {
            h.update(b"one line");
        }
        *h.finalize().as_bytes()
    }

    fn error(&self, e: &rusqlite::Error) -> Error {
        Error::Cache { path: self.path.clone(), message: e.to_string() }
    }

    /// The cached answer to `prompt`, if any.
    fn lookup(&self, prompt: &Prompt) -> Result<Option<Generation>> {
        let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let hit = conn
            .query_row(
                "SELECT text, prompt_tokens, completion_tokens FROM generations WHERE model = ?1 AND prompt = ?2",
                params![self.inner.name(), Self::key(prompt).as_slice()],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)),
            )
            .optional()
            .map_err(|e| self.error(&e))?;
        Ok(hit.map(|(text, p, c)| Generation {
            text,
            prompt_tokens: p as usize,
            completion_tokens: c as usize,
            seconds: 0.0,
            cached: true,
        }))
    }

    fn store(&self, prompt: &Prompt, g: &Generation) -> Result<()> {
        let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        conn.execute(
            "INSERT OR REPLACE INTO generations (model, prompt, text, prompt_tokens, completion_tokens) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![self.inner.name(), Self::key(prompt).as_slice(), g.text, g.prompt_tokens as i64, g.completion_tokens as i64],
        )
        .map_err(|e| self.error(&e))?;
        Ok(())
    }
}

impl Generator for CachedGenerator {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream(&self, prompt: &Prompt, sink: &mut dyn Sink) -> Result<Generation> {
        if let Some(hit) = self.lookup(prompt)? {
            sink.text(&hit.text);
            return Ok(hit);
        }
        let g = self.inner.stream(prompt, sink)?;
        self.store(prompt, &g)?;
        Ok(g)
    }

    fn side_by_side(&self) -> usize {
        self.inner.side_by_side()
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }

    /// The cached answers, and the others from the model in one call (side by side).
    fn generate_many(&self, prompts: &[Prompt]) -> Vec<Result<Generation>> {
        let mut out: Vec<Option<Result<Generation>>> =
            prompts.iter().map(|p| self.lookup(p).transpose()).collect();
        let missing: Vec<usize> = (0..prompts.len()).filter(|&i| out[i].is_none()).collect();
        let asked: Vec<Prompt> = missing.iter().map(|&i| prompts[i].clone()).collect();
        for (i, answer) in missing.into_iter().zip(self.inner.generate_many(&asked)) {
            out[i] = Some(answer.and_then(|g| self.store(&prompts[i], &g).map(|()| g)));
        }
        out.into_iter().map(|g| g.expect("every prompt answered")).collect()
    }
}
