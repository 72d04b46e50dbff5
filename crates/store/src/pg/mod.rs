//! The scale-out store: PostgreSQL with pgvector, for collections that outgrow one machine's
//! `SQLite` file, many writers, and read replicas.
//!
//! Same semantics as the embedded store, table for table (`schema.sql`): one transaction per
//! batch, chunk ids that are never reused, BM25 from the same stored term statistics (so scores
//! are identical), a generation counter in `meta`. What moves into the database is vector
//! search: each representation gets a partial HNSW index, and [`StoreRead::nearest`] runs the
//! k-nearest-neighbour query there (or an exact scan, also in the database), so the engine never
//! loads a large collection's vectors into memory.

mod check;
mod read;
mod write;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

use postgres::{Client, Config, GenericClient, NoTls};

use crate::{Error, Manifest, Result, SCHEMA_VERSION};

/// Each entry brings a store from the previous schema version to the next: entry `i` makes
/// version `i + 1`.
const MIGRATIONS: &[&str] = &[include_str!("schema.sql")];

/// Equality and `IN` on any metadata key answered without reading the documents
/// (`jsonb_path_ops` serves `@?` with `==` tests).
const METADATA_INDEX: &str = "CREATE INDEX IF NOT EXISTS documents_metadata ON ckeep.documents \
     USING gin ((metadata::jsonb) jsonb_path_ops)";

/// Serialises creating and migrating a store, so two processes opening it at once do not race.
const MIGRATION_LOCK: i64 = 0x636b_6565_705f_6d69; // "ckeep_mi"

/// How long to wait for the server before giving up, unless the URL says otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The connection, closed on a thread of its own: the synchronous client drives a small
/// runtime of its own and panics if closed inside an async one (as when a server drops its
/// state at shutdown).
pub(super) struct Connection(Option<Client>);

impl std::ops::Deref for Connection {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.0.as_ref().expect("open until dropped")
    }
}

impl std::ops::DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Client {
        self.0.as_mut().expect("open until dropped")
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            let _ = std::thread::spawn(move || drop(client)).join();
        }
    }
}

/// A store in a PostgreSQL database (schema `ckeep`), over one connection.
///
/// Like [`crate::SqliteStore`] it is used by one thread at a time; a server opens one per
/// worker.
pub struct PgStore {
    client: RefCell<Connection>,
    location: String,
    /// Whether a read snapshot ([`crate::StoreRead::begin_read`]) is open.
    in_read: Cell<bool>,
    /// Representations known to have their HNSW index.
    indexed: RefCell<HashSet<String>>,
    /// Statements prepared on this connection, by SQL text.
    statements: RefCell<HashMap<String, postgres::Statement>>,
    /// The `hnsw.ef_search` this session is set to (0: the server's default).
    ef_search: Cell<usize>,
    /// How to connect again after the connection was lost.
    config: Config,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("location", &self.location).finish_non_exhaustive()
    }
}

impl PgStore {
    /// Whether `location` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
    pub fn is_url(location: &str) -> bool {
        crate::is_postgres_url(location)
    }

    /// Opens the store in the database at `url`; fails with [`Error::NotFound`] if the database
    /// has none.
    pub fn open(url: &str) -> Result<Self> {
        Self::connect(url, false)
    }

    /// Opens the store in the database at `url`, creating it (schema `ckeep`, pgvector) if
    /// needed. The database itself must exist.
    pub fn open_or_create(url: &str) -> Result<Self> {
        Self::connect(url, true)
    }

    /// Creates database `name` on the server at `url` (replacing one of that name, so a
    /// benchmark or evaluation starts empty) and returns its URL.
    pub fn create_database(url: &str, name: &str) -> Result<String> {
        let mut client = Self::config(url)?.connect(NoTls)?;
        let ident = format!("\"{}\"", name.replace('"', "\"\""));
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {ident} WITH (FORCE)"))?;
        client.batch_execute(&format!("CREATE DATABASE {ident}"))?;
        Ok(replace_database(url, name))
    }

