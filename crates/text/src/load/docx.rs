//! DOCX (Office Open XML, `WordprocessingML`) to readable text with a source map.
//!
//! The rule: the main document part's body, in order. A paragraph whose style is a heading
//! (style name `heading N` or `Title`, in any UI language since the name, not the id, is read;
//! or an outline level) becomes a Markdown heading line, so chunks get heading paths; a list
//! paragraph (numbering properties) a `- ` line; a table row a `| a | b |` line; any other
//! paragraph a paragraph. Tables of contents (styles `toc N`), deleted revisions, field codes,
//! headers and footers are left out. Each block is mapped to the `XPath` of its paragraph or row
//! (`/w:document/w:body/w:tbl[2]/w:tr[3]`).

use std::collections::HashMap;

use roxmltree::{Document, Node};

use super::archive::{self, Archive, Inflation};
use super::blocks::{Blocks, collapse_whitespace};

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const RELS: &str = "http://schemas.openxmlformats.org/package/2006/relationships";

/// A document's title (empty when its properties name none) and its text.
pub(crate) struct Word {
    pub title: String,
    pub blocks: Blocks,
}

/// Reads a DOCX's bytes; its parts may inflate to at most `max_bytes` in all.
pub(crate) fn word(bytes: &[u8], max_bytes: u64) -> Result<Word, String> {
    let mut zip = archive::open(bytes, "a DOCX")?;
    let budget = &mut Inflation::new(max_bytes);
    if zip.by_name("EncryptionInfo").is_ok() || zip.by_name("EncryptedPackage").is_ok() {
        return Err("password-protected (encrypted) document".into());
    }
    let main = main_part(&mut zip, budget)?;
    let folder = main.rsplit_once('/').map_or("", |(dir, _)| dir);
    // Without readable styles, headings are known by outline levels alone.
    let styles = archive::member(&mut zip, &format!("{folder}/styles.xml"), budget)
        .ok()
        .and_then(|xml| heading_styles(&xml).ok())
        .unwrap_or_default();
    let xml = archive::member(&mut zip, &main, budget)?;
    let doc = archive::xml(&xml, &main)?;
    let body = doc
        .root_element()
        .children()
        .find(|n| is(*n, "body"))
        .ok_or_else(|| format!("{main} has no w:body"))?;
    let mut reader = Reader { styles: &styles, blocks: Blocks::default(), steps: HashMap::new() };
    reader.container(body);
    let title = archive::member(&mut zip, "docProps/core.xml", budget)
        .ok()
        .and_then(|core| {
            let doc = Document::parse(&core).ok()?;
            let title = doc.descendants().find(|n| n.tag_name().name() == "title")?;
            Some(title.text().unwrap_or_default().trim().to_string())
        })
        .unwrap_or_default();
    Ok(Word { title, blocks: reader.blocks })
}

/// The main document part's name, from the package relationships (`word/document.xml`).
fn main_part(zip: &mut Archive<'_>, budget: &mut Inflation) -> Result<String, String> {
    let rels = archive::member(zip, "_rels/.rels", budget)?;
    let doc = archive::xml(&rels, "_rels/.rels")?;
    let target = doc
        .descendants()
        .filter(|n| n.has_tag_name((RELS, "Relationship")))
        .find(|n| n.attribute("Type").is_some_and(|t| t.ends_with("/officeDocument")))
        .and_then(|n| n.attribute("Target"))
        .ok_or("_rels/.rels names no main document part")?;
    Ok(target.trim_start_matches('/').to_string())
}

fn is(node: Node<'_, '_>, name: &str) -> bool {
    node.has_tag_name((W, name))
}

fn val<'a>(node: Node<'a, '_>) -> Option<&'a str> {
    node.attribute((W, "val"))
}

/// What a paragraph style makes of its paragraphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Heading(usize),
    Contents,
}

/// Paragraph style id → role, following `basedOn` (a style based on a heading is one).
fn heading_styles(xml: &str) -> Result<HashMap<String, Role>, String> {
    let doc = archive::xml(xml, "styles.xml")?;
    let mut own = HashMap::new();
    let mut based_on = HashMap::new();
    for style in doc.descendants().filter(|n| is(*n, "style")) {
        let Some(id) = style.attribute((W, "styleId")) else { continue };
        let child = |name| style.children().find(|c| is(*c, name));
        let name = child("name").and_then(val).unwrap_or_default().to_ascii_lowercase();
        let outline = child("pPr")
            .and_then(|p| p.children().find(|c| is(*c, "outlineLvl")))
            .and_then(val)
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|l| *l < 9);
        let role = if let Some(n) = name.strip_prefix("heading ") {
            n.parse().ok().map(Role::Heading)
        } else if name == "title" {
            Some(Role::Heading(1))
        } else if name.starts_with("toc ") {
            Some(Role::Contents)
        } else {
            outline.map(|l| Role::Heading(l + 1))
        };
        if let Some(role) = role {
            own.insert(id.to_string(), role);
        }
        if let Some(parent) = child("basedOn").and_then(val) {
            based_on.insert(id.to_string(), parent.to_string());
        }
    }
    let mut roles = own.clone();
    for id in based_on.keys() {
        let mut at = id.as_str();
        for _ in 0..16 {
            if let Some(role) = own.get(at) {
                roles.entry(id.clone()).or_insert(*role);
                break;
            }
            let Some(next) = based_on.get(at) else { break };
            at = next;
        }
    }
    Ok(roles)
}

