//! Small PDFs written object by object, with a correct cross-reference table: what a loader's
//! test needs to build the one construct it is about (a page without text, a form that draws
//! itself) without a PDF library.

use std::fmt::Write as _;

/// A PDF of `objects`, numbered from 1 (object 1 the catalog), each the text between
/// `N 0 obj` and `endobj`: a dictionary, or a [`stream`].
pub fn pdf(objects: &[String]) -> Vec<u8> {
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        let _ = write!(out, "{} 0 obj\n{object}\nendobj\n", i + 1);
    }
    let xref = out.len();
    let _ = write!(out, "xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
    for offset in offsets {
        let _ = writeln!(out, "{offset:010} 00000 n ");
    }
    let size = objects.len() + 1;
    let _ = write!(out, "trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n");
    out.into_bytes()
}

/// A stream object: `dict`'s entries (without `<< >>`) with the data's `/Length`, then `data`.
pub fn stream(dict: &str, data: &str) -> String {
    format!("<< {dict} /Length {} >>\nstream\n{data}\nendstream", data.len())
}
