//! The embedded default store: one `SQLite` file (`ckeep.sqlite`) in the store directory.
//!
//! WAL journal with `synchronous = FULL`: a committed batch survives a crash or power loss, and
//! readers never see a half-written batch. Each [`StoreWrite::write_batch`] is one transaction.

mod check;

use std::path::{Path, PathBuf};

use ckeep_core::{Chunk, ChunkId, DocKey, Document, LexicalStats, Posting, Span};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::{
    CheckReport, DerivedWrite, DocumentWrite, Error, Lacking, LexicalEntry, LexicalFieldStats,
    Manifest, MetadataFilter, RepresentationStats, Result, SCHEMA_VERSION, StoreRead, StoreStats,
    StoreWrite, StoredChunk, StoredDocument, VectorEntry, VectorMatrix, rules,
};

const DB_FILE: &str = "ckeep.sqlite";
const SCHEMA: &str = include_str!("schema.sql");

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
        let mut store = Self { conn, path: Some(file.to_path_buf()) };
        if create {
            store.init()?;
        } else {
            store.verify_schema()?;
            // Stores written before the aux table existed get it on first open.
            store.conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS aux (name TEXT PRIMARY KEY, data BLOB NOT NULL);",
            )?;
        }
        Ok(store)
    }

    fn init(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute_batch(SCHEMA)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
            [SCHEMA_VERSION.to_string()],
        )?;
        let manifest = Manifest { schema_version: SCHEMA_VERSION, ..Manifest::default() };
        put_manifest(&tx, &manifest)?;
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

fn put_manifest(tx: &Connection, manifest: &Manifest) -> Result<()> {
    let json = serde_json::to_string(manifest).expect("manifest serialises");
    tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?1)", [json])?;
    Ok(())
}

/// Counts committed writes (see [`StoreRead::generation`]).
fn bump_generation(tx: &Connection) -> Result<()> {
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('generation', '1') \
         ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        [],
    )?;
    Ok(())
}

fn doc_key(tx: &Connection, id: &str) -> Result<Option<DocKey>> {
    Ok(tx
        .query_row("SELECT key FROM documents WHERE id = ?1", [id], |r| r.get(0))
        .optional()?
        .map(DocKey))
}

/// Deletes a document and everything derived from it. Postings are found through the forward
/// entries, so no index on `postings(chunk)` is needed.
fn delete_document(tx: &Transaction<'_>, key: DocKey) -> Result<()> {
    delete_lexical(tx, key, None)?;
    tx.execute("DELETE FROM vectors WHERE doc = ?1", [key.0])?;
    tx.execute("DELETE FROM documents WHERE key = ?1", [key.0])?;
    Ok(())
}

