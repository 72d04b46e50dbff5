//! HTML (and the XHTML inside EPUBs) to readable text with a source map.
//!
//! The rule, in order:
//! 1. The main content is the first `<main>` or `role="main"` element, else the only
//!    `<article>`, else `<body>`. Outside it (site navigation, sidebars, footers) nothing is read.
//! 2. Inside it, scripts, styles, templates, forms' controls, `<nav>`, `<aside>`, hidden
//!    elements (`hidden`, `aria-hidden="true"`, `role="navigation"`), navigation by class
//!    (a class starting with `nav`, as `DocBook`'s `navheader`, or `breadcrumb`, `sidebar`,
//!    `sphinxsidebar`, `related`) and permalink markers (`class="headerlink"`) are dropped;
//!    with `<body>` as the root, `<header>` and `<footer>` too.
//! 3. `<h1>`–`<h6>` become Markdown heading lines (`## Title`), so the `paragraphs` and
//!    `markdown` chunkers give every chunk its heading path; list items become `- ` or `N. `
//!    lines, indented by depth; table rows become `| a | b |` lines; `<pre>` becomes a fenced
//!    block, its text as it is; every other block is a paragraph. Inline white space is
//!    collapsed as a browser does.
//! 4. Each block is mapped to the element it came from, as an `XPath` from the root
//!    (`/html/body/div[2]/p[3]`; a position only where siblings share the name).

use super::blocks::{Blocks, collapse_whitespace};
use super::dom::{Dom, Element, Kind};

/// Elements never read.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "canvas", "iframe", "object",
    "embed", "nav", "aside", "button", "select", "input", "textarea", "head", "link", "meta",
];

/// Elements that start a block of their own.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "blockquote",
    "figure",
    "figcaption",
    "dl",
    "dt",
    "dd",
    "address",
    "details",
    "summary",
    "header",
    "footer",
    "center",
    "form",
    "fieldset",
    "legend",
    "caption",
    "body",
    "html",
    "hr",
];

