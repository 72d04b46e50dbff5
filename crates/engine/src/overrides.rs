//! A strategy given in parts: the typed overrides the CLI's flags build, and the JSON fields
//! (strings, as users type them) that HTTP, MCP and Python send, parsed here once.

use std::collections::BTreeMap;

use ckeep_index::Aggregation;
use serde::{Deserialize, Serialize};

use crate::diversify::Diversify;
use crate::error::Error;
use crate::expand::Expansion;
use crate::represent::{Representation, parse_list};
use crate::strategy::{Level, Mode, Strategy};
use crate::summarize::Summarizer;

/// Parts of a strategy given one by one (command-line flags, keyword arguments), each
/// replacing the spec's part when present.
#[derive(Debug, Clone, Default)]
pub struct StrategyOverrides {
    /// Number of results.
    pub k: Option<usize>,
    /// Scoring mode.
    pub mode: Option<Mode>,
    /// Result level.
    pub level: Option<Level>,
    /// Chunk-to-document aggregation.
    pub agg: Option<Aggregation>,
    /// Context expansion.
    pub expand: Option<Expansion>,
    /// Diversification (maximal marginal relevance).
    pub diversify: Option<Diversify>,
    /// Representations searched.
    pub repr: Option<Vec<Representation>>,
    /// Summaries for summary-based representations.
    pub summarizer: Option<Summarizer>,
    /// Embedding model.
    pub model: Option<String>,
    /// Exact dense scan.
    pub exact: Option<bool>,
    /// A reranker server (`URL[#MODEL]`).
    pub rerank: Option<String>,
    /// How many results the reranker scores.
    pub rerank_k: Option<usize>,
}

impl StrategyOverrides {
    /// `strategy` with these parts in place of its own.
    pub fn apply(self, strategy: &mut Strategy) {
        let Self {
            k,
            mode,
            level,
            agg,
            expand,
            diversify,
            repr,
            summarizer,
            model,
            exact,
            rerank,
            rerank_k,
        } = self;
        strategy.k = k.unwrap_or(strategy.k);
        if mode == Some(Mode::Dense) {
            // BM25's parameters (from a spec or the store's default) do not follow a switch to a
            // mode without BM25, which would refuse them.
            strategy.lexical = crate::lexical::LexicalParams::default();
        }
        strategy.mode = mode.unwrap_or(strategy.mode);
        strategy.level = level.unwrap_or(strategy.level);
        strategy.agg = agg.unwrap_or(strategy.agg);
        strategy.expand = expand.unwrap_or(strategy.expand);
        strategy.diversify = diversify.unwrap_or(strategy.diversify);
        if let Some(repr) = repr {
            strategy.repr = repr;
        }
        if summarizer.is_some() {
            strategy.summarizer = summarizer;
        }
        if model.is_some() {
            strategy.model = model;
        }
        strategy.exact = exact.unwrap_or(strategy.exact);
        if rerank.is_some() {
            strategy.rerank = rerank;
        }
        strategy.rerank_k = rerank_k.unwrap_or(strategy.rerank_k);
    }
}

/// A strategy as a request's fields: a whole spec, and parts that replace the spec's. What
/// `POST /search` accepts beside `query` (flattened into its body), what MCP's `search` tool
/// and Python's `Store.search` fill in.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StrategyFields {
    /// A whole strategy spec (`mode=hybrid,level=doc,agg=mean:3`); default: the default strategy.
    #[serde(default)]
    pub strategy: Option<String>,
    /// Number of results.
    #[serde(default)]
    pub k: Option<u64>,
    /// `bm25`, `dense` or `hybrid[:FUSION]`.
    #[serde(default)]
    pub mode: Option<String>,
    /// `chunk` or `doc`.
    #[serde(default)]
    pub level: Option<String>,
    /// Chunk-to-document aggregation (`max`, `sum`, `mean:N`).
    #[serde(default, alias = "aggregate")]
    pub agg: Option<String>,
    /// Context expansion (`none`, `window:W`, `parent`, `doc`, `merge:R`).
    #[serde(default)]
    pub expand: Option<String>,
    /// Diversification: `none` or `mmr[:λ[:N]]`.
    #[serde(default)]
    pub diversify: Option<String>,
    /// Representations searched, comma-separated.
    #[serde(default)]
    pub repr: Option<String>,
    /// Summaries for summary-based representations.
    #[serde(default)]
    pub summarizer: Option<String>,
    /// Exact dense scan.
    #[serde(default)]
    pub exact: Option<bool>,
    /// The embedding model (default: the store's).
    #[serde(default)]
    pub model: Option<String>,
    /// A reranker server (`URL[#MODEL]`).
    #[serde(default)]
    pub rerank: Option<String>,
    /// How many results the reranker scores.
    #[serde(default)]
    pub rerank_k: Option<u64>,
}

impl StrategyFields {
    /// The strategy these fields make: the spec (or `default`, the store's
    /// [`crate::Searcher::default_strategy`]) with the parts in place of its own. A value that
    /// does not parse is a user error naming its field.
    pub fn resolve(&self, default: Strategy) -> Result<Strategy, Error> {
        let mut strategy = self.spec()?.unwrap_or(default);
        self.overrides()?.apply(&mut strategy);
        Ok(strategy)
    }

    /// The whole spec, if one was given.
    pub fn spec(&self) -> Result<Option<Strategy>, Error> {
        self.strategy.as_deref().map(str::parse).transpose()
    }