/// Deletes a document's lexical entries of one field (or all fields), keeping the field
/// statistics right.
fn delete_lexical(tx: &Transaction<'_>, key: DocKey, field: Option<&str>) -> Result<()> {
    let entries: Vec<(String, i64, i64, String)> = tx
        .prepare_cached(
            "SELECT field, chunk, len, terms FROM lex_docs WHERE doc = ?1 AND (?2 IS NULL OR field = ?2)",
        )?
        .query_map(params![key.0, field], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    {
        let mut del = tx
            .prepare_cached("DELETE FROM postings WHERE field = ?1 AND term = ?2 AND chunk = ?3")?;
        let mut stats = tx.prepare_cached("UPDATE lex_fields SET chunks = chunks - 1, total_len = total_len - ?2 WHERE field = ?1")?;
        for (field, chunk, len, terms) in &entries {
            for term in terms.split(' ').filter(|t| !t.is_empty()) {
                del.execute(params![field, term, chunk])?;
            }
            stats.execute(params![field, len])?;
        }
    }
    tx.execute(
        "DELETE FROM lex_docs WHERE doc = ?1 AND (?2 IS NULL OR field = ?2)",
        params![key.0, field],
    )?;
    Ok(())
}

/// Replaces a stored document's derived entries named in `write`; `false` if the document is
/// gone or changed since the entries were computed.
fn replace_derived<'w>(
    tx: &Transaction<'_>,
    write: &'w DerivedWrite,
    postings: &mut Vec<PendingPosting<'w>>,
) -> Result<bool> {
    let Some((key, hash)) = tx
        .query_row("SELECT key, hash FROM documents WHERE id = ?1", [&write.doc_id], |r| {
            Ok((DocKey(r.get(0)?), r.get::<_, String>(1)?))
        })
        .optional()?
    else {
        return Ok(false);
    };
    if hash != write.hash {
        return Ok(false);
    }
    let ids: Vec<i64> = tx
        .prepare_cached("SELECT id FROM chunks WHERE doc = ?1 ORDER BY ordinal")?
        .query_map([key.0], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let bad = |reason: String| Err(Error::InvalidWrite { doc: write.doc_id.clone(), reason });
    let ordinals =
        write.lexical.iter().map(|e| e.ordinal).chain(write.vectors.iter().map(|v| v.ordinal));
    if let Some(o) = ordinals.into_iter().find(|&o| o as usize >= ids.len()) {
        return bad(format!("entry for chunk {o}, but the document has {} chunks", ids.len()));
    }
    let mut fields: Vec<&str> = write.lexical.iter().map(|e| e.field.as_str()).collect();
    fields.sort_unstable();
    fields.dedup();
    for f in fields {
        delete_lexical(tx, key, Some(f))?;
    }
    let mut reprs: Vec<&str> = write.vectors.iter().map(|v| v.repr.as_str()).collect();
    reprs.sort_unstable();
    reprs.dedup();
    for r in reprs {
        tx.prepare_cached("DELETE FROM vectors WHERE doc = ?1 AND repr = ?2")?
            .execute(params![key.0, r])?;
    }
    for (name, _) in &write.summaries {
        tx.prepare_cached("DELETE FROM summaries WHERE doc = ?1 AND name = ?2")?
            .execute(params![key.0, name])?;
    }
    insert_entries(tx, key.0, &ids, &write.lexical, &write.vectors, &write.summaries, postings)?;
    Ok(true)
}

/// A posting waiting to be inserted: `(field, term, chunk, doc, tf, len)`.
type PendingPosting<'a> = (&'a str, &'a str, i64, i64, u32, u32);

/// Inserts a batch's postings in key order, so the B-tree is walked once in order instead of
/// being hit at random.
fn insert_postings(tx: &Transaction<'_>, mut postings: Vec<PendingPosting<'_>>) -> Result<()> {
    postings.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
    let mut post = tx.prepare_cached(
        "INSERT INTO postings (field, term, chunk, doc, tf, len) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (field, term, chunk, doc, tf, len) in postings {
        post.execute(params![field, term, chunk, doc, tf, len])?;
    }
    Ok(())
}

/// Inserts one document, its chunks and forward entries; its postings are handed back to be
/// inserted with the rest of the batch.
fn insert_document<'w>(
    tx: &Transaction<'_>,
    write: &'w DocumentWrite,
    postings: &mut Vec<PendingPosting<'w>>,
) -> Result<()> {
    let doc = &write.document;
    let metadata = (!doc.metadata.is_null()).then(|| doc.metadata.to_string());
    tx.prepare_cached("INSERT INTO documents (id, title, text, metadata, source, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
        .execute(params![doc.id, doc.title, doc.text, metadata, doc.source, doc.content_hash().to_hex()])?;
    let key = tx.last_insert_rowid();
    let mut ids = Vec::with_capacity(write.chunks.len());
    {
        let mut ins = tx.prepare_cached(
            "INSERT INTO chunks (doc, ordinal, depth, parent, leaf, start, end, headings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for c in &write.chunks {
            let headings = (!c.headings.is_empty())
                .then(|| serde_json::to_string(&c.headings).expect("strings serialise"));
            ins.execute(params![
                key,
                c.ordinal,
                c.depth,
                c.parent,
                c.leaf,
                c.span.start as i64,
                c.span.end as i64,
                headings
            ])?;
            ids.push(tx.last_insert_rowid());
        }
    }
    insert_entries(tx, key, &ids, &write.lexical, &write.vectors, &write.summaries, postings)
}

/// Inserts a document's lexical entries, vectors and summaries; `ids` are its chunks' ids by
/// ordinal.
fn insert_entries<'w>(
    tx: &Transaction<'_>,
    key: i64,
    ids: &[i64],
    lexical: &'w [LexicalEntry],
    vectors: &[VectorEntry],
    summaries: &[(String, String)],
    postings: &mut Vec<PendingPosting<'w>>,
) -> Result<()> {
    let mut fwd = tx.prepare_cached(
        "INSERT INTO lex_docs (field, chunk, doc, len, terms) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut stats = tx.prepare_cached(
        "INSERT INTO lex_fields (field, chunks, total_len) VALUES (?1, 1, ?2)
         ON CONFLICT (field) DO UPDATE SET chunks = chunks + 1, total_len = total_len + ?2",
    )?;
    let mut terms = String::new();
    for e in lexical {
        let chunk = ids[e.ordinal as usize];
        terms.clear();
        for (term, tf) in &e.terms {
            postings.push((&e.field, term, chunk, key, *tf, e.len));
            if !terms.is_empty() {
                terms.push(' ');
            }
            terms.push_str(term);
        }
        fwd.execute(params![e.field, chunk, key, e.len, terms])?;
        stats.execute(params![e.field, e.len])?;
    }
    let mut vec =
        tx.prepare_cached("INSERT INTO vectors (repr, chunk, doc, vec) VALUES (?1, ?2, ?3, ?4)")?;
    for v in vectors {
        let bytes: Vec<u8> = v.vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        vec.execute(params![v.repr, ids[v.ordinal as usize], key, bytes])?;
    }
    let mut sum =
        tx.prepare_cached("INSERT INTO summaries (doc, name, text) VALUES (?1, ?2, ?3)")?;
    for (name, text) in summaries {
        sum.execute(params![key, name, text])?;
    }
    Ok(())
}

