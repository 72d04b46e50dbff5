//! Character folding before analysis: full-width ASCII to ASCII, and (for `jieba`) Traditional
//! Chinese characters to Simplified with OpenCC's character tables (`data/opencc`,
//! Apache-2.0), because jieba's dictionary knows Simplified words only.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

/// OpenCC's Traditional → Simplified characters.
const TS_CHARACTERS: &str = include_str!("../../data/opencc/TSCharacters.txt");
/// OpenCC's Taiwan variant forms → standard Traditional forms, applied first (`tw2s`).
const TW_VARIANTS_REV: &str = include_str!("../../data/opencc/TWVariantsRev.txt");

/// One character to one character: a line's first candidate, when it is a single character.
fn table(text: &str) -> impl Iterator<Item = (char, char)> + '_ {
    text.lines().filter_map(|line| {
        let (from, to) = line.split_once('\t')?;
        let mut from = from.chars();
        let mut to = to.split(' ').next()?.chars();
        match (from.next(), from.next(), to.next(), to.next()) {
            (Some(f), None, Some(t), None) => Some((f, t)),
            _ => None,
        }
    })
}

static T2S: LazyLock<HashMap<char, char>> = LazyLock::new(|| {
    let variants: HashMap<char, char> = table(TW_VARIANTS_REV).collect();
    let mut map: HashMap<char, char> = table(TS_CHARACTERS).collect();
    for (variant, standard) in variants {
        let simplified = map.get(&standard).copied().unwrap_or(standard);
        map.insert(variant, simplified);
    }
    map
});

/// Full-width ASCII (U+FF01–U+FF5E) as ASCII, and the ideographic space as a space.
fn width(c: char) -> char {
    match u32::from(c) {
        u @ 0xFF01..=0xFF5E => char::from_u32(u - 0xFEE0).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

/// `text` with full-width ASCII folded to ASCII (borrowed when there is none).
pub(super) fn fold_width(text: &str) -> Cow<'_, str> {
    if text.chars().all(|c| width(c) == c) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.chars().map(width).collect())
    }
}

/// `text` with full-width ASCII folded and Traditional characters made Simplified.
pub(super) fn fold_simplified(text: &str) -> String {
    let t2s = &*T2S;
    text.chars().map(|c| t2s.get(&c).copied().unwrap_or_else(|| width(c))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traditional_to_simplified() {
        assert_eq!(fold_simplified("歷史與傳統，教會"), "历史与传统,教会");
        // A Taiwan variant goes through its standard form.
        assert_eq!(fold_simplified("裡著"), "里着");
        assert_eq!(fold_simplified("ＡＢＣ１２３　x"), "ABC123 x");
        assert_eq!(fold_simplified("简体不变 plain"), "简体不变 plain");
    }

    #[test]
    fn tables_are_read() {
        assert!(T2S.len() > 4000, "{}", T2S.len());
        assert!(matches!(fold_width("abc"), Cow::Borrowed(_)));
    }
}
