//! Reading from the PostgreSQL store, and the vector search it runs in the database.

use std::collections::HashMap;

use ckeep_core::{
    Chunk, ChunkId, DocKey, Document, LexicalStats, Posting, SOURCE_MAP_KEY, SourceMap, Span,
};
use postgres::types::ToSql;
use postgres::{Client, Row, Statement};

use super::PgStore;
use super::write::literal;
use crate::filter_sql::{Dialect, Pushdown, SqlParam};
use crate::{
    CheckReport, Error, Lacking, LexicalFieldStats, Manifest, MetadataFilter, RepresentationStats,
    Result, StoreRead, StoreStats, StoredChunk, StoredDocument, VectorMatrix, VectorSearch,
};

/// Beam width of HNSW searches (pgvector's `hnsw.ef_search`), at least the number of results
/// asked for and at most pgvector's limit.
const EF_SEARCH: usize = 128;
const EF_SEARCH_MAX: usize = 1000;

const CHUNK_COLUMNS: &str =
    "c.id, c.doc, d.id, c.ordinal, c.depth, c.parent, c.leaf, c.start_byte, c.end_byte, c.headings";

fn read_chunk(r: &Row) -> StoredChunk {
    let headings: Option<String> = r.get(9);
    StoredChunk {
        id: ChunkId(r.get(0)),
        doc: DocKey(r.get(1)),
        doc_id: r.get(2),
        chunk: Chunk {
            ordinal: r.get::<_, i32>(3) as u32,
            depth: r.get::<_, i32>(4) as u16,
            parent: r.get::<_, Option<i32>>(5).map(|p| p as u32),
            leaf: r.get(6),
            span: Span::new(r.get::<_, i64>(7) as usize, r.get::<_, i64>(8) as usize),
            headings: headings.and_then(|h| serde_json::from_str(&h).ok()).unwrap_or_default(),
        },
    }
}

/// Rows of `(chunk, doc, vec)` as a matrix; all vectors must have one dimension.
fn matrix(rows: &[Row], repr: &str) -> Result<VectorMatrix> {
    let mut m = VectorMatrix::default();
    for r in rows {
        let v: pgvector::Vector = r.get(2);
        let v = v.as_slice();
        if m.ids.is_empty() {
            m.dim = v.len();
        } else if v.len() != m.dim {
            return Err(Error::InvalidWrite {
                doc: format!("key {}", r.get::<_, i64>(1)),
                reason: format!(
                    "representation `{repr}` mixes {} and {} dimensions",
                    m.dim,
                    v.len()
                ),
            });
        }
        m.ids.push(ChunkId(r.get(0)));
        m.docs.push(DocKey(r.get(1)));
        m.data.extend_from_slice(v);
    }
    Ok(m)
}

impl PgStore {
    /// A prepared statement for `sql`, prepared once per connection: a query then costs one
    /// round trip instead of two.
    fn prepared(&self, client: &mut Client, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.borrow().get(sql) {
            return Ok(s.clone());
        }
        let statement = client.prepare(sql)?;
        self.statements.borrow_mut().insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let mut client = self.connection()?;
        let statement = self.prepared(&mut client, sql)?;
        Ok(client.query(&statement, params)?)
    }

    fn query_opt(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let mut client = self.connection()?;
        let statement = self.prepared(&mut client, sql)?;
        Ok(client.query_opt(&statement, params)?)
    }

    fn query_one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let mut client = self.connection()?;
        let statement = self.prepared(&mut client, sql)?;
        Ok(client.query_one(&statement, params)?)
    }

    fn disk_bytes(&self) -> Result<u64> {
        let bytes: i64 = self.query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'ckeep' AND c.relkind = 'r'",
                &[],
            )?
            .get(0);
        Ok(bytes as u64)
    }
}

