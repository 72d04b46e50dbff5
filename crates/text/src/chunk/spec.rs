//! The textual chunker spec (`words:200,overlap=20`, `hierarchy:2048,512,128`, …).

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// Largest size any spec accepts; a guard against typos like `words:2000000000`.
const MAX_SIZE: usize = 1_000_000;

/// How a document is cut into chunks. Parse it from its textual form; `Display` gives the
/// canonical form stored in a store's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkerSpec {
    /// `whole`: the document is one chunk.
    Whole,
    /// `words:N[,overlap=M]` or `words:dynamic`: windows of whitespace-separated words.
    Words {
        /// Window size.
        size: WordsSize,
        /// Words shared by consecutive windows (`< size`).
        overlap: usize,
    },
    /// `sentences[:N]`: N Unicode sentences per chunk (default 1).
    Sentences {
        /// Sentences per chunk.
        per_chunk: usize,
    },
    /// `paragraphs[:N]`: N blank-line paragraphs per chunk (default 1); headings join the
    /// paragraph after them, and a new section starts a new chunk.
    Paragraphs {
        /// Paragraphs per chunk.
        per_chunk: usize,
    },
    /// `markdown[:N]`: split at the highest heading/paragraph/line/sentence/word level that
    /// keeps every chunk within N size units (default 256).
    Markdown {
        /// Largest chunk size.
        max: usize,
        /// What the size counts.
        unit: SizeUnit,
    },
    /// `semantic[:MAX][,p=P]`: consecutive sentences grouped until the embedding distance of
    /// two neighbours exceeds the P-th percentile of the document's distances (default 95),
    /// never more than MAX units per chunk (default 256). Needs sentence vectors.
    Semantic {
        /// Hard maximum chunk size.
        max: usize,
        /// Breakpoint percentile (1–99).
        percentile: u8,
        /// What the size counts.
        unit: SizeUnit,
    },
    /// `hierarchy:A,B,…`: nested `markdown` levels, largest first (default 2048,512,128), every
    /// child linked to its parent.
    Hierarchy {
        /// Size of each level, strictly decreasing.
        sizes: Vec<usize>,
        /// What the sizes count.
        unit: SizeUnit,
    },
}

/// What the sizes of `markdown`, `semantic` and `hierarchy` count: words (every CJK character
/// one word), or tokens as the store's embedding model cuts the text (`,unit=tokens`), because
/// a model's input limit is in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeUnit {
    /// Words ([`crate::WordCounter`]).
    #[default]
    Words,
    /// The embedding model's tokens, special tokens not counted.
    Tokens,
}

impl fmt::Display for SizeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SizeUnit::Words => "words",
            SizeUnit::Tokens => "tokens",
        })
    }
}

impl FromStr for SizeUnit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "words" => Ok(SizeUnit::Words),
            "tokens" => Ok(SizeUnit::Tokens),
            other => Err(format!("unknown size unit `{other}`: expected words or tokens")),
        }
    }
}

/// Window size of a `words` chunker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordsSize {
    /// A fixed number of words.
    Fixed(usize),
    /// `clamp(words / 4, 18, 150)` of the document, the chunk-pair experiment's rule.
    Dynamic,
}

impl WordsSize {
    /// The window size for a document of `n_words` words.
    pub fn for_words(self, n_words: usize) -> usize {
        match self {
            WordsSize::Fixed(n) => n,
            WordsSize::Dynamic => (n_words / 4).clamp(18, 150),
        }
    }
}

impl Default for ChunkerSpec {
    fn default() -> Self {
        ChunkerSpec::Markdown { max: 256, unit: SizeUnit::Words }
    }
}

impl ChunkerSpec {
    /// What this spec's sizes count (`words` for specs without a size unit to choose).
    pub fn unit(&self) -> SizeUnit {
        match self {
            ChunkerSpec::Markdown { unit, .. }
            | ChunkerSpec::Semantic { unit, .. }
            | ChunkerSpec::Hierarchy { unit, .. } => *unit,
            ChunkerSpec::Whole
            | ChunkerSpec::Words { .. }
            | ChunkerSpec::Sentences { .. }
            | ChunkerSpec::Paragraphs { .. } => SizeUnit::Words,
        }
    }

