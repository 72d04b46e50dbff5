//! A strategy's BM25 parameters: saturation `k1`, length normalisation `b`, and the weight of
//! a title counted as a field of its own (BM25F). The index is the same whatever they are, so
//! evaluation and `ckeep eval tune` can try any of them on one index.

use std::fmt;
use std::str::FromStr;

use ckeep_index::Bm25;

use crate::error::{Error, Result};

/// The lexical field that holds chunks' own text.
pub const PLAIN_FIELD: &str = "plain";

/// A non-negative decimal kept in thousandths, so a strategy stays comparable and prints back
/// as it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Thousandths(u32);

/// Largest value a [`Thousandths`] takes.
const MAX_VALUE: f64 = 1000.0;

impl Thousandths {
    /// The value.
    pub fn get(self) -> f32 {
        self.0 as f32 / 1000.0
    }
}

impl FromStr for Thousandths {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..=MAX_VALUE).contains(&v) => {
                Ok(Self((v * 1000.0).round() as u32))
            }
            _ => Err(format!("expected a number from 0 to {MAX_VALUE}, got `{s}`")),
        }
    }
}

impl fmt::Display for Thousandths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = format!("{}.{:03}", self.0 / 1000, self.0 % 1000);
        f.write_str(s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// BM25's parameters as a strategy sets them; each `None` keeps the engine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LexicalParams {
    /// Term-frequency saturation (engine default 0.9).
    pub k1: Option<Thousandths>,
    /// Length normalisation, 0 to 1 (engine default 0.4).
    pub b: Option<Thousandths>,
    /// BM25F: what a term in a contextual representation's prefix (the title, under
    /// `--fields title,text`) weighs against one in the chunk; `None`: the prefix is plain text.
    pub title_weight: Option<Thousandths>,
}

impl LexicalParams {
    /// The keys, in the order a strategy prints them.
    pub(crate) const KEYS: [&'static str; 3] = ["k1", "b", "title_weight"];

    /// Whether every parameter is the engine's.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// `base` with this strategy's `k1` and `b`.
    pub(crate) fn bm25(&self, base: Bm25) -> Result<Bm25> {
        Bm25::new(
            self.k1.map_or(base.k1(), Thousandths::get),
            self.b.map_or(base.b(), Thousandths::get),
        )
        .map_err(|e| Error::Invalid(e.to_string()))
    }

    /// Sets the parameter `key` (one of [`LexicalParams::KEYS`]) from its value.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v: Thousandths = value.parse().map_err(|e| format!("{key}: {e}"))?;
        match key {
            "k1" => self.k1 = Some(v),
            "b" if v.get() > 1.0 => return Err(format!("b must be from 0 to 1, got `{value}`")),
            "b" => self.b = Some(v),
            _ => self.title_weight = Some(v),
        }
        Ok(())
    }

    /// The parameters that are set, as `key=value` parts.
    pub(crate) fn parts(&self) -> Vec<String> {
        [self.k1, self.b, self.title_weight]
            .iter()
            .zip(Self::KEYS)
            .filter_map(|(v, key)| v.map(|v| format!("{key}={v}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousandths_print_back_as_written() {
        for s in ["0", "0.4", "1.2", "2.5", "0.125", "12"] {
            assert_eq!(s.parse::<Thousandths>().unwrap().to_string(), s);
        }
        assert_eq!("1.20".parse::<Thousandths>().unwrap().to_string(), "1.2");
        for bad in ["-1", "nan", "inf", "x", "", "1001"] {
            assert!(bad.parse::<Thousandths>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parameters_replace_the_engines_own() {
        let mut p = LexicalParams::default();
        assert!(p.is_default());
        p.set("k1", "1.2").unwrap();
        let bm = p.bm25(Bm25::default()).unwrap();
        assert!((bm.k1() - 1.2).abs() < 1e-6 && (bm.b() - 0.4).abs() < 1e-6);
        assert!(p.set("b", "1.5").unwrap_err().contains("0 to 1"));
        p.set("b", "0.75").unwrap();
        p.set("title_weight", "2").unwrap();
        assert_eq!(p.parts(), ["k1=1.2", "b=0.75", "title_weight=2"]);
        assert_eq!(p.title_weight, Some(Thousandths(2000)));
    }
}
