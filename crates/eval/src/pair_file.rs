//! Labelled pair files: TSV, CSV or JSONL, one pair per line/record.
//!
//! Real pair files are dirty (QQP's has lines of invalid UTF-8 inherited from the original dump),
//! so bytes that are not UTF-8 are replaced by U+FFFD and the lines counted, never fatal;
//! structurally malformed records are listed by line and refuse the whole file.

use std::path::Path;

use serde::Serialize;

use crate::Error;

/// A file's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairFormat {
    /// Tab-separated, no quoting.
    Tsv,
    /// Comma-separated, RFC 4180 quoting.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl PairFormat {
    /// From a file name's extension (`.tsv`, `.csv`, `.jsonl`/`.json`).
    pub fn from_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "tsv" | "tab" | "txt" => Some(Self::Tsv),
            "csv" => Some(Self::Csv),
            "jsonl" | "ndjson" | "json" => Some(Self::Jsonl),
            _ => None,
        }
    }
}

/// Where each field of a pair is: for TSV/CSV, positions given as roles in column order
/// (`label,a,b,id`, `-` to skip a column); for JSONL, key names (`label=is_duplicate,…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    roles: Vec<(Role, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Label,
    A,
    B,
    Id,
    Skip,
}

impl Default for Columns {
    /// QQP's order: `label,a,b,id`.
    fn default() -> Self {
        "label,a,b,id".parse().unwrap_or(Self { roles: Vec::new() })
    }
}

impl std::str::FromStr for Columns {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut roles = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (role, key) = part.split_once('=').unwrap_or((part, part));
            let role = match role {
                "label" => Role::Label,
                "a" | "text1" => Role::A,
                "b" | "text2" => Role::B,
                "id" => Role::Id,
                "-" | "_" => Role::Skip,
                other => {
                    return Err(format!(
                        "unknown column `{other}`: expected label, a, b, id or - (skip)"
                    ));
                }
            };
            roles.push((role, key.to_string()));
        }
        for needed in [Role::Label, Role::A, Role::B] {
            if roles.iter().filter(|r| r.0 == needed).count() != 1 {
                return Err("columns need exactly one each of label, a and b".into());
            }
        }
        Ok(Self { roles })
    }
}

/// One labelled pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelledPair {
    /// The pair's id (its line number if the file has none).
    pub id: String,
    /// Whether the two texts are duplicates.
    pub label: bool,
    /// First text.
    pub a: String,
    /// Second text.
    pub b: String,
}

/// A loaded pair file.
#[derive(Debug, Clone, Default)]
pub struct PairFile {
    /// The pairs, in file order.
    pub pairs: Vec<LabelledPair>,
    /// Lines that held invalid UTF-8 (repaired with U+FFFD).
    pub repaired_lines: usize,
}

/// A record's line and its fields by role, or what is wrong with it.
type Record = (usize, Result<Vec<(Role, String)>, String>);

fn parse_label(raw: &str) -> Result<bool, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "1.0" | "true" | "yes" | "duplicate" => Ok(true),
        "0" | "0.0" | "false" | "no" | "different" => Ok(false),
        other => Err(format!("label `{other}` is not 0/1 or true/false")),
    }
}

impl PairFile {
    /// Reads `path` in `format` with `columns`.
    pub fn read(path: &Path, format: PairFormat, columns: &Columns) -> Result<Self, Error> {
        let bytes = std::fs::read(path)
            .map_err(|source| Error::Io { path: path.display().to_string(), source })?;
        Self::parse(&bytes, format, columns, &path.display().to_string())
    }

    /// Parses file contents; `origin` names the file in errors.
    pub fn parse(
        bytes: &[u8],
        format: PairFormat,
        columns: &Columns,
        origin: &str,
    ) -> Result<Self, Error> {
        let mut repaired = 0;
        let mut text = String::with_capacity(bytes.len());
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            let decoded = String::from_utf8_lossy(line);
            repaired += usize::from(matches!(decoded, std::borrow::Cow::Owned(_)));
            text.push_str(&decoded);
        }
        let records: Vec<Record> = match format {
            PairFormat::Tsv => text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| (i + 1, positional(columns, l.split('\t').map(str::to_string))))
                .collect(),
            PairFormat::Csv => csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(text.as_bytes())
                .records()
                .enumerate()
                .map(|(i, r)| {
                    let line = r
                        .as_ref()
                        .ok()
                        .and_then(|r| r.position())
                        .map_or(i + 1, |p| usize::try_from(p.line()).unwrap_or(i + 1));
                    let fields = r
                        .map_err(|e| e.to_string())
                        .and_then(|r| positional(columns, r.iter().map(str::to_string)));
                    (line, fields)
                })
                .collect(),
            PairFormat::Jsonl => text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| (i + 1, keyed(columns, l)))
                .collect(),
        };
        let mut pairs = Vec::with_capacity(records.len());
        let mut problems = Vec::new();
        for (line, record) in records {
            let pair = record.and_then(|fields| {
                let get = |role| fields.iter().find(|f| f.0 == role).map(|f| f.1.clone());
                Ok(LabelledPair {
                    label: parse_label(&get(Role::Label).unwrap_or_default())?,
                    a: get(Role::A).unwrap_or_default(),
                    b: get(Role::B).unwrap_or_default(),
                    id: get(Role::Id).unwrap_or_else(|| line.to_string()),
                })
            });
            match pair {
                Ok(p) => pairs.push(p),
                Err(message) if problems.len() < 20 => problems.push((line, message)),
                Err(_) => {}
            }
        }
        if !problems.is_empty() {
            return Err(Error::Malformed { origin: origin.to_string(), problems });
        }
        Ok(Self { pairs, repaired_lines: repaired })
    }
}

