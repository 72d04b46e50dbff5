//! A metadata filter pushed down into SQL: a condition every document the filter passes also
//! meets, so the database skips most of the others (through an index where one helps) and
//! [`MetadataFilter::matches`] decides on the few it returns. The SQL never decides alone, so
//! the filter keeps one definition whatever the backend; a part SQL cannot narrow soundly
//! (negations, date strings, nested objects) becomes `TRUE` and costs only speed.
//!
//! SQLite reads the JSON with `json_each` (an array's elements, or a scalar itself); PostgreSQL
//! asks `metadata::jsonb @? jsonpath`, which the GIN index over `metadata::jsonb`
//! (`jsonb_path_ops`) answers for equality and `IN` without reading the documents.

use serde_json::{Map, Value};

use crate::MetadataFilter;

/// A bound parameter of a pushed-down condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlParam {
    Text(String),
    Int(i64),
    Real(f64),
}

/// The SQL dialect a condition is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // a build without the PostgreSQL store
pub(crate) enum Dialect {
    /// `?N` parameters, JSON1 functions over the `metadata` column.
    Sqlite,
    /// `$N` parameters, jsonpath over `metadata::jsonb`.
    Postgres,
}

/// A condition on the `metadata` column, with its parameters (numbered from 1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pushdown {
    pub sql: String,
    pub params: Vec<SqlParam>,
}

const TRUE: &str = "TRUE";

impl Pushdown {
    /// The condition `filter` pushes down in `dialect` (`TRUE` when nothing can be).
    pub fn of(filter: &MetadataFilter, dialect: Dialect) -> Self {
        let mut out = Self { sql: String::new(), params: Vec::new() };
        out.sql = out.object(&filter.0, dialect);
        out
    }

    fn bind(&mut self, param: SqlParam, dialect: Dialect) -> String {
        self.params.push(param);
        match dialect {
            Dialect::Sqlite => format!("?{}", self.params.len()),
            Dialect::Postgres => format!("${}", self.params.len()),
        }
    }

    fn object(&mut self, filter: &Map<String, Value>, dialect: Dialect) -> String {
        let parts: Vec<String> = filter
            .iter()
            .map(|(key, want)| match key.as_str() {
                "$and" => self.list(want, " AND ", dialect),
                "$or" => self.list(want, " OR ", dialect),
                "$not" => TRUE.to_string(),
                _ => self.key(key, want, dialect),
            })
            .filter(|p| p != TRUE)
            .collect();
        join(parts, " AND ")
    }

    fn list(&mut self, filters: &Value, op: &str, dialect: Dialect) -> String {
        let Some(list) = filters.as_array() else { return TRUE.into() };
        let bound = self.params.len();
        let parts: Vec<String> = list
            .iter()
            .map(|f| f.as_object().map_or(TRUE.into(), |f| self.object(f, dialect)))
            .collect();
        // A branch of an OR that narrows nothing makes the whole OR narrow nothing.
        if op == " OR " && (parts.is_empty() || parts.iter().any(|p| p == TRUE)) {
            self.params.truncate(bound); // the branches' parameters go with them
            return TRUE.into();
        }
        join(parts.into_iter().filter(|p| p != TRUE).collect(), op)
    }

    /// The condition on one key: a plain value or an object of operators.
    fn key(&mut self, key: &str, want: &Value, dialect: Dialect) -> String {
        let Some(path) = json_path(key) else { return TRUE.into() };
        let Some(ops) = want.as_object().filter(|o| o.keys().any(|k| k.starts_with('$'))) else {
            // Plain equality: the value itself, or any of a list (see `plain_equal`).
            return match want {
                Value::Array(list) if !list.is_empty() && list.iter().all(scalar) => {
                    // A document's list may hold this very list as an element (Rust decides).
                    let any = self.any_of(&path, list, dialect);
                    match dialect {
                        Dialect::Sqlite => {
                            let at = self.bind(SqlParam::Text(path.clone()), dialect);
                            format!(
                                "({any}) OR EXISTS (SELECT 1 FROM json_each(metadata, {at}) \
                                 WHERE type = 'array')"
                            )
                        }
                        // jsonpath's lax comparisons look inside nested lists themselves.
                        Dialect::Postgres => any,
                    }
                }
                v @ (Value::String(_) | Value::Number(_) | Value::Bool(_)) => {
                    self.any_of(&path, std::slice::from_ref(v), dialect)
                }
                Value::Null | Value::Array(_) | Value::Object(_) => TRUE.into(),
            };
        };
        let parts: Vec<String> = ops
            .iter()
            .map(|(op, v)| self.operator(&path, op, v, dialect))
            .filter(|p| p != TRUE)
            .collect();
        join(parts, " AND ")
    }

