//! The zip and XML parts of packaged formats (EPUB, DOCX): members read with a size limit
//! (a zip bomb stops at the document limit) and XML parsed without DTDs (so no entity can
//! expand), every error naming the member.

use std::io::{Cursor, Read};

use zip::ZipArchive;

/// A package's members, read from its bytes.
pub(crate) type Archive<'b> = ZipArchive<Cursor<&'b [u8]>>;

/// Opens the archive; `what` names the format in the error (`an EPUB`, `a DOCX`).
pub(crate) fn open<'b>(bytes: &'b [u8], what: &str) -> Result<Archive<'b>, String> {
    ZipArchive::new(Cursor::new(bytes)).map_err(|e| format!("not {what} (a zip archive): {e}"))
}

/// A member's text: missing, over `max_bytes` once inflated, or not UTF-8 is an error naming it.
pub(crate) fn member(zip: &mut Archive<'_>, name: &str, max_bytes: u64) -> Result<String, String> {
    let entry = zip.by_name(name).map_err(|e| format!("{name}: {e}"))?;
    let mut bytes = Vec::new();
    entry.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("{name} inflates to more than {max_bytes} bytes"));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").map_or(bytes.clone(), <[u8]>::to_vec);
    String::from_utf8(bytes)
        .map_err(|e| format!("{name}: not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// Parses a member's XML.
pub(crate) fn xml<'x>(text: &'x str, name: &str) -> Result<roxmltree::Document<'x>, String> {
    roxmltree::Document::parse(text).map_err(|e| format!("{name}: {e}"))
}
