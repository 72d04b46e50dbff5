//! Which documents a search may return, by their metadata: one definition, so every backend and
//! every front end filters alike.
//!
//! The JSON form (HTTP, MCP, Python; the operator names LangChain's filter dicts use):
//! - `{"KEY": VALUE}`: the document's value equals VALUE, or is an array holding it, or VALUE
//!   is an array holding the document's (any of). Several keys must all match.
//! - `{"KEY": {"$op": VALUE, …}}` with `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`,
//!   `$nin`, `$exists`, `$prefix` (strings) and `$contains` (an array holding VALUE, or a
//!   string holding it); several operators must all hold.
//! - `{"$and": [F, …]}`, `{"$or": [F, …]}`, `{"$not": F}`.
//!
//! Comparisons: numbers as numbers; strings that both read as ISO 8601 dates (`2024-05-01`,
//! `2024-05-01T10:00:00Z`, with an offset or fractions) as instants; other strings in Unicode
//! code-point order. A document array matches when any element does. `$ne`, `$nin` and `$not`
//! are the negation of their opposite, so a document without the key passes them. The compact
//! form users type (`year>=2020 and lang in [zh, ja]`) is read by [`MetadataFilter::parse`]
//! into this form.

use serde::Serialize;
use serde_json::{Map, Value};

/// A metadata filter (see the module docs): the JSON form, checked when it is built.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct MetadataFilter(pub Map<String, Value>);

/// Deepest nesting of `$and`, `$or` and `$not` (and of parentheses and `not` in the compact
/// form) a filter may have. Every walk of a filter recurses along its nesting, so the bound is
/// what keeps a hostile filter (`((((…` 10,000 deep) from overflowing a thread's stack.
pub const MAX_FILTER_DEPTH: usize = 32;

/// Most conditions (a key's test, or an empty branch of `$and`/`$or`) in one filter. A wider one
/// would only cost the database its expression limits; Elasticsearch's long-standing clause
/// limit was about this size.
pub const MAX_FILTER_CONDITIONS: usize = 1_024;

/// Most values in all of a filter's lists together (`$in`, `$nin`, `KEY: [A, B]`): each is one
/// bound SQL parameter, and SQLite takes at most 32,766 in a statement.
pub const MAX_FILTER_VALUES: usize = 10_000;

/// Operators on a key's value.
const OPERATORS: [&str; 11] =
    ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$prefix", "$contains"];

impl<'de> serde::Deserialize<'de> for MetadataFilter {
    /// A filter whose operators are checked: a misspelt one is an error naming where it is.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::deserialize(d)?;
        let filter = MetadataFilter(map);
        filter.check().map_err(serde::de::Error::custom)?;
        Ok(filter)
    }
}

impl MetadataFilter {
    /// Whether a document's metadata (an object, or null) passes.
    pub fn matches(&self, metadata: &Value) -> bool {
        object_matches(&self.0, metadata)
    }

    /// Whether the filter has no conditions (every document passes).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// That every operator is known and has a value of the right kind; the error names the
    /// place (`filter.$or[1].year.$gte`).
    pub fn check(&self) -> Result<(), String> {
        check_object(&self.0, "filter", &mut Budget::default(), 0)
    }

    /// All of `filters` (an empty list: every document).
    pub fn all(mut filters: Vec<MetadataFilter>) -> MetadataFilter {
        if filters.len() <= 1 {
            return filters.pop().unwrap_or_default();
        }
        let list = filters.into_iter().map(|f| Value::Object(f.0)).collect();
        MetadataFilter(Map::from_iter([("$and".to_string(), Value::Array(list))]))
    }

    /// The metadata keys the filter names, sorted, each once.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        named_keys(&self.0, &mut keys);
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Keys compared for equality with a text that starts like an operator: `year=>2020` reads
    /// as `year` equal to the text `>2020`, which is seldom what was meant.
    pub fn texts_like_operators(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        texts_like_operators(&self.0, &mut found);
        found
    }

    /// The filter of conditions typed in the compact form, all of which must match.
    pub fn from_conditions<'a>(
        conditions: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, String> {
        let parsed = conditions.into_iter().map(Self::parse).collect::<Result<Vec<_>, _>>()?;
        // Each was within the bounds; together they must be too.
        let all = Self::all(parsed);
        all.check()?;
        Ok(all)
    }
}

fn named_keys(filter: &Map<String, Value>, keys: &mut Vec<String>) {
    for (key, value) in filter {
        match key.as_str() {
            "$and" | "$or" => {
                for f in value.as_array().into_iter().flatten().filter_map(Value::as_object) {
                    named_keys(f, keys);
                }
            }
            "$not" => value.as_object().into_iter().for_each(|f| named_keys(f, keys)),
            _ => keys.push(key.clone()),
        }
    }
}

