//! EPUB (2 and 3): the XHTML documents of the spine, in reading order, each read as an HTML
//! page (see `html`), one document per book. Element paths are prefixed with the member's
//! name inside the archive (`OEBPS/ch01.xhtml#/html/body/p[3]`).

use std::collections::{HashMap, HashSet};

use super::archive::{self, Archive, Inflation};
use super::blocks::Blocks;
use super::html;

/// A book: its title (empty when the package names none) and its text.
pub(crate) struct Book {
    pub title: String,
    pub blocks: Blocks,
}

/// Reads an EPUB's bytes; its members may inflate to at most `max_bytes` in all. A page nested
/// deeper than an HTML page may be is an error (see `dom`).
pub(crate) fn book(bytes: &[u8], max_bytes: u64) -> Result<Book, String> {
    let mut zip = archive::open(bytes, "an EPUB")?;
    let budget = &mut Inflation::new(max_bytes);
    let container = archive::member(&mut zip, "META-INF/container.xml", budget)?;
    let opf_path = archive::xml(&container, "META-INF/container.xml")?
        .descendants()
        .find(|n| n.tag_name().name() == "rootfile")
        .and_then(|n| n.attribute("full-path").map(str::to_string))
        .ok_or("META-INF/container.xml names no package document (rootfile)")?;
    refuse_encrypted(&mut zip, budget)?;
    let opf = archive::member(&mut zip, &opf_path, budget)?;
    let package = package(&opf, &opf_path)?;
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
        let xhtml = archive::member(&mut zip, &name, budget)?;
        blocks = html::page(&xhtml, &format!("{name}#"), blocks)
            .map_err(|e| format!("{name}: {e}"))?
            .blocks;
    }
    Ok(Book { title: package.title, blocks })
}

/// What the package document says: title, manifest (id → href, media type), spine.
struct Package {
    title: String,
    manifest: HashMap<String, (String, String)>,
    spine: Vec<String>,
}

fn package(opf: &str, name: &str) -> Result<Package, String> {
    let doc = archive::xml(opf, name)?;
    let named =
        |local: &'static str| doc.descendants().filter(move |n| n.tag_name().name() == local);
    let title = named("title").next().and_then(|t| t.text()).unwrap_or_default().trim().to_string();
    let manifest = named("item")
        .filter_map(|item| {
            let media = item.attribute("media-type").unwrap_or_default().to_string();
            Some((item.attribute("id")?.to_string(), (item.attribute("href")?.to_string(), media)))
        })
        .collect();
    let spine: Vec<String> =
        named("itemref").filter_map(|r| r.attribute("idref").map(str::to_string)).collect();
    if spine.is_empty() {
        return Err(format!("{name}: the package document has an empty spine"));
    }
    Ok(Package { title, manifest, spine })
}

/// Content documents encrypted for DRM cannot be read (obfuscated fonts are fine).
fn refuse_encrypted(zip: &mut Archive<'_>, budget: &mut Inflation) -> Result<(), String> {
    let name = "META-INF/encryption.xml";
    let Ok(encryption) = archive::member(zip, name, budget) else { return Ok(()) };
    let doc = archive::xml(&encryption, name)?;
    let content = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "CipherReference")
        .filter_map(|n| n.attribute("URI"))
        .find(|uri| uri.contains("htm"));
    content.map_or(Ok(()), |uri| Err(format!("encrypted (DRM): {uri} cannot be read")))
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
    use std::io::Cursor;

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
