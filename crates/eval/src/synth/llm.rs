//! The `llm` generator: a language model (the local one `ckeep model pull` installs, or any
//! OpenAI-compatible server) writes the search query a passage answers, in the passage's
//! language. Its answers are cleaned to one line; one that is empty, too long, a repeat or a copy
//! of corpus text is dropped and counted, never used, and a model that says nothing usable for
//! [`super::MAX_UNUSABLE_IN_A_ROW`] answers in a row is stopped.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use ckeep_core::Document;
use ckeep_llm::{Generator as Llm, Prompt};

use super::overlap::OverlapIndex;
use super::{
    Candidate, MAX_UNUSABLE_IN_A_ROW, NEAR_COPY, SynthOptions, SynthQuery, SynthReport,
    bleed_allowed, query,
};

use crate::Error;

/// The prompt users start from (`--prompt FILE` replaces it): `{passage}` stands for the
/// passage.
pub const DEFAULT_PROMPT: &str = "\
Here is a passage from a document collection:

{passage}

Write one search query that a person would type to find this passage: a question or a few \
keywords about what it says, not copied from it. Write it in the same language as the passage. \
Answer with the query only, on one line.";

/// The system message beside the prompt.
const SYSTEM: &str = "You write realistic search queries. You answer with the query only.";

/// Longest answer asked for, in tokens.
const MAX_TOKENS: usize = 64;

/// The language model `spec` names (an installed name, a `.gguf` file or a chat server's
/// `URL#MODEL`) behind the generation cache, so a question asked before is not asked again.
pub fn open_model(spec: &str) -> Result<Box<dyn Llm>, Error> {
    let model = ckeep_llm::load(spec).map_err(Error::Generation)?;
    let cached = ckeep_llm::CachedGenerator::open(model, &ckeep_llm::default_cache_path())
        .map_err(Error::Generation)?;
    Ok(Box::new(cached))
}

/// A model and the prompt it is asked with.
pub struct QueryWriter<'a> {
    model: &'a dyn Llm,
    template: String,
    /// Answers written ahead of their turn ([`QueryWriter::prefetch`]), by passage.
    ahead: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for QueryWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryWriter").field("model", &self.model.name()).finish_non_exhaustive()
    }
}

impl<'a> QueryWriter<'a> {
    /// `model` asked with `template` (default [`DEFAULT_PROMPT`]), which must hold `{passage}`.
    pub fn new(model: &'a dyn Llm, template: Option<String>) -> Result<Self, Error> {
        let template = template.unwrap_or_else(|| DEFAULT_PROMPT.to_string());
        if !template.contains("{passage}") {
            return Err(Error::Invalid(
                "the prompt must contain `{passage}`, where the passage goes".into(),
            ));
        }
        Ok(Self { model, template, ahead: Mutex::default() })
    }

    /// How many passages to ask about at once: as many as the model answers side by side (the
    /// local model writes 8 answers for little more than the cost of one; a chat server, one).
    pub(super) fn ahead(&self) -> usize {
        self.model.side_by_side()
    }

    /// The model's name, for reports.
    pub fn name(&self) -> &str {
        self.model.name()
    }

    /// The query the model writes for `passage`, or its raw answer when that is unusable.
    pub(super) fn ask(
        &self,
        passage: &str,
        max_words: usize,
    ) -> Result<Result<String, String>, Error> {
        let ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner).remove(passage);
        let answer = match ahead {
            Some(text) => text,
            None => self.model.generate(&self.prompt(passage)).map_err(Error::Generation)?.text,
        };
        Ok(clean(&answer, max_words).ok_or(answer))
    }

    /// Asks about the passages that come next all at once, unless the first was asked already;
    /// [`QueryWriter::ask`] takes their answers. The answers are the ones asking one by one
    /// gives (greedy decoding); a failure here is met again, and reported, when its turn comes.
    pub(super) fn prefetch(&self, passages: &[&str]) {
        let mut ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner);
        if passages.len() < 2 || passages.first().is_none_or(|p| ahead.contains_key(*p)) {
            return;
        }
        let mut todo: Vec<&str> = Vec::new();
        for p in passages {
            if !ahead.contains_key(*p) && !todo.contains(p) {
                todo.push(p);
            }
        }
        let prompts: Vec<Prompt> = todo.iter().map(|p| self.prompt(p)).collect();
        for (p, answer) in todo.into_iter().zip(self.model.generate_many(&prompts)) {
            if let Ok(g) = answer {
                ahead.insert(p.to_string(), g.text);
            }
        }
    }

    fn prompt(&self, passage: &str) -> Prompt {
        Prompt {
            system: SYSTEM.into(),
            user: self.template.replace("{passage}", passage),
            max_tokens: MAX_TOKENS,
            one_line: true,
        }
    }
}

