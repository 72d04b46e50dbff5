//! EPUB (2 and 3): the XHTML documents of the spine, in reading order, each read as an HTML
//! page (see `html`), one document per book. Element paths are prefixed with the member's
//! name inside the archive (`OEBPS/ch01.xhtml#/html/body/p[3]`).

// Each XML reader here wants a few of quick-xml's events; any other kind, a new one included,
// is one more to skip.
#![allow(clippy::wildcard_enum_match_arm)]

use std::collections::{HashMap, HashSet};
use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use zip::ZipArchive;

use super::blocks::Blocks;
use super::html;

/// A book: its title (empty when the package names none) and its text.
pub(crate) struct Book {
    pub title: String,
    pub blocks: Blocks,
}

/// Reads an EPUB's bytes; a member may inflate to at most `max_bytes`.
pub(crate) fn book(bytes: &[u8], max_bytes: u64) -> Result<Book, String> {
    let mut zip = ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| format!("not an EPUB (a zip archive): {e}"))?;
    let container = member(&mut zip, "META-INF/container.xml", max_bytes)?;
    let opf_path = first_attr(&container, "rootfile", "full-path")?
        .ok_or("META-INF/container.xml names no package document (rootfile)")?;
    if let Ok(encryption) = member(&mut zip, "META-INF/encryption.xml", max_bytes) {
        refuse_encrypted(&encryption)?;
    }
    let opf = member(&mut zip, &opf_path, max_bytes)?;
    let package = package(&opf)?;
    let base = opf_path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut blocks = Blocks::default();
    let mut read = HashSet::new();
    for idref in &package.spine {
        let Some((href, media)) = package.manifest.get(idref) else {
            return Err(format!("the spine names `{idref}`, which the manifest lacks"));
        };
        if !media.contains("html") {
            continue;
        }
        let name = resolve(base, href.split('#').next().unwrap_or_default());
        if !read.insert(name.clone()) {
            continue;
        }
        let xhtml = member(&mut zip, &name, max_bytes)?;
        blocks = html::page(&xhtml, &format!("{name}#"), blocks).blocks;
    }
    Ok(Book { title: package.title, blocks })
}

/// A member's text; missing, oversized or non-UTF-8 members are errors that name it.
fn member(
    zip: &mut ZipArchive<Cursor<&[u8]>>,
    name: &str,
    max_bytes: u64,
) -> Result<String, String> {
    let entry = zip.by_name(name).map_err(|e| format!("{name}: {e}"))?;
    let mut bytes = Vec::new();
    entry.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("{name} inflates to more than {max_bytes} bytes"));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes).to_vec();
    String::from_utf8(bytes)
        .map_err(|e| format!("{name}: not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// What the package document says: title, manifest (id → href, media type), spine.
struct Package {
    title: String,
    manifest: HashMap<String, (String, String)>,
    spine: Vec<String>,
}

fn package(opf: &str) -> Result<Package, String> {
    let mut reader = Reader::from_str(opf);
    let mut package = Package { title: String::new(), manifest: HashMap::new(), spine: Vec::new() };
    let mut in_title = false;
    loop {
        match reader.read_event().map_err(|e| format!("package document: {e}"))? {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                "title" if package.title.is_empty() => in_title = true,
                "item" => {
                    let (Some(id), Some(href)) = (attr(&e, "id"), attr(&e, "href")) else {
                        continue;
                    };
                    let media = attr(&e, "media-type").unwrap_or_default();
                    package.manifest.insert(id, (href, media));
                }
                "itemref" => package.spine.extend(attr(&e, "idref")),
                _ => {}
            },
            Event::Text(t) if in_title => package.title.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if in_title => package.title.push_str(&entity(&r)),
            Event::End(e) if e.local_name().as_ref() == "title" => in_title = false,
            Event::Eof => break,
            _ => {}
        }
    }
    package.title = package.title.trim().to_string();
    if package.spine.is_empty() {
        return Err("the package document has an empty spine".into());
    }
    Ok(package)
}

/// Content documents encrypted for DRM cannot be read (obfuscated fonts are fine).
fn refuse_encrypted(encryption: &str) -> Result<(), String> {
    let mut reader = Reader::from_str(encryption);
    loop {
        match reader.read_event().map_err(|e| format!("META-INF/encryption.xml: {e}"))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "CipherReference" => {
                let uri = attr(&e, "URI").unwrap_or_default();
                if uri.contains("htm") {
                    return Err(format!("encrypted (DRM): {uri} cannot be read"));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// The first `element`'s `name` attribute in `xml`.
fn first_attr(xml: &str, element: &str, name: &str) -> Result<Option<String>, String> {
    let mut reader = Reader::from_str(xml);
    loop {
        match reader.read_event().map_err(|e| e.to_string())? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == element => {
                return Ok(attr(&e, name));
            }
            Event::Eof => return Ok(None),
            _ => {}
        }
    }
}

/// An attribute's unescaped value, by local name.
pub(super) fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes().flatten().find(|a| a.key.local_name().as_ref() == name).and_then(|a| {
        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .ok()
            .map(std::borrow::Cow::into_owned)
    })
}

/// The text of an entity or character reference (`&amp;`, `&#x4E2D;`); unknown ones as written.
pub(super) fn entity(r: &quick_xml::events::BytesRef<'_>) -> String {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return c.to_string();
    }
    let name = r.xml10_content();
    quick_xml::escape::resolve_predefined_entity(&name)
        .map_or_else(|| format!("&{name};"), str::to_string)
}

/// `href` (percent-encoded, relative to the package document's folder) as a member name.
fn resolve(base: &str, href: &str) -> String {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in href.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    percent_decode(&parts.join("/"))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_resolve_against_the_package_folder() {
        assert_eq!(resolve("OEBPS", "ch01.xhtml"), "OEBPS/ch01.xhtml");
        assert_eq!(resolve("OEBPS/text", "../ch%2001.xhtml"), "OEBPS/ch 01.xhtml");
        assert_eq!(resolve("", "./a.xhtml"), "a.xhtml");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn broken_books_are_named_errors() {
        assert!(book(b"not a zip", 1 << 20).err().unwrap().contains("not an EPUB"));
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("mimetype", zip::write::SimpleFileOptions::default()).unwrap();
        std::io::Write::write_all(&mut zip, b"application/epub+zip").unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        assert!(book(&bytes, 1 << 20).err().unwrap().contains("META-INF/container.xml"));
    }
}