fn positional(
    columns: &Columns,
    fields: impl Iterator<Item = String>,
) -> Result<Vec<(Role, String)>, String> {
    let fields: Vec<String> = fields.collect();
    let needed = columns.roles.iter().rposition(|r| matches!(r.0, Role::Label | Role::A | Role::B));
    if needed.is_some_and(|last| fields.len() <= last) {
        return Err(format!(
            "{} field(s), but the columns ({}) need {}",
            fields.len(),
            columns.roles.iter().map(|r| r.1.as_str()).collect::<Vec<_>>().join(","),
            needed.map_or(0, |l| l + 1)
        ));
    }
    Ok(columns.roles.iter().zip(fields).map(|(r, f)| (r.0, f)).collect())
}

fn keyed(columns: &Columns, line: &str) -> Result<Vec<(Role, String)>, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = value.as_object().ok_or("not a JSON object")?;
    let mut out = Vec::new();
    for (role, key) in &columns.roles {
        match obj.get(key) {
            Some(serde_json::Value::String(s)) => out.push((*role, s.clone())),
            Some(serde_json::Value::Bool(b)) => out.push((*role, u8::from(*b).to_string())),
            Some(serde_json::Value::Number(n)) => out.push((*role, n.to_string())),
            None if *role == Role::Id || *role == Role::Skip => {}
            Some(other) => return Err(format!("`{key}` is {other}, not a string")),
            None => return Err(format!("no `{key}` field")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_with_invalid_utf8_is_repaired_and_counted() {
        let bytes = b"1\tWhat is a cat?\tWhat's a cat?\t7\n0\tbad \xff byte\tother\t8\n\n";
        let f = PairFile::parse(bytes, PairFormat::Tsv, &Columns::default(), "t").unwrap();
        assert_eq!(f.pairs.len(), 2);
        assert_eq!(f.repaired_lines, 1);
        assert!(f.pairs[0].label && !f.pairs[1].label);
        assert_eq!(f.pairs[1].a, "bad \u{fffd} byte");
        assert_eq!(f.pairs[1].id, "8");
    }

    #[test]
    fn csv_quotes_and_custom_columns() {
        let bytes = b"id,q1,q2,dup\n9,\"a, quoted\",\"b \"\"x\"\"\",1\n";
        let cols: Columns = "id,a,b,label".parse().unwrap();
        // The header row is malformed as a pair (label `dup`) and is reported by line.
        let err = PairFile::parse(bytes, PairFormat::Csv, &cols, "f.csv").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        let f = PairFile::parse(&bytes[13..], PairFormat::Csv, &cols, "f.csv").unwrap();
        assert_eq!(f.pairs[0].a, "a, quoted");
        assert_eq!(f.pairs[0].b, "b \"x\"");
        assert_eq!(f.pairs[0].id, "9");
    }

    #[test]
    fn jsonl_by_key_and_errors_by_line() {
        let cols: Columns = "label=is_duplicate,a=question1,b=question2".parse().unwrap();
        let good = br#"{"is_duplicate": true, "question1": "x", "question2": "y"}"#;
        let f = PairFile::parse(good, PairFormat::Jsonl, &cols, "f").unwrap();
        assert!(f.pairs[0].label);
        assert_eq!(f.pairs[0].id, "1");
        let bad = b"{\"is_duplicate\": 2, \"question1\": \"x\", \"question2\": \"y\"}\nnot json\n";
        let err = PairFile::parse(bad, PairFormat::Jsonl, &cols, "f").unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn column_specs_are_checked() {
        assert!("label,a,b".parse::<Columns>().is_ok());
        assert!("label,a".parse::<Columns>().is_err());
        assert!("label,a,b,colour".parse::<Columns>().is_err());
        let short = PairFile::parse(b"1\tonly one\n", PairFormat::Tsv, &Columns::default(), "f");
        assert!(short.is_err());
    }
}
