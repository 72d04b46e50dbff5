//! The embedded default store: one `SQLite` file (`ckeep.sqlite`) in the store directory.
//!
//! WAL journal with `synchronous = FULL`: a committed batch survives a crash or power loss, and
//! readers never see a half-written batch. Each [`StoreWrite::write_batch`] is one transaction.

mod check;
mod read;
mod write;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};

use crate::{Error, Manifest, Result, SCHEMA_VERSION, StoreRead};
use write::put_manifest;

const DB_FILE: &str = "ckeep.sqlite";
const SCHEMA: &str = include_str!("schema.sql");
/// The vector change log (see [`StoreRead::vector_changes`]); stores made before it get it on
/// first open.
const VECTOR_LOG: &str = include_str!("vector_log.sql");
/// Documents' metadata beside their keys: a filter reads this narrow index instead of every
/// document's row, whose text lies before the metadata (measured at 15k documents by
/// `cargo bench -p ckeep-engine --bench filters`). Stores made before it get it on first open.
const METADATA_INDEX: &str = "CREATE INDEX IF NOT EXISTS documents_metadata \
     ON documents (key, metadata) WHERE metadata IS NOT NULL;";
/// Bytes of the database file read through a memory map (SQLite caps it at 2 GiB by default;
/// address space, not memory: pages are shared with the OS cache).
const MMAP_BYTES: i64 = 1 << 34;

/// The directory inside a store's where a replacement is built (see [`replace`]).
pub(crate) fn staging_dir(dir: &Path) -> PathBuf {
    dir.join(".staging")
}

/// Removes what an interrupted replacement left in `staged`.
pub(crate) fn remove_staged(staged: &Path) -> Result<()> {
    match std::fs::remove_dir_all(staged) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::Io { path: staged.display().to_string(), source: e })
        }
        _ => Ok(()),
    }
}

/// Renames the database built in `staged` over the one in `dir`. `SQLite` removes a
/// database's write-ahead log when its last connection closes; a log still beside the old file
/// means another connection is open, and it would be replayed onto the new file, so that is
/// refused. The new file and the directory are synced, so the rename survives a crash.
pub(crate) fn replace(dir: &Path, staged: &Path) -> Result<()> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    let new = staged.join(DB_FILE);
    let old = dir.join(DB_FILE);
    for (db, location) in [(&new, staged), (&old, dir)] {
        if !db.is_file() {
            return Err(Error::NotFound { path: location.display().to_string() });
        }
        for suffix in ["-wal", "-shm"] {
            let mut side = db.as_os_str().to_owned();
            side.push(suffix);
            if Path::new(&side).exists() {
                return Err(Error::Busy { path: location.display().to_string() });
            }
        }
    }
    std::fs::File::open(&new).and_then(|f| f.sync_all()).map_err(io(&new))?;
    std::fs::rename(&new, &old).map_err(io(&old))?;
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(io(dir))?;
    remove_staged(staged)
}

/// A store in one `SQLite` database.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: Option<PathBuf>,
}

impl SqliteStore {
    /// Opens the store in `dir`; fails with [`Error::NotFound`] if there is none.
    pub fn open(dir: &Path) -> Result<Self> {
        let file = dir.join(DB_FILE);
        if !file.is_file() {
            return Err(Error::NotFound { path: dir.display().to_string() });
        }
        Self::connect(&file, false)
    }

