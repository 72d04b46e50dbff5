//! Stores by location: a directory holds the embedded `SQLite` store, a `postgres://` URL names
//! a PostgreSQL one. Callers that serve both hold a [`DynStore`].

use std::path::Path;

#[cfg(feature = "postgres")]
use crate::PgStore;
use crate::{Result, SqliteStore, StoreRead};

/// Any store, chosen at run time: every [`StoreRead`] and [`crate::StoreWrite`] method is
/// forwarded to the backend by `enum_dispatch` (no hand-written forwarding), and `From` each
/// backend.
// One per open store, made once and moved rarely: a larger variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[enum_dispatch::enum_dispatch(StoreRead, StoreWrite)]
pub enum DynStore {
    /// The embedded store in a directory.
    SqliteStore,
    /// A PostgreSQL database.
    #[cfg(feature = "postgres")]
    PgStore,
}

impl std::fmt::Debug for DynStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("location", &self.location()).finish()
    }
}

/// Whether `location` names a PostgreSQL database (`postgres://…` or `postgresql://…`) rather
/// than a directory; true also in a build without PostgreSQL, which then refuses it clearly.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Opens the store at `location` (a directory, or a `postgres://…` URL); fails with
/// [`crate::Error::NotFound`] if there is none.
pub fn open(location: &str) -> Result<DynStore> {
    if is_postgres_url(location) {
        return open_postgres(location, false);
    }
    Ok(SqliteStore::open(Path::new(location))?.into())
}

/// Opens the store at `location`, creating an empty one if needed.
pub fn open_or_create(location: &str) -> Result<DynStore> {
    if is_postgres_url(location) {
        return open_postgres(location, true);
    }
    Ok(SqliteStore::open_or_create(Path::new(location))?.into())
}

/// Where a store to replace the one at `location` is built (`ckeep eval recommend --apply
/// --rechunk`), emptied first: a directory inside the store's, so the final rename stays on one
/// file system. PostgreSQL stores are not replaced this way.
pub fn staging_location(location: &str) -> Result<String> {
    if is_postgres_url(location) {
        return Err(crate::Error::Unsupported(
            "a PostgreSQL store cannot be replaced in place; add its documents to a new store \
             (another database or schema) with the new settings"
                .into(),
        ));
    }
    let staged = crate::sqlite::staging_dir(Path::new(location));
    crate::sqlite::remove_staged(&staged)?;
    Ok(staged.display().to_string())
}

/// Removes a replacement built for the store at `location` that is not wanted (a failed
/// build); nothing to do for a PostgreSQL store.
pub fn discard_staged(location: &str) -> Result<()> {
    if is_postgres_url(location) {
        return Ok(());
    }
    crate::sqlite::remove_staged(&crate::sqlite::staging_dir(Path::new(location)))
}

/// Replaces the store at `location` with the closed store at `staged`, which
/// [`staging_location`] named, in one step: a reader opening it sees the old store or the new
/// one. Every connection to both must be closed; another process's is refused
/// ([`crate::Error::Busy`]).
pub fn replace(location: &str, staged: &str) -> Result<()> {
    if is_postgres_url(location) {
        return staging_location(location).map(|_| ());
    }
    crate::sqlite::replace(Path::new(location), Path::new(staged))
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str, create: bool) -> Result<DynStore> {
    let store =
        if create { crate::PgStore::open_or_create(url)? } else { crate::PgStore::open(url)? };
    Ok(store.into())
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(url: &str, _create: bool) -> Result<DynStore> {
    // The URL may hold a password: name only its scheme.
    let scheme = url.split("://").next().unwrap_or("postgres");
    Err(crate::Error::NotBuilt {
        location: format!("{scheme}://…"),
        backend: "PostgreSQL",
        feature: "postgres",
    })
}
