//! The compact filter form users type (`ckeep search --filter`, the playground's filter box),
//! read into [`MetadataFilter`]'s JSON form:
//!
//! ```text
//! year>=2020 and (lang=zh or lang=ja) and not draft=true
//! source^=docs/guides  tags~rust  author exists  lang in [zh, ja]  lang not in [en]
//! ```
//!
//! Conditions are `KEY OP VALUE` with `=`, `!=`, `>`, `>=`, `<`, `<=`, `^=` (starts with) and
//! `~` (contains), or `KEY in [V, …]`, `KEY not in [V, …]`, `KEY exists`; joined by `and`, `or`
//! (`and` binds tighter), negated by `not`, grouped by parentheses. A value is JSON when it
//! reads as JSON (`2020`, `true`, `"a b"`, `["a","b"]`), else the text up to the next ` and `,
//! ` or ` or `)`, trimmed, as a string; `KEY=VALUE` keeps its plain meaning (equal, or an array
//! holding it). Errors name the character where reading stopped.

use serde_json::{Map, Value};

use crate::MetadataFilter;
use crate::filter::{MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH};

/// What [`MetadataFilter::parse`] accepts, for `--help` and the playground.
pub const FILTER_HELP: &str = "Only documents whose metadata passes: `KEY=VALUE` (equal, or a \
    list holding it), `KEY!=VALUE`, `KEY>VALUE`, `>=`, `<`, `<=` (numbers, or ISO 8601 dates), \
    `KEY^=PREFIX`, `KEY~PART` (a list or text holding it), `KEY in [A, B]`, `KEY not in [A]`, \
    `KEY exists`; joined by `and`/`or`, negated by `not`, grouped by parentheses. VALUE is JSON \
    when it reads as JSON (2020, true, \"a b\"), else text. Several filters must all match.";

impl MetadataFilter {
    /// What a filter typed in the compact form looks like (see [`FILTER_HELP`]).
    pub const CONDITION_HELP: &str = FILTER_HELP;

    /// Reads the compact form (see the module docs).
    pub fn parse(text: &str) -> Result<MetadataFilter, String> {
        if text.len() > MAX_FILTER_TEXT_BYTES {
            return Err(format!(
                "the filter is {} bytes; the compact form takes at most {MAX_FILTER_TEXT_BYTES} \
                 (a longer one is a JSON filter)",
                text.len()
            ));
        }
        let mut p = Parser { text, at: 0, depth: 0, conditions: 0 };
        let filter = p.or()?;
        p.space();
        if p.at < text.len() {
            return Err(p.error("expected `and`, `or` or the end"));
        }
        let filter = MetadataFilter(filter);
        filter.check()?;
        Ok(filter)
    }
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
    /// Parentheses and `not`s open around the place being read: the parser recurses on each,
    /// so it stops at [`MAX_FILTER_DEPTH`] instead of at the end of the thread's stack.
    depth: usize,
    /// Conditions read so far, stopped at [`MAX_FILTER_CONDITIONS`] before the rest is read.
    conditions: usize,
}

/// Longest filter in the compact form: each condition looks ahead for where its value ends,
/// so the reading time grows with conditions × length, and a typed filter is short.
pub const MAX_FILTER_TEXT_BYTES: usize = 64 * 1024;

