//! Markdown and Jupyter notebooks: titles from the first heading, notebooks as Markdown text.

use serde_json::Value;

/// The first level-one ATX heading's text, as a title.
pub(super) fn first_h1(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| t.trim().trim_end_matches('#').trim().to_string())
        .filter(|t| !t.is_empty())
}

/// A notebook as its reader sees it: markdown and raw cells as they are, code cells as fenced
/// blocks in the kernel's language; cells separated by a blank line; outputs left out.
pub(super) fn notebook_text(json: &str) -> Result<String, String> {
    let nb: Value = serde_json::from_str(json).map_err(|e| format!("not a notebook: {e}"))?;
    let cells = nb
        .get("cells")
        .and_then(Value::as_array)
        .ok_or("not a notebook: no `cells` array (nbformat 4 is supported)")?;
    let lang = nb
        .pointer("/metadata/kernelspec/language")
        .or_else(|| nb.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut parts = Vec::with_capacity(cells.len());
    for (i, cell) in cells.iter().enumerate() {
        let source = match cell.get("source") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(lines)) => lines.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("cell {i} has no `source`")),
        };
        let source = source.trim_end();
        if source.trim().is_empty() {
            continue;
        }
        match cell.get("cell_type").and_then(Value::as_str) {
            Some("code") => {
                let fence = if source.contains("```") { "~~~~" } else { "```" };
                parts.push(format!("{fence}{lang}\n{source}\n{fence}"));
            }
            Some("markdown" | "raw") => parts.push(source.to_string()),
            other => return Err(format!("cell {i} has unknown cell_type {other:?}")),
        }
    }
    Ok(parts.join("\n\n"))
}