    /// The same spec with its sizes counted in `unit`; only `markdown`, `semantic` and
    /// `hierarchy` count in tokens (`words:N` is a count of words by name).
    pub fn with_unit(mut self, new: SizeUnit) -> Result<Self, Error> {
        match self.set_unit(new) {
            Ok(()) => Ok(self),
            Err(message) => Err(Error::ChunkerSpec { spec: self.to_string(), message }),
        }
    }

    /// Sets the size unit, or says why this spec has none to set.
    fn set_unit(&mut self, new: SizeUnit) -> Result<(), String> {
        match self {
            ChunkerSpec::Markdown { unit, .. }
            | ChunkerSpec::Semantic { unit, .. }
            | ChunkerSpec::Hierarchy { unit, .. } => *unit = new,
            ChunkerSpec::Whole
            | ChunkerSpec::Words { .. }
            | ChunkerSpec::Sentences { .. }
            | ChunkerSpec::Paragraphs { .. } => {
                if new != SizeUnit::Words {
                    return Err(format!(
                        "sizes in {new} apply to markdown, semantic and hierarchy chunkers"
                    ));
                }
            }
        }
        Ok(())
    }

    /// One line per spec form, for `--help`.
    pub const HELP: &'static str = "\
whole                      the document is one chunk
words:N[,overlap=M]        windows of N words, M shared with the previous window
words:dynamic              windows of clamp(words/4, 18, 150) words (the chunk-pair
                           experiment's rule)
sentences[:N]              N Unicode sentences per chunk (default 1)
paragraphs[:N]             N blank-line paragraphs per chunk (default 1), headings
                           recorded
markdown[:N]               structure-aware: split at headings, then paragraphs, lines,
                           sentences, words, keeping every chunk <= N units (default 256)
semantic[:MAX][,p=P]       sentences grouped until neighbours' embedding distance
                           exceeds its P-th percentile (default 95); hard maximum MAX
                           (default 256); needs --model
hierarchy[:A,B,...]        nested markdown levels, e.g. 2048,512,128 (the default)
Sizes count words: Unicode words, each Chinese/Japanese character or Hangul syllable
one word. markdown, semantic and hierarchy take `,unit=tokens` (or `add --size-unit
tokens`) to count the model's tokens instead, e.g. markdown:256,unit=tokens.";
}

impl fmt::Display for ChunkerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkerSpec::Whole => write!(f, "whole"),
            ChunkerSpec::Words { size: WordsSize::Dynamic, .. } => write!(f, "words:dynamic"),
            ChunkerSpec::Words { size: WordsSize::Fixed(n), overlap: 0 } => write!(f, "words:{n}"),
            ChunkerSpec::Words { size: WordsSize::Fixed(n), overlap } => {
                write!(f, "words:{n},overlap={overlap}")
            }
            ChunkerSpec::Sentences { per_chunk } => write!(f, "sentences:{per_chunk}"),
            ChunkerSpec::Paragraphs { per_chunk } => write!(f, "paragraphs:{per_chunk}"),
            ChunkerSpec::Markdown { max, .. } => write!(f, "markdown:{max}"),
            ChunkerSpec::Semantic { max, percentile, .. } => {
                write!(f, "semantic:{max},p={percentile}")
            }
            ChunkerSpec::Hierarchy { sizes, .. } => {
                let s: Vec<String> = sizes.iter().map(ToString::to_string).collect();
                write!(f, "hierarchy:{}", s.join(","))
            }
        }?;
        match self.unit() {
            SizeUnit::Words => Ok(()),
            SizeUnit::Tokens => write!(f, ",unit={}", SizeUnit::Tokens),
        }
    }
}

