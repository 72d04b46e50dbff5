//! `ckeep check` for the PostgreSQL store: every invariant the rest of the system relies on, the
//! same list as the embedded store's (the database itself guarantees its own integrity).

use ckeep_core::Span;
use postgres::Client;

use crate::rules::{ChunkRow, cap_problems, check_chunk_tree};
use crate::{CheckReport, Result};

/// Documents read per round trip: bounded memory on large stores.
const PAGE: i64 = 500;

pub(super) fn run(client: &mut Client) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let mut problems = Vec::new();
    check_chunks(client, &mut report, &mut problems)?;
    for (what, sql) in [
        ("postings of missing chunks", "SELECT count(*) FROM ckeep.postings p WHERE NOT EXISTS (SELECT 1 FROM ckeep.chunks c WHERE c.id = p.chunk)"),
        ("lexical entries of missing chunks", "SELECT count(*) FROM ckeep.lex_docs l WHERE NOT EXISTS (SELECT 1 FROM ckeep.chunks c WHERE c.id = l.chunk)"),
        ("vectors of missing chunks", "SELECT count(*) FROM ckeep.vectors v WHERE NOT EXISTS (SELECT 1 FROM ckeep.chunks c WHERE c.id = v.chunk)"),
        ("chunks of missing documents", "SELECT count(*) FROM ckeep.chunks c WHERE NOT EXISTS (SELECT 1 FROM ckeep.documents d WHERE d.key = c.doc)"),
        ("summaries of missing documents", "SELECT count(*) FROM ckeep.summaries s WHERE NOT EXISTS (SELECT 1 FROM ckeep.documents d WHERE d.key = s.doc)"),
        ("document ids stored twice", "SELECT count(*) FROM (SELECT id FROM ckeep.documents GROUP BY id HAVING count(*) > 1) x"),
        (
            "lexical fields whose counts disagree with their entries",
            "SELECT count(*) FROM ckeep.lex_fields f WHERE f.chunks != (SELECT count(*) FROM ckeep.lex_docs l WHERE l.field = f.field)
               OR f.total_len != (SELECT coalesce(sum(len), 0) FROM ckeep.lex_docs l WHERE l.field = f.field)",
        ),
        (
            "postings whose length disagrees with their chunk's entry",
            "SELECT count(*) FROM ckeep.postings p JOIN ckeep.lex_docs l ON l.field = p.field AND l.chunk = p.chunk WHERE l.len != p.len OR l.doc != p.doc",
        ),
    ] {
        let n: i64 = client.query_one(sql, &[])?.get(0);
        if n > 0 {
            problems.push(format!("{n} {what}"));
        }
    }
    report.problems = cap_problems(problems);
    Ok(report)
}

/// Reads each document's chunk tree, a page of documents at a time, and checks it.
fn check_chunks(
    client: &mut Client,
    report: &mut CheckReport,
    problems: &mut Vec<String>,
) -> Result<()> {
    let mut after = i64::MIN;
    loop {
        let docs = client.query(
            "SELECT key, id, text FROM ckeep.documents WHERE key > $1 ORDER BY key LIMIT $2",
            &[&after, &PAGE],
        )?;
        let Some(last) = docs.last() else { return Ok(()) };
        after = last.get(0);
        let keys: Vec<i64> = docs.iter().map(|r| r.get(0)).collect();
        let rows = client.query(
            "SELECT doc, ordinal, depth, parent, leaf, start_byte, end_byte FROM ckeep.chunks
             WHERE doc = ANY($1) ORDER BY doc, ordinal",
            &[&keys],
        )?;
        let mut trees: std::collections::HashMap<i64, Vec<ChunkRow>> =
            std::collections::HashMap::new();
        for r in &rows {
            trees.entry(r.get(0)).or_default().push((
                r.get::<_, i32>(1) as u32,
                r.get::<_, i32>(2) as u16,
                r.get::<_, Option<i32>>(3).map(|p| p as u32),
                r.get(4),
                Span::new(r.get::<_, i64>(5) as usize, r.get::<_, i64>(6) as usize),
            ));
        }
        for doc in &docs {
            let (key, id, bytes): (i64, String, Vec<u8>) = (doc.get(0), doc.get(1), doc.get(2));
            report.documents += 1;
            let Ok(text) = String::from_utf8(bytes) else {
                problems.push(format!("document `{id}`: its text is not UTF-8"));
                continue;
            };
            let list = trees.remove(&key).unwrap_or_default();
            report.chunks += list.len() as u64;
            check_chunk_tree(&id, &text, &list, problems);
        }
    }
}
