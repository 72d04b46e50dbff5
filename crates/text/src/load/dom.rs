//! A small read-only DOM for the HTML loader, built by html5ever's spec-compliant tree builder
//! (so a page gets the tree a browser would build: implied `<tbody>`, misnested tags fixed),
//! kept as an arena of nodes addressed by index.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use html5ever::interface::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{Attribute, QualName, parse_document};

/// A parsed page; node 0 is the document.
#[derive(Debug)]
pub(crate) struct Dom {
    nodes: Vec<Node>,
}

#[derive(Debug)]
struct Node {
    parent: Option<usize>,
    children: Vec<usize>,
    kind: Kind,
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
    /// Parses `html` as a browser would.
    pub(crate) fn parse(html: &str) -> Dom {
        parse_document(Sink::default(), html5ever::ParseOpts::default()).one(html)
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

    pub(crate) fn parent(&self, id: usize) -> Option<usize> {
        self.nodes[id].parent
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
        let (Some(parent), Some(e)) = (self.parent(id), self.element(id)) else { return (0, 0) };
        let siblings = self.children(parent);
        let at = siblings.iter().position(|&s| s == id).unwrap_or_default();
        let same = |s: &&usize| self.is(**s, &e.name);
        (siblings[..at].iter().filter(same).count(), siblings[at + 1..].iter().filter(same).count())
    }
}

/// html5ever's tree builder writes through this; a handle carries its element's name so
/// `elem_name` can lend it without borrowing the arena.
#[derive(Debug, Default)]
struct Sink {
    nodes: RefCell<Vec<Node>>,
}

#[derive(Debug, Clone)]
struct Handle {
    id: usize,
    name: Option<Rc<QualName>>,
}

impl Sink {
    fn add(&self, kind: Kind) -> usize {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(Node { parent: None, children: Vec::new(), kind });
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
        nodes[parent].children.insert(at, id);
    }
}

impl TreeSink for Sink {
    type Handle = Handle;
    type Output = Dom;
    type ElemName<'a> = &'a QualName;

    fn finish(self) -> Dom {
        Dom { nodes: self.nodes.into_inner() }
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
        let dom = Dom::parse("<p>a<b>b<p>c</b>d<table><tr><td>x</td></tr></table>");
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
