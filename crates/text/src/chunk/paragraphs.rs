//! `paragraphs[:N]`: blank-line paragraphs, the fastbook experiment's unit.
//!
//! A heading line joins the paragraph that follows it (a heading alone answers nothing), and a
//! chunk never runs from one section into the next: a heading always starts a new chunk. The
//! heading path of each chunk is recorded separately by the layout.

use ckeep_core::Span;

use super::layout::Layout;

pub(super) fn chunks(_text: &str, layout: &Layout, per_chunk: usize) -> Vec<Span> {
    // Units: a paragraph together with the headings right before it.
    let mut units: Vec<(Span, bool)> = Vec::new();
    let mut pending_heading: Option<usize> = None;
    for block in &layout.blocks {
        if block.is_heading {
            pending_heading.get_or_insert(block.span.start);
            continue;
        }
        match pending_heading.take() {
            Some(start) => units.push((Span::new(start, block.span.end), true)),
            None => units.push((block.span, false)),
        }
    }
    if let Some(start) = pending_heading {
        let end = layout.blocks.last().map_or(start, |b| b.span.end);
        units.push((Span::new(start, end), true));
    }
    let mut out: Vec<Span> = Vec::new();
    let mut in_group = 0;
    for (span, starts_section) in units {
        match out.last_mut() {
            Some(last) if in_group < per_chunk && !starts_section => {
                last.end = span.end;
                in_group += 1;
            }
            _ => {
                out.push(span);
                in_group = 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::{ChunkerSpec, WordCounter};

    fn chunk(text: &str, spec: &str) -> Vec<(String, String)> {
        let spec: ChunkerSpec = spec.parse().unwrap();
        spec.chunk(text, &WordCounter)
            .iter()
            .map(|c| (c.span.slice(text).to_string(), c.heading_path()))
            .collect()
    }

    #[test]
    fn headings_join_the_next_paragraph_and_are_recorded() {
        let text = "# Book\n\n## One\n\nFirst.\n\nSecond.\n\n## Two\n\nThird.";
        let got = chunk(text, "paragraphs");
        assert_eq!(
            got,
            [
                ("# Book\n\n## One\n\nFirst.".into(), "# Book > ## One".into()),
                ("Second.".into(), "# Book > ## One".into()),
                ("## Two\n\nThird.".into(), "# Book > ## Two".into()),
            ]
        );
    }

    #[test]
    fn groups_stop_at_sections() {
        let text = "a\n\nb\n\nc\n\n# H\n\nd\n\ne";
        let got: Vec<String> = chunk(text, "paragraphs:2").into_iter().map(|c| c.0).collect();
        assert_eq!(got, ["a\n\nb", "c", "# H\n\nd\n\ne"]);
    }

    #[test]
    fn trailing_heading_is_kept() {
        let got: Vec<String> =
            chunk("text\n\n## End", "paragraphs").into_iter().map(|c| c.0).collect();
        assert_eq!(got, ["text", "## End"]);
    }
}