/// HTML that is not UTF-8 (nor UTF-16 with a BOM) in the encoding it declares
/// (`<meta charset>`, or `charset=` in a `Content-Type` meta), else in windows-1252, the HTML
/// standard's fallback for pages that declare none; re-encoded as UTF-8 (the stored text) with
/// a warning. UTF-8 pages, and pages that declare UTF-8, go on to the UTF-8 policy unchanged.
pub(crate) fn decode_legacy(bytes: Vec<u8>, origin: &str, warnings: &mut Vec<String>) -> Vec<u8> {
    let unicode_bom = bytes.starts_with(b"\xEF\xBB\xBF")
        || bytes.starts_with(b"\xFF\xFE")
        || bytes.starts_with(b"\xFE\xFF");
    if unicode_bom || std::str::from_utf8(&bytes).is_ok() {
        return bytes;
    }
    let declared = declared_charset(&bytes[..bytes.len().min(4096)]);
    let encoding = match declared.as_deref().map(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
    {
        Some(Some(e)) if e == encoding_rs::UTF_8 => return bytes,
        Some(Some(e)) => e,
        Some(None) | None => encoding_rs::WINDOWS_1252,
    };
    let (text, _, _) = encoding.decode(&bytes);
    warnings.push(format!(
        "{origin}: not UTF-8; read as {} ({})",
        encoding.name(),
        if declared.is_some() {
            "its declared charset"
        } else {
            "no charset declared: the HTML standard's fallback"
        }
    ));
    text.into_owned().into_bytes()
}

/// The label after the first `charset=` in a page's head, if any.
fn declared_charset(head: &[u8]) -> Option<String> {
    let lower = head.to_ascii_lowercase();
    let at = lower.windows(8).position(|w| w == b"charset=")? + 8;
    let label: String = lower[at..]
        .iter()
        .skip_while(|&&b| b == b'"' || b == b'\'' || b == b' ')
        .take_while(|&&b| {
            b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b':' || b == b'.'
        })
        .map(|&b| char::from(b))
        .collect();
    (!label.is_empty()).then_some(label)
}

/// An HTML page's title and its main content as text blocks.
pub(crate) struct Page {
    pub title: String,
    pub blocks: Blocks,
}

/// Reads `html`; element paths are prefixed with `prefix` (an EPUB member's name and `#`). A
/// page nested deeper than [`super::dom::MAX_DEPTH`] is an error.
pub(crate) fn page(html: &str, prefix: &str, into: Blocks) -> Result<Page, String> {
    let dom = Dom::parse(html)?;
    let root = main_content(&dom);
    let mut walker = Walker {
        dom: &dom,
        out: into,
        inline: String::new(),
        inline_path: String::new(),
        lists: Vec::new(),
        drop_page_chrome: dom.is(root, "body"),
        joined: false,
    };
    let path = format!("{prefix}{}", xpath(&dom, root));
    walker.element(root, &path);
    walker.flush();
    let title = dom
        .descendants(Dom::ROOT)
        .find(|&n| dom.is(n, "title"))
        .map(|t| {
            let mut title = String::new();
            collapse_whitespace(&dom.raw_text(t), &mut title);
            title.trim().to_string()
        })
        .unwrap_or_default();
    Ok(Page { title, blocks: walker.out })
}

/// The element holding the page's main content (rule 1).
fn main_content(dom: &Dom) -> usize {
    let first = |wanted: &dyn Fn(&Element) -> bool| {
        dom.descendants(Dom::ROOT).find(|&n| dom.element(n).is_some_and(wanted))
    };
    let articles: Vec<usize> =
        dom.descendants(Dom::ROOT).filter(|&n| dom.is(n, "article")).collect();
    first(&|e| e.name == "main" || e.attr("role") == Some("main"))
        .or_else(|| (articles.len() == 1).then(|| articles[0]))
        .or_else(|| first(&|e| e.name == "body"))
        .unwrap_or(Dom::ROOT)
}

/// The `XPath` of `node` from the document root, positions only where needed.
fn xpath(dom: &Dom, node: usize) -> String {
    let mut parts: Vec<String> =
        std::iter::once(node).chain(dom.ancestors(node)).filter_map(|n| step(dom, n)).collect();
    parts.reverse();
    format!("/{}", parts.join("/"))
}

/// The path of `node` below `ancestor`, whose path is `ancestor_path`.
fn relative_xpath(dom: &Dom, ancestor: usize, node: usize, ancestor_path: &str) -> String {
    let mut parts: Vec<String> = std::iter::once(node)
        .chain(dom.ancestors(node))
        .take_while(|&n| n != ancestor)
        .filter_map(|n| step(dom, n))
        .collect();
    parts.reverse();
    format!("{ancestor_path}/{}", parts.join("/"))
}

/// `name` or `name[k]` for an element among its siblings; `None` for other nodes.
fn step(dom: &Dom, node: usize) -> Option<String> {
    let name = &dom.element(node)?.name;
    let (before, after) = dom.same_named_siblings(node);
    Some(if before + after == 0 { name.clone() } else { format!("{name}[{}]", before + 1) })
}

/// The text nodes of a subtree in order, dropped elements and permalinks left out.
fn texts(dom: &Dom, node: usize) -> impl Iterator<Item = &str> {
    dom.descendants(node).filter_map(move |d| {
        let Kind::Text(text) = dom.kind(d) else { return None };
        let kept = !dom
            .ancestors(d)
            .take_while(|&a| a != node)
            .any(|a| dom.element(a).is_some_and(|e| dropped(e, false)) || permalink(dom, a));
        kept.then_some(text.as_str())
    })
}

/// The collapsed text of a subtree, dropped elements left out.
fn inline_text(dom: &Dom, node: usize) -> String {
    let mut out = String::new();
    texts(dom, node).for_each(|t| collapse_whitespace(t, &mut out));
    out.trim().to_string()
}

/// A heading's permalink marker: a link to an anchor on the same page whose text is one
/// symbol (`#`, `¶`, `§`).
fn permalink(dom: &Dom, node: usize) -> bool {
    let Some(e) = dom.element(node) else { return false };
    if e.name != "a" || !e.attr("href").is_some_and(|h| h.starts_with('#')) {
        return false;
    }
    let text = dom.raw_text(node);
    let text = text.trim();
    text.chars().count() <= 1 && !text.chars().any(char::is_alphanumeric)
}

fn dropped(e: &Element, page_chrome: bool) -> bool {
    DROPPED.contains(&e.name.as_str())
        || (page_chrome && matches!(e.name.as_str(), "header" | "footer"))
        || e.attr("hidden").is_some()
        || e.attr("aria-hidden") == Some("true")
        || e.attr("role") == Some("navigation")
        || e.classes().any(|c| {
            c.starts_with("nav")
                || matches!(
                    c,
                    "headerlink"
                        | "breadcrumb"
                        | "breadcrumbs"
                        | "sidebar"
                        | "sphinxsidebar"
                        | "related"
                )
        })
}

struct Walker<'d> {
    dom: &'d Dom,
    out: Blocks,
    /// Inline text of the block being read, and the element it started in.
    inline: String,
    inline_path: String,
    /// Open lists: ordered, the next item's number, and whether an item was read.
    lists: Vec<(bool, u32, bool)>,
    drop_page_chrome: bool,
    /// Whether the pending block continues the previous one (list items, table rows).
    joined: bool,
}

