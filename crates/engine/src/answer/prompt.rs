//! What the language model is asked: answer from the numbered sources only, cite each sentence
//! with the source's number and its exact words, and say `NOT FOUND` when the sources do not
//! answer. The example in the instructions is the format the citation reader expects.

use ckeep_llm::Prompt;

use super::context::Passage;

/// What a model writes when the sources do not answer.
pub(crate) const NOT_FOUND: &str = "NOT FOUND";

// Worded for small local models, measured on SQuAD questions with Qwen2.5-Coder 0.5B: asked for
// "one or two sentences" with a quote after each, it wrote long sentences and mostly no quote;
// asked for the shortest answer, it answers more often and more exactly, and an answer in the
// source's own words is located as a quote would be (`support`).
const SYSTEM: &str = "Answer the question from the numbered sources, as briefly as possible: a \
name, a number, a date or a short phrase, in the language of the question. Then cite the source \
in brackets with the exact words that contain the answer, like this: [2: \"exact words from \
source 2\"]. If none of the sources contains the answer, reply only: NOT FOUND";

/// The prompt for `question` over `passages`, answering in at most `max_tokens`.
pub(crate) fn prompt(question: &str, passages: &[Passage], max_tokens: usize) -> Prompt {
    let mut user = String::from("Sources:\n\n");
    for p in passages {
        user.push_str(&Passage::render(p.number, &p.doc_id, &p.title, &p.text));
        user.push('\n');
    }
    user.push_str("Question: ");
    user.push_str(question.trim());
    Prompt { system: SYSTEM.into(), user, max_tokens, one_line: false }
}

/// Whether `answer` says the sources do not answer (the model's `NOT FOUND`, whatever follows).
pub(crate) fn is_not_found(answer: &str) -> bool {
    let start = answer.trim_start_matches(|c: char| !c.is_alphanumeric());
    start.get(..NOT_FOUND.len()).is_some_and(|s| s.eq_ignore_ascii_case(NOT_FOUND))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_is_read_at_the_start_only() {
        for yes in ["NOT FOUND", "  not found.", "**NOT FOUND**", "Not found in the sources"] {
            assert!(is_not_found(yes), "{yes}");
        }
        for no in ["The answer was not found until 1990.", "NOT", "Found: NOT FOUND"] {
            assert!(!is_not_found(no), "{no}");
        }
    }
}