const CHUNK_COLUMNS: &str =
    "c.id, c.doc, d.id, c.ordinal, c.depth, c.parent, c.leaf, c.start, c.end, c.headings";

fn read_chunk(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredChunk> {
    let headings: Option<String> = r.get(9)?;
    Ok(StoredChunk {
        id: ChunkId(r.get(0)?),
        doc: DocKey(r.get(1)?),
        doc_id: r.get(2)?,
        chunk: Chunk {
            ordinal: r.get(3)?,
            depth: r.get(4)?,
            parent: r.get(5)?,
            leaf: r.get(6)?,
            span: Span::new(r.get::<_, i64>(7)? as usize, r.get::<_, i64>(8)? as usize),
            headings: headings.and_then(|h| serde_json::from_str(&h).ok()).unwrap_or_default(),
        },
    })
}

impl StoreRead for SqliteStore {
    fn location(&self) -> String {
        self.path.as_ref().map_or_else(|| ":memory:".to_string(), |p| p.display().to_string())
    }

    fn manifest(&self) -> Result<Manifest> {
        let json: String =
            self.conn
                .query_row("SELECT value FROM meta WHERE key = 'manifest'", [], |r| r.get(0))?;
        serde_json::from_str(&json).map_err(|e| Error::NotAStore {
            path: self.location(),
            reason: format!("unreadable manifest: {e}"),
        })
    }

    fn document(&self, id: &str) -> Result<Option<StoredDocument>> {
        self.conn
            .query_row(
                "SELECT key, id, title, text, metadata, source, hash, (SELECT count(*) FROM chunks WHERE doc = key) FROM documents WHERE id = ?1",
                [id],
                |r| {
                    let metadata: Option<String> = r.get(4)?;
                    Ok(StoredDocument {
                        key: DocKey(r.get(0)?),
                        document: Document {
                            id: r.get(1)?,
                            title: r.get(2)?,
                            text: r.get(3)?,
                            metadata: metadata.and_then(|m| serde_json::from_str(&m).ok()).unwrap_or_default(),
                            source: r.get(5)?,
                        },
                        hash: r.get(6)?,
                        chunks: r.get::<_, i64>(7)? as u64,
                    })
                },
            )
            .optional()
            .map_err(Error::from)
    }

    fn document_hash(&self, id: &str) -> Result<Option<String>> {
        let mut stmt = self.conn.prepare_cached("SELECT hash FROM documents WHERE id = ?1")?;
        Ok(stmt.query_row([id], |r| r.get(0)).optional()?)
    }

    fn document_ids(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare("SELECT id FROM documents ORDER BY id")?;
        let ids = stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(ids)
    }

    fn chunks_of(&self, id: &str) -> Result<Vec<StoredChunk>> {
        let sql = format!(
            "SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.key = c.doc WHERE d.id = ?1 ORDER BY c.ordinal"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let chunks = stmt.query_map([id], read_chunk)?.collect::<Result<_, _>>()?;
        Ok(chunks)
    }

    fn chunks_by_id(&self, ids: &[ChunkId]) -> Result<Vec<StoredChunk>> {
        let sql = format!(
            "SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.key = c.doc WHERE c.id = ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(c) = stmt.query_row([id.0], read_chunk).optional()? {
                out.push(c);
            }
        }
        Ok(out)
    }

    fn live_chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkId>> {
        let mut stmt = self.conn.prepare_cached("SELECT 1 FROM chunks WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if stmt.exists([id.0])? {
                out.push(*id);
            }
        }
        Ok(out)
    }

    fn doc_ids_by_key(&self, keys: &[DocKey]) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached("SELECT id FROM documents WHERE key = ?1")?;
        keys.iter().map(|k| stmt.query_row([k.0], |r| r.get(0)).map_err(Error::from)).collect()
    }

    fn span_text(&self, key: DocKey, span: Span) -> Result<String> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT substr(CAST(text AS BLOB), ?2, ?3) FROM documents WHERE key = ?1",
        )?;
        let bytes: Vec<u8> =
            stmt.query_row(params![key.0, span.start as i64 + 1, span.len() as i64], |r| r.get(0))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn postings(&self, field: &str, terms: &[String]) -> Result<(LexicalStats, Vec<Vec<Posting>>)> {
        let stats = self
            .conn
            .query_row("SELECT chunks, total_len FROM lex_fields WHERE field = ?1", [field], |r| {
                Ok(LexicalStats {
                    chunks: r.get::<_, i64>(0)? as u64,
                    total_len: r.get::<_, i64>(1)? as u64,
                })
            })
            .optional()?
            .unwrap_or_default();
        let mut stmt = self.conn.prepare_cached(
            "SELECT chunk, doc, tf, len FROM postings WHERE field = ?1 AND term = ?2",
        )?;
        let lists = terms
            .iter()
            .map(|t| {
                stmt.query_map(params![field, t], |r| {
                    Ok(Posting {
                        chunk: ChunkId(r.get(0)?),
                        doc: DocKey(r.get(1)?),
                        tf: r.get(2)?,
                        len: r.get(3)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()
                .map_err(Error::from)
            })
            .collect::<Result<_>>()?;
        Ok((stats, lists))
    }

    fn vectors(&self, repr: &str) -> Result<VectorMatrix> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT chunk, doc, vec FROM vectors WHERE repr = ?1 ORDER BY chunk")?;
        let mut rows = stmt.query([repr])?;
        let mut m = VectorMatrix::default();
        while let Some(r) = rows.next()? {
            let bytes = r.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            let dim = bytes.len() / 4;
            if m.ids.is_empty() {
                m.dim = dim;
            } else if dim != m.dim {
                return Err(Error::InvalidWrite {
                    doc: format!("key {}", r.get::<_, i64>(1)?),
                    reason: format!("representation `{repr}` mixes {} and {dim} dimensions", m.dim),
                });
            }
            m.ids.push(ChunkId(r.get(0)?));
            m.docs.push(DocKey(r.get(1)?));
            m.data.extend(
                bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        Ok(m)
    }

    fn summaries(&self, id: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.name, s.text FROM summaries s JOIN documents d ON d.key = s.doc WHERE d.id = ?1 ORDER BY s.name",
        )?;
        let rows =
            stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    fn stats(&self) -> Result<StoreStats> {
        let (documents, text_bytes): (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0) FROM documents",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let (chunks, leaf_chunks): (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(leaf), 0) FROM chunks",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let mut stmt = self.conn.prepare(
            "SELECT f.field, f.chunks,
                    (SELECT count(DISTINCT term) FROM postings p WHERE p.field = f.field),
                    (SELECT count(*) FROM postings p WHERE p.field = f.field)
             FROM lex_fields f ORDER BY f.field",
        )?;
        let lexical = stmt
            .query_map([], |r| {
                Ok(LexicalFieldStats {
                    field: r.get(0)?,
                    chunks: r.get::<_, i64>(1)? as u64,
                    terms: r.get::<_, i64>(2)? as u64,
                    postings: r.get::<_, i64>(3)? as u64,
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut stmt = self.conn.prepare(
            "SELECT repr, count(*), sum(length(vec)) FROM vectors GROUP BY repr ORDER BY repr",
        )?;
        let representations = stmt
            .query_map([], |r| {
                Ok(RepresentationStats {
                    name: r.get(0)?,
                    vectors: r.get::<_, i64>(1)? as u64,
                    bytes: r.get::<_, i64>(2)? as u64,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(StoreStats {
            documents: documents as u64,
            chunks: chunks as u64,
            leaf_chunks: leaf_chunks as u64,
            text_bytes: text_bytes as u64,
            lexical,
            representations,
            disk_bytes: self.disk_bytes(),
        })
    }

    fn check(&self) -> Result<CheckReport> {
        check::run(&self.conn)
    }

    fn documents_lacking(&self, what: Lacking<'_>) -> Result<Vec<String>> {
        let sql = match what {
            Lacking::Vectors(_) => {
                "SELECT d.id FROM documents d WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.doc = d.key AND v.repr = ?1) ORDER BY d.id"
            }
            Lacking::Field(_) => {
                "SELECT d.id FROM documents d WHERE NOT EXISTS (SELECT 1 FROM lex_docs l WHERE l.doc = d.key AND l.field = ?1) ORDER BY d.id"
            }
            Lacking::Summary(_) => {
                "SELECT d.id FROM documents d WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.doc = d.key AND s.name = ?1) ORDER BY d.id"
            }
        };
        let name = match what {
            Lacking::Vectors(n) | Lacking::Field(n) | Lacking::Summary(n) => n,
        };
        let mut stmt = self.conn.prepare(sql)?;
        let ids = stmt.query_map([name], |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(ids)
    }

    fn aux(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let mut stmt = self.conn.prepare_cached("SELECT data FROM aux WHERE name = ?1")?;
        Ok(stmt.query_row([name], |r| r.get(0)).optional()?)
    }

    fn doc_keys_where(&self, filter: &MetadataFilter) -> Result<Vec<DocKey>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT key, metadata FROM documents WHERE metadata IS NOT NULL ORDER BY key",
        )?;
        let mut keys = Vec::new();
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let json: String = row.get(1)?;
            let metadata = serde_json::from_str(&json).unwrap_or_default();
            if filter.matches(&metadata) {
                keys.push(DocKey(row.get(0)?));
            }
        }
        Ok(keys)
    }

    fn generation(&self) -> Result<u64> {
        let mut stmt =
            self.conn.prepare_cached("SELECT value FROM meta WHERE key = 'generation'")?;
        let value: Option<String> = stmt.query_row([], |r| r.get(0)).optional()?;
        Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    fn begin_read(&self) -> Result<bool> {
        if !self.conn.is_autocommit() {
            return Ok(false);
        }
        self.conn.execute_batch("BEGIN DEFERRED")?;
        Ok(true)
    }

    fn end_read(&self) -> Result<()> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }
}

impl StoreWrite for SqliteStore {
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        let tx = self.conn.transaction()?;
        put_manifest(&tx, manifest)?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    fn set_aux(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("INSERT OR REPLACE INTO aux (name, data) VALUES (?1, ?2)", params![name, data])?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    fn write_batch(&mut self, docs: Vec<DocumentWrite>) -> Result<()> {
        for d in &docs {
            rules::validate(d)?;
        }
        let tx = self.conn.transaction()?;
        let mut postings = Vec::new();
        for d in &docs {
            if let Some(key) = doc_key(&tx, &d.document.id)? {
                delete_document(&tx, key)?;
            }
            insert_document(&tx, d, &mut postings)?;
        }
        insert_postings(&tx, postings)?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    fn write_derived(&mut self, batch: Vec<DerivedWrite>) -> Result<usize> {
        for w in &batch {
            rules::validate_terms(&w.doc_id, &w.lexical)?;
        }
        let tx = self.conn.transaction()?;
        let mut postings = Vec::new();
        let mut applied = 0;
        for w in &batch {
            applied += usize::from(replace_derived(&tx, w, &mut postings)?);
        }
        insert_postings(&tx, postings)?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(applied)
    }

    fn remove(&mut self, ids: &[String]) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut removed = 0;
        for id in ids {
            if let Some(key) = doc_key(&tx, id)? {
                delete_document(&tx, key)?;
                removed += 1;
            }
        }
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(removed)
    }
}