    /// One operator on the key at `path`.
    fn operator(&mut self, path: &str, op: &str, v: &Value, dialect: Dialect) -> String {
        match (op, v) {
            ("$eq", v) if scalar(v) => self.any_of(path, std::slice::from_ref(v), dialect),
            ("$in", Value::Array(list)) if list.iter().all(scalar) => {
                if list.is_empty() {
                    "FALSE".into()
                } else {
                    self.any_of(path, list, dialect)
                }
            }
            ("$gt" | "$gte" | "$lt" | "$lte", Value::Number(n)) => {
                let sign = match op {
                    "$gt" => ">",
                    "$gte" => ">=",
                    "$lt" => "<",
                    _ => "<=",
                };
                self.compare(path, sign, n, dialect)
            }
            ("$exists", Value::Bool(exists)) => {
                let at = self.bind(SqlParam::Text(path.to_string()), dialect);
                let has = match dialect {
                    Dialect::Sqlite => format!("json_type(metadata, {at}) IS NOT NULL"),
                    Dialect::Postgres => format!("metadata::jsonb @? {at}::text::jsonpath"),
                };
                if *exists { has } else { format!("NOT ({has})") }
            }
            ("$prefix", Value::String(p)) => match dialect {
                Dialect::Sqlite => {
                    let path = self.bind(SqlParam::Text(path.to_string()), dialect);
                    let len = self.bind(SqlParam::Int(p.chars().count() as i64), dialect);
                    let p = self.bind(SqlParam::Text(p.clone()), dialect);
                    format!(
                        "EXISTS (SELECT 1 FROM json_each(metadata, {path}) \
                         WHERE type = 'text' AND substr(value, 1, {len}) = {p})"
                    )
                }
                Dialect::Postgres => {
                    let path = format!("{path}[*] ? (@ starts with {})", Value::from(p.clone()));
                    let path = self.bind(SqlParam::Text(path), dialect);
                    format!("metadata::jsonb @? {path}::text::jsonpath")
                }
            },
            // $ne, $nin, $contains, dates: the documents decide.
            _ => TRUE.into(),
        }
    }

    /// The value at `path`, or one of its array's elements, is one of `values` (scalars).
    fn any_of(&mut self, path: &str, values: &[Value], dialect: Dialect) -> String {
        match dialect {
            Dialect::Sqlite => {
                let path = self.bind(SqlParam::Text(path.to_string()), dialect);
                let list: Vec<String> =
                    values.iter().map(|v| self.bind(sqlite_param(v), dialect)).collect();
                format!(
                    "EXISTS (SELECT 1 FROM json_each(metadata, {path}) WHERE value IN ({}))",
                    list.join(", ")
                )
            }
            Dialect::Postgres => {
                let tests: Vec<String> = values.iter().map(|v| format!("@ == {v}")).collect();
                let path = format!("{path}[*] ? ({})", tests.join(" || "));
                let path = self.bind(SqlParam::Text(path), dialect);
                format!("metadata::jsonb @? {path}::text::jsonpath")
            }
        }
    }