    fn config(url: &str) -> Result<Config> {
        let mut config: Config = url.parse().map_err(|e: postgres::Error| Error::NotAStore {
            path: redact(url),
            reason: format!("not a valid PostgreSQL URL ({e})"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("ckeep");
        }
        Ok(config)
    }

    fn connect(url: &str, create: bool) -> Result<Self> {
        let location = redact(url);
        let config = Self::config(url)?;
        let client = config.connect(NoTls)?;
        let store = Self {
            client: RefCell::new(Connection(Some(client))),
            location,
            in_read: Cell::new(false),
            indexed: RefCell::new(HashSet::new()),
            statements: RefCell::new(HashMap::new()),
            ef_search: Cell::new(0),
            config,
        };
        store.migrate(create)?;
        store.index_metadata()?;
        Ok(store)
    }

    /// The connection, made again if the last one was lost (the server restarted, the network
    /// failed): the call that met the failure reported it, the next one works once the server
    /// is back. Never inside a read snapshot, which the lost connection took with it.
    pub(super) fn connection(&self) -> Result<std::cell::RefMut<'_, Connection>> {
        if self.client.borrow().is_closed() && !self.in_read.get() {
            let client = self.config.connect(NoTls)?;
            *self.client.borrow_mut() = Connection(Some(client));
            self.statements.borrow_mut().clear();
            self.ef_search.set(0);
        }
        Ok(self.client.borrow_mut())
    }

    /// The GIN index that metadata filters' pushed-down conditions (`metadata::jsonb @?
    /// jsonpath`) are answered from, made on first open by stores written before it existed.
    /// Checked first with a read, so opening a store that has it takes no lock.
    fn index_metadata(&self) -> Result<()> {
        let mut client = self.connection()?;
        let has: bool = client
            .query_one("SELECT to_regclass('ckeep.documents_metadata') IS NOT NULL", &[])?
            .get(0);
        if !has {
            // A role that may only read still opens the store: filters work without the
            // index, only slower.
            let _ = client.batch_execute(METADATA_INDEX);
        }
        Ok(())
    }

    /// Creates the schema, or brings an older one up to date; refuses a newer one.
    fn migrate(&self, create: bool) -> Result<()> {
        let mut client = self.connection()?;
        let found = schema_version(&mut **client, &self.location)?;
        if found == Some(SCHEMA_VERSION) {
            return Ok(());
        }
        if found.is_none() && !create {
            return Err(Error::NotFound { path: self.location.clone() });
        }
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        // Another process may have migrated while this one waited for the lock.
        let found = schema_version(&mut tx, &self.location)?.unwrap_or(0);
        if found > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path: self.location.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for migration in &MIGRATIONS[found as usize..SCHEMA_VERSION as usize] {
            tx.batch_execute(migration)?;
        }
        let version = SCHEMA_VERSION.to_string();
        tx.execute(
            "INSERT INTO ckeep.meta (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&version],
        )?;
        if found == 0 {
            let manifest = Manifest { schema_version: SCHEMA_VERSION, ..Manifest::default() };
            write::put_manifest(&mut tx, &manifest)?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// The store's schema version, `None` when the database has no store; an error when `ckeep`
/// exists but is not ours.
fn schema_version(client: &mut impl GenericClient, location: &str) -> Result<Option<u32>> {
    let exists: bool =
        client.query_one("SELECT to_regclass('ckeep.meta') IS NOT NULL", &[])?.get(0);
    if !exists {
        return Ok(None);
    }
    let not_a_store =
        |reason: &str| Error::NotAStore { path: location.to_string(), reason: reason.to_string() };
    let row = client
        .query_opt("SELECT value FROM ckeep.meta WHERE key = 'schema_version'", &[])
        .map_err(|e| not_a_store(&format!("unreadable schema `ckeep` ({e})")))?;
    let version: String = row.ok_or_else(|| not_a_store("no schema version"))?.get(0);
    let version = version.parse().map_err(|_| not_a_store("unreadable schema version"))?;
    if version > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: location.to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(Some(version))
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or_default();
            format!("{}{user}{}", &url[..scheme_end], &rest[at..])
        }
        None => url.to_string(),
    }
}

/// `url` with its database replaced by `db`.
fn replace_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn databases_are_replaced_in_urls() {
        assert_eq!(super::replace_database("postgres://u@h:5/postgres", "x"), "postgres://u@h:5/x");
        assert_eq!(super::replace_database("postgres://u@h:5", "x"), "postgres://u@h:5/x");
        assert_eq!(
            super::replace_database("postgres://h/a?sslmode=disable", "b"),
            "postgres://h/b?sslmode=disable"
        );
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(super::redact("postgres://u:secret@h:5/db"), "postgres://u@h:5/db");
        assert_eq!(super::redact("postgres://u@h/db?x=1"), "postgres://u@h/db?x=1");
        assert_eq!(super::redact("postgresql://h/db"), "postgresql://h/db");
    }
}
