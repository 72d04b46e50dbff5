//! Document summaries: computed once per document, stored, embedded into summary vectors.
//!
//! - `lead:N`: the first N words (the classic news baseline, and free);
//! - `extractive:N`: the sentences closest to the centroid of the document's sentence vectors,
//!   up to N words, in document order;
//! - `field:NAME`: a summary supplied with the document (its metadata field NAME);
//! - `llm:MODEL`: an instruction-tuned model run in-process on the CPU;
//! - `http:URL`: any OpenAI-compatible chat-completions server.

use std::fmt;
use std::str::FromStr;

use ckeep_core::Document;
use ckeep_embed::{Embedder, InputKind};
use ckeep_llm::{Generator, Prompt};

use crate::error::{Error, Result};

/// Words of a summary asked of a language model.
pub const LLM_SUMMARY_WORDS: usize = 80;

/// Words of the document a local model reads: on this CPU the 0.5B model reads about 40 tokens
/// a second, so a whole article would take minutes. The opening of a document usually says
/// what it is about.
pub const LLM_INPUT_WORDS: usize = 400;

/// Words of the document sent to a chat server, which usually has a long context.
pub const HTTP_INPUT_WORDS: usize = 4000;

/// How a document's summary is made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Summarizer {
    /// The first N words.
    Lead(usize),
    /// The most central sentences, up to N words.
    Extractive(usize),
    /// A metadata field of the document.
    Field(String),
    /// A local language model (a name or a GGUF file).
    Llm(String),
    /// An OpenAI-compatible chat server (`URL[#MODEL]`).
    Http(String),
}

impl Summarizer {
    /// One line per summarizer, for `--help`.
    pub const HELP: &'static str = "\
lead:N         the first N words
extractive:N   the sentences closest to the document's centroid embedding, up to N words,
               in document order (needs --model)
field:NAME     a summary supplied with each document (its metadata field NAME)
llm:MODEL      an instruction-tuned model on the CPU (qwen2.5-coder-0.5b-instruct, or a
               .gguf file); seconds per document, resumable
http:URL[#M]   an OpenAI-compatible chat-completions server (llama.cpp, Ollama, vLLM,
               OpenAI); key from CKEEP_API_KEY or OPENAI_API_KEY";

    /// Whether each summary takes seconds (so progress is written document by document).
    pub fn is_slow(&self) -> bool {
        matches!(self, Self::Llm(_) | Self::Http(_))
    }

    /// Whether it needs the store's embedding model.
    pub fn needs_model(&self) -> bool {
        matches!(self, Self::Extractive(_))
    }
}

impl fmt::Display for Summarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Lead(n) => write!(f, "lead:{n}"),
            Self::Extractive(n) => write!(f, "extractive:{n}"),
            Self::Field(name) => write!(f, "field:{name}"),
            Self::Llm(m) => write!(f, "llm:{m}"),
            Self::Http(u) => write!(f, "http:{u}"),
        }
    }
}

impl FromStr for Summarizer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, arg) = s.split_once(':').ok_or_else(|| {
            format!("unknown summarizer `{s}`; expected lead:N, extractive:N, field:NAME, llm:MODEL or http:URL")
        })?;
        let words = |a: &str| match a.parse::<usize>() {
            Ok(n) if (1..=2000).contains(&n) => Ok(n),
            _ => Err(format!("{kind}:N needs N from 1 to 2000 words, got `{a}`")),
        };
        let named = |a: &str, what: &str| {
            if a.trim().is_empty() {
                Err(format!("{kind}: needs {what}"))
            } else {
                Ok(a.trim().to_string())
            }
        };
        match kind {
            "lead" => words(arg).map(Self::Lead),
            "extractive" => words(arg).map(Self::Extractive),
            "field" => named(arg, "a field name").map(Self::Field),
            "llm" => named(arg, "a model name or .gguf file").map(Self::Llm),
            "http" if arg.starts_with("http://") || arg.starts_with("https://") => {
                Ok(Self::Http(arg.to_string()))
            }
            "http" => Err(format!("http: needs a server URL (http://… or https://…), got `{arg}`")),
            _ => Err(format!(
                "unknown summarizer `{s}`; expected lead:N, extractive:N, field:NAME, llm:MODEL or http:URL"
            )),
        }
    }
}