    /// The number at `path`, or one of its array's numbers, compares with `n` as `sign` says.
    fn compare(
        &mut self,
        path: &str,
        sign: &str,
        n: &serde_json::Number,
        dialect: Dialect,
    ) -> String {
        match dialect {
            Dialect::Sqlite => {
                let path = self.bind(SqlParam::Text(path.to_string()), dialect);
                let n = self.bind(sqlite_param(&Value::Number(n.clone())), dialect);
                format!(
                    "EXISTS (SELECT 1 FROM json_each(metadata, {path}) \
                     WHERE type IN ('integer', 'real') AND value {sign} {n})"
                )
            }
            Dialect::Postgres => {
                let path = format!("{path}[*] ? (@ {sign} {n})");
                let path = self.bind(SqlParam::Text(path), dialect);
                format!("metadata::jsonb @? {path}::text::jsonpath")
            }
        }
    }
}

/// `parts` joined by `op` as a balanced tree: a flat `a OR b OR …` of a thousand parts is an
/// expression a thousand deep to SQLite, past its limit (1,000), where halves nest only
/// log₂ of the parts deep.
fn join(mut parts: Vec<String>, op: &str) -> String {
    match parts.len() {
        0 => TRUE.into(),
        1 => parts.pop().unwrap_or_default(),
        2..=8 => format!("({})", parts.join(&format!("){op}("))),
        n => {
            let right = parts.split_off(n / 2);
            format!("({}){op}({})", join(parts, op), join(right, op))
        }
    }
}

/// A JSON value SQL can compare as it is: a string, number or boolean.
fn scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// `$."key"`: the path of a top-level key in both dialects. A key with a quote, backslash or
/// control character is not pushed down (the dialects escape such labels differently).
fn json_path(key: &str) -> Option<String> {
    let plain = !key.chars().any(|c| c == '"' || c == '\\' || c.is_control());
    plain.then(|| format!("$.\"{key}\""))
}

/// A scalar as SQLite's `json_each` reports it: booleans are 0 and 1.
fn sqlite_param(v: &Value) -> SqlParam {
    match v {
        Value::Bool(b) => SqlParam::Int(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlParam::Int(i),
            None => SqlParam::Real(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => SqlParam::Text(s.clone()),
        Value::Null | Value::Array(_) | Value::Object(_) => SqlParam::Text(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(text: &str, dialect: Dialect) -> String {
        Pushdown::of(&MetadataFilter::parse(text).unwrap(), dialect).sql
    }

    #[test]
    fn what_can_narrow_does_and_the_rest_is_left_to_the_documents() {
        assert!(sql("lang = en", Dialect::Sqlite).contains("json_each"));
        assert!(sql("year >= 2020", Dialect::Postgres).contains("@?"));
        assert_eq!(sql("lang != en", Dialect::Sqlite), TRUE);
        assert_eq!(sql("not lang = en", Dialect::Postgres), TRUE);
        // An OR with a branch that narrows nothing narrows nothing; an AND keeps its narrowing part.
        assert_eq!(sql("lang = en or lang != de", Dialect::Sqlite), TRUE);
        assert!(sql("lang = en and lang != de", Dialect::Sqlite).contains("json_each"));
        assert_eq!(sql("date >= \"2024-01-01\"", Dialect::Sqlite), TRUE);
    }

    #[test]
    fn parameters_carry_the_values_and_keys_are_quoted() {
        let p = Pushdown::of(&MetadataFilter::parse("k in [1, x, true]").unwrap(), Dialect::Sqlite);
        let path = SqlParam::Text("$.\"k\"".into());
        assert_eq!(
            p.params,
            [path, SqlParam::Int(1), SqlParam::Text("x".into()), SqlParam::Int(1)]
        );
        // A key the dialects would quote differently is left to the documents.
        let quoted = serde_json::json!({"a\"b": 1});
        let filter: MetadataFilter = serde_json::from_value(quoted).unwrap();
        assert_eq!(Pushdown::of(&filter, Dialect::Sqlite).sql, TRUE);
        let p = Pushdown::of(&MetadataFilter::parse("区 ^= 东").unwrap(), Dialect::Postgres);
        assert_eq!(p.params, [SqlParam::Text("$.\"区\"[*] ? (@ starts with \"东\")".into())]);
    }
}
