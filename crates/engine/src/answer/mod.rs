//! Answers with checked citations (`ckeep ask`): search, assemble the context within a token
//! budget (`context`), have a language model answer from it citing each source with its exact
//! words (`prompt`, `cite`), then locate every quote in the stored text (`locate`) and return
//! it as a byte span. A citation that cannot be located is marked unverified, and a strict
//! answer leaves out the sentences without a located one. Without a model, the answer is the
//! context's best sentences (`extractive`). One [`AskRequest`] serves every front end.

mod cite;
mod context;
mod extractive;
mod locate;
mod prompt;
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ckeep_core::Span;
use ckeep_embed::Embedder;
use ckeep_llm::{Generator, Sink};
use ckeep_store::StoreRead;
use serde::Serialize;

pub use context::{Assembly, Passage};
pub use locate::{Found, MatchKind, locate};

use crate::defaults::{
    ANSWER_TOKENS, DEFAULT_CONTEXT_TOKENS, DEFAULT_LLM, DEFAULT_LLMS, MAX_ANSWER_TOKENS,
    MAX_CONTEXT_TOKENS,
};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::request::SearchRequest;

/// What an answer says when the sources do not hold one (the best passages come with it).
pub const NO_ANSWER: &str = "The sources do not answer this question.";

/// A question as every front end asks it.
#[derive(Debug, Clone)]
pub struct AskRequest {
    /// The question, and how the context is searched for (the store's default strategy unless
    /// it says otherwise).
    pub search: SearchRequest,
    /// Tokens of context the answer is written from.
    pub context_tokens: usize,
    /// Leave out the sentences without a located citation.
    pub strict: bool,
    /// Longest answer, in tokens.
    pub answer_tokens: usize,
}

impl AskRequest {
    /// `question` with the store's default strategy and the default budget.
    pub fn new(question: impl Into<String>) -> Self {
        Self {
            search: SearchRequest::new(question),
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            strict: false,
            answer_tokens: ANSWER_TOKENS,
        }
    }

    /// The same question searched for as `search` says (its strategy, filter and limits).
    #[must_use]
    pub fn with_search(self, search: SearchRequest) -> Self {
        Self { search, ..self }
    }

    /// The options every front end takes, each its default when `None`, checked here so that
    /// every front end refuses the same values.
    pub fn with_options(
        self,
        context_tokens: Option<usize>,
        answer_tokens: Option<usize>,
        strict: bool,
    ) -> Result<Self> {
        let context_tokens = context_tokens.unwrap_or(self.context_tokens);
        let answer_tokens = answer_tokens.unwrap_or(self.answer_tokens);
        if !(1..=MAX_CONTEXT_TOKENS).contains(&context_tokens) {
            return Err(Error::Invalid(format!(
                "the context budget must be 1 to {MAX_CONTEXT_TOKENS} tokens"
            )));
        }
        if !(1..=MAX_ANSWER_TOKENS).contains(&answer_tokens) {
            return Err(Error::Invalid(format!(
                "the answer's length must be 1 to {MAX_ANSWER_TOKENS} tokens"
            )));
        }
        Ok(Self { context_tokens, strict, answer_tokens, ..self })
    }
}

/// Who writes the answer.
#[derive(Debug)]
pub enum Answerer {
    /// The context's best sentences (no language model).
    Extractive,
    /// The context's best sentences because no language model is installed and none was
    /// named: an answer all the same, with a note on how to install one.
    NoModel,
    /// A language model: local (a GGUF) or a chat server.
    Model(Box<dyn Generator>),
}

/// The default language model: the first of [`DEFAULT_LLMS`] that is installed, in a build
/// that runs local models (the `llm` feature).
pub fn default_llm() -> Option<&'static str> {
    if !cfg!(feature = "llm") {
        return None;
    }
    DEFAULT_LLMS.iter().copied().find(|name| ckeep_llm::gguf_path(name).is_ok())
}