impl FromStr for ChunkerSpec {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self, Error> {
        let err = |message: String| Error::ChunkerSpec { spec: spec.to_string(), message };
        // A trailing `,unit=U` belongs to every sized spec.
        let (body, unit) = match spec.trim().rsplit_once(',') {
            Some((body, last)) if last.trim().starts_with("unit=") => {
                let unit = last.trim()["unit=".len()..].parse::<SizeUnit>().map_err(err)?;
                (body, unit)
            }
            _ => (spec.trim(), SizeUnit::Words),
        };
        let mut parsed = Self::parse_body(body, &err)?;
        parsed.set_unit(unit).map_err(err)?;
        Ok(parsed)
    }
}

impl ChunkerSpec {
    /// A spec without its `,unit=` part.
    fn parse_body(spec: &str, err: &dyn Fn(String) -> Error) -> Result<Self, Error> {
        let (name, args) = match spec.trim().split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (spec.trim(), None),
        };
        let count = |a: &str, what: &str| -> Result<usize, Error> {
            match a.trim().parse::<usize>() {
                Ok(n) if (1..=MAX_SIZE).contains(&n) => Ok(n),
                _ => Err(err(format!(
                    "{what} must be a whole number from 1 to {MAX_SIZE}, got `{a}`"
                ))),
            }
        };
        let optional = |default: usize, what: &str| args.map_or(Ok(default), |a| count(a, what));
        match name {
            "whole" if args.is_none() => Ok(ChunkerSpec::Whole),
            "words" => {
                let args = args.unwrap_or("dynamic");
                let mut parts = args.split(',');
                let size = match parts.next().unwrap_or("").trim() {
                    "dynamic" => WordsSize::Dynamic,
                    n => WordsSize::Fixed(count(n, "the window size")?),
                };
                let overlap = match parts.next() {
                    None => 0,
                    Some(p) => match p.trim().strip_prefix("overlap=") {
                        Some(m) => m.trim().parse::<usize>().map_err(|_| {
                            err(format!("overlap must be a whole number, got `{m}`"))
                        })?,
                        None => return Err(err(format!("expected `overlap=M`, got `{p}`"))),
                    },
                };
                if parts.next().is_some() {
                    return Err(err("expected `words:N[,overlap=M]` or `words:dynamic`".into()));
                }
                match size {
                    WordsSize::Fixed(n) if overlap >= n => Err(err(format!(
                        "overlap ({overlap}) must be smaller than the window ({n})"
                    ))),
                    WordsSize::Dynamic if overlap > 0 => {
                        Err(err("words:dynamic takes no overlap".into()))
                    }
                    WordsSize::Fixed(_) | WordsSize::Dynamic => {
                        Ok(ChunkerSpec::Words { size, overlap })
                    }
                }
            }
            "sentences" => {
                Ok(ChunkerSpec::Sentences { per_chunk: optional(1, "sentences per chunk")? })
            }
            "paragraphs" => {
                Ok(ChunkerSpec::Paragraphs { per_chunk: optional(1, "paragraphs per chunk")? })
            }
            "markdown" => Ok(ChunkerSpec::Markdown {
                max: optional(256, "the maximum size")?,
                unit: SizeUnit::Words,
            }),
            "semantic" => {
                let mut parts = args.unwrap_or("").split(',').map(str::trim);
                let max = match parts.next() {
                    None | Some("") => 256,
                    Some(n) => count(n, "the maximum size")?,
                };
                let percentile = match parts.next() {
                    None => 95,
                    Some(p) => match p.strip_prefix("p=").and_then(|v| v.parse::<u8>().ok()) {
                        Some(v) if (1..=99).contains(&v) => v,
                        _ => {
                            return Err(err(format!(
                                "expected `p=P` with P from 1 to 99, got `{p}`"
                            )));
                        }
                    },
                };
                if parts.next().is_some() {
                    return Err(err("expected `semantic[:MAX][,p=P]`".into()));
                }
                Ok(ChunkerSpec::Semantic { max, percentile, unit: SizeUnit::Words })
            }
            "hierarchy" => {
                let sizes = match args {
                    None => vec![2048, 512, 128],
                    Some(a) => a
                        .split(',')
                        .map(|s| count(s, "each level size"))
                        .collect::<Result<_, _>>()?,
                };
                if sizes.len() < 2 {
                    return Err(err("a hierarchy needs at least two levels, e.g. 512,128".into()));
                }
                if sizes.windows(2).any(|w| w[1] >= w[0]) {
                    return Err(err("level sizes must decrease, largest first".into()));
                }
                Ok(ChunkerSpec::Hierarchy { sizes, unit: SizeUnit::Words })
            }
            _ => Err(err(format!("unknown chunker; expected one of:\n{}", ChunkerSpec::HELP))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! parses {
        ($($name:ident: $input:expr => $canonical:expr,)*) => {$(
            #[test]
            fn $name() {
                let spec: ChunkerSpec = $input.parse().unwrap();
                assert_eq!(spec.to_string(), $canonical);
                assert_eq!(spec.to_string().parse::<ChunkerSpec>().unwrap(), spec, "round trip");
            }
        )*};
    }

    parses! {
        whole: "whole" => "whole",
        words_fixed: "words:100" => "words:100",
        words_overlap: "words:100,overlap=20" => "words:100,overlap=20",
        words_default_is_dynamic: "words" => "words:dynamic",
        words_dynamic: "words:dynamic" => "words:dynamic",
        sentences_default: "sentences" => "sentences:1",
        sentences_n: "sentences:3" => "sentences:3",
        paragraphs_default: "paragraphs" => "paragraphs:1",
        markdown_default: "markdown" => "markdown:256",
        markdown_n: " markdown:64 " => "markdown:64",
        hierarchy_default: "hierarchy" => "hierarchy:2048,512,128",
        hierarchy_two: "hierarchy:512,128" => "hierarchy:512,128",
        semantic_default: "semantic" => "semantic:256,p=95",
        semantic_full: "semantic:120,p=80" => "semantic:120,p=80",
        markdown_tokens: "markdown:128,unit=tokens" => "markdown:128,unit=tokens",
        markdown_words_is_the_default: "markdown:128,unit=words" => "markdown:128",
        hierarchy_tokens: "hierarchy:512,128, unit=tokens" => "hierarchy:512,128,unit=tokens",
        semantic_tokens: "semantic:100,p=90,unit=tokens" => "semantic:100,p=90,unit=tokens",
    }

    macro_rules! rejects {
        ($($name:ident: $input:expr => $needle:expr,)*) => {$(
            #[test]
            fn $name() {
                let err = $input.parse::<ChunkerSpec>().unwrap_err().to_string();
                assert!(err.contains($needle), "{err:?} should mention {:?}", $needle);
            }
        )*};
    }

    rejects! {
        unknown: "sentense" => "unknown chunker",
        zero: "words:0" => "from 1 to",
        not_number: "markdown:lots" => "got `lots`",
        overlap_too_big: "words:10,overlap=10" => "smaller than the window",
        overlap_garbage: "words:10,ovl=3" => "expected `overlap=M`",
        dynamic_overlap: "words:dynamic,overlap=2" => "no overlap",
        hierarchy_one_level: "hierarchy:512" => "at least two levels",
        hierarchy_increasing: "hierarchy:128,512" => "must decrease",
        whole_with_args: "whole:3" => "unknown chunker",
        huge: "words:99999999999" => "from 1 to",
        semantic_bad_percentile: "semantic:100,p=100" => "P from 1 to 99",
        semantic_garbage: "semantic:100,q=3" => "expected `p=P`",
        words_in_tokens: "words:100,unit=tokens" => "apply to markdown, semantic and hierarchy",
        unknown_unit: "markdown:100,unit=bytes" => "expected words or tokens",
    }

    #[test]
    fn dynamic_size_follows_the_clamp_rule() {
        assert_eq!(WordsSize::Dynamic.for_words(10), 18);
        assert_eq!(WordsSize::Dynamic.for_words(400), 100);
        assert_eq!(WordsSize::Dynamic.for_words(10_000), 150);
    }
}