struct Reader<'s> {
    styles: &'s HashMap<String, Role>,
    blocks: Blocks,
    /// Path steps (`w:p[3]`) of the elements met so far, each parent's children counted once:
    /// counting a paragraph's same-named siblings anew for each made a flat body quadratic.
    steps: HashMap<roxmltree::NodeId, String>,
}

impl Reader<'_> {
    /// The paragraphs and tables of the body, a content control or a cell, in order.
    fn container(&mut self, node: Node<'_, '_>) {
        for child in node.children().filter(Node::is_element) {
            if is(child, "p") {
                self.paragraph(child);
            } else if is(child, "tbl") {
                self.table(child);
            } else if is(child, "sdt")
                && let Some(content) = child.children().find(|c| is(*c, "sdtContent"))
            {
                self.container(content);
            }
        }
    }

    fn paragraph(&mut self, p: Node<'_, '_>) {
        let props = p.children().find(|c| is(*c, "pPr"));
        let prop = |name| props.and_then(|pp| pp.children().find(|c| is(*c, name)));
        let style = prop("pStyle").and_then(val);
        let role = style.and_then(|s| self.styles.get(s)).copied().or_else(|| {
            prop("outlineLvl")
                .and_then(val)
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|l| *l < 9)
                .map(|l| Role::Heading(l + 1))
        });
        if role == Some(Role::Contents) {
            return;
        }
        let text = paragraph_text(p);
        let path = self.xpath(p);
        match role {
            Some(Role::Heading(level)) if !text.is_empty() => {
                let line = format!("{} {}", "#".repeat(level.clamp(1, 6)), text.replace('\n', " "));
                self.blocks.push_verbatim(&line, &path, false);
            }
            _ if prop("numPr").is_some() => self.blocks.push(&format!("- {text}"), &path, false),
            _ => self.blocks.push(&text, &path, false),
        }
    }

    /// Each row a `| a | b |` line; a cell's paragraphs are joined by spaces.
    fn table(&mut self, table: Node<'_, '_>) {
        let mut first = true;
        for row in table.children().filter(|c| is(*c, "tr")) {
            let cells: Vec<String> = row
                .children()
                .filter(|c| is(*c, "tc"))
                .map(|cell| {
                    let paragraphs: Vec<String> = cell
                        .descendants()
                        .filter(|d| is(*d, "p"))
                        .map(paragraph_text)
                        .filter(|t| !t.is_empty())
                        .collect();
                    paragraphs.join(" ").replace('\n', " ").replace('|', "\\|")
                })
                .collect();
            if cells.iter().all(String::is_empty) {
                continue;
            }
            let path = self.xpath(row);
            self.blocks.push(&format!("| {} |", cells.join(" | ")), &path, !first);
            first = false;
        }
    }
}

/// A paragraph's visible text: its runs' text, tabs and breaks, without deleted revisions,
/// field codes or the paragraphs of text boxes nested in it (they are read on their own).
fn paragraph_text(p: Node<'_, '_>) -> String {
    let mut raw = String::new();
    for node in p.descendants().filter(Node::is_element) {
        let inside_other = node
            .ancestors()
            .take_while(|a| *a != p)
            .any(|a| ["del", "p", "txbxContent", "pPr", "rPr"].iter().any(|name| is(a, name)));
        if inside_other {
            continue;
        }
        match node.tag_name().name() {
            "t" if is(node, "t") => raw.push_str(node.text().unwrap_or_default()),
            "tab" if is(node, "tab") => raw.push('\t'),
            "br" | "cr" if node.tag_name().namespace() == Some(W) => raw.push('\n'),
            "noBreakHyphen" => raw.push('-'),
            _ => {}
        }
    }
    // Runs keep their spaces; only runs of white space collapse (line breaks stay).
    let lines: Vec<String> = raw
        .split('\n')
        .map(|line| {
            let mut out = String::new();
            collapse_whitespace(line, &mut out);
            out.trim().to_string()
        })
        .collect();
    lines.join("\n").trim().to_string()
}