impl StoreRead for PgStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn manifest(&self) -> Result<Manifest> {
        let row = self.query_one("SELECT value FROM ckeep.meta WHERE key = 'manifest'", &[])?;
        serde_json::from_str(row.get(0)).map_err(|e| Error::NotAStore {
            path: self.location.clone(),
            reason: format!("unreadable manifest: {e}"),
        })
    }

    fn document(&self, id: &str) -> Result<Option<StoredDocument>> {
        let row = self.query_opt(
            "SELECT key, id, title, text, metadata, source, hash,
                    (SELECT count(*) FROM ckeep.chunks c WHERE c.doc = d.key)
             FROM ckeep.documents d WHERE id = $1",
            &[&id],
        )?;
        let Some(r) = row else { return Ok(None) };
        let metadata: Option<String> = r.get(4);
        let text = String::from_utf8(r.get(3)).map_err(|_| Error::NotAStore {
            path: self.location.clone(),
            reason: format!("the text of document `{id}` is not UTF-8"),
        })?;
        Ok(Some(StoredDocument {
            key: DocKey(r.get(0)),
            document: Document {
                id: r.get(1),
                title: r.get(2),
                text,
                metadata: metadata.and_then(|m| serde_json::from_str(&m).ok()).unwrap_or_default(),
                source: r.get(5),
            },
            hash: r.get(6),
            chunks: r.get::<_, i64>(7) as u64,
        }))
    }

    fn document_hash(&self, id: &str) -> Result<Option<String>> {
        let row = self.query_opt("SELECT hash FROM ckeep.documents WHERE id = $1", &[&id])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn document_ids(&self) -> Result<Vec<String>> {
        // Byte order, as SQLite sorts: independent of the database's collation.
        let rows = self.query("SELECT id FROM ckeep.documents ORDER BY id COLLATE \"C\"", &[])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn document_sources(&self) -> Result<Vec<(String, String)>> {
        let rows =
            self.query("SELECT id, source FROM ckeep.documents ORDER BY id COLLATE \"C\"", &[])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn document_ids_page(
        &self,
        after: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<String>> {
        let (limit, offset) = (crate::sql_count(limit), crate::sql_count(offset));
        let rows = self.query(
            "SELECT id FROM ckeep.documents WHERE $1::text IS NULL OR id COLLATE \"C\" > $1 \
             ORDER BY id COLLATE \"C\" LIMIT $2 OFFSET $3",
            &[&after, &limit, &offset],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn document_count(&self) -> Result<usize> {
        let rows = self.query("SELECT count(*) FROM ckeep.documents", &[])?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0)) as usize)
    }

    fn chunks_of(&self, id: &str) -> Result<Vec<StoredChunk>> {
        let sql = format!(
            "SELECT {CHUNK_COLUMNS} FROM ckeep.chunks c JOIN ckeep.documents d ON d.key = c.doc WHERE d.id = $1 ORDER BY c.ordinal"
        );
        let rows = self.query(&sql, &[&id])?;
        Ok(rows.iter().map(read_chunk).collect())
    }

    fn chunks_by_id(&self, ids: &[ChunkId]) -> Result<Vec<StoredChunk>> {
        let keys: Vec<i64> = ids.iter().map(|c| c.0).collect();
        let sql = format!(
            "SELECT {CHUNK_COLUMNS} FROM ckeep.chunks c JOIN ckeep.documents d ON d.key = c.doc WHERE c.id = ANY($1)"
        );
        let rows = self.query(&sql, &[&keys])?;
        let mut found: HashMap<ChunkId, StoredChunk> =
            rows.iter().map(read_chunk).map(|c| (c.id, c)).collect();
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    fn live_chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkId>> {
        let keys: Vec<i64> = ids.iter().map(|c| c.0).collect();
        let rows = self.query("SELECT id FROM ckeep.chunks WHERE id = ANY($1)", &[&keys])?;
        let live: std::collections::HashSet<i64> = rows.iter().map(|r| r.get(0)).collect();
        Ok(ids.iter().filter(|id| live.contains(&id.0)).copied().collect())
    }

    fn doc_ids_by_key(&self, keys: &[DocKey]) -> Result<Vec<String>> {
        let asked: Vec<i64> = keys.iter().map(|k| k.0).collect();
        let rows =
            self.query("SELECT key, id FROM ckeep.documents WHERE key = ANY($1)", &[&asked])?;
        let ids: HashMap<i64, String> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        asked.iter().map(|k| ids.get(k).cloned().ok_or(Error::UnknownKey(*k))).collect()
    }

    fn source_maps(&self, keys: &[DocKey]) -> Result<Vec<Option<SourceMap>>> {
        let asked: Vec<i64> = keys.iter().map(|k| k.0).collect();
        let rows = self.query(
            &format!(
                "SELECT key, (metadata::jsonb -> '{SOURCE_MAP_KEY}')::text FROM ckeep.documents WHERE key = ANY($1)"
            ),
            &[&asked],
        )?;
        let maps: HashMap<i64, Option<String>> =
            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        asked
            .iter()
            .map(|k| {
                let json = maps.get(k).ok_or(Error::UnknownKey(*k))?;
                Ok(json.as_deref().and_then(SourceMap::from_json))
            })
            .collect()
    }

    fn span_texts(&self, spans: &[(DocKey, Span)]) -> Result<Vec<String>> {
        let keys: Vec<i64> = spans.iter().map(|(k, _)| k.0).collect();
        let starts: Vec<i64> = spans.iter().map(|(_, s)| s.start as i64 + 1).collect();
        let lens: Vec<i64> = spans.iter().map(|(_, s)| s.len() as i64).collect();
        let rows = self.query(
            "SELECT x.i, substring(d.text FROM x.s::int FOR x.l::int)
             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS x(key, s, l, i)
             JOIN ckeep.documents d ON d.key = x.key",
            &[&keys, &starts, &lens],
        )?;
        let mut texts: Vec<Option<String>> = vec![None; spans.len()];
        for r in &rows {
            let i = r.get::<_, i64>(0) as usize - 1;
            texts[i] = Some(String::from_utf8_lossy(&r.get::<_, Vec<u8>>(1)).into_owned());
        }
        texts.into_iter().zip(&keys).map(|(t, k)| t.ok_or(Error::UnknownKey(*k))).collect()
    }

    fn postings(&self, field: &str, terms: &[String]) -> Result<(LexicalStats, Vec<Vec<Posting>>)> {
        let stats = self
            .query_opt(
                "SELECT chunks, total_len FROM ckeep.lex_fields WHERE field = $1",
                &[&field],
            )?
            .map(|r| LexicalStats {
                chunks: r.get::<_, i64>(0) as u64,
                total_len: r.get::<_, i64>(1) as u64,
            })
            .unwrap_or_default();
        // One round trip for every term.
        let rows = self.query(
            "SELECT term, chunk, doc, tf, len FROM ckeep.postings WHERE field = $1 AND term = ANY($2) ORDER BY term, chunk",
            &[&field, &terms],
        )?;
        // Each term's list is built in place; a term asked twice gets a copy.
        let mut first: HashMap<&str, usize> = HashMap::new();
        for (i, t) in terms.iter().enumerate() {
            first.entry(t.as_str()).or_insert(i);
        }
        let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); terms.len()];
        for r in &rows {
            let Some(&i) = first.get(r.get::<_, &str>(0)) else { continue };
            lists[i].push(Posting {
                chunk: ChunkId(r.get(1)),
                doc: DocKey(r.get(2)),
                tf: r.get::<_, i32>(3) as u32,
                len: r.get::<_, i32>(4) as u32,
            });
        }
        for (i, t) in terms.iter().enumerate() {
            let j = first[t.as_str()];
            if j < i {
                let (earlier, rest) = lists.split_at_mut(i);
                rest[0].clone_from(&earlier[j]);
            }
        }
        Ok((stats, lists))
    }

    fn vectors(&self, repr: &str) -> Result<VectorMatrix> {
        let rows = self.query(
            "SELECT chunk, doc, vec FROM ckeep.vectors WHERE repr = $1 ORDER BY chunk",
            &[&repr],
        )?;
        matrix(&rows, repr)
    }

    /// All vectors are read as one result set (a PostgreSQL store searches its vectors with
    /// pgvector, so only derivations and quantised scans stream them); chosen chunks by one
    /// query.
    fn each_vector(
        &self,
        repr: &str,
        only: Option<&[ChunkId]>,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        let m = match only {
            None => self.vectors(repr)?,
            Some(ids) => {
                let keys: Vec<i64> = ids.iter().map(|c| c.0).collect();
                let rows = self.query(
                    "SELECT chunk, doc, vec FROM ckeep.vectors
                     WHERE repr = $1 AND chunk = ANY($2) ORDER BY chunk",
                    &[&repr, &keys],
                )?;
                matrix(&rows, repr)?
            }
        };
        for i in 0..m.len() {
            each(m.ids[i], m.docs[i], m.row(i));
        }
        Ok(())
    }

    fn summaries(&self, id: &str) -> Result<Vec<(String, String)>> {
        let rows = self.query(
            "SELECT s.name, s.text FROM ckeep.summaries s JOIN ckeep.documents d ON d.key = s.doc
             WHERE d.id = $1 ORDER BY s.name COLLATE \"C\"",
            &[&id],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn stats(&self) -> Result<StoreStats> {
        let mut client = self.connection()?;
        let docs = client.query_one(
            "SELECT count(*), coalesce(sum(length(text)), 0)::bigint FROM ckeep.documents",
            &[],
        )?;
        let chunks = client
            .query_one("SELECT count(*), count(*) FILTER (WHERE leaf) FROM ckeep.chunks", &[])?;
        let lexical = client
            .query(
                "SELECT f.field, f.chunks,
                        (SELECT count(DISTINCT term) FROM ckeep.postings p WHERE p.field = f.field),
                        (SELECT count(*) FROM ckeep.postings p WHERE p.field = f.field)
                 FROM ckeep.lex_fields f ORDER BY f.field COLLATE \"C\"",
                &[],
            )?
            .iter()
            .map(|r| LexicalFieldStats {
                field: r.get(0),
                chunks: r.get::<_, i64>(1) as u64,
                terms: r.get::<_, i64>(2) as u64,
                postings: r.get::<_, i64>(3) as u64,
            })
            .collect();
        let representations = client
            .query(
                "SELECT repr, count(*), sum(vector_dims(vec) * 4)::bigint FROM ckeep.vectors
                 GROUP BY repr ORDER BY repr COLLATE \"C\"",
                &[],
            )?
            .iter()
            .map(|r| RepresentationStats {
                name: r.get(0),
                vectors: r.get::<_, i64>(1) as u64,
                bytes: r.get::<_, i64>(2) as u64,
            })
            .collect();
        drop(client);
        Ok(StoreStats {
            documents: docs.get::<_, i64>(0) as u64,
            chunks: chunks.get::<_, i64>(0) as u64,
            leaf_chunks: chunks.get::<_, i64>(1) as u64,
            text_bytes: docs.get::<_, i64>(1) as u64,
            lexical,
            representations,
            disk_bytes: self.disk_bytes()?,
        })
    }

    fn check(&self) -> Result<CheckReport> {
        super::check::run(&mut *self.connection()?)
    }

    fn documents_lacking(&self, what: Lacking<'_>) -> Result<Vec<String>> {
        let (sql, name) = match what {
            Lacking::Vectors(n) => (
                "SELECT d.id FROM ckeep.documents d WHERE NOT EXISTS (SELECT 1 FROM ckeep.vectors v WHERE v.doc = d.key AND v.repr = $1) ORDER BY d.id COLLATE \"C\"",
                n,
            ),
            Lacking::Field(n) => (
                "SELECT d.id FROM ckeep.documents d WHERE NOT EXISTS (SELECT 1 FROM ckeep.lex_docs l WHERE l.doc = d.key AND l.field = $1) ORDER BY d.id COLLATE \"C\"",
                n,
            ),
            Lacking::Summary(n) => (
                "SELECT d.id FROM ckeep.documents d WHERE NOT EXISTS (SELECT 1 FROM ckeep.summaries s WHERE s.doc = d.key AND s.name = $1) ORDER BY d.id COLLATE \"C\"",
                n,
            ),
        };
        let rows = self.query(sql, &[&name])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn aux(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let row = self.query_opt("SELECT data FROM ckeep.aux WHERE name = $1", &[&name])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn doc_keys_where(&self, filter: &MetadataFilter) -> Result<Vec<DocKey>> {
        // The database narrows, through the GIN index over `metadata::jsonb` where it can
        // (see `filter_sql`); the filter's own definition decides on what it returns.
        let pushed = Pushdown::of(filter, Dialect::Postgres);
        let sql = format!(
            "SELECT key, metadata FROM ckeep.documents WHERE metadata IS NOT NULL AND ({}) ORDER BY key",
            pushed.sql
        );
        let texts: Vec<String> = pushed
            .params
            .into_iter()
            .map(|p| match p {
                SqlParam::Text(t) => t,
                // The PostgreSQL dialect writes values into its jsonpath texts.
                SqlParam::Int(i) => i.to_string(),
                SqlParam::Real(r) => r.to_string(),
            })
            .collect();
        let params: Vec<&(dyn ToSql + Sync)> =
            texts.iter().map(|t| t as &(dyn ToSql + Sync)).collect();
        // Not kept prepared: each shape of filter makes its own statement, and a server takes
        // any shape a client sends.
        let rows = self.connection()?.query(sql.as_str(), &params)?;
        Ok(rows
            .iter()
            .filter(|r| {
                let metadata = serde_json::from_str(r.get(1)).unwrap_or_default();
                filter.matches(&metadata)
            })
            .map(|r| DocKey(r.get(0)))
            .collect())
    }

    fn generation(&self) -> Result<u64> {
        let row = self.query_opt("SELECT value FROM ckeep.meta WHERE key = 'generation'", &[])?;
        Ok(row.and_then(|r| r.get::<_, String>(0).parse().ok()).unwrap_or(0))
    }

    fn vector_changes(&self, _repr: &str, _since: u64) -> Result<Option<Vec<ChunkId>>> {
        // The database searches (and so indexes) its own vectors: no reader holds them.
        Ok(None)
    }

    fn begin_read(&self) -> Result<bool> {
        if self.in_read.get() {
            return Ok(false);
        }
        self.connection()?.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        self.in_read.set(true);
        Ok(true)
    }

    fn end_read(&self) -> Result<()> {
        self.in_read.set(false);
        self.client.borrow_mut().batch_execute("COMMIT")?;
        Ok(())
    }

    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        Some(self)
    }
}

impl VectorSearch for PgStore {
    fn nearest(
        &self,
        repr: &str,
        query: &[f32],
        k: usize,
        exact: bool,
        docs: Option<&[DocKey]>,
    ) -> Result<VectorMatrix> {
        let q = pgvector::Vector::from(query.to_vec());
        let limit = k as i64;
        let docs: Option<Vec<i64>> = docs.map(|d| d.iter().map(|k| k.0).collect());
        let within = if docs.is_some() { "AND doc = ANY($3)" } else { "AND $3::bigint[] IS NULL" };
        let rows = (|| -> Result<Vec<Row>> {
            let mut client = self.connection()?;
            let client = &mut *client;
            if exact {
                // Not the indexed expression: the planner scans every vector.
                let sql = format!(
                    "SELECT chunk, doc, vec FROM ckeep.vectors WHERE repr = $4 {within}
                     ORDER BY vec <=> $1 LIMIT $2"
                );
                let statement = self.prepared(client, &sql)?;
                return Ok(client.query(&statement, &[&q, &limit, &docs, &repr])?);
            }
            // Session settings, sent only when they change: one round trip fewer per query.
            let ef = k.clamp(EF_SEARCH, EF_SEARCH_MAX);
            if self.ef_search.get() != ef {
                client.execute(
                    "SELECT set_config('hnsw.ef_search', $1, false), set_config('hnsw.iterative_scan', 'relaxed_order', false)",
                    &[&ef.to_string()],
                )?;
                self.ef_search.set(ef);
            }
            // The partial index's expression and predicate, spelled as it was created.
            let dim = query.len();
            let sql = format!(
                "SELECT chunk, doc, vec FROM ckeep.vectors WHERE repr = {} {within}
                 ORDER BY vec::vector({dim}) <=> $1::vector({dim}) LIMIT $2",
                literal(repr)
            );
            let statement = self.prepared(client, &sql)?;
            Ok(client.query(&statement, &[&q, &limit, &docs])?)
        })();
        // A failed transaction (a snapshot ended by an error) rolls session settings back too.
        let rows = rows.inspect_err(|_| self.ef_search.set(0))?;
        matrix(&rows, repr)
    }
}
