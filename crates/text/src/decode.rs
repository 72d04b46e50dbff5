//! Bytes to text, once. The stored text is exactly what this returns, so every span that a
//! chunker computes later points into the bytes a user can read back with `ckeep show`.
//!
//! Policy: UTF-8 is taken as it is (a leading BOM is dropped); UTF-16 with a BOM is converted;
//! anything else that is not valid UTF-8 is rejected with the offset of the first bad byte,
//! unless the caller asks for lossy decoding, which replaces bad bytes with U+FFFD and reports
//! how many it replaced. Line endings are kept as they are.

use crate::Error;

/// How much of a file's head is searched for NUL bytes to call it binary (as git and grep do).
const BINARY_SNIFF_BYTES: usize = 8192;

/// Decoded text and how many invalid sequences were replaced (0 unless lossy).
#[derive(Debug)]
pub struct Decoded {
    /// The text.
    pub text: String,
    /// Number of invalid byte sequences replaced by U+FFFD.
    pub replaced: usize,
}

/// Decodes a file's bytes; `origin` names the file in errors.
pub fn decode(bytes: Vec<u8>, origin: &str, lossy: bool) -> Result<Decoded, Error> {
    if let Some(text) = decode_utf16_bom(&bytes) {
        return Ok(Decoded { text, replaced: 0 });
    }
    let head = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if let Some(offset) = memchr::memchr(0, head) {
        return Err(Error::Binary { origin: origin.to_string(), offset });
    }
    let mut bytes = bytes;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Decoded { text, replaced: 0 }),
        Err(e) if lossy => {
            let bytes = e.into_bytes();
            let replaced = count_invalid(&bytes);
            Ok(Decoded { text: String::from_utf8_lossy(&bytes).into_owned(), replaced })
        }
        Err(e) => Err(Error::InvalidUtf8 {
            origin: origin.to_string(),
            offset: e.utf8_error().valid_up_to(),
        }),
    }
}

fn count_invalid(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    while let Err(e) = std::str::from_utf8(bytes) {
        n += 1;
        let skip = e.valid_up_to() + e.error_len().unwrap_or(bytes.len() - e.valid_up_to());
        bytes = &bytes[skip..];
    }
    n
}

fn decode_utf16_bom(bytes: &[u8]) -> Option<String> {
    let little = match bytes {
        [0xFF, 0xFE, ..] => true,
        [0xFE, 0xFF, ..] => false,
        _ => return None,
    };
    let units = bytes[2..].chunks_exact(2).map(|p| {
        if little { u16::from_le_bytes([p[0], p[1]]) } else { u16::from_be_bytes([p[0], p[1]]) }
    });
    Some(char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_utf8_bom_and_keeps_line_endings() {
        let d = decode(b"\xEF\xBB\xBFa\r\nb".to_vec(), "f", false).unwrap();
        assert_eq!(d.text, "a\r\nb");
    }

    #[test]
    fn rejects_invalid_utf8_with_offset() {
        let err = decode(b"abc\xFFdef".to_vec(), "f.txt", false).unwrap_err();
        assert!(matches!(err, Error::InvalidUtf8 { offset: 3, .. }), "{err}");
        assert!(err.to_string().contains("--lossy"));
    }

    #[test]
    fn lossy_replaces_and_counts() {
        let d = decode(b"a\xFFb\xC3(c".to_vec(), "f", true).unwrap();
        assert_eq!(d.text, "a\u{FFFD}b\u{FFFD}(c");
        assert_eq!(d.replaced, 2);
    }

    #[test]
    fn nul_byte_means_binary() {
        let err = decode(b"PK\x03\x04\x00\x00".to_vec(), "x.zip", true).unwrap_err();
        assert!(matches!(err, Error::Binary { offset: 4, .. }));
    }

    #[test]
    fn utf16_with_bom_is_converted() {
        let mut bytes = vec![0xFF, 0xFE];
        for u in "hé".encode_utf16() {
            bytes.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(decode(bytes, "f", false).unwrap().text, "hé");
    }
}
