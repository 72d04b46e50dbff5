//! What every backend enforces alike: the checks on a write before it touches the database, and
//! the invariants `check` verifies on one document's chunk tree.

use std::collections::HashMap;

use ckeep_core::Span;

use crate::{DocumentWrite, Error, LexicalEntry, Result};

/// Refuses a write that would break an invariant (a bug in the caller): ordinals out of order,
/// spans outside the text or inside a character, parents after their children, entries for
/// chunks the document does not have, unusable terms.
pub(crate) fn validate(write: &DocumentWrite) -> Result<()> {
    let doc = &write.document;
    let bad = |reason: String| Err(Error::InvalidWrite { doc: doc.id.clone(), reason });
    for (i, c) in write.chunks.iter().enumerate() {
        if c.ordinal as usize != i {
            return bad(format!("chunk {i} has ordinal {}", c.ordinal));
        }
        if !c.span.is_valid_in(&doc.text) {
            return bad(format!(
                "chunk {i} span {} is not a valid span of a {}-byte text",
                c.span,
                doc.text.len()
            ));
        }
        if c.parent.is_some_and(|p| p >= c.ordinal) {
            return bad(format!(
                "chunk {i} has parent {:?} that does not come before it",
                c.parent
            ));
        }
    }
    let n = write.chunks.len() as u32;
    let ordinals =
        write.lexical.iter().map(|e| e.ordinal).chain(write.vectors.iter().map(|v| v.ordinal));
    if let Some(o) = ordinals.into_iter().find(|o| *o >= n) {
        return bad(format!("index entry for chunk {o}, but the document has {n} chunks"));
    }
    validate_terms(&doc.id, &write.lexical)
}

/// Terms are stored space-separated in the forward entries: they must be non-empty and hold no
/// space.
pub(crate) fn validate_terms(doc: &str, lexical: &[LexicalEntry]) -> Result<()> {
    if lexical.iter().any(|e| e.terms.iter().any(|(t, _)| t.is_empty() || t.contains(' '))) {
        return Err(Error::InvalidWrite {
            doc: doc.to_string(),
            reason: "lexical terms must be non-empty and contain no space".into(),
        });
    }
    Ok(())
}

/// One stored chunk as `check` sees it: ordinal, depth, parent ordinal, leaf flag, span.
pub(crate) type ChunkRow = (u32, u16, Option<u32>, bool, Span);

/// Spans inside the document and on char boundaries; ordinals contiguous; parents present,
/// earlier, one level up and containing their children; leaf flags consistent. Problems are
/// appended in words.
pub(crate) fn check_chunk_tree(
    id: &str,
    text: &str,
    list: &[ChunkRow],
    problems: &mut Vec<String>,
) {
    let mut has_children: HashMap<u32, bool> = HashMap::new();
    for (i, (ordinal, depth, parent, _, span)) in list.iter().enumerate() {
        let at = format!("document `{id}` chunk {ordinal}");
        if *ordinal as usize != i {
            problems.push(format!("{at}: ordinals are not contiguous (expected {i})"));
        }
        if !span.is_valid_in(text) {
            problems.push(format!(
                "{at}: span {span} is outside the {}-byte text or splits a character",
                text.len()
            ));
        }
        match parent {
            None if *depth != 0 => {
                problems.push(format!("{at}: depth {depth} without a parent"));
            }
            None => {}
            Some(p) => match list.get(*p as usize) {
                Some((_, pdepth, _, _, pspan)) if *p < *ordinal => {
                    has_children.insert(*p, true);
                    if pdepth + 1 != *depth {
                        problems
                            .push(format!("{at}: depth {depth} under a parent at depth {pdepth}"));
                    }
                    if !pspan.contains(*span) {
                        problems
                            .push(format!("{at}: span {span} is not inside its parent's {pspan}"));
                    }
                }
                _ => problems.push(format!("{at}: parent {p} is missing")),
            },
        }
    }
    for (ordinal, _, _, leaf, _) in list {
        if *leaf == has_children.contains_key(ordinal) {
            problems.push(format!(
                "document `{id}` chunk {ordinal}: leaf flag is {leaf} but it {} children",
                if *leaf { "has" } else { "has no" }
            ));
        }
    }
}

/// At most this many problems are listed; the count of the rest is reported.
const MAX_LISTED: usize = 50;

/// Caps a problem list for the report.
pub(crate) fn cap_problems(mut problems: Vec<String>) -> Vec<String> {
    let listed = problems.len().min(MAX_LISTED);
    if problems.len() > listed {
        let rest = problems.len() - listed;
        problems.truncate(listed);
        problems.push(format!("… and {rest} more"));
    }
    problems
}