fn texts_like_operators(filter: &Map<String, Value>, found: &mut Vec<(String, String)>) {
    for (key, value) in filter {
        let nested = |found: &mut Vec<_>, f: &Value| {
            if let Some(f) = f.as_object() {
                texts_like_operators(f, found);
            }
        };
        match (key.as_str(), value) {
            ("$and" | "$or", Value::Array(list)) => list.iter().for_each(|f| nested(found, f)),
            ("$not", f) => nested(found, f),
            (_, Value::String(text)) if text.starts_with(['<', '>', '=', '!', '~', '^']) => {
                found.push((key.clone(), text.clone()));
            }
            _ => {}
        }
    }
}

fn object_matches(filter: &Map<String, Value>, metadata: &Value) -> bool {
    filter.iter().all(|(key, want)| match key.as_str() {
        "$and" => want.as_array().is_some_and(|l| l.iter().all(|f| value_matches(f, metadata))),
        "$or" => want.as_array().is_some_and(|l| l.iter().any(|f| value_matches(f, metadata))),
        "$not" => !value_matches(want, metadata),
        _ => key_matches(metadata.get(key), want),
    })
}

fn value_matches(filter: &Value, metadata: &Value) -> bool {
    filter.as_object().is_some_and(|f| object_matches(f, metadata))
}

/// Whether a key's value (`None`: the document lacks it) passes `want`: a plain value, or an
/// object of operators.
fn key_matches(have: Option<&Value>, want: &Value) -> bool {
    match want.as_object().filter(|o| o.keys().any(|k| k.starts_with('$'))) {
        Some(ops) => ops.iter().all(|(op, v)| operator_holds(have, op, v)),
        None => have.is_some_and(|h| plain_equal(h, want)),
    }
}

/// The plain form's equality: equal, or one side an array holding the other.
fn plain_equal(have: &Value, want: &Value) -> bool {
    have == want
        || have.as_array().is_some_and(|a| a.contains(want))
        || want.as_array().is_some_and(|a| a.contains(have))
}

fn operator_holds(have: Option<&Value>, op: &str, v: &Value) -> bool {
    let any = |test: &dyn Fn(&Value) -> bool| match have {
        Some(Value::Array(items)) => items.iter().any(test),
        Some(h) => test(h),
        None => false,
    };
    match op {
        "$eq" => any(&|h| h == v),
        "$ne" => !any(&|h| h == v),
        "$gt" => any(&|h| compare(h, v).is_some_and(std::cmp::Ordering::is_gt)),
        "$gte" => any(&|h| compare(h, v).is_some_and(std::cmp::Ordering::is_ge)),
        "$lt" => any(&|h| compare(h, v).is_some_and(std::cmp::Ordering::is_lt)),
        "$lte" => any(&|h| compare(h, v).is_some_and(std::cmp::Ordering::is_le)),
        "$in" => v.as_array().is_some_and(|list| any(&|h| list.contains(h))),
        "$nin" => !v.as_array().is_some_and(|list| any(&|h| list.contains(h))),
        "$exists" => have.is_some() == v.as_bool().unwrap_or(true),
        "$prefix" => {
            v.as_str().is_some_and(|p| any(&|h| h.as_str().is_some_and(|s| s.starts_with(p))))
        }
        "$contains" => match have {
            Some(Value::Array(items)) => items.contains(v),
            Some(Value::String(s)) => v.as_str().is_some_and(|part| s.contains(part)),
            _ => false,
        },
        _ => false,
    }
}

/// The order of two values of one kind: numbers, dates, or strings.
fn compare(have: &Value, want: &Value) -> Option<std::cmp::Ordering> {
    match (have, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => match (instant(a), instant(b)) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => Some(a.cmp(b)),
        },
        _ => None,
    }
}

/// An ISO 8601 date or date-time as seconds (and nanoseconds) since 0000-03-01 UTC, for
/// ordering; `None` for anything else. A date alone is its midnight UTC.
fn instant(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    let digits = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut seconds = days_from_civil(year, month, day) * 86_400;
    let mut nanos = 0u32;
    let mut rest = &s[10..];
    if let Some(time) = rest.strip_prefix(['T', ' ']) {
        let (h, m) = (digits(11, 2)?, digits(14, 2)?);
        if time.as_bytes().get(2) != Some(&b':') {
            return None;
        }
        let mut at = 16;
        let mut sec = 0;
        if s.as_bytes().get(at) == Some(&b':') {
            sec = digits(at + 1, 2)?;
            at += 3;
            if s.as_bytes().get(at) == Some(&b'.') {
                let frac: String = s[at + 1..].chars().take_while(char::is_ascii_digit).collect();
                at += 1 + frac.len();
                let padded = format!("{frac:0<9}");
                nanos = padded.get(..9)?.parse().ok()?;
            }
        }
        if h > 23 || m > 59 || sec > 60 {
            return None;
        }
        seconds += h * 3600 + m * 60 + sec;
        rest = &s[at..];
        let offset = match rest {
            "" | "Z" | "z" => 0,
            _ => {
                let sign = match rest.as_bytes()[0] {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                let (oh, om) =
                    (rest.get(1..3)?.parse::<i64>().ok()?, rest.get(4..6)?.parse::<i64>().ok()?);
                if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                    return None;
                }
                sign * (oh * 3600 + om * 60)
            }
        };
        seconds -= offset;
        rest = "";
    }
    rest.is_empty().then_some((seconds, nanos))
}

