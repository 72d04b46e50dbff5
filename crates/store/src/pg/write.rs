//! Writing to the PostgreSQL store: each call is one transaction; rows go in by binary `COPY`.
//!
//! Every write transaction first advances the generation. That row lock makes writers take
//! turns (as `SQLite`'s single writer does), so replacing a document by id cannot race with
//! another writer of the same id even where no unique index can hold (a sharded coordinator).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::{GenericClient, Transaction};

use super::PgStore;
use crate::{
    DerivedWrite, DocumentWrite, Error, LexicalEntry, Manifest, Result, StoreWrite, VectorEntry,
    rules,
};

pub(super) fn put_manifest(client: &mut impl GenericClient, manifest: &Manifest) -> Result<()> {
    let json = serde_json::to_string(manifest).expect("manifest serialises");
    client.execute(
        "INSERT INTO ckeep.meta (key, value) VALUES ('manifest', $1)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&json],
    )?;
    Ok(())
}

/// Counts committed writes (see [`crate::StoreRead::generation`]) and, holding the row until
/// commit, makes writers take turns.
fn bump_generation(tx: &mut Transaction<'_>) -> Result<()> {
    tx.execute(
        "INSERT INTO ckeep.meta (key, value) VALUES ('generation', '1')
         ON CONFLICT (key) DO UPDATE SET value = (ckeep.meta.value::bigint + 1)::text",
        &[],
    )?;
    Ok(())
}

/// PostgreSQL text cannot hold NUL: refused up front with the document named, rather than
/// failing inside `COPY`. (Document text is `bytea` and may hold anything.) `named` are the
/// document's own text fields.
fn refuse_nul(
    named: &[(&str, &str)],
    lexical: &[LexicalEntry],
    summaries: &[(String, String)],
) -> Result<()> {
    let field = named.iter().find(|(_, v)| v.contains('\0')).map(|(name, _)| *name).or_else(|| {
        let texts = summaries.iter().flat_map(|(n, t)| [n, t]);
        let terms = lexical.iter().flat_map(|e| e.terms.iter().map(|(t, _)| t));
        texts.chain(terms).any(|s| s.contains('\0')).then_some("summary or term")
    });
    match field {
        Some(name) => Err(Error::InvalidWrite {
            doc: named[0].1.replace('\0', "\\0"),
            reason: format!(
                "its {name} contains a NUL character, which PostgreSQL text cannot hold"
            ),
        }),
        None => Ok(()),
    }
}

/// Removes documents (by key) and everything derived from them.
fn delete_documents(tx: &mut Transaction<'_>, keys: &[i64]) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    delete_lexical(tx, keys, None)?;
    for sql in [
        "DELETE FROM ckeep.vectors WHERE doc = ANY($1)",
        "DELETE FROM ckeep.summaries WHERE doc = ANY($1)",
        "DELETE FROM ckeep.chunks WHERE doc = ANY($1)",
        "DELETE FROM ckeep.documents WHERE key = ANY($1)",
    ] {
        tx.execute(sql, &[&keys])?;
    }
    Ok(())
}

/// Deletes the documents' lexical entries of one field (or all), keeping the field statistics
/// right. Postings are found through the forward entries' term lists, by primary key.
fn delete_lexical(tx: &mut Transaction<'_>, keys: &[i64], field: Option<&str>) -> Result<()> {
    tx.execute(
        "DELETE FROM ckeep.postings p
         USING (SELECT field, unnest(string_to_array(terms, ' ')) AS term, chunk FROM ckeep.lex_docs
                WHERE doc = ANY($1) AND ($2::text IS NULL OR field = $2)) x
         WHERE p.field = x.field AND p.term = x.term AND p.chunk = x.chunk",
        &[&keys, &field],
    )?;
    tx.execute(
        "UPDATE ckeep.lex_fields f SET chunks = f.chunks - x.n, total_len = f.total_len - x.len
         FROM (SELECT field, count(*) AS n, sum(len) AS len FROM ckeep.lex_docs
               WHERE doc = ANY($1) AND ($2::text IS NULL OR field = $2) GROUP BY field) x
         WHERE f.field = x.field",
        &[&keys, &field],
    )?;
    tx.execute(
        "DELETE FROM ckeep.lex_docs WHERE doc = ANY($1) AND ($2::text IS NULL OR field = $2)",
        &[&keys, &field],
    )?;
    Ok(())
}

