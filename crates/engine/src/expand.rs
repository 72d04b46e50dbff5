//! Context expansion, applied after ranking: each hit becomes the context a reader needs.
//!
//! - `window:W` — sentence-window retrieval: the hit plus W sentences on each side (sentences of
//!   the stored text, so it works with any chunker; with `sentences` chunks it is exactly
//!   LlamaIndex's sentence window);
//! - `parent` — the hit's parent chunk; `doc` — the whole document;
//! - `merge:R` — auto-merging: when more than a fraction R of a parent's children are among the
//!   hits, they are replaced by the parent, repeatedly up the tree. **The parent keeps the best
//!   score of its retrieved children** (LlamaIndex and Haystack drop or blur it), so merged and
//!   unmerged results stay comparable.
//!
//! Expansion never crosses a document boundary; results of one document whose contexts overlap
//! are merged into the better-ranked one, spans in document order.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use ckeep_core::{ChunkHit, DocKey, Span};
use ckeep_store::{StoreRead, StoredChunk};

use crate::error::Result;

/// How a hit grows into its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expansion {
    /// The hit's own span.
    #[default]
    None,
    /// W sentences on each side.
    Window(u16),
    /// The parent chunk.
    Parent,
    /// The whole document.
    Doc,
    /// Auto-merging with threshold R (thousandths).
    Merge(u16),
}

/// A result before its text is read: the chunks behind it and the spans it returns.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub doc: DocKey,
    pub score: f32,
    /// Returned spans, sorted, disjoint.
    pub spans: Vec<Span>,
    /// The chunks that produced it, best first, with their own spans.
    pub chunks: Vec<(ChunkHit, Span)>,
    /// Heading path of the first chunk.
    pub headings: String,
    /// The tree node (ordinal) the context stands for, once auto-merging made it a parent.
    pub node: Option<u32>,
}

/// A document's chunk tree and text, read once per query.
struct DocTree {
    chunks: Vec<StoredChunk>,
    text_len: usize,
    sentences: Vec<Span>,
    /// The deepest chunk of each span (children follow parents in pre-order).
    by_span: HashMap<Span, u32>,
    /// Number of children of each chunk.
    children: Vec<u32>,
}

impl DocTree {
    fn new(chunks: Vec<StoredChunk>, text_len: usize, sentences: Vec<Span>) -> Self {
        let mut children = vec![0u32; chunks.len()];
        let mut by_span = HashMap::with_capacity(chunks.len());
        for (i, c) in chunks.iter().enumerate() {
            by_span.insert(c.chunk.span, i as u32);
            if let Some(p) = c.chunk.parent.and_then(|p| children.get_mut(p as usize)) {
                *p += 1;
            }
        }
        Self { chunks, text_len, sentences, by_span, children }
    }
}

/// Applies `expansion` to ranked contexts and merges overlapping ones, reading the documents'
/// chunk trees from `store`.
pub(crate) fn expand<S: StoreRead>(
    store: &S,
    contexts: Vec<Context>,
    expansion: Expansion,
) -> Result<Vec<Context>> {
    if expansion == Expansion::None {
        return Ok(contexts);
    }
    let mut trees: HashMap<DocKey, DocTree> = HashMap::new();
    for c in &contexts {
        if let std::collections::hash_map::Entry::Vacant(slot) = trees.entry(c.doc) {
            slot.insert(doc_tree(store, c.doc, expansion)?);
        }
    }
    let contexts = match expansion {
        Expansion::Merge(r) => merge_up(contexts, &trees, f32::from(r) / 1000.0),
        Expansion::None | Expansion::Window(_) | Expansion::Parent | Expansion::Doc => contexts,
    };
    let grown = contexts.into_iter().map(|mut c| {
        let tree = &trees[&c.doc];
        c.spans = union(c.spans.iter().map(|s| grow(*s, tree, expansion)).collect());
        c
    });
    Ok(merge_overlapping(grown.collect()))
}

/// The chunk tree of document `key`, with its sentences when `expansion` grows by them.
fn doc_tree<S: StoreRead>(store: &S, key: DocKey, expansion: Expansion) -> Result<DocTree> {
    let id = store.doc_ids_by_key(&[key])?.pop().unwrap_or_default();
    let doc = store.document(&id)?;
    let text = doc.map(|d| d.document.text).unwrap_or_default();
    let sentences = match expansion {
        Expansion::Window(_) => ckeep_text::chunk::sentence_spans(&text),
        Expansion::None | Expansion::Parent | Expansion::Doc | Expansion::Merge(_) => Vec::new(),
    };
    Ok(DocTree::new(store.chunks_of(&id)?, text.len(), sentences))
}

/// The context of one span.
fn grow(span: Span, tree: &DocTree, expansion: Expansion) -> Span {
    match expansion {
        Expansion::None | Expansion::Merge(_) => span,
        Expansion::Doc => Span::new(0, tree.text_len),
        Expansion::Parent => node_of(tree, span)
            .and_then(|n| tree.chunks[n as usize].chunk.parent)
            .and_then(|p| tree.chunks.get(p as usize))
            .map_or(span, |p| p.chunk.span),
        Expansion::Window(w) => {
            let s = &tree.sentences;
            let first = s.partition_point(|x| x.end <= span.start);
            let last = s.partition_point(|x| x.start < span.end);
            if first >= s.len() || last == 0 {
                return span;
            }
            let lo = first.saturating_sub(usize::from(w));
            let hi = (last - 1 + usize::from(w)).min(s.len() - 1);
            Span::new(s[lo].start.min(span.start), s[hi].end.max(span.end))
        }
    }
}

/// The deepest chunk with exactly this span.
fn node_of(tree: &DocTree, span: Span) -> Option<u32> {
    tree.by_span.get(&span).copied()
}