    /// Opens the store in `dir`, creating the directory and an empty store if needed.
    pub fn open_or_create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
        let file = dir.join(DB_FILE);
        let exists = file.is_file();
        Self::connect(&file, !exists)
    }

    /// Caps this connection's page cache at `mib` MiB (64 by default, sized for ingest): a
    /// server's many reader connections need far less each.
    pub fn limit_page_cache(&self, mib: u32) -> Result<()> {
        self.conn.pragma_update(None, "cache_size", -(i64::from(mib) * 1024))?;
        Ok(())
    }

    /// A store that lives in memory only (tests, one-off evaluations).
    pub fn in_memory() -> Result<Self> {
        let conn = Connection::open_in_memory()?;
        let mut store = Self { conn, path: None };
        store.init()?;
        Ok(store)
    }

    fn connect(file: &Path, create: bool) -> Result<Self> {
        let conn = Connection::open(file)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // 64 MiB page cache (the default is 2 MiB): posting inserts touch the whole B-tree.
        conn.pragma_update(None, "cache_size", -65536)?;
        // Reads through a memory map: a vector is longer than a page, and SQLite reads such
        // overflow pages with a system call each unless the file is mapped, which made reading
        // the candidates of a quantised search cost more than the scan that chose them.
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        let mut store = Self { conn, path: Some(file.to_path_buf()) };
        if create {
            store.init()?;
        } else {
            store.verify_schema()?;
            // Stores written before the aux table existed get it on first open.
            store.conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS aux (name TEXT PRIMARY KEY, data BLOB NOT NULL);",
            )?;
            // (The log's parts are made with `IF NOT EXISTS`, so either part brings both.)
            store.add_missing("vector_log_delete", VECTOR_LOG)?;
            store.add_missing("vector_gone_delete", VECTOR_LOG)?;
            store.add_missing("documents_metadata", METADATA_INDEX)?;
            store.vectors_with_rowid()?;
        }
        Ok(store)
    }

    fn init(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(VECTOR_LOG)?;
        tx.execute_batch(METADATA_INDEX)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
            [SCHEMA_VERSION.to_string()],
        )?;
        let manifest = Manifest { schema_version: SCHEMA_VERSION, ..Manifest::default() };
        put_manifest(&tx, &manifest)?;
        tx.commit()?;
        Ok(())
    }

    /// Runs `sql` on a store made before the schema object `name` existed. Checked first with
    /// a read, so opening a store that has it never waits for a writer's lock.
    fn add_missing(&mut self, name: &str, sql: &str) -> Result<()> {
        let has: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?1)",
            [name],
            |r| r.get(0),
        )?;
        if !has {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.commit()?;
        }
        Ok(())
    }

    /// Rewrites the `vectors` table of a store made when it was `WITHOUT ROWID` as the rowid
    /// table the schema now has (see `schema.sql`), once, in one transaction (2.5 s for 102,853
    /// vectors of 256 dimensions). The vector log's triggers go with the old table and
    /// are made again after the copy, so the copy logs no change.
    fn vectors_with_rowid(&mut self) -> Result<()> {
        let without_rowid = |conn: &Connection| -> Result<bool> {
            let sql: Option<String> = conn
                .query_row("SELECT sql FROM sqlite_master WHERE name = 'vectors'", [], |r| r.get(0))
                .optional()?;
            Ok(sql.is_some_and(|s| s.to_uppercase().contains("WITHOUT ROWID")))
        };
        if !without_rowid(&self.conn)? {
            return Ok(());
        }
        // Immediate: another connection opening the store at once waits, then finds it done.
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if without_rowid(&tx)? {
            tx.execute_batch(
                "DROP TRIGGER IF EXISTS vector_log_insert;
                 DROP TRIGGER IF EXISTS vector_log_delete;
                 CREATE TABLE vectors_rowid (
                     repr TEXT NOT NULL, chunk INTEGER NOT NULL, doc INTEGER NOT NULL,
                     vec BLOB NOT NULL, PRIMARY KEY (repr, chunk));
                 INSERT INTO vectors_rowid SELECT repr, chunk, doc, vec FROM vectors
                     ORDER BY repr, chunk;
                 DROP TABLE vectors;
                 ALTER TABLE vectors_rowid RENAME TO vectors;
                 CREATE INDEX vectors_doc ON vectors (doc);",
            )?;
            tx.execute_batch(VECTOR_LOG)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn verify_schema(&self) -> Result<()> {
        let not_a_store = |reason: String| Error::NotAStore { path: self.location(), reason };
        let version: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()
            .map_err(|e| not_a_store(e.to_string()))?;
        let version: u32 = version
            .ok_or_else(|| not_a_store("no schema version".into()))?
            .parse()
            .map_err(|_| not_a_store("unreadable schema version".into()))?;
        if version > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.location(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    fn disk_bytes(&self) -> u64 {
        let Some(path) = &self.path else { return 0 };
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|suffix| {
                let mut p = path.clone().into_os_string();
                p.push(suffix);
                std::fs::metadata(p).ok().map(|m| m.len())
            })
            .sum()
    }
}
