//! The zip and XML parts of packaged formats (EPUB, DOCX): members read within one budget per
//! document and a compression ratio (a zip bomb stops while it inflates), and XML parsed
//! without DTDs (so no entity can expand) and nested at most as deep as a page may be; every
//! error names the member.

use std::io::{Cursor, Read};

use zip::ZipArchive;

/// A package's members, read from its bytes.
pub(crate) type Archive<'b> = ZipArchive<Cursor<&'b [u8]>>;

/// Opens the archive; `what` names the format in the error (`an EPUB`, `a DOCX`).
pub(crate) fn open<'b>(bytes: &'b [u8], what: &str) -> Result<Archive<'b>, String> {
    ZipArchive::new(Cursor::new(bytes)).map_err(|e| format!("not {what} (a zip archive): {e}"))
}

/// Largest inflated size of a member per byte it takes compressed, past [`GRACE_BYTES`]: text
/// and XML compress 3–20×, a zip bomb hundreds to thousands of times (Apache POI refuses Office
/// files past the same ratio).
pub(crate) const MAX_RATIO: u64 = 100;

/// Members this small are not held to [`MAX_RATIO`] (a short, repetitive part compresses well).
pub(crate) const GRACE_BYTES: u64 = 1024 * 1024;

/// What a package's members may still inflate to: all of them together count against one
/// document's limit, checked while inflating, so four parts of 95 MB each stop at the limit
/// instead of being read whole first.
#[derive(Debug)]
pub(crate) struct Inflation {
    limit: u64,
    remaining: u64,
}

impl Inflation {
    /// A package whose members may inflate to `limit` bytes in all.
    pub(crate) fn new(limit: u64) -> Self {
        Self { limit, remaining: limit }
    }
}

/// A member's text: missing, over what `budget` has left or [`MAX_RATIO`] allows once inflated,
/// or not UTF-8, is an error naming it. Its bytes count against `budget`.
pub(crate) fn member(
    zip: &mut Archive<'_>,
    name: &str,
    budget: &mut Inflation,
) -> Result<String, String> {
    let entry = zip.by_name(name).map_err(|e| format!("{name}: {e}"))?;
    let by_ratio = entry.compressed_size().saturating_mul(MAX_RATIO).max(GRACE_BYTES);
    let allowed = by_ratio.min(budget.remaining);
    let mut bytes = Vec::new();
    entry.take(allowed + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > allowed {
        return Err(if allowed == by_ratio {
            format!(
                "{name} inflates to more than {MAX_RATIO} times its compressed size (a zip bomb?)"
            )
        } else {
            format!("its parts inflate to more than {} bytes in all", budget.limit)
        });
    }
    budget.remaining -= bytes.len() as u64;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").map_or(bytes.clone(), <[u8]>::to_vec);
    String::from_utf8(bytes)
        .map_err(|e| format!("{name}: not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// Parses a member's XML. Elements nested deeper than an HTML page may be
/// ([`super::dom::MAX_DEPTH`]) are an error: the readers walk parts by recursion and name each
/// block by its path.
pub(crate) fn xml<'x>(text: &'x str, name: &str) -> Result<roxmltree::Document<'x>, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("{name}: {e}"))?;
    let mut stack = vec![(doc.root(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        stack.extend(node.children().filter(roxmltree::Node::is_element).map(|c| (c, depth + 1)));
        if depth > super::dom::MAX_DEPTH {
            return Err(format!(
                "{name}: its elements nest more than {} deep",
                super::dom::MAX_DEPTH
            ));
        }
    }
    Ok(doc)
}