/// Auto-merging: hits whose parent has more than `ratio` of its children among the hits are
/// replaced by the parent (scored by its best retrieved child), level by level until nothing
/// changes. Parents are visited in (document, ordinal) order, so the outcome is deterministic.
fn merge_up(contexts: Vec<Context>, trees: &HashMap<DocKey, DocTree>, ratio: f32) -> Vec<Context> {
    let mut items = contexts;
    loop {
        // (doc, parent ordinal) → indices of items that are its children.
        let mut by_parent: std::collections::BTreeMap<(DocKey, u32), Vec<usize>> =
            std::collections::BTreeMap::new();
        for (i, c) in items.iter().enumerate() {
            let tree = &trees[&c.doc];
            let node = match (c.node, c.spans.as_slice()) {
                (Some(n), _) => Some(n),
                (None, [span]) => node_of(tree, *span),
                (None, _) => None,
            };
            if let Some(parent) = node.and_then(|n| tree.chunks[n as usize].chunk.parent) {
                by_parent.entry((c.doc, parent)).or_default().push(i);
            }
        }
        let merges: Vec<((DocKey, u32), Vec<usize>)> = by_parent
            .into_iter()
            .filter(|((doc, parent), kids)| {
                let total = trees[doc].children[*parent as usize];
                total > 0 && kids.len() as f32 > ratio * total as f32
            })
            .collect();
        if merges.is_empty() {
            return items;
        }
        let mut replaced = vec![false; items.len()];
        let mut next = Vec::with_capacity(items.len());
        for ((doc, parent), kids) in merges {
            let parent_chunk = &trees[&doc].chunks[parent as usize].chunk;
            let mut chunks: Vec<(ChunkHit, Span)> =
                kids.iter().flat_map(|&i| items[i].chunks.clone()).collect();
            chunks.sort_by(|a, b| ckeep_core::rank_order(&a.0, &b.0));
            next.push(Context {
                doc,
                score: kids.iter().map(|&i| items[i].score).fold(f32::NEG_INFINITY, f32::max),
                spans: vec![parent_chunk.span],
                chunks,
                headings: parent_chunk.heading_path(),
                node: Some(parent),
            });
            for i in kids {
                replaced[i] = true;
            }
        }
        next.extend(items.into_iter().zip(replaced).filter(|(_, r)| !r).map(|(c, _)| c));
        next.sort_by(|a, b| b.score.total_cmp(&a.score));
        items = next;
    }
}

/// Sorted, overlapping or touching spans joined.
fn union(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

/// Folds each context into an earlier (better-ranked) one of the same document whose spans
/// overlap it.
fn merge_overlapping(contexts: Vec<Context>) -> Vec<Context> {
    let mut out: Vec<Context> = Vec::with_capacity(contexts.len());
    for c in contexts {
        let overlaps = |o: &Context| {
            o.doc == c.doc
                && o.spans
                    .iter()
                    .any(|a| c.spans.iter().any(|b| a.start < b.end && b.start < a.end))
        };
        match out.iter_mut().find(|o| overlaps(o)) {
            Some(o) => {
                o.spans = union(o.spans.iter().chain(&c.spans).copied().collect());
                o.chunks.extend(c.chunks);
                o.score = o.score.max(c.score);
            }
            None => out.push(c),
        }
    }
    out
}

impl fmt::Display for Expansion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expansion::None => f.write_str("none"),
            Expansion::Window(w) => write!(f, "window:{w}"),
            Expansion::Parent => f.write_str("parent"),
            Expansion::Doc => f.write_str("doc"),
            Expansion::Merge(r) => write!(f, "merge:{}", f64::from(*r) / 1000.0),
        }
    }
}

impl FromStr for Expansion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "unknown expansion `{s}`; expected none, window:W, parent, doc or merge:R (0 <= R < 1)"
            )
        };
        match s.trim().split_once(':') {
            None => match s.trim() {
                "none" => Ok(Expansion::None),
                "parent" => Ok(Expansion::Parent),
                "doc" => Ok(Expansion::Doc),
                "window" => Ok(Expansion::Window(1)),
                "merge" => Ok(Expansion::Merge(500)),
                _ => Err(bad()),
            },
            Some(("window", w)) => w.trim().parse().map(Expansion::Window).map_err(|_| bad()),
            Some(("merge", r)) => r
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..1.0).contains(r))
                .map(|r| Expansion::Merge((r * 1000.0).round() as u16))
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_joins_overlaps_and_touching_spans() {
        let got =
            union(vec![Span::new(10, 20), Span::new(0, 5), Span::new(5, 8), Span::new(15, 30)]);
        assert_eq!(got, [Span::new(0, 8), Span::new(10, 30)]);
    }

    #[test]
    fn window_grows_by_whole_sentences() {
        let text = "One. Two two. Three three three. Four. Five.";
        let tree = DocTree::new(Vec::new(), text.len(), ckeep_text::chunk::sentence_spans(text));
        let three = Span::new(14, 32);
        assert_eq!(
            grow(three, &tree, Expansion::Window(1)).slice(text),
            "Two two. Three three three. Four."
        );
        assert_eq!(grow(three, &tree, Expansion::Window(9)).slice(text), text);
        assert_eq!(grow(three, &tree, Expansion::Window(0)).slice(text), "Three three three.");
    }

    #[test]
    fn parses_and_displays() {
        for (s, want) in [
            ("window:2", "window:2"),
            ("merge:0.5", "merge:0.5"),
            ("parent", "parent"),
            ("doc", "doc"),
        ] {
            assert_eq!(s.parse::<Expansion>().unwrap().to_string(), want);
        }
        assert!("merge:1".parse::<Expansion>().is_err());
        assert!("window:x".parse::<Expansion>().is_err());
    }
}