/// `n` fresh values of a sequence, ascending.
fn allocate(tx: &mut Transaction<'_>, sequence: &str, n: usize) -> Result<Vec<i64>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let sql =
        format!("SELECT nextval('{sequence}') FROM generate_series(1, $1::bigint) ORDER BY 1");
    let rows = tx.query(&sql, &[&(n as i64)])?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Rows waiting to be copied in, per table.
#[derive(Default)]
struct Rows<'a> {
    lex_docs: Vec<(&'a str, i64, i64, i32, String)>,
    postings: Vec<(&'a str, &'a str, i64, i64, i32, i32)>,
    vectors: Vec<(&'a str, i64, i64, pgvector::Vector)>,
    summaries: Vec<(i64, &'a str, &'a str)>,
    /// Per field: (chunks, total length) added.
    fields: HashMap<&'a str, (i64, i64)>,
    /// Per representation: the dimension of its vectors.
    dims: HashMap<&'a str, usize>,
}

impl<'a> Rows<'a> {
    /// A document's entries; `ids` are its chunks' ids by ordinal.
    fn add_entries(
        &mut self,
        key: i64,
        ids: &[i64],
        lexical: &'a [LexicalEntry],
        vectors: &'a [VectorEntry],
        summaries: &'a [(String, String)],
    ) {
        for e in lexical {
            let chunk = ids[e.ordinal as usize];
            let terms: Vec<&str> = e.terms.iter().map(|(t, _)| t.as_str()).collect();
            self.lex_docs.push((&e.field, chunk, key, e.len as i32, terms.join(" ")));
            for (term, tf) in &e.terms {
                self.postings.push((&e.field, term, chunk, key, *tf as i32, e.len as i32));
            }
            let stats = self.fields.entry(&e.field).or_default();
            stats.0 += 1;
            stats.1 += i64::from(e.len);
        }
        for v in vectors {
            self.dims.insert(&v.repr, v.vector.len());
            let vector = pgvector::Vector::from(v.vector.clone());
            self.vectors.push((&v.repr, ids[v.ordinal as usize], key, vector));
        }
        for (name, text) in summaries {
            self.summaries.push((key, name, text));
        }
    }

    /// Copies everything in and updates the field statistics; creates the HNSW index of a
    /// representation not `indexed` yet, and returns those it made sure of.
    fn write(
        mut self,
        indexed: &RefCell<HashSet<String>>,
        tx: &mut Transaction<'_>,
    ) -> Result<Vec<String>> {
        // Postings in key order: the B-tree is filled in order rather than at random.
        self.postings.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        copy(
            tx,
            "ckeep.lex_docs (field, chunk, doc, len, terms)",
            &[Type::TEXT, Type::INT8, Type::INT8, Type::INT4, Type::TEXT],
            self.lex_docs.iter().map(|r| [&r.0 as &(dyn ToSql + Sync), &r.1, &r.2, &r.3, &r.4]),
        )?;
        copy(
            tx,
            "ckeep.postings (field, term, chunk, doc, tf, len)",
            &[Type::TEXT, Type::TEXT, Type::INT8, Type::INT8, Type::INT4, Type::INT4],
            self.postings
                .iter()
                .map(|r| [&r.0 as &(dyn ToSql + Sync), &r.1, &r.2, &r.3, &r.4, &r.5]),
        )?;
        if !self.vectors.is_empty() {
            let vector = tx.prepare("SELECT $1::vector")?.params()[0].clone();
            copy(
                tx,
                "ckeep.vectors (repr, chunk, doc, vec)",
                &[Type::TEXT, Type::INT8, Type::INT8, vector],
                self.vectors.iter().map(|r| [&r.0 as &(dyn ToSql + Sync), &r.1, &r.2, &r.3]),
            )?;
        }
        copy(
            tx,
            "ckeep.summaries (doc, name, text)",
            &[Type::INT8, Type::TEXT, Type::TEXT],
            self.summaries.iter().map(|r| [&r.0 as &(dyn ToSql + Sync), &r.1, &r.2]),
        )?;
        for (field, (chunks, len)) in &self.fields {
            tx.execute(
                "INSERT INTO ckeep.lex_fields (field, chunks, total_len) VALUES ($1, $2, $3)
                 ON CONFLICT (field) DO UPDATE SET chunks = ckeep.lex_fields.chunks + EXCLUDED.chunks,
                                                   total_len = ckeep.lex_fields.total_len + EXCLUDED.total_len",
                &[field, chunks, len],
            )?;
        }
        let mut ensured = Vec::new();
        for (repr, dim) in &self.dims {
            if !indexed.borrow().contains(*repr) {
                ensure_vector_index(tx, repr, *dim)?;
                ensured.push((*repr).to_string());
            }
        }
        Ok(ensured)
    }
}

/// pgvector's HNSW index takes vectors of at most this many dimensions; larger ones (e.g.
/// 3,072-d) are searched by exact scan.
const HNSW_MAX_DIM: usize = 2000;

/// Creates a representation's HNSW index unless it exists. Built once over the vectors copied
/// so far, then maintained by PostgreSQL on every insert.
fn ensure_vector_index(tx: &mut Transaction<'_>, repr: &str, dim: usize) -> Result<()> {
    if dim > HNSW_MAX_DIM {
        return Ok(());
    }
    tx.batch_execute(&format!(
        "CREATE INDEX IF NOT EXISTS {} ON ckeep.vectors USING hnsw ((vec::vector({dim})) vector_cosine_ops) WHERE repr = {}",
        vector_index_name(repr),
        literal(repr)
    ))?;
    Ok(())
}

/// Copies rows into `table (columns)` in binary.
fn copy<'r, const N: usize>(
    tx: &mut Transaction<'_>,
    table: &str,
    types: &[Type],
    rows: impl Iterator<Item = [&'r (dyn ToSql + Sync); N]>,
) -> Result<()> {
    let mut rows = rows.peekable();
    if rows.peek().is_none() {
        return Ok(());
    }
    let sink = tx.copy_in(&format!("COPY {table} FROM STDIN (FORMAT binary)"))?;
    let mut writer = BinaryCopyInWriter::new(sink, types);
    for row in rows {
        writer.write(&row)?;
    }
    writer.finish()?;
    Ok(())
}

/// The HNSW index of one representation's vectors: partial (`repr = …`) on `vec::vector(dim)`,
/// named by a hash of the representation.
pub(super) fn vector_index_name(repr: &str) -> String {
    // FNV-1a: stable across builds and platforms.
    let hash = repr
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("vectors_hnsw_{hash:016x}")
}

/// A string as an SQL literal (partial-index predicates cannot take parameters).
pub(super) fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl PgStore {
    /// Removes the documents `removed` and inserts `docs` (replacing stored ones of the same
    /// id) in one transaction; returns how many of `removed` existed.
    fn change_documents(&mut self, docs: &[&DocumentWrite], removed: &[String]) -> Result<usize> {
        let mut client = self.connection()?;
        let mut tx = client.transaction()?;
        bump_generation(&mut tx)?;
        let existed: Vec<i64> = tx
            .query("SELECT key FROM ckeep.documents WHERE id = ANY($1)", &[&removed])?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let ids: Vec<&str> = docs.iter().map(|d| d.document.id.as_str()).collect();
        let mut old: Vec<i64> = tx
            .query("SELECT key FROM ckeep.documents WHERE id = ANY($1)", &[&ids])?
            .iter()
            .map(|r| r.get(0))
            .collect();
        old.extend(&existed);
        old.sort_unstable();
        old.dedup();
        delete_documents(&mut tx, &old)?;
        let keys = allocate(&mut tx, "ckeep.doc_keys", docs.len())?;
        let chunk_ids =
            allocate(&mut tx, "ckeep.chunk_ids", docs.iter().map(|d| d.chunks.len()).sum())?;
        let mut documents = Vec::with_capacity(docs.len());
        let mut chunks = Vec::with_capacity(chunk_ids.len());
        let mut rows = Rows::default();
        let mut next_chunk = chunk_ids.iter().copied();
        for (d, &key) in docs.iter().zip(&keys) {
            let doc = &d.document;
            let metadata = (!doc.metadata.is_null()).then(|| doc.metadata.to_string());
            let hash = doc.content_hash().to_hex();
            documents.push((key, doc, metadata, hash, doc.text.as_bytes()));
            let ids: Vec<i64> = next_chunk.by_ref().take(d.chunks.len()).collect();
            for (c, &id) in d.chunks.iter().zip(&ids) {
                let headings = (!c.headings.is_empty())
                    .then(|| serde_json::to_string(&c.headings).expect("strings serialise"));
                let parent = c.parent.map(|p| p as i32);
                let span = (c.span.start as i64, c.span.end as i64);
                chunks.push((
                    id,
                    key,
                    c.ordinal as i32,
                    i32::from(c.depth),
                    parent,
                    c.leaf,
                    span,
                    headings,
                ));
            }
            rows.add_entries(key, &ids, &d.lexical, &d.vectors, &d.summaries);
        }
        copy(
            &mut tx,
            "ckeep.documents (key, id, title, text, metadata, source, hash)",
            &[Type::INT8, Type::TEXT, Type::TEXT, Type::BYTEA, Type::TEXT, Type::TEXT, Type::TEXT],
            documents.iter().map(|(key, doc, metadata, hash, text)| {
                [key as &(dyn ToSql + Sync), &doc.id, &doc.title, text, metadata, &doc.source, hash]
            }),
        )?;
        copy(
            &mut tx,
            "ckeep.chunks (id, doc, ordinal, depth, parent, leaf, start_byte, end_byte, headings)",
            &[
                Type::INT8,
                Type::INT8,
                Type::INT4,
                Type::INT4,
                Type::INT4,
                Type::BOOL,
                Type::INT8,
                Type::INT8,
                Type::TEXT,
            ],
            chunks.iter().map(|c| {
                [&c.0 as &(dyn ToSql + Sync), &c.1, &c.2, &c.3, &c.4, &c.5, &c.6.0, &c.6.1, &c.7]
            }),
        )?;
        let ensured = rows.write(&self.indexed, &mut tx)?;
        tx.commit()?;
        drop(client);
        self.indexed.get_mut().extend(ensured);
        Ok(existed.len())
    }
}

impl StoreWrite for PgStore {
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        let mut client = self.connection()?;
        let mut tx = client.transaction()?;
        bump_generation(&mut tx)?;
        put_manifest(&mut tx, manifest)?;
        tx.commit()?;
        Ok(())
    }

    fn write_aux(&mut self, put: &[(&str, &[u8])], remove: &[&str]) -> Result<()> {
        let mut client = self.connection()?;
        let mut tx = client.transaction()?;
        bump_generation(&mut tx)?;
        for name in remove {
            tx.execute("DELETE FROM ckeep.aux WHERE name = $1", &[name])?;
        }
        for (name, data) in put {
            tx.execute(
                "INSERT INTO ckeep.aux (name, data) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data",
                &[name, data],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn write_changes(&mut self, docs: Vec<DocumentWrite>, removed: &[String]) -> Result<usize> {
        for d in &docs {
            rules::validate(d)?;
            let doc = &d.document;
            let named = [("id", doc.id.as_str()), ("title", &doc.title), ("source", &doc.source)];
            refuse_nul(&named, &d.lexical, &d.summaries)?;
        }
        // A later write of the same id in one batch replaces the earlier one.
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            last.insert(&d.document.id, i);
        }
        let kept: Vec<&DocumentWrite> = docs
            .iter()
            .enumerate()
            .filter(|(i, d)| last[d.document.id.as_str()] == *i)
            .map(|(_, d)| d)
            .collect();
        self.change_documents(&kept, removed)
    }

    fn write_derived(&mut self, batch: Vec<DerivedWrite>) -> Result<usize> {
        for w in &batch {
            rules::validate_terms(&w.doc_id, &w.lexical)?;
            refuse_nul(&[("id", &w.doc_id)], &w.lexical, &w.summaries)?;
        }
        let mut client = self.connection()?;
        let mut tx = client.transaction()?;
        bump_generation(&mut tx)?;
        let mut rows = Rows::default();
        let mut applied = 0;
        for w in &batch {
            let Some(row) =
                tx.query_opt("SELECT key, hash FROM ckeep.documents WHERE id = $1", &[&w.doc_id])?
            else {
                continue;
            };
            let (key, hash): (i64, String) = (row.get(0), row.get(1));
            if hash != w.hash {
                continue;
            }
            let ids: Vec<i64> = tx
                .query("SELECT id FROM ckeep.chunks WHERE doc = $1 ORDER BY ordinal", &[&key])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let ordinals =
                w.lexical.iter().map(|e| e.ordinal).chain(w.vectors.iter().map(|v| v.ordinal));
            if let Some(o) = ordinals.into_iter().find(|&o| o as usize >= ids.len()) {
                return Err(Error::InvalidWrite {
                    doc: w.doc_id.clone(),
                    reason: format!(
                        "entry for chunk {o}, but the document has {} chunks",
                        ids.len()
                    ),
                });
            }
            let mut fields: Vec<&str> = w.lexical.iter().map(|e| e.field.as_str()).collect();
            fields.sort_unstable();
            fields.dedup();
            for f in fields {
                delete_lexical(&mut tx, &[key], Some(f))?;
            }
            let mut reprs: Vec<&str> = w.vectors.iter().map(|v| v.repr.as_str()).collect();
            reprs.sort_unstable();
            reprs.dedup();
            let names: Vec<&str> = w.summaries.iter().map(|(n, _)| n.as_str()).collect();
            tx.execute(
                "DELETE FROM ckeep.vectors WHERE doc = $1 AND repr = ANY($2)",
                &[&key, &reprs],
            )?;
            tx.execute(
                "DELETE FROM ckeep.summaries WHERE doc = $1 AND name = ANY($2)",
                &[&key, &names],
            )?;
            rows.add_entries(key, &ids, &w.lexical, &w.vectors, &w.summaries);
            applied += 1;
        }
        let ensured = rows.write(&self.indexed, &mut tx)?;
        tx.commit()?;
        drop(client);
        self.indexed.get_mut().extend(ensured);
        Ok(applied)
    }
}
