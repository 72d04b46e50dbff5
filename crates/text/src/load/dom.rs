//! A small read-only DOM for the HTML loader, built by html5ever's spec-compliant tree builder
//! (so a page gets the tree a browser would build: implied `<tbody>`, misnested tags fixed),
//! kept as an arena of nodes addressed by index.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use html5ever::interface::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{Attribute, QualName, parse_document};

/// Deepest element nesting a page may have. Browsers stop nesting near here too (Blink at
/// 512); the readers walk a page by recursion and name each block by its path from the root,
/// so a page 50,000 deep (1 KB zipped in an EPUB) would cost the stack and gigabytes of paths.
pub(crate) const MAX_DEPTH: usize = 256;

/// The page is read in pieces this large, so a page that is too deep stops early. Small,
/// because the tree builder's work per tag grows with the depth: 16 KiB of `<div>`s reach about
/// 3,000 deep before the check, and reading the fuzz seeds' two EPUBs took 0.35 s unoptimised
/// against 0.02 s with 2 KiB pieces (2-core AMD EPYC).
const PIECE_BYTES: usize = 2 * 1024;

/// A parsed page; node 0 is the document.
#[derive(Debug)]
pub(crate) struct Dom {
    nodes: Vec<Node>,
    /// Per node: how many earlier siblings share its element name, and how many share it in
    /// all (itself included), counted once for the whole page so a path step costs nothing.
    same_named: Vec<(usize, usize)>,
}

#[derive(Debug)]
struct Node {
    parent: Option<usize>,
    children: Vec<usize>,
    kind: Kind,
    /// Levels below the document when the node was placed (text nodes count; the tree
    /// builder may move a node later).
    depth: usize,
}

/// What a node is; comments, processing instructions and template contents are `Other`.
#[derive(Debug)]
pub(crate) enum Kind {
    Document,
    Element(Element),
    Text(String),
    Other,
}

/// An element: its local name (lower case, as the parser gives HTML names) and attributes.
#[derive(Debug)]
pub(crate) struct Element {
    pub name: String,
    attrs: Vec<(String, String)>,
}

impl Element {
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub(crate) fn classes(&self) -> impl Iterator<Item = &str> {
        self.attr("class").unwrap_or_default().split_ascii_whitespace()
    }
}

impl Dom {
    /// Parses `html` as a browser would; a page nested deeper than [`MAX_DEPTH`] is an error,
    /// found as soon as its reading passes that depth.
    pub(crate) fn parse(html: &str) -> Result<Dom, String> {
        let too_deep = || format!("its elements nest more than {MAX_DEPTH} deep");
        let mut parser = parse_document(Sink::default(), html5ever::ParseOpts::default());
        let mut rest = html;
        while !rest.is_empty() {
            let mut end = rest.len().min(PIECE_BYTES);
            while !rest.is_char_boundary(end) {
                end += 1;
            }
            parser.process(StrTendril::from_slice(&rest[..end]));
            rest = &rest[end..];
            if parser.tokenizer.sink.sink.deepest.get() > MAX_DEPTH {
                return Err(too_deep());
            }
        }
        let mut dom = parser.finish();
        // The tree builder moves nodes (misnested tags); the depth that counts is the final one.
        if dom.depth() > MAX_DEPTH {
            return Err(too_deep());
        }
        dom.same_named = dom.count_same_named();
        Ok(dom)
    }

