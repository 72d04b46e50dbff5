//! Which characters belong to the scripts written without spaces between words (Chinese,
//! Japanese, and Korean syllables), so every crate draws that line the same way: chunk sizes
//! count each such character as one word, and the CJK analyzers index them as bigrams or
//! segment them into words.

/// The unspaced script a character belongs to, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CjkScript {
    /// Han ideographs (Chinese characters, Japanese kanji, Korean hanja), with the iteration
    /// marks 々 and 〇.
    Han,
    /// Japanese Hiragana.
    Hiragana,
    /// Japanese Katakana (full and half width, with the prolonged sound mark).
    Katakana,
    /// Korean Hangul syllables and jamo.
    Hangul,
}

/// The unspaced script of `c`, or `None` for every other character (Latin, digits, spaces,
/// punctuation, full-width punctuation included).
pub fn cjk_script(c: char) -> Option<CjkScript> {
    let u = u32::from(c);
    match u {
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x3134F
        | 0xF900..=0xFAFF
        | 0x3005
        | 0x3007 => Some(CjkScript::Han),
        0x3041..=0x309F => Some(CjkScript::Hiragana),
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Some(CjkScript::Katakana),
        0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => Some(CjkScript::Hangul),
        _ => None,
    }
}

/// Whether `c` is written without spaces between words (see [`cjk_script`]).
pub fn is_cjk(c: char) -> bool {
    cjk_script(c).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts() {
        let cases = [
            ('中', Some(CjkScript::Han)),
            ('國', Some(CjkScript::Han)),
            ('𠀋', Some(CjkScript::Han)),
            ('々', Some(CjkScript::Han)),
            ('の', Some(CjkScript::Hiragana)),
            ('カ', Some(CjkScript::Katakana)),
            ('ー', Some(CjkScript::Katakana)),
            ('ｶ', Some(CjkScript::Katakana)),
            ('한', Some(CjkScript::Hangul)),
            ('a', None),
            ('。', None),
            ('，', None),
            ('１', None),
            (' ', None),
        ];
        for (c, want) in cases {
            assert_eq!(cjk_script(c), want, "{c}");
        }
    }
}