/// The first `n` words of `text`, as written (spacing and punctuation kept).
pub fn lead(text: &str, n: usize) -> String {
    ckeep_text::chunk::first_words(text, n).to_string()
}

/// The sentences whose vectors are closest to the centroid of all of them, up to `n` words, in
/// document order (at least one sentence).
pub fn extractive(text: &str, n: usize, embedder: &dyn Embedder) -> Result<String> {
    let spans = ckeep_text::chunk::sentence_spans(text);
    let sentences: Vec<&str> = spans.iter().map(|s| s.slice(text)).collect();
    if sentences.is_empty() {
        return Ok(String::new());
    }
    let (mut vectors, _) = embedder.embed(&sentences, InputKind::Document)?;
    let dim = vectors[0].len();
    let mut centroid = vec![0f32; dim];
    for v in &mut vectors {
        ckeep_embed::normalize(v);
        for (c, x) in centroid.iter_mut().zip(v.iter()) {
            *c += x;
        }
    }
    let mut order: Vec<(usize, f32)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i, v.iter().zip(&centroid).map(|(a, b)| a * b).sum()))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chosen = Vec::new();
    let mut words = 0;
    for (i, _) in order {
        let w = ckeep_text::SizeCounter::count(&ckeep_text::WordCounter, sentences[i]);
        if chosen.is_empty() || words + w <= n {
            chosen.push(i);
            words += w;
        }
        if words >= n {
            break;
        }
    }
    chosen.sort_unstable();
    Ok(chosen.iter().map(|&i| sentences[i].trim()).collect::<Vec<_>>().join(" "))
}

/// The prompt that asks a language model for a summary.
pub fn prompt(doc: &Document, input_words: usize) -> Prompt {
    let body = lead(&doc.text, input_words);
    let title = if doc.title.trim().is_empty() {
        String::new()
    } else {
        format!("Title: {}\n\n", doc.title.trim())
    };
    Prompt {
        system: "You write short, factual summaries of documents for a search index.".into(),
        user: format!(
            "{title}{body}\n\nSummarize the document above in one paragraph of at most {LLM_SUMMARY_WORDS} words: what it is about and the main people, places, events and topics it covers. Write plain sentences, no lists, only the summary."
        ),
        max_tokens: LLM_SUMMARY_WORDS * 3 / 2,
        one_line: false,
    }
}

/// A summarizer ready to run: a loaded language model where one is needed.
#[derive(Debug)]
pub struct LoadedSummarizer {
    /// Its spec.
    pub spec: Summarizer,
    generator: Option<Box<dyn Generator>>,
}

impl LoadedSummarizer {
    /// Loads what `spec` needs (a model file or a server connection); language models sit
    /// behind the generation cache at `cache` (if any), so a document is summarised once.
    pub fn load(spec: &Summarizer, cache: Option<&std::path::Path>) -> Result<Self> {
        let generator: Option<Box<dyn Generator>> = match spec {
            Summarizer::Llm(model) => Some(ckeep_llm::load(model)?),
            Summarizer::Http(url) => Some(Box::new(ckeep_llm::ChatClient::from_spec(url)?)),
            Summarizer::Lead(_) | Summarizer::Extractive(_) | Summarizer::Field(_) => None,
        };
        let generator = match (generator, cache) {
            (Some(g), Some(path)) => {
                Some(Box::new(ckeep_llm::CachedGenerator::open(g, path)?) as Box<dyn Generator>)
            }
            (g, _) => g,
        };
        Ok(Self { spec: spec.clone(), generator })
    }