    /// The deepest node's depth, by an explicit stack.
    fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(Self::ROOT, 0)];
        while let Some((id, depth)) = stack.pop() {
            deepest = deepest.max(depth);
            stack.extend(self.nodes[id].children.iter().map(|&c| (c, depth + 1)));
        }
        deepest
    }

    /// [`Dom::same_named`] for every node, in one pass over each node's children.
    fn count_same_named(&self) -> Vec<(usize, usize)> {
        let mut counts = vec![(0, 0); self.nodes.len()];
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for node in &self.nodes {
            seen.clear();
            for &child in &node.children {
                if let Some(e) = self.element(child) {
                    let n = seen.entry(e.name.as_str()).or_default();
                    counts[child].0 = *n;
                    *n += 1;
                }
            }
            for &child in &node.children {
                if let Some(e) = self.element(child) {
                    counts[child].1 = seen[e.name.as_str()];
                }
            }
        }
        counts
    }

    pub(crate) const ROOT: usize = 0;

    pub(crate) fn kind(&self, id: usize) -> &Kind {
        &self.nodes[id].kind
    }

    pub(crate) fn element(&self, id: usize) -> Option<&Element> {
        match &self.nodes[id].kind {
            Kind::Element(e) => Some(e),
            Kind::Document | Kind::Text(_) | Kind::Other => None,
        }
    }

    /// Whether `id` is an element named `name`.
    pub(crate) fn is(&self, id: usize, name: &str) -> bool {
        self.element(id).is_some_and(|e| e.name == name)
    }

    pub(crate) fn children(&self, id: usize) -> &[usize] {
        &self.nodes[id].children
    }

    /// `id` and everything below it, in document order.
    pub(crate) fn descendants(&self, id: usize) -> impl Iterator<Item = usize> + '_ {
        let mut stack = vec![id];
        std::iter::from_fn(move || {
            let next = stack.pop()?;
            stack.extend(self.nodes[next].children.iter().rev());
            Some(next)
        })
    }

    /// The text of every text node below `id`, as it is.
    pub(crate) fn raw_text(&self, id: usize) -> String {
        self.descendants(id)
            .filter_map(|n| match self.kind(n) {
                Kind::Text(t) => Some(t.as_str()),
                Kind::Document | Kind::Element(_) | Kind::Other => None,
            })
            .collect()
    }

    /// The nodes above `id`, nearest first.
    pub(crate) fn ancestors(&self, id: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.nodes[id].parent, |&p| self.nodes[p].parent)
    }

    /// The elements before and after `id` among its siblings that share its name.
    pub(crate) fn same_named_siblings(&self, id: usize) -> (usize, usize) {
        let (before, all) = self.same_named[id];
        (before, all.saturating_sub(before + 1))
    }
}

/// html5ever's tree builder writes through this; a handle carries its element's name so
/// `elem_name` can lend it without borrowing the arena.
#[derive(Debug, Default)]
struct Sink {
    nodes: RefCell<Vec<Node>>,
    /// The deepest a node was placed, so a parse can stop once the page is too deep.
    deepest: std::cell::Cell<usize>,
}

#[derive(Debug, Clone)]
struct Handle {
    id: usize,
    name: Option<Rc<QualName>>,
}

impl Sink {
    fn add(&self, kind: Kind) -> usize {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(Node { parent: None, children: Vec::new(), kind, depth: 0 });
        nodes.len() - 1
    }

    /// Puts `child` under `parent` at `index` (the end when `None`); text next to text merges.
    fn insert(&self, parent: usize, index: Option<usize>, child: NodeOrText<Handle>) {
        let at = index.unwrap_or_else(|| self.nodes.borrow()[parent].children.len());
        let id = match child {
            NodeOrText::AppendText(text) => {
                let mut nodes = self.nodes.borrow_mut();
                if let Some(&before) = at.checked_sub(1).and_then(|i| nodes[parent].children.get(i))
                    && let Kind::Text(t) = &mut nodes[before].kind
                {
                    t.push_str(&text);
                    return;
                }
                drop(nodes);
                self.add(Kind::Text(text.to_string()))
            }
            NodeOrText::AppendNode(handle) => handle.id,
        };
        let mut nodes = self.nodes.borrow_mut();
        nodes[id].parent = Some(parent);
        nodes[id].depth = nodes[parent].depth + 1;
        self.deepest.set(self.deepest.get().max(nodes[id].depth));
        nodes[parent].children.insert(at, id);
    }
}

impl TreeSink for Sink {
    type Handle = Handle;
    type Output = Dom;
    type ElemName<'a> = &'a QualName;

