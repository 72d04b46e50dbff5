//! `ckeep embed`: texts in, vectors out.

use std::io::BufRead;
use std::process::ExitCode;

use anyhow::Context;
use ckeep_embed::InputKind;

use crate::flags::{MODEL_HELP, PRECISION_HELP};
use crate::output::{Output, outln};
use clap::Args;

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Texts to embed; `-` reads one text per line from standard input.
    #[arg(required = true, value_name = "TEXT")]
    pub texts: Vec<String>,
    #[arg(long, value_name = "MODEL", default_value = ckeep_engine::DEFAULT_MODEL, help = MODEL_HELP)]
    pub model: String,
    #[arg(long, value_name = "PRECISION", default_value = "f32", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
    /// Embed as search queries (with the model's query prompt, if it has one).
    #[arg(long)]
    pub query: bool,
}

pub fn run(args: &EmbedArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let mut texts = Vec::new();
    for t in &args.texts {
        if t == "-" {
            for line in std::io::stdin().lock().lines() {
                texts.push(line.context("reading standard input (it must be UTF-8)")?);
            }
        } else {
            texts.push(t.clone());
        }
    }
    let model = super::load_model(&args.precision.apply(&args.model), no_cache)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let kind = if args.query { InputKind::Query } else { InputKind::Document };
    let bar = out.progress(0, "embedding");
    let (vectors, stats) = model.embed(&refs, kind)?;
    bar.finish_and_clear();
    if stats.truncated > 0 {
        out.warn(format!(
            "{} text(s) longer than the model's {} tokens were embedded from their start",
            stats.truncated,
            model.info().max_tokens.unwrap_or(0)
        ));
    }
    if out.json {
        out.print_json(&serde_json::json!({
            "model": model.info(),
            "kind": if args.query { "query" } else { "document" },
            "stats": stats,
            "vectors": vectors,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (text, v) in texts.iter().zip(&vectors) {
        let head: Vec<String> = v.iter().take(4).map(|x| format!("{x:.5}")).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        outln!(
            "{} dims [{} …] norm {norm:.4}  {}",
            v.len(),
            head.join(", "),
            crate::output::snippet(text, 60)
        );
    }
    Ok(ExitCode::SUCCESS)
}
