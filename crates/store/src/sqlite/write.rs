//! Writing to the `SQLite` store: one transaction per call, the generation bumped in each.

use ckeep_core::DocKey;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::SqliteStore;
use crate::{
    DerivedWrite, DocumentWrite, Error, LexicalEntry, Manifest, Result, StoreWrite, VectorEntry,
    rules,
};

pub(super) fn put_manifest(tx: &Connection, manifest: &Manifest) -> Result<()> {
    let json = serde_json::to_string(manifest).expect("manifest serialises");
    tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?1)", [json])?;
    Ok(())
}

/// Generations of vector changes the log keeps: a reader further behind reads all vectors
/// again, which by then costs about what applying that many changes would.
const VECTOR_LOG_GENERATIONS: i64 = 10_000;

/// Counts committed writes (see [`StoreRead::generation`]), and drops vector changes too old
/// for any reader to ask for.
fn bump_generation(tx: &Connection) -> Result<()> {
    let generation: i64 = tx.query_row(
        "INSERT INTO meta (key, value) VALUES ('generation', '1') \
         ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 \
         RETURNING CAST(value AS INTEGER)",
        [],
        |r| r.get(0),
    )?;
    let oldest = generation - VECTOR_LOG_GENERATIONS;
    if oldest > 0 {
        tx.execute("DELETE FROM vector_log WHERE generation < ?1", [oldest])?;
        tx.execute("DELETE FROM vector_gone WHERE generation < ?1", [oldest])?;
        tx.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'vector_log_since' \
             AND CAST(value AS INTEGER) < ?1",
            [oldest],
        )?;
    }
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

impl StoreWrite for SqliteStore {
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        let tx = self.conn.transaction()?;
        put_manifest(&tx, manifest)?;
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    fn write_aux(&mut self, put: &[(&str, &[u8])], remove: &[&str]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for name in remove {
            tx.execute("DELETE FROM aux WHERE name = ?1", params![name])?;
        }
        for (name, data) in put {
            tx.execute(
                "INSERT OR REPLACE INTO aux (name, data) VALUES (?1, ?2)",
                params![name, data],
            )?;
        }
        bump_generation(&tx)?;
        tx.commit()?;
        Ok(())
    }

    fn forget_removed_vectors(&mut self, repr: &str, before: u64) -> Result<()> {
        let before = i64::try_from(before).unwrap_or(i64::MAX);
        self.conn.execute(
            "DELETE FROM vector_gone WHERE repr = ?1 AND generation < ?2",
            params![repr, before],
        )?;
        Ok(())
    }

    fn write_changes(&mut self, docs: Vec<DocumentWrite>, removed: &[String]) -> Result<usize> {
        for d in &docs {
            rules::validate(d)?;
        }
        let tx = self.conn.transaction()?;
        let mut existed = 0;
        for id in removed {
            if let Some(key) = doc_key(&tx, id)? {
                delete_document(&tx, key)?;
                existed += 1;
            }
        }
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
        Ok(existed)
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
}