/// Days since 0000-03-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe
}

/// What a filter has used of its bounds so far, while it is checked.
#[derive(Default)]
struct Budget {
    conditions: usize,
    values: usize,
}

impl Budget {
    fn condition(&mut self, at: &str) -> Result<(), String> {
        self.conditions += 1;
        if self.conditions > MAX_FILTER_CONDITIONS {
            return Err(format!(
                "`{at}`: the filter has more than {MAX_FILTER_CONDITIONS} conditions; narrow it \
                 with fewer, or with `$in` lists"
            ));
        }
        Ok(())
    }

    fn values(&mut self, want: &Value, at: &str) -> Result<(), String> {
        let lists = match want {
            Value::Array(list) => list.len(),
            Value::Object(ops) => ops.values().filter_map(Value::as_array).map(Vec::len).sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
        };
        self.values += lists;
        if self.values > MAX_FILTER_VALUES {
            return Err(format!(
                "`{at}`: the filter's lists hold more than {MAX_FILTER_VALUES} values in all"
            ));
        }
        Ok(())
    }
}

/// Checks `filter`, found `depth` levels of `$and`/`$or`/`$not` deep, against the operators
/// and the bounds; `budget` counts across the whole filter.
fn check_object(
    filter: &Map<String, Value>,
    at: &str,
    budget: &mut Budget,
    depth: usize,
) -> Result<(), String> {
    for (key, want) in filter {
        let here = format!("{at}.{key}");
        let nested = matches!(key.as_str(), "$and" | "$or" | "$not");
        if nested && depth >= MAX_FILTER_DEPTH {
            return Err(format!(
                "`{here}`: the filter nests `$and`, `$or` and `$not` more than \
                 {MAX_FILTER_DEPTH} deep"
            ));
        }
        match key.as_str() {
            "$and" | "$or" => {
                let list =
                    want.as_array().ok_or_else(|| format!("`{here}` must be a list of filters"))?;
                for (i, f) in list.iter().enumerate() {
                    let here = format!("{here}[{i}]");
                    let f =
                        f.as_object().ok_or_else(|| format!("`{here}` must be a filter object"))?;
                    // An empty branch tests nothing, but a list of them still costs SQL.
                    if f.is_empty() {
                        budget.condition(&here)?;
                    }
                    check_object(f, &here, budget, depth + 1)?;
                }
            }
            "$not" => {
                let f =
                    want.as_object().ok_or_else(|| format!("`{here}` must be a filter object"))?;
                check_object(f, &here, budget, depth + 1)?;
            }
            k if k.starts_with('$') => {
                return Err(format!(
                    "`{here}`: `{k}` is not a logical operator; expected $and, $or or $not, or a \
                     metadata key"
                ));
            }
            _ => {
                budget.condition(&here)?;
                budget.values(want, &here)?;
                check_operators(want, &here)?;
            }
        }
    }
    Ok(())
}

fn check_operators(want: &Value, at: &str) -> Result<(), String> {
    let Some(ops) = want.as_object().filter(|o| o.keys().any(|k| k.starts_with('$'))) else {
        return Ok(());
    };
    for (op, v) in ops {
        let here = format!("{at}.{op}");
        if !OPERATORS.contains(&op.as_str()) {
            return Err(format!(
                "`{here}`: unknown operator; expected one of {}",
                OPERATORS.join(", ")
            ));
        }
        let kind_ok = match op.as_str() {
            "$in" | "$nin" => v.is_array(),
            "$exists" => v.is_boolean(),
            "$prefix" => v.is_string(),
            "$gt" | "$gte" | "$lt" | "$lte" => v.is_number() || v.is_string(),
            _ => true,
        };
        if !kind_ok {
            let wanted = match op.as_str() {
                "$in" | "$nin" => "a list",
                "$exists" => "true or false",
                "$prefix" => "a string",
                _ => "a number, or a string (a date in ISO 8601)",
            };
            return Err(format!("`{here}` must be {wanted}, not {v}"));
        }
    }
    Ok(())
}