impl Answerer {
    /// What `--llm SPEC` names: `none` (extractive), a model name or `.gguf` file, or a chat
    /// server `URL[#MODEL]`; no spec, the installed default model ([`default_llm`]), or the
    /// extractive answer when none is installed ([`Answerer::NoModel`], never an error).
    /// Answers are cached in `cache` when given (the same question over the same context is
    /// not generated twice).
    pub fn load(spec: Option<&str>, cache: Option<&Path>) -> Result<Self> {
        let spec = match spec {
            Some(spec) => spec,
            None => match default_llm() {
                Some(name) => name,
                None => return Ok(Self::NoModel),
            },
        };
        if spec.eq_ignore_ascii_case("none") {
            return Ok(Self::Extractive);
        }
        let model = ckeep_llm::load(spec)?;
        Ok(Self::Model(match cache {
            Some(path) => Box::new(ckeep_llm::CachedGenerator::open(model, path)?),
            None => model,
        }))
    }

    /// The model's name, or `extractive`.
    pub fn name(&self) -> &str {
        match self {
            Self::Extractive | Self::NoModel => "extractive",
            Self::Model(m) => m.name(),
        }
    }

    /// What a reader should know about who answered: that no model is installed, and how to
    /// install one.
    pub fn note(&self) -> Option<String> {
        match self {
            Self::NoModel if cfg!(feature = "llm") => Some(format!(
                "no language model is installed, so the sources' best sentences answer; for a \
                 written answer, `ckeep model pull {DEFAULT_LLM}`"
            )),
            Self::NoModel => Some(
                "this build runs no local language model, so the sources' best sentences \
                 answer; for a written answer, name a chat server as URL#MODEL"
                    .into(),
            ),
            Self::Extractive | Self::Model(_) => None,
        }
    }

    fn count_tokens(&self, text: &str) -> usize {
        match self {
            Self::Extractive | Self::NoModel => ckeep_llm::estimate_tokens(text),
            Self::Model(m) => m.count_tokens(text),
        }
    }
}

/// An answer, in the JSON shape every front end gives.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Answer {
    /// The question.
    pub question: String,
    /// The answer as a reader sees it: the sentences kept, without the citation marks.
    pub answer: String,
    /// Whether the sources do not answer the question (the passages are still given).
    pub abstained: bool,
    /// The answer's sentences, each with its citations.
    pub sentences: Vec<AnswerSentence>,
    /// The context, numbered as cited.
    pub passages: Vec<Passage>,
    /// How the context was searched for.
    pub strategy: String,
    /// The model that wrote the answer, or `extractive`.
    pub answerer: String,
    /// What a reader should know about who answered (no model installed, and how to install
    /// one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How the context was assembled.
    pub context: Assembly,
    /// Tokens read and written by the model (zero for an extractive answer).
    pub tokens: Tokens,
    /// Where the time went, in milliseconds.
    pub timings: Timings,
}

/// A sentence of an answer.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AnswerSentence {
    /// Its text.
    pub text: String,
    /// Its citations, as written.
    pub citations: Vec<Citation>,
    /// Whether one of its citations was located in the sources.
    pub verified: bool,
    /// Whether a strict answer left it out.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub withheld: bool,
}

/// A citation, and where its quote stands in the stored document.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Citation {
    /// The passage cited (its number); where the quote was found, when the model cited
    /// another.
    pub source: usize,
    /// The quote, if the model gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// Whether the quote was found in the sources.
    pub verified: bool,
    /// The document it was found in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc_id: Option<String>,
    /// Its bytes in the stored document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// How it was found.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub how: Option<MatchKind>,
}

/// Tokens of one answer.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Tokens {
    /// Read (the prompt).
    pub prompt: usize,
    /// Written.
    pub answer: usize,
    /// Whether the answer came from the generation cache.
    pub cached: bool,
}