/// The first non-empty line of an answer without labels, list marks or quotes; `None` if it
/// has no letters or more than `max_words` words.
fn clean(answer: &str, max_words: usize) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut line = line.trim_start_matches(['-', '*', '•', '1', '.', ')', ' ']);
    for label in ["Query:", "query:", "Search query:", "查询：", "查询:", "検索クエリ："]
    {
        line = line.strip_prefix(label).unwrap_or(line).trim();
    }
    let quotes: &[char] = &['"', '\'', '“', '”', '「', '」', '`'];
    let line = line.trim_matches(quotes).trim();
    let words = ckeep_text::SizeCounter::count(&ckeep_text::WordCounter, line);
    (line.chars().any(char::is_alphabetic) && words >= 1 && words <= max_words)
        .then(|| line.to_string())
}

/// Watches a model's answers: one that repeats an earlier query is unusable too (a model that
/// says the same thing to every passage), and past [`MAX_UNUSABLE_IN_A_ROW`] unusable answers
/// in a row the model is stopped.
#[derive(Default)]
pub(super) struct ModelWatch {
    in_a_row: usize,
    asked: HashSet<String>,
}

impl ModelWatch {
    /// The query made, or `None`; an error once the model has said nothing usable for too long.
    pub(super) fn observe(
        &mut self,
        asked: Asked,
        report: &mut SynthReport,
    ) -> Result<Option<SynthQuery>, Error> {
        let answer = match asked {
            Asked::Dropped => return Ok(None),
            Asked::Made(q) if self.asked.insert(q.question.to_lowercase()) => {
                self.in_a_row = 0;
                return Ok(Some(q));
            }
            Asked::Made(q) => {
                report.unusable_answers += 1;
                q.question
            }
            Asked::Unusable(answer) => answer,
        };
        self.in_a_row += 1;
        if self.in_a_row < MAX_UNUSABLE_IN_A_ROW {
            return Ok(None);
        }
        let shown: String = answer.trim().chars().take(120).collect();
        Err(Error::UnusableModel(format!(
            "the language model gave {MAX_UNUSABLE_IN_A_ROW} answers in a row that are not a \
             usable query (empty, not text, too long, a repeat, or copied from the documents); \
             the last was {shown:?}. Check that --llm names a chat model and --prompt asks for \
             one query"
        )))
    }
}

/// What asking the model about one passage gave.
pub(super) enum Asked {
    /// A usable query.
    Made(SynthQuery),
    /// The model's answer is no query, or copies corpus text: the model's fault.
    Unusable(String),
    /// The passage's text is boilerplate: not the model's fault.
    Dropped,
}

/// Asks the model for the query a candidate's passage answers; the query if it is usable and
/// copies no corpus text. Documents where the passage's sentence also stands are relevant too.
#[allow(clippy::too_many_arguments)]
pub(super) fn check(
    docs: &[Document],
    d: usize,
    c: &Candidate,
    index: &OverlapIndex,
    opts: &SynthOptions,
    writer: &QueryWriter<'_>,
    report: &mut SynthReport,
) -> Result<Asked, Error> {
    let doc = &docs[d];
    let passage = &doc.text[c.passage.0..c.passage.1];
    let question = match writer.ask(passage, opts.max_words)? {
        Ok(question) => question,
        Err(answer) => {
            report.unusable_answers += 1;
            return Ok(Asked::Unusable(answer));
        }
    };
    if !index.similar(&question, NEAR_COPY).is_empty()
        || index.holds_a_unit(&question, opts.min_words, NEAR_COPY)
    {
        report.near_copy_dropped += 1;
        return Ok(Asked::Unusable(question));
    }
    let others: BTreeSet<usize> = index
        .similar(&c.question, NEAR_COPY)
        .into_iter()
        .map(|u| index.units[u].doc)
        .filter(|&o| o != d)
        .collect();
    if !bleed_allowed(&others, opts, report) {
        return Ok(Asked::Dropped);
    }
    // The query asks about the whole passage, which is its answer text.
    Ok(Asked::Made(query(docs, d, &others, question, c.passage, Vec::new(), opts.generator)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_shows_the_default_prompt_as_it_is() {
        let guide = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/guides/own-documents.md");
        let guide = std::fs::read_to_string(guide).unwrap();
        assert!(
            guide.contains(DEFAULT_PROMPT),
            "docs/guides/own-documents.md shows another prompt"
        );
    }

    #[test]
    fn answers_are_cleaned_to_one_query_or_refused() {
        assert_eq!(
            clean("Query: \"how do owls hunt at night\"\nmore", 64).unwrap(),
            "how do owls hunt at night"
        );
        assert_eq!(clean("\n\n- 长江流经哪些省份？", 64).unwrap(), "长江流经哪些省份？");
        assert_eq!(clean("「富士山の高さ」", 64).unwrap(), "富士山の高さ");
        assert!(clean("   \n  ", 64).is_none());
        assert!(clean("1234 ...", 64).is_none());
        assert!(clean(&"word ".repeat(80), 64).is_none());
    }
}