    fn finish(self) -> Dom {
        Dom { nodes: self.nodes.into_inner(), same_named: Vec::new() }
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        if self.nodes.borrow().is_empty() {
            self.add(Kind::Document);
        }
        Handle { id: Dom::ROOT, name: None }
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> &'a QualName {
        // The tree builder asks only about elements it created, which carry their names.
        target.name.as_deref().expect("the tree builder names only elements")
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, _: ElementFlags) -> Handle {
        let attrs = attrs.iter().map(|a| (a.name.local.to_string(), a.value.to_string())).collect();
        let element = Element { name: name.local.to_string(), attrs };
        Handle { id: self.add(Kind::Element(element)), name: Some(Rc::new(name)) }
    }

    fn create_comment(&self, _text: StrTendril) -> Handle {
        Handle { id: self.add(Kind::Other), name: None }
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> Handle {
        Handle { id: self.add(Kind::Other), name: None }
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.insert(parent.id, None, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        if self.nodes.borrow()[element.id].parent.is_some() {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {}

    fn get_template_contents(&self, _target: &Handle) -> Handle {
        // Template contents are never read: a detached node holds them.
        Handle { id: self.add(Kind::Other), name: None }
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        x.id == y.id
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        let parent = self.nodes.borrow()[sibling.id].parent;
        if let Some(parent) = parent {
            let at = self.nodes.borrow()[parent].children.iter().position(|&c| c == sibling.id);
            self.insert(parent, at, new_node);
        }
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        if let Kind::Element(e) = &mut self.nodes.borrow_mut()[target.id].kind {
            for a in attrs {
                let name = a.name.local.to_string();
                if e.attr(&name).is_none() {
                    e.attrs.push((name, a.value.to_string()));
                }
            }
        }
    }

    fn remove_from_parent(&self, target: &Handle) {
        let mut nodes = self.nodes.borrow_mut();
        if let Some(parent) = nodes[target.id].parent.take() {
            nodes[parent].children.retain(|&c| c != target.id);
        }
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        let mut nodes = self.nodes.borrow_mut();
        let children = std::mem::take(&mut nodes[node.id].children);
        for &c in &children {
            nodes[c].parent = Some(new_parent.id);
        }
        nodes[new_parent.id].children.extend(children);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_the_one_a_browser_builds() {
        let dom = Dom::parse("<p>a<b>b<p>c</b>d<table><tr><td>x</td></tr></table>").unwrap();
        let names: Vec<&str> = dom
            .descendants(Dom::ROOT)
            .filter_map(|n| dom.element(n).map(|e| e.name.as_str()))
            .collect();
        assert_eq!(
            names,
            ["html", "head", "body", "p", "b", "p", "b", "table", "tbody", "tr", "td"]
        );
        assert_eq!(dom.raw_text(Dom::ROOT), "abcdx");
    }
}

#[cfg(test)]
mod bounds {
    use super::*;

    #[test]
    fn a_page_too_deep_is_refused_early_and_one_at_the_bound_is_read() {
        let deep = |n: usize| format!("{}x{}", "<div>".repeat(n), "</div>".repeat(n));
        let err = Dom::parse(&deep(50_000)).unwrap_err();
        assert!(err.contains("more than 256 deep"), "{err}");
        // html, body, the divs and the text: 256 levels below the document in all.
        let dom = Dom::parse(&deep(MAX_DEPTH - 3)).unwrap();
        assert_eq!(dom.depth(), MAX_DEPTH);
        assert!(Dom::parse(&deep(MAX_DEPTH - 2)).is_err());
    }

    #[test]
    fn positions_among_same_named_siblings_are_counted_once() {
        let dom = Dom::parse("<body><p>a</p><div>b</div><p>c</p><p>d</p></body>").unwrap();
        let ps: Vec<usize> = dom.descendants(Dom::ROOT).filter(|&n| dom.is(n, "p")).collect();
        let at: Vec<_> = ps.iter().map(|&p| dom.same_named_siblings(p)).collect();
        assert_eq!(at, [(0, 2), (1, 1), (2, 0)]);
        let div = dom.descendants(Dom::ROOT).find(|&n| dom.is(n, "div")).unwrap();
        assert_eq!(dom.same_named_siblings(div), (0, 0));
    }
}