impl Walker<'_> {
    fn flush(&mut self) {
        let text = std::mem::take(&mut self.inline);
        self.out.push(&text, &self.inline_path, self.joined);
        self.joined = false;
    }

    fn text(&mut self, raw: &str, path: &str) {
        if self.inline.trim().is_empty() {
            path.clone_into(&mut self.inline_path);
        }
        collapse_whitespace(raw, &mut self.inline);
    }

    fn children(&mut self, node: usize, path: &str) {
        let dom = self.dom;
        for &child in dom.children(node) {
            match dom.kind(child) {
                Kind::Text(t) => self.text(t, path),
                Kind::Element(_) => {
                    let step = step(dom, child).unwrap_or_default();
                    self.element(child, &format!("{path}/{step}"));
                }
                Kind::Document | Kind::Other => {}
            }
        }
    }

    fn element(&mut self, node: usize, path: &str) {
        let dom = self.dom;
        let Some(e) = dom.element(node) else {
            return self.children(node, path);
        };
        if dropped(e, self.drop_page_chrome) || permalink(dom, node) {
            return;
        }
        match e.name.as_str() {
            name @ ("h1" | "h2" | "h3" | "h4" | "h5" | "h6") => {
                self.flush();
                let level = usize::from(name.as_bytes()[1] - b'0');
                let title = inline_text(dom, node);
                self.out.push_verbatim(&format!("{} {title}", "#".repeat(level)), path, false);
            }
            "ul" | "ol" | "menu" => {
                self.flush();
                let start = e.attr("start").and_then(|s| s.parse().ok()).unwrap_or(1);
                self.lists.push((e.name == "ol", start, false));
                self.children(node, path);
                self.flush();
                self.lists.pop();
            }
            "li" => self.list_item(node, path),
            "pre" => {
                self.flush();
                let code: String = texts(dom, node).collect();
                let fence = if code.contains("```") { "~~~~" } else { "```" };
                self.out.push_verbatim(
                    &format!("{fence}\n{}\n{fence}", code.trim_end()),
                    path,
                    false,
                );
            }
            "table" => {
                self.flush();
                self.table(node, path);
            }
            "br" => self.inline.push('\n'),
            "img" => {}
            name if BLOCKS.contains(&name) => {
                self.flush();
                self.children(node, path);
                self.flush();
            }
            _ => self.children(node, path),
        }
    }

    /// `- ` or `N. `, indented by the list's depth.
    fn list_item(&mut self, node: usize, path: &str) {
        self.flush();
        let depth = self.lists.len().max(1);
        // A list's first item starts a block unless the list is nested in an item.
        let mut joined = depth > 1;
        let marker = match self.lists.last_mut() {
            Some((ordered, n, seen)) => {
                joined |= *seen;
                *seen = true;
                *n += u32::from(*ordered);
                if *ordered { format!("{}. ", *n - 1) } else { "- ".to_string() }
            }
            None => "- ".to_string(),
        };
        let marker = format!("{}{marker}", "  ".repeat(depth - 1));
        self.inline.clone_from(&marker);
        self.inline_path = path.to_string();
        self.joined = joined;
        self.children(node, path);
        if self.inline == marker {
            self.inline.clear();
        }
        self.flush();
    }

    /// Each row a `| a | b |` line; a header row is followed by a separator line.
    fn table(&mut self, table: usize, path: &str) {
        let dom = self.dom;
        let mut first = true;
        for row in dom.descendants(table) {
            // Rows of this table, not of a table nested in it.
            let own = dom.ancestors(row).find(|&a| dom.is(a, "table")) == Some(table);
            if !dom.is(row, "tr") || !own {
                continue;
            }
            let cells: Vec<(String, bool)> = dom
                .children(row)
                .iter()
                .filter_map(|&c| {
                    let name = dom.element(c)?.name.as_str();
                    matches!(name, "td" | "th")
                        .then(|| (inline_text(dom, c).replace('|', "\\|"), name == "th"))
                })
                .collect();
            if cells.iter().all(|(t, _)| t.is_empty()) {
                continue;
            }
            let texts: Vec<&str> = cells.iter().map(|(t, _)| t.as_str()).collect();
            let mut line = format!("| {} |", texts.join(" | "));
            if first && cells.iter().all(|(_, th)| *th) {
                line.push_str("\n|");
                line.push_str(&" --- |".repeat(cells.len()));
            }
            self.out.push(&line, &relative_xpath(dom, table, row, path), !first);
            first = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use ckeep_core::SourceMap;

    use super::*;

    fn read(html: &str) -> (String, String, SourceMap) {
        let page = page(html, "", Blocks::default()).unwrap();
        let (text, metadata) = page.blocks.finish();
        (page.title, text, SourceMap::of(&metadata).unwrap())
    }

    #[test]
    fn main_content_becomes_markdown_like_blocks() {
        let html = r##"<!doctype html><html><head><title>Tea  guide</title><style>p{}</style></head>
<body><nav><a href="/">Home</a></nav>
<div role="main"><h1>Tea<a class="headerlink" href="#tea">¶</a></h1>
<p>Oolong is <em>partly</em>
 oxidised.</p>
<ul><li>green</li><li>black<ol><li>Assam</li></ol></li></ul>
<table><tr><th>Name</th><th>Origin</th></tr><tr><td>Oolong</td><td>Fujian | Taiwan</td></tr></table>
<pre>let x = 1;
  indented</pre>
<script>alert(1)</script><p hidden>secret</p>
<p>乌龙茶是一种
半发酵茶。</p></div>
<footer>Copyright</footer></body></html>"##;
        let (title, text, map) = read(html);
        assert_eq!(title, "Tea guide");
        assert_eq!(
            text,
            "# Tea\n\nOolong is partly oxidised.\n\n- green\n- black\n  1. Assam\n\n\
             | Name | Origin |\n| --- | --- |\n| Oolong | Fujian \\| Taiwan |\n\n\
             ```\nlet x = 1;\n  indented\n```\n\n乌龙茶是一种半发酵茶。"
        );
        let at = |needle: &str| {
            let start = text.find(needle).unwrap();
            map.locate(ckeep_core::Span::new(start, start + needle.len())).element.unwrap()
        };
        assert_eq!(at("Oolong is"), "/html/body/div/p[1]");
        assert_eq!(at("Assam"), "/html/body/div/ul/li[2]/ol/li");
        assert_eq!(at("| Oolong"), "/html/body/div/table/tbody/tr[2]");
        assert_eq!(at("乌龙茶"), "/html/body/div/p[3]");
        assert_eq!(at("let x"), "/html/body/div/pre");
    }

    #[test]
    fn legacy_encodings_are_read_as_declared_or_as_windows_1252() {
        let mut warnings = Vec::new();
        let latin1 = b"<html><body><p>Temps r\xe9el</p></body></html>".to_vec();
        let read = decode_legacy(latin1, "a.html", &mut warnings);
        assert!(String::from_utf8(read).unwrap().contains("Temps r\u{e9}el"));
        assert!(warnings[0].contains("windows-1252"), "{warnings:?}");
        let (sjis, _, _) =
            encoding_rs::SHIFT_JIS.encode("<meta charset=\"Shift_JIS\"><p>日本語の文章</p>");
        let read = decode_legacy(sjis.into_owned(), "b.html", &mut warnings);
        assert!(String::from_utf8(read).unwrap().contains("日本語の文章"));
        assert!(warnings[1].contains("Shift_JIS") && warnings[1].contains("declared"));
        let utf8 = "<p>déjà</p>".as_bytes().to_vec();
        assert_eq!(decode_legacy(utf8.clone(), "c.html", &mut warnings), utf8);
        let lying = b"<meta charset=utf-8><p>\xff</p>".to_vec();
        assert_eq!(
            decode_legacy(lying.clone(), "d.html", &mut warnings),
            lying,
            "the UTF-8 policy decides"
        );
        assert_eq!(warnings.len(), 2);
    }

    #[test]
    fn without_main_the_body_is_read_without_page_chrome() {
        let (title, text, _) =
            read("<body><header>Site</header><p>Body text.</p><footer>Links</footer></body>");
        assert_eq!((title.as_str(), text.as_str()), ("", "Body text."));
    }
}