impl Reader<'_> {
    /// `/w:document/w:body/w:tbl[2]/w:tr[3]`: positions only where siblings share the name.
    fn xpath(&mut self, node: Node<'_, '_>) -> String {
        // `ancestors` starts at the node itself.
        let mut steps: Vec<String> = Vec::new();
        for n in node.ancestors().filter(Node::is_element) {
            if !self.steps.contains_key(&n.id()) {
                self.count_siblings(n);
            }
            steps.push(self.steps.get(&n.id()).cloned().unwrap_or_default());
        }
        steps.reverse();
        format!("/{}", steps.join("/"))
    }

    /// The step of `node` and of every element beside it, in one pass over their parent.
    fn count_siblings(&mut self, node: Node<'_, '_>) {
        fn key<'a, 'i: 'a>(s: &Node<'a, 'i>) -> (Option<&'a str>, &'a str) {
            (s.tag_name().namespace(), s.tag_name().name())
        }
        let siblings: Vec<Node<'_, '_>> = match node.parent() {
            Some(parent) => parent.children().filter(Node::is_element).collect(),
            None => vec![node],
        };
        let mut totals: HashMap<(Option<&str>, &str), usize> = HashMap::new();
        for s in &siblings {
            *totals.entry(key(s)).or_default() += 1;
        }
        let mut seen: HashMap<(Option<&str>, &str), usize> = HashMap::new();
        for s in siblings {
            let name = s.tag_name().name();
            let prefix = if s.tag_name().namespace() == Some(W) { "w:" } else { "" };
            let before = seen.entry(key(&s)).or_default();
            let step = if totals[&key(&s)] == 1 {
                format!("{prefix}{name}")
            } else {
                format!("{prefix}{name}[{}]", *before + 1)
            };
            *before += 1;
            self.steps.insert(s.id(), step);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use ckeep_core::{SourceMap, Span};

    use super::*;

    fn docx(document: &str, styles: &str) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default();
        let rels = r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
        for (name, text) in
            [("_rels/.rels", rels), ("word/document.xml", document), ("word/styles.xml", styles)]
        {
            zip.start_file(name, opts).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn headings_lists_tables_and_paths() {
        let w = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
        let styles = format!(
            r#"<w:styles {w}><w:style w:type="paragraph" w:styleId="Titre1"><w:name w:val="heading 1"/></w:style>
            <w:style w:type="paragraph" w:styleId="Sub"><w:name w:val="Sub"/><w:basedOn w:val="Titre1"/></w:style>
            <w:style w:type="paragraph" w:styleId="TM1"><w:name w:val="toc 1"/></w:style></w:styles>"#
        );
        let document = format!(
            r#"<w:document {w}><w:body>
            <w:p><w:pPr><w:pStyle w:val="TM1"/></w:pPr><w:r><w:t>Contents 3</w:t></w:r></w:p>
            <w:p><w:pPr><w:pStyle w:val="Titre1"/></w:pPr><w:r><w:t>Orbits</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">A satellite </w:t></w:r><w:del><w:r><w:delText>not</w:delText></w:r></w:del><w:r><w:t>moves.</w:t><w:tab/><w:t>茶</w:t></w:r></w:p>
            <w:p><w:pPr><w:numPr><w:ilvl w:val="0"/></w:numPr></w:pPr><w:r><w:t>first</w:t></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>Name</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Value</w:t></w:r></w:p></w:tc></w:tr>
            <w:tr><w:tc><w:p><w:r><w:t>a|b</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            <w:p><w:pPr><w:pStyle w:val="Sub"/></w:pPr><w:r><w:t>Based on a heading</w:t></w:r></w:p>
            </w:body></w:document>"#
        );
        let word = word(&docx(&document, &styles), 1 << 20).unwrap();
        let (text, metadata) = word.blocks.finish();
        assert_eq!(
            text,
            "# Orbits\n\nA satellite moves. 茶\n\n- first\n\n| Name | Value |\n| a\\|b | 1 |\n\n# Based on a heading"
        );
        let map = SourceMap::of(&metadata).unwrap();
        let at = |needle: &str| {
            let start = text.find(needle).unwrap();
            map.locate(Span::new(start, start + 1)).element.unwrap()
        };
        assert_eq!(at("A satellite"), "/w:document/w:body/w:p[3]");
        assert_eq!(at("| a"), "/w:document/w:body/w:tbl/w:tr[2]");
    }

    #[test]
    fn broken_documents_are_named_errors() {
        assert!(word(b"PK\x03\x04 truncated", 1 << 20).err().unwrap().contains("not a DOCX"));
        let no_body = docx(
            r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>"#,
            "",
        );
        assert!(word(&no_body, 1 << 20).err().unwrap().contains("no w:body"));
        let bad_xml = docx("<w:document", "");
        assert!(word(&bad_xml, 1 << 20).err().unwrap().contains("word/document.xml"));
    }
}