/// Time spent on one answer, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Timings {
    /// The search and the context's assembly.
    pub search_ms: f64,
    /// Writing the answer.
    pub answer_ms: f64,
    /// Everything.
    pub total_ms: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl AskRequest {
    /// Answers the question from `engine`'s store, passing a model's text to `sink` as it is
    /// written (an extractive answer arrives whole).
    pub fn answer<S: StoreRead>(
        &self,
        engine: &Engine<S>,
        answerer: &Answerer,
        sink: &mut dyn Sink,
    ) -> Result<Answer> {
        let started = Instant::now();
        let question = self.search.query.trim().to_string();
        if self.context_tokens == 0 {
            return Err(Error::Invalid("the context budget must be at least 1 token".into()));
        }
        let searcher = engine.searcher()?;
        let response = searcher.search(&self.search)?;
        if response.results.is_empty() && searcher.store().stats()?.documents == 0 {
            return Err(Error::Invalid(
                "the store has no documents to answer from: add some with `ckeep add`".into(),
            ));
        }
        let mut sources = HashMap::new();
        for r in &response.results {
            if !sources.contains_key(&r.doc_id) {
                let doc = searcher.document(&r.doc_id)?.document;
                sources
                    .insert(r.doc_id.clone(), context::Source { title: doc.title, text: doc.text });
            }
        }
        let count = |text: &str| answerer.count_tokens(text);
        let (passages, assembly) =
            context::assemble(&response.results, &sources, self.context_tokens, &count);
        let mut answer = Answer {
            question,
            answer: String::new(),
            abstained: false,
            sentences: Vec::new(),
            passages,
            strategy: response.strategy.clone(),
            answerer: answerer.name().to_string(),
            note: answerer.note(),
            context: assembly,
            tokens: Tokens::default(),
            timings: Timings { search_ms: ms(started.elapsed()), ..Timings::default() },
        };
        let writing = Instant::now();
        match answerer {
            _ if answer.passages.is_empty() => answer.abstained = true,
            Answerer::Extractive | Answerer::NoModel => {
                let strategy = searcher.resolve(&self.search)?;
                let model =
                    searcher.manifest().model.is_some().then(|| searcher.own_model(&strategy));
                let analyzer = searcher.analyzer()?.unwrap_or(ckeep_index::Analyzer::Standard);
                let model: Option<Arc<dyn Embedder>> = model.transpose()?;
                drop(searcher);
                let extracts = extractive::answer(
                    &answer.question,
                    &answer.passages,
                    analyzer,
                    model.as_ref(),
                )?;
                answer.sentences =
                    extracts.into_iter().map(|e| extracted(e, &answer.passages)).collect();
                answer.abstained = answer.sentences.is_empty();
                sink.text(&join(&answer.sentences));
            }
            Answerer::Model(model) => {
                drop(searcher);
                let prompt = prompt::prompt(&answer.question, &answer.passages, self.answer_tokens);
                let generation = model.stream(&prompt, sink)?;
                answer.tokens = Tokens {
                    prompt: generation.prompt_tokens,
                    answer: generation.completion_tokens,
                    cached: generation.cached,
                };
                if prompt::is_not_found(&generation.text) {
                    answer.abstained = true;
                } else {
                    answer.sentences =
                        checked(&generation.text, &answer.question, &answer.passages, &sources);
                    // Nothing but marks or space: no answer was given.
                    answer.abstained = answer.sentences.iter().all(|s| s.text.trim().is_empty());
                }
            }
        }
        if self.strict {
            for s in answer.sentences.iter_mut().filter(|s| !s.verified) {
                s.withheld = true;
            }
            answer.abstained |= answer.sentences.iter().all(|s| s.withheld);
        }
        answer.answer =
            if answer.abstained { NO_ANSWER.to_string() } else { join(&answer.sentences) };
        answer.timings.answer_ms = ms(writing.elapsed());
        answer.timings.total_ms = ms(started.elapsed());
        Ok(answer)
    }
}