/// Comparison operators, longest first so `>=` is not read as `>`.
const COMPARISONS: [(&str, &str); 8] = [
    (">=", "$gte"),
    ("<=", "$lte"),
    ("!=", "$ne"),
    ("^=", "$prefix"),
    (">", "$gt"),
    ("<", "$lt"),
    ("~", "$contains"),
    ("=", "="),
];

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn space(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    fn error(&self, what: &str) -> String {
        let column = self.text[..self.at].chars().count() + 1;
        format!("filter `{}`: at character {column}: {what}", ckeep_core::opening(self.text))
    }

    /// Takes the keyword `word` (any case) when it stands alone next.
    fn keyword(&mut self, word: &str) -> bool {
        self.space();
        let rest = self.rest();
        let ends = rest.get(word.len()..).is_some_and(|after| {
            after.is_empty()
                || after.starts_with(|c: char| c.is_whitespace() || c == '(' || c == '[')
        });
        if ends && rest[..word.len()].eq_ignore_ascii_case(word) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Map<String, Value>, String> {
        let mut parts = vec![self.and()?];
        while self.keyword("or") {
            parts.push(self.and()?);
        }
        Ok(join("$or", parts))
    }

    fn and(&mut self) -> Result<Map<String, Value>, String> {
        let mut parts = vec![self.unary()?];
        while self.keyword("and") {
            parts.push(self.unary()?);
        }
        Ok(join("$and", parts))
    }

    fn unary(&mut self) -> Result<Map<String, Value>, String> {
        if self.keyword("not") {
            let inner = self.nested(Self::unary)?;
            return Ok(Map::from_iter([("$not".to_string(), Value::Object(inner))]));
        }
        self.space();
        if self.rest().starts_with('(') {
            self.at += 1;
            let inner = self.nested(Self::or)?;
            self.space();
            if !self.rest().starts_with(')') {
                return Err(self.error("expected `)`"));
            }
            self.at += 1;
            return Ok(inner);
        }
        self.condition()
    }

    /// `read` one level deeper, unless that is deeper than a filter may nest.
    fn nested(
        &mut self,
        read: fn(&mut Self) -> Result<Map<String, Value>, String>,
    ) -> Result<Map<String, Value>, String> {
        if self.depth >= MAX_FILTER_DEPTH {
            return Err(self
                .error(&format!("parentheses and `not` nest more than {MAX_FILTER_DEPTH} deep")));
        }
        self.depth += 1;
        let inner = read(self);
        self.depth -= 1;
        inner
    }

    fn condition(&mut self) -> Result<Map<String, Value>, String> {
        self.conditions += 1;
        if self.conditions > MAX_FILTER_CONDITIONS {
            return Err(self.error(&format!("more than {MAX_FILTER_CONDITIONS} conditions")));
        }
        self.space();
        let key_len = self
            .rest()
            .find(|c: char| c.is_whitespace() || "=!<>^~()[]".contains(c))
            .unwrap_or(self.rest().len());
        if key_len == 0 {
            return Err(self.error("expected a metadata key"));
        }
        let key = self.rest()[..key_len].to_string();
        self.at += key_len;
        let condition = |value: Value| Map::from_iter([(key.clone(), value)]);
        if self.keyword("exists") {
            return Ok(condition(op("$exists", Value::Bool(true))));
        }
        let negated = self.keyword("not");
        if self.keyword("in") {
            let list = self.value()?;
            if !list.is_array() {
                return Err(self.error("expected a list after `in`, as [A, B]"));
            }
            return Ok(condition(op(if negated { "$nin" } else { "$in" }, list)));
        }
        if negated {
            return Err(self.error("expected `in` after `not`"));
        }
        self.space();
        let Some((symbol, name)) = COMPARISONS.iter().find(|(s, _)| self.rest().starts_with(s))
        else {
            return Err(
                self.error("expected an operator: =, !=, >, >=, <, <=, ^=, ~, in or exists")
            );
        };
        self.at += symbol.len();
        let value = self.value()?;
        Ok(condition(if *name == "=" { value } else { op(name, value) }))
    }

    /// A JSON value, or bare text up to ` and `, ` or ` or `)` (JSON when all of it reads
    /// as JSON: `2 beta` is text).
    fn value(&mut self) -> Result<Value, String> {
        self.space();
        let rest = self.rest();
        if rest.starts_with('[') {
            return self.list();
        }
        if rest.starts_with('"') {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            return match stream.next() {
                Some(Ok(v)) => {
                    self.at += stream.byte_offset();
                    Ok(v)
                }
                _ => Err(self.error("a quoted value that is not a JSON string")),
            };
        }
        let end = bare_end(rest);
        let text = rest[..end].trim().to_string();
        if text.is_empty() {
            return Err(self.error("expected a value"));
        }
        self.at += end;
        Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// `[A, B, …]`: JSON items, or bare words.
    fn list(&mut self) -> Result<Value, String> {
        let rest = self.rest();
        if let Ok(v) = serde_json::from_str::<Value>(&rest[..rest.find(']').map_or(0, |i| i + 1)]) {
            self.at += rest.find(']').expect("found above") + 1;
            return Ok(v);
        }
        let Some(close) = rest.find(']') else {
            return Err(self.error("expected `]` to close the list"));
        };
        let items = rest[1..close]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string())))
            .collect();
        self.at += close + 1;
        Ok(Value::Array(items))
    }
}

/// Where bare text ends: before ` and `, ` or ` (any case) or `)`.
fn bare_end(rest: &str) -> usize {
    let lower = rest.to_ascii_lowercase();
    let mut end = rest.find(')').unwrap_or(rest.len());
    for word in [" and ", " or ", "\tand ", "\tor "] {
        if let Some(i) = lower.find(word) {
            end = end.min(i);
        }
    }
    end
}

fn op(name: &str, value: Value) -> Value {
    Value::Object(Map::from_iter([(name.to_string(), value)]))
}

/// One part alone, or the parts under `$and`/`$or`.
fn join(how: &str, mut parts: Vec<Map<String, Value>>) -> Map<String, Value> {
    if parts.len() == 1 {
        return parts.pop().expect("one");
    }
    let list = parts.into_iter().map(Value::Object).collect();
    Map::from_iter([(how.to_string(), Value::Array(list))])
}
