//! `ckeep check` for the `SQLite` store: `SQLite`'s own integrity check, then every invariant the
//! rest of the system relies on, each problem reported in words.

use ckeep_core::Span;
use rusqlite::Connection;

use crate::rules::{ChunkRow, cap_problems, check_chunk_tree};
use crate::{CheckReport, Result};

pub(super) fn run(conn: &Connection) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let mut problems = Vec::new();
    let integrity: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if integrity != "ok" {
        problems.push(format!("SQLite integrity check: {integrity}"));
    }
    check_chunks(conn, &mut report, &mut problems)?;
    for (what, sql) in [
        ("postings of missing chunks", "SELECT count(*) FROM postings p LEFT JOIN chunks c ON c.id = p.chunk WHERE c.id IS NULL"),
        ("lexical entries of missing chunks", "SELECT count(*) FROM lex_docs l LEFT JOIN chunks c ON c.id = l.chunk WHERE c.id IS NULL"),
        ("vectors of missing chunks", "SELECT count(*) FROM vectors v LEFT JOIN chunks c ON c.id = v.chunk WHERE c.id IS NULL"),
        ("summaries of missing documents", "SELECT count(*) FROM summaries s LEFT JOIN documents d ON d.key = s.doc WHERE d.key IS NULL"),
        (
            "lexical fields whose counts disagree with their entries",
            "SELECT count(*) FROM lex_fields f WHERE f.chunks != (SELECT count(*) FROM lex_docs l WHERE l.field = f.field)
               OR f.total_len != (SELECT coalesce(sum(len), 0) FROM lex_docs l WHERE l.field = f.field)",
        ),
        (
            "postings whose length disagrees with their chunk's entry",
            "SELECT count(*) FROM postings p JOIN lex_docs l ON l.field = p.field AND l.chunk = p.chunk WHERE l.len != p.len OR l.doc != p.doc",
        ),
    ] {
        let n: i64 = conn.query_row(sql, [], |r| r.get(0))?;
        if n > 0 {
            problems.push(format!("{n} {what}"));
        }
    }
    report.problems = cap_problems(problems);
    Ok(report)
}

/// Reads each document's chunk tree and checks it.
fn check_chunks(
    conn: &Connection,
    report: &mut CheckReport,
    problems: &mut Vec<String>,
) -> Result<()> {
    let mut docs = conn.prepare("SELECT key, id, text FROM documents ORDER BY key")?;
    let mut chunks = conn.prepare_cached("SELECT ordinal, depth, parent, leaf, start, end FROM chunks WHERE doc = ?1 ORDER BY ordinal")?;
    let mut rows = docs.query([])?;
    while let Some(row) = rows.next()? {
        let (key, id, text): (i64, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        report.documents += 1;
        let list: Vec<ChunkRow> = chunks
            .query_map([key], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    Span::new(r.get::<_, i64>(4)? as usize, r.get::<_, i64>(5)? as usize),
                ))
            })?
            .collect::<Result<_, _>>()?;
        report.chunks += list.len() as u64;
        check_chunk_tree(&id, &text, &list, problems);
    }
    Ok(())
}