/// The sentences kept, as one text.
fn join(sentences: &[AnswerSentence]) -> String {
    let kept: Vec<&str> =
        sentences.iter().filter(|s| !s.withheld).map(|s| s.text.as_str()).collect();
    let mut out = String::new();
    for s in kept {
        // No space between sentences of scripts written without spaces.
        let tight = out.chars().last().is_some_and(wide) || s.chars().next().is_some_and(wide);
        if !out.is_empty() && !tight {
            out.push(' ');
        }
        out.push_str(s);
    }
    out
}

/// A character of a script written without spaces, or its full-width punctuation.
fn wide(c: char) -> bool {
    ckeep_core::script::is_cjk(c)
        || ('\u{3000}'..='\u{303F}').contains(&c)
        || ('\u{FF00}'..='\u{FFEF}').contains(&c)
}

/// An extracted sentence as an answer sentence: its own citation, located where it was taken.
fn extracted(e: extractive::Extract, passages: &[Passage]) -> AnswerSentence {
    let doc_id = passages.iter().find(|p| p.number == e.source).map(|p| p.doc_id.clone());
    // The reader's text on one line; the quote keeps the stored bytes.
    let text = e.text.split_whitespace().collect::<Vec<_>>().join(" ");
    let citation = Citation {
        source: e.source,
        quote: Some(e.text),
        verified: true,
        doc_id,
        span: Some(e.span),
        how: Some(MatchKind::Exact),
    };
    AnswerSentence { text, citations: vec![citation], verified: true, withheld: false }
}

/// A model's answer read into sentences, each citation's quote looked for in the passage it
/// cites and, failing that, in the others; a sentence no located quote backs is looked for
/// itself (`support`), in the passages it cites first.
fn checked(
    text: &str,
    question: &str,
    passages: &[Passage],
    sources: &HashMap<String, context::Source>,
) -> Vec<AnswerSentence> {
    let parsed = cite::parse(text);
    let cited_first = |n: Option<usize>| {
        let cited = passages.iter().filter(move |p| Some(p.number) == n);
        cited.chain(passages.iter().filter(move |p| Some(p.number) != n))
    };
    let located = |p: &Passage, quote: Option<String>, f: Found| Citation {
        source: p.number,
        quote,
        verified: true,
        doc_id: Some(p.doc_id.clone()),
        span: Some(f.span),
        how: Some(f.kind),
    };
    // A citation of passage `n` whose words were not found in the sources.
    let unverified = |n: usize, quote: Option<String>| Citation {
        source: n,
        quote,
        verified: false,
        doc_id: passages.iter().find(|p| p.number == n).map(|p| p.doc_id.clone()),
        span: None,
        how: None,
    };
    parsed
        .sentences
        .into_iter()
        .map(|(span, written)| {
            let sentence = span.slice(&parsed.text).to_string();
            let mut citations: Vec<Citation> = Vec::new();
            let mut bare: Vec<usize> = Vec::new();
            for w in written {
                let Some(quote) = w.quote else {
                    bare.extend(w.sources);
                    continue;
                };
                for n in w.sources {
                    let found = cited_first(Some(n)).find_map(|p| {
                        locate(&quote, &sources[&p.doc_id].text, p.span).map(|f| (p, f))
                    });
                    citations.push(match found {
                        Some((p, f)) => located(p, Some(quote.clone()), f),
                        None => unverified(n, Some(quote.clone())),
                    });
                }
            }
            if !citations.iter().any(|c| c.verified) {
                let backed = cited_first(bare.first().copied()).find_map(|p| {
                    support::support(&sentence, question, &sources[&p.doc_id].text, p.span)
                        .map(|f| (p, f))
                });
                match backed {
                    Some((p, f)) => citations.push(located(p, None, f)),
                    // A bare number the sources do not back is kept, unverified.
                    None => citations.extend(bare.into_iter().map(|n| unverified(n, None))),
                }
            }
            AnswerSentence {
                text: sentence,
                verified: citations.iter().any(|c| c.verified),
                citations,
                withheld: false,
            }
        })
        .collect()
}
