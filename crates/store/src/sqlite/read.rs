//! Reading from the `SQLite` store.

use ckeep_core::{
    Chunk, ChunkId, DocKey, Document, LexicalStats, Posting, SOURCE_MAP_KEY, SourceMap, Span,
};
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, check};
use crate::filter_sql::{Dialect, Pushdown, SqlParam};
use crate::{
    CheckReport, Error, Lacking, LexicalFieldStats, Manifest, MetadataFilter, RepresentationStats,
    Result, StoreRead, StoreStats, StoredChunk, StoredDocument, VectorMatrix,
};

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

    fn document_sources(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare("SELECT id, source FROM documents ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn document_ids_page(
        &self,
        after: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id FROM documents WHERE ?1 IS NULL OR id > ?1 ORDER BY id LIMIT ?2 OFFSET ?3",
        )?;
        let rows = stmt
            .query_map(params![after, crate::sql_count(limit), crate::sql_count(offset)], |r| {
                r.get(0)
            })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn document_count(&self) -> Result<usize> {
        let n: i64 = self.conn.query_row("SELECT count(*) FROM documents", [], |r| r.get(0))?;
        Ok(n as usize)
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

    fn source_maps(&self, keys: &[DocKey]) -> Result<Vec<Option<SourceMap>>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT json_extract(metadata, '$.{SOURCE_MAP_KEY}') FROM documents WHERE key = ?1"
        ))?;
        keys.iter()
            .map(|k| {
                let json: Option<String> = stmt.query_row([k.0], |r| r.get(0))?;
                Ok(json.and_then(|j| SourceMap::from_json(&j)))
            })
            .collect()
    }

    fn span_text(&self, key: DocKey, span: Span) -> Result<String> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT substr(CAST(text AS BLOB), ?2, ?3) FROM documents WHERE key = ?1",
        )?;
        let bytes: Vec<u8> =
            stmt.query_row(params![key.0, span.start as i64 + 1, span.len() as i64], |r| r.get(0))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// One cached statement per span: `SQLite` runs in process, so there is no round trip to save.
    fn span_texts(&self, spans: &[(DocKey, Span)]) -> Result<Vec<String>> {
        spans.iter().map(|(key, span)| self.span_text(*key, *span)).collect()
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
        let mut m = VectorMatrix::default();
        self.each_vector(repr, None, &mut |chunk, doc, v| {
            m.dim = v.len();
            m.ids.push(chunk);
            m.docs.push(doc);
            m.data.extend_from_slice(v);
        })?;
        Ok(m)
    }

    /// Chosen chunks are read by one statement, in chunk order, so rows that share pages are
    /// read together.
    fn each_vector(
        &self,
        repr: &str,
        only: Option<&[ChunkId]>,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        let list = only.map(|ids| {
            let ids: Vec<String> = ids.iter().map(|c| c.0.to_string()).collect();
            format!("[{}]", ids.join(","))
        });
        let mut stmt = self.conn.prepare_cached(if list.is_some() {
            "SELECT chunk, doc, vec FROM vectors
             WHERE repr = ?1 AND chunk IN (SELECT value FROM json_each(?2)) ORDER BY chunk"
        } else {
            "SELECT chunk, doc, vec FROM vectors WHERE repr = ?1 ORDER BY chunk"
        })?;
        let mut rows = match &list {
            Some(list) => stmt.query(params![repr, list])?,
            None => stmt.query([repr])?,
        };
        let mut dim = None;
        let mut v = Vec::new();
        while let Some(r) = rows.next()? {
            let bytes = r.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            if *dim.get_or_insert(bytes.len() / 4) != bytes.len() / 4 {
                return Err(Error::InvalidWrite {
                    doc: format!("key {}", r.get::<_, i64>(1)?),
                    reason: format!(
                        "representation `{repr}` mixes {} and {} dimensions",
                        dim.unwrap_or_default(),
                        bytes.len() / 4
                    ),
                });
            }
            v.clear();
            v.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            each(ChunkId(r.get(0)?), DocKey(r.get(1)?), &v);
        }
        Ok(())
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
        // SQL narrows (see `filter_sql`); the filter's own definition decides.
        let pushed = Pushdown::of(filter, Dialect::Sqlite);
        let sql = format!(
            "SELECT key, metadata FROM documents WHERE metadata IS NOT NULL AND ({}) ORDER BY key",
            pushed.sql
        );
        let params: Vec<rusqlite::types::Value> = pushed
            .params
            .into_iter()
            .map(|p| match p {
                SqlParam::Text(t) => rusqlite::types::Value::Text(t),
                SqlParam::Int(i) => rusqlite::types::Value::Integer(i),
                SqlParam::Real(r) => rusqlite::types::Value::Real(r),
            })
            .collect();
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut keys = Vec::new();
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
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

    fn vector_changes(&self, repr: &str, since: u64) -> Result<Option<Vec<ChunkId>>> {
        let oldest: Option<String> = self
            .conn
            .prepare_cached("SELECT value FROM meta WHERE key = 'vector_log_since'")?
            .query_row([], |r| r.get(0))
            .optional()?;
        match oldest.and_then(|v| v.parse::<u64>().ok()) {
            Some(oldest) if oldest <= since => {}
            _ => return Ok(None),
        }
        // A write logs under the generation it started from (the store's generation is
        // advanced as it commits), so the writes after `since` are those logged at `since`
        // and later.
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT chunk FROM vector_log WHERE generation >= ?1 AND repr = ?2 \
             ORDER BY chunk",
        )?;
        let ids = stmt
            .query_map(params![i64::try_from(since).unwrap_or(i64::MAX), repr], |r| {
                Ok(ChunkId(r.get(0)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Some(ids))
    }

    /// Each chunk's first removal: a chunk id is never reused, yet its vector may have been
    /// replaced before it went, and a segment holds the one it was built with.
    fn removed_vectors(
        &self,
        repr: &str,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT chunk, doc, vec FROM vector_gone WHERE repr = ?1 ORDER BY chunk, generation",
        )?;
        let mut rows = stmt.query([repr])?;
        let (mut last, mut v) = (None, Vec::new());
        while let Some(r) = rows.next()? {
            let chunk = ChunkId(r.get(0)?);
            if last.replace(chunk) == Some(chunk) {
                continue;
            }
            let bytes = r.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            v.clear();
            v.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            each(chunk, DocKey(r.get(1)?), &v);
        }
        Ok(())
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