    /// The summaries of `docs`, in order: a language model writes them side by side (see
    /// [`ckeep_llm::Generator::generate_many`]), the other summarizers one per core.
    pub fn summarize_all(
        &self,
        docs: &[&Document],
        embedder: Option<&dyn Embedder>,
    ) -> Result<Vec<(String, usize)>> {
        use rayon::prelude::*;
        let Some(g) = &self.generator else {
            return docs.par_iter().map(|d| self.summarize(d, embedder)).collect();
        };
        let words = self.input_words();
        let prompts: Vec<Prompt> = docs.iter().map(|d| prompt(d, words)).collect();
        g.generate_many(&prompts)
            .into_iter()
            .map(|out| {
                let out = out?;
                Ok((
                    out.text.trim().to_string(),
                    if out.cached { 0 } else { out.completion_tokens },
                ))
            })
            .collect()
    }

    /// Words of a document a language model reads: fewer for the local model, which is slower.
    fn input_words(&self) -> usize {
        if matches!(self.spec, Summarizer::Llm(_)) { LLM_INPUT_WORDS } else { HTTP_INPUT_WORDS }
    }

    /// The summary of `doc`, and the tokens a language model generated for it (0 otherwise).
    pub fn summarize(
        &self,
        doc: &Document,
        embedder: Option<&dyn Embedder>,
    ) -> Result<(String, usize)> {
        match (&self.spec, &self.generator) {
            (Summarizer::Lead(n), _) => Ok((lead(&doc.text, *n), 0)),
            (Summarizer::Extractive(n), _) => {
                let e = embedder.ok_or_else(|| {
                    Error::ModelRequired(
                        "extractive summaries embed sentences; pass --model".into(),
                    )
                })?;
                Ok((extractive(&doc.text, *n, e)?, 0))
            }
            (Summarizer::Field(name), _) => Ok((
                match doc.metadata.get(name) {
                    Some(serde_json::Value::String(s)) => s.trim().to_string(),
                    _ => String::new(),
                },
                0,
            )),
            (Summarizer::Llm(_) | Summarizer::Http(_), Some(_)) => {
                Ok(self.summarize_all(&[doc], embedder)?.remove(0))
            }
            (Summarizer::Llm(_) | Summarizer::Http(_), None) => {
                Err(Error::Invalid(format!("summarizer `{}` was not loaded", self.spec)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip_and_errors_say_why() {
        for s in [
            "lead:128",
            "extractive:64",
            "field:abstract",
            "llm:qwen",
            "http:http://127.0.0.1:8080/v1#m",
        ] {
            assert_eq!(s.parse::<Summarizer>().unwrap().to_string(), s);
        }
        for (s, needle) in [
            ("lead:0", "from 1 to 2000"),
            ("lead", "unknown summarizer"),
            ("http:localhost", "server URL"),
            ("field:", "a field name"),
            ("gpt:4", "unknown summarizer"),
        ] {
            let e = s.parse::<Summarizer>().unwrap_err();
            assert!(e.contains(needle), "{s}: {e}");
        }
    }

    #[test]
    fn field_summaries_come_from_the_metadata() {
        let loaded = LoadedSummarizer::load(&"field:abstract".parse().unwrap(), None).unwrap();
        let mut doc = Document::new("d", "T", "Body text.");
        doc.metadata = serde_json::json!({"abstract": "  A short abstract. ", "n": 3});
        assert_eq!(loaded.summarize(&doc, None).unwrap(), ("A short abstract.".to_string(), 0));
        doc.metadata = serde_json::json!({"n": 3});
        assert_eq!(loaded.summarize(&doc, None).unwrap().0, "", "no field: no summary");
        let extractive = LoadedSummarizer::load(&Summarizer::Extractive(10), None).unwrap();
        let e = extractive.summarize(&doc, None).unwrap_err().to_string();
        assert!(e.contains("pass --model"), "{e}");
    }

    #[test]
    fn lead_keeps_the_text_as_written() {
        assert_eq!(lead("  One, two\nthree.  Four five", 3), "One, two\nthree.");
        assert_eq!(lead("short", 10), "short");
        assert_eq!(lead("", 10), "");
    }
}
