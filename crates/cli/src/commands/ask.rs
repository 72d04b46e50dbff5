//! `ckeep ask`: an answer from the store's documents, with its citations located in them.

use std::io::Write;
use std::process::ExitCode;

use ckeep_engine::{Answer, Answerer, AskRequest};
use clap::Args;

use crate::flags::StrategyFlags;
use crate::output::{Output, outln, snippet};

#[derive(Debug, Args)]
#[allow(clippy::doc_markdown)] // help texts show URLs and variables as users type them
pub struct AskArgs {
    /// The question.
    pub question: String,
    /// Who answers: a language model (a name installed with `ckeep model pull`, or a .gguf
    /// file), an OpenAI-compatible chat server as URL#MODEL (llama.cpp's server, Ollama, vLLM,
    /// OpenAI; key from CKEEP_API_KEY or OPENAI_API_KEY), or `none` for the context's best
    /// sentences without a model [default: the first installed of qwen2.5-coder-1.5b-instruct and
    /// qwen2.5-coder-0.5b-instruct, else the best sentences with a note].
    #[arg(long, value_name = "MODEL|URL#MODEL|none")]
    pub llm: Option<String>,
    /// Tokens of context the answer is written from: the best passages that fit, merged where
    /// they touch, near copies left out.
    #[arg(long, value_name = "N", default_value_t = ckeep_engine::DEFAULT_CONTEXT_TOKENS)]
    pub context_tokens: usize,
    /// Leave out the answer's sentences whose citations could not be located in the sources
    /// (the answer is then printed once checked, not as it is written).
    #[arg(long)]
    pub strict: bool,
    /// Longest answer, in tokens.
    #[arg(long, value_name = "N", default_value_t = ckeep_engine::ANSWER_TOKENS)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub strategy: StrategyFlags,
}

pub fn run(store: &str, args: &AskArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let engine = super::open(store)?.with_model_cache(!no_cache);
    let cache = (!no_cache).then(ckeep_engine::default_generation_cache);
    let answerer = Answerer::load(args.llm.as_deref(), cache.as_deref())?;
    let request = AskRequest::new(args.question.clone())
        .with_search(args.strategy.request(&args.question)?)
        .with_options(Some(args.context_tokens), Some(args.max_tokens), args.strict)?;
    // The answer as it is written, unless it is checked before it is shown.
    let streaming = !out.json && !args.strict;
    let mut stdout = std::io::stdout();
    let mut show = |piece: &str| {
        if streaming {
            let _ = stdout.write_all(piece.as_bytes());
            let _ = stdout.flush();
        }
    };
    let answer = request.answer(&engine, &answerer, &mut show)?;
    if out.json {
        out.print_json(&answer)?;
        return Ok(ExitCode::SUCCESS);
    }
    if streaming {
        outln!();
    } else {
        outln!("{}", answer.answer);
    }
    render(&answer, streaming, out)?;
    Ok(ExitCode::SUCCESS)
}

/// The sources under the answer: each passage with its citations, checked or not.
fn render(answer: &Answer, streamed: bool, out: &Output) -> anyhow::Result<()> {
    if answer.abstained && streamed {
        outln!("{}", answer.answer);
    }
    if let Some(note) = &answer.note {
        out.note(note);
    }
    let withheld = answer.sentences.iter().filter(|s| s.withheld).count();
    if withheld > 0 {
        out.note(format!(
            "{withheld} sentence(s) left out: their citations were not found in the sources"
        ));
    }
    outln!();
    for p in &answer.passages {
        outln!("[{}] {} [{}] (result {})", p.number, p.doc_id, p.span, p.rank);
        let cited: Vec<_> = answer
            .sentences
            .iter()
            .flat_map(|s| &s.citations)
            .filter(|c| c.source == p.number)
            .collect();
        if cited.is_empty() {
            outln!("    {}", snippet(&p.text, 160));
        }
        for c in cited {
            // Without a quote, the source's words that back the sentence.
            let backing = c.span.and_then(|at| {
                p.text.get(at.start.checked_sub(p.span.start)?..at.end.checked_sub(p.span.start)?)
            });
            let quote = c.quote.as_deref().or(backing).map(|q| format!("\"{}\"", snippet(q, 120)));
            match (&c.span, &c.how) {
                (Some(span), Some(how)) => {
                    outln!("    ✓ {} at [{span}] ({})", quote.unwrap_or_default(), how.name());
                }
                _ => {
                    if let Some(q) = quote {
                        outln!("    ✗ {q}: not found in the sources");
                    } else {
                        outln!("    ✗ cited without a quote");
                    }
                }
            }
        }
    }
    let unknown: Vec<usize> = answer
        .sentences
        .iter()
        .flat_map(|s| &s.citations)
        .filter(|c| !answer.passages.iter().any(|p| p.number == c.source))
        .map(|c| c.source)
        .collect();
    if !unknown.is_empty() {
        out.note(format!("cited sources that were not given: {unknown:?}"));
    }
    out.note(format!(
        "{} from {} passage(s) ({} of {} context tokens) in {:.1} s",
        answer.answerer,
        answer.passages.len(),
        answer.context.tokens,
        answer.context.budget,
        answer.timings.total_ms / 1e3
    ));
    Ok(())
}