    /// The parts given one by one, parsed.
    pub fn overrides(&self) -> Result<StrategyOverrides, Error> {
        let count = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let repr = self.repr.as_deref().map(parse_list).transpose();
        Ok(StrategyOverrides {
            k: count(self.k),
            mode: field("mode", self.mode.as_deref())?,
            level: field("level", self.level.as_deref())?,
            agg: field("agg", self.agg.as_deref())?,
            expand: field("expand", self.expand.as_deref())?,
            diversify: field("diversify", self.diversify.as_deref())?,
            repr: repr.map_err(|e| Error::Invalid(format!("`repr`: {e}")))?,
            summarizer: field("summarizer", self.summarizer.as_deref())?,
            model: self.model.clone(),
            exact: self.exact,
            rerank: self.rerank.clone(),
            rerank_k: count(self.rerank_k),
        })
    }
}

/// What each part of a strategy can be set to in a form, the defaults, and how a filter
/// condition is typed: `GET /strategy`, which the playground builds its controls from, so its
/// menus follow the engine instead of a copy.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StrategyChoices {
    /// Typical values of each part, by field name (`mode`, `level`, `agg`, `expand`,
    /// `diversify`).
    pub choices: BTreeMap<&'static str, Vec<String>>,
    /// The default strategy's value of each part, and `k`.
    pub defaults: BTreeMap<&'static str, String>,
    /// How one filter is written (an example of the compact form) and read.
    pub filter: FilterSyntax,
}

/// How a filter condition is typed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FilterSyntax {
    /// Its form.
    pub condition: &'static str,
    /// How it is read.
    pub help: &'static str,
}

impl StrategyChoices {
    /// The engine's choices.
    pub fn new() -> Self {
        let list = |values: &[&str]| values.iter().map(ToString::to_string).collect::<Vec<_>>();
        let d = Strategy::default();
        let choices = BTreeMap::from([
            ("mode", list(&["bm25", "dense", "hybrid", "hybrid:linear=0.5"])),
            ("level", list(&["chunk", "doc"])),
            ("agg", list(&["max", "sum", "mean:3"])),
            ("expand", list(&["none", "window:1", "window:2", "parent", "doc"])),
            ("diversify", list(&["none", "mmr:0.5", "mmr:0.7"])),
        ]);
        let defaults = BTreeMap::from([
            ("mode", d.mode.to_string()),
            ("level", d.level.to_string()),
            ("agg", d.agg.to_string()),
            ("expand", d.expand.to_string()),
            ("diversify", d.diversify.to_string()),
            ("k", d.k.to_string()),
        ]);
        let filter = FilterSyntax {
            condition: "year>=2020 and lang=zh",
            help: ckeep_store::MetadataFilter::CONDITION_HELP,
        };
        Self { choices, defaults, filter }
    }
}

impl Default for StrategyChoices {
    fn default() -> Self {
        Self::new()
    }
}

/// A field's value parsed, or a user error naming the field.
fn field<T>(name: &str, value: Option<&str>) -> Result<Option<T>, Error>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    value.map(|v| v.parse::<T>().map_err(|e| Error::Invalid(format!("`{name}`: {e}")))).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_the_parts_given() {
        let mut s: Strategy = "mode=dense,level=doc,agg=mean:3,k=5,exact=true".parse().unwrap();
        StrategyOverrides { k: Some(7), level: Some(Level::Chunk), ..Default::default() }
            .apply(&mut s);
        let want: Strategy = "mode=dense,level=chunk,agg=mean:3,k=7,exact=true".parse().unwrap();
        assert_eq!(s, want);
        StrategyOverrides { exact: Some(false), ..Default::default() }.apply(&mut s);
        assert!(!s.exact);
    }

    #[test]
    fn fields_override_the_spec_and_bad_values_name_their_field() {
        let fields: StrategyFields = serde_json::from_value(serde_json::json!({
            "strategy": "mode=hybrid,k=3,level=doc", "k": 5, "aggregate": "mean:2"
        }))
        .unwrap();
        let s = fields.resolve(Strategy::default()).unwrap();
        assert_eq!((s.k, s.level, s.agg), (5, Level::Doc, Aggregation::Mean(2)));
        assert!(matches!(s.mode, Mode::Hybrid(_)));
        let bad = StrategyFields { mode: Some("psychic".into()), ..StrategyFields::default() };
        let err = bad.resolve(Strategy::default()).unwrap_err();
        assert!(err.is_user_error() && err.to_string().starts_with("`mode`:"), "{err}");
        let bad = StrategyFields { strategy: Some("k=banana".into()), ..StrategyFields::default() };
        assert!(bad.resolve(Strategy::default()).unwrap_err().is_user_error());
    }

    #[test]
    fn every_choice_offered_parses_and_the_defaults_are_among_them() {
        let offered = StrategyChoices::new();
        for (part, values) in &offered.choices {
            for value in values {
                let mut fields = StrategyFields::default();
                let slot = match *part {
                    "mode" => &mut fields.mode,
                    "level" => &mut fields.level,
                    "agg" => &mut fields.agg,
                    "expand" => &mut fields.expand,
                    "diversify" => &mut fields.diversify,
                    other => panic!("no field {other}"),
                };
                *slot = Some(value.clone());
                fields
                    .resolve(Strategy::default())
                    .unwrap_or_else(|e| panic!("{part}={value}: {e}"));
            }
            assert!(values.contains(&offered.defaults[part]), "{part}: {:?}", offered.defaults);
        }
    }
}
