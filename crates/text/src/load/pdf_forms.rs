//! What a PDF's pages draw, walked before pdf-extract reads them. pdf-extract follows each
//! `Do` (draw an external object) into that object's own content by recursion, and a page's inherited
//! resources up its `Parent` chain likewise, without a bound: a 799-byte form that draws itself
//! overflows the thread's stack, which aborts the process (no `catch_unwind` can stop that).
//! This walk resolves the same names the same way, with an explicit stack, and refuses a file
//! whose drawing loops, nests deeper than [`MAX_FORM_DEPTH`] or draws more than
//! [`MAX_FORM_DRAWS`] times in all (nested forms that each draw the next twice double the work
//! per level).

use std::collections::{HashMap, HashSet};

use pdf_extract::content::Content;
use pdf_extract::{Dictionary, Document, Object, ObjectId, Stream};

/// Deepest nesting of forms drawing forms; real documents nest a few levels.
pub(crate) const MAX_FORM_DEPTH: usize = 32;

/// Most external objects (forms, images) drawn in a whole document, nested draws included: each is a content stream
/// pdf-extract reads again.
pub(crate) const MAX_FORM_DRAWS: usize = 100_000;

/// Longest `Parent` chain from a page to the root of the page tree.
const MAX_PAGE_TREE_DEPTH: usize = 64;

/// Refuses `doc` when reading it would recurse without a bound (see the module docs).
pub(crate) fn check(doc: &Document) -> Result<(), String> {
    let mut walk = Walk { doc, draws: 0, invoked: HashMap::new() };
    for (number, page_id) in doc.get_pages() {
        let Ok(page) = doc.get_dictionary(page_id) else { continue };
        let resources = walk.page_resources(page_id, page, number)?;
        let content = doc.get_page_content(page_id).unwrap_or_default();
        walk.page(&content, resources, number)?;
    }
    Ok(())
}

struct Walk<'d> {
    doc: &'d Document,
    draws: usize,
    /// The names each stream draws (`/Name Do`), read once per stream.
    invoked: HashMap<ObjectId, Vec<Vec<u8>>>,
}

/// A stream being drawn: the resources its names resolve in, what it draws, and how far it is.
struct Frame<'d> {
    id: Option<ObjectId>,
    resources: Option<&'d Dictionary>,
    names: Vec<Vec<u8>>,
    next: usize,
}

impl<'d> Walk<'d> {
    /// The page's resources as pdf-extract finds them: its own, else the nearest ancestor's.
    /// Its whole `Parent` chain is checked first: pdf-extract climbs it for any inherited entry
    /// a page lacks (`MediaBox` too), and a page that is its own parent sent it round for ever.
    fn page_resources(
        &self,
        page_id: ObjectId,
        page: &'d Dictionary,
        number: u32,
    ) -> Result<Option<&'d Dictionary>, String> {
        let mut chain = vec![page];
        let mut seen = HashSet::from([page_id]);
        while let Ok(parent) = chain[chain.len() - 1].get(b"Parent").and_then(Object::as_reference)
        {
            if !seen.insert(parent) {
                return Err(format!("page {number}'s page tree loops (object {parent:?})"));
            }
            if chain.len() > MAX_PAGE_TREE_DEPTH {
                return Err(format!(
                    "page {number} is more than {MAX_PAGE_TREE_DEPTH} levels down its page tree"
                ));
            }
            let Ok(next) = self.doc.get_dictionary(parent) else { break };
            chain.push(next);
        }
        Ok(chain.into_iter().find_map(|node| self.dict_at(node, b"Resources")))
    }

    /// Walks everything a page's content draws.
    fn page(
        &mut self,
        content: &[u8],
        resources: Option<&'d Dictionary>,
        number: u32,
    ) -> Result<(), String> {
        let mut stack = vec![Frame { id: None, resources, names: invoked(content), next: 0 }];
        while let Some(top) = stack.last_mut() {
            let Some(name) = top.names.get(top.next).cloned() else {
                stack.pop();
                continue;
            };
            top.next += 1;
            let resources = top.resources;
            let Some((id, form)) = self.xobject(resources, &name) else { continue };
            self.draws += 1;
            if self.draws > MAX_FORM_DRAWS {
                return Err(format!(
                    "its pages draw more than {MAX_FORM_DRAWS} forms and images in all (forms \
                     that draw forms)"
                ));
            }
            if id.is_some() && stack.iter().any(|f| f.id == id) {
                return Err(format!(
                    "page {number} draws a form that draws itself (object {:?})",
                    id.unwrap_or_default()
                ));
            }
            if stack.len() >= MAX_FORM_DEPTH {
                return Err(format!("page {number} nests forms more than {MAX_FORM_DEPTH} deep"));
            }
            let names = match id {
                Some(id) => {
                    self.invoked.entry(id).or_insert_with(|| invoked(&contents(form))).clone()
                }
                None => invoked(&contents(form)),
            };
            let own = self.dict_at(&form.dict, b"Resources").or(resources);
            stack.push(Frame { id, resources: own, names, next: 0 });
        }
        Ok(())
    }

    /// The external object `name` in `resources`, with its object id when it is a reference.
    fn xobject(
        &self,
        resources: Option<&'d Dictionary>,
        name: &[u8],
    ) -> Option<(Option<ObjectId>, &'d Stream)> {
        let xobjects = self.dict_at(resources?, b"XObject")?;
        let entry = xobjects.get(name).ok()?;
        match entry.as_reference() {
            Ok(id) => self.doc.get_object(id).ok()?.as_stream().ok().map(|s| (Some(id), s)),
            Err(_) => entry.as_stream().ok().map(|s| (None, s)),
        }
    }

    /// The dictionary at `key` of `dict`, through one reference.
    fn dict_at(&self, dict: &'d Dictionary, key: &[u8]) -> Option<&'d Dictionary> {
        let value = dict.get(key).ok()?;
        match value.as_reference() {
            Ok(id) => self.doc.get_dictionary(id).ok(),
            Err(_) => value.as_dict().ok(),
        }
    }
}

/// A stream's bytes as pdf-extract reads them: decompressed when it can be.
fn contents(stream: &Stream) -> Vec<u8> {
    stream.decompressed_content().unwrap_or_else(|_| stream.content.clone())
}

/// The names a content stream draws with `Do`, in order (none when it does not parse).
fn invoked(content: &[u8]) -> Vec<Vec<u8>> {
    let Ok(content) = Content::decode(content) else { return Vec::new() };
    content
        .operations
        .iter()
        .filter(|op| op.operator == "Do")
        .filter_map(|op| op.operands.first()?.as_name().ok().map(<[u8]>::to_vec))
        .collect()
}
