//! Answer quality end to end (`ckeep eval answers`): every question of a set with gold answers
//! asked of one or more systems (a strategy and who answers), each scored on what a reader
//! gets: whether the answer holds a gold answer, its token F1, whether the assembled context
//! held one, whether its located citations point at one, and whether it abstained where the
//! set says no answer exists. Systems after the first get 95 % paired bootstrap intervals of
//! their difference, as `eval run` gives retrieval metrics.

use std::collections::HashMap;
use std::fmt::Write as _;

use ckeep_engine::{Answer, Answerer, AskRequest, SearchRequest, Strategy};
use serde::Serialize;

use crate::dataset::{Dataset, Query};
use crate::experiment::{ModelLoader, Progress};
use crate::paired_bootstrap_ci;

/// Resamples of the paired bootstrap.
const BOOTSTRAP_ROUNDS: usize = 10_000;

/// Who a system is: how it retrieves and who writes.
#[derive(Debug, Clone)]
pub struct System {
    /// The retrieval strategy.
    pub strategy: Strategy,
    /// What `--llm` names (`none`: extractive).
    pub llm: String,
}

impl System {
    /// Its label in tables.
    pub fn label(&self) -> String {
        format!("{} · {}", self.strategy, self.llm)
    }
}

/// One question's scores.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Scored {
    /// Question id.
    pub qid: String,
    /// Whether the set says the sources hold no answer.
    pub unanswerable: bool,
    /// The answer given.
    pub answer: String,
    /// The answer holds a gold answer (normalised as SQuAD does; CJK by characters).
    pub accuracy: f64,
    /// Best token F1 against the gold answers.
    pub f1: f64,
    /// A gold answer stands in the assembled context.
    pub context_recall: f64,
    /// Whether it abstained.
    pub abstained: bool,
    /// Citations written or made.
    pub citations: usize,
    /// Of those, located in the stored text.
    pub located: usize,
    /// Of the located, those whose span holds or overlaps a gold answer.
    pub precise: usize,
    /// Seconds for the whole answer.
    pub seconds: f64,
    /// Tokens read and written.
    pub tokens: usize,
}

/// One system's results.
#[derive(Debug, Clone, Serialize)]
pub struct SystemResult {
    /// Its label.
    pub system: String,
    /// Means over answerable questions: accuracy, F1, context recall, false abstention.
    pub accuracy: f64,
    /// Token F1.
    pub f1: f64,
    /// Context recall.
    pub context_recall: f64,
    /// Share of answerable questions it abstained on.
    pub false_abstention: f64,
    /// Share of unanswerable questions it abstained on (`None`: the set has none).
    pub abstention: Option<f64>,
    /// Located citations holding or overlapping a gold answer, of all located (answerable
    /// questions).
    pub citation_precision: Option<f64>,
    /// Citations located, of all citations.
    pub citations_located: Option<f64>,
    /// Mean seconds per question.
    pub seconds: f64,
    /// Mean tokens per question.
    pub tokens: f64,
    /// 95 % paired bootstrap intervals of (this − first) for accuracy, F1 and context recall.
    pub intervals: Option<[(f64, f64); 3]>,
    /// Every question.
    pub per_question: Vec<Scored>,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerComparison {
    /// Dataset name.
    pub dataset: String,
    /// Answerable questions asked.
    pub questions: usize,
    /// Unanswerable questions asked.
    pub unanswerable: usize,
    /// Tokens of context per answer.
    pub context_tokens: usize,
    /// One entry per system, in the order given.
    pub systems: Vec<SystemResult>,
}

impl AnswerComparison {
    /// What `eval answers --json` prints; every question's scores only with `per_question`.
    pub fn to_json(&self, per_question: bool) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if !per_question && let Some(systems) = v["systems"].as_array_mut() {
            for s in systems.iter_mut().filter_map(serde_json::Value::as_object_mut) {
                s.remove("per_question");
            }
        }
        v
    }

    /// The comparison as a Markdown table, intervals of the differences with the first system
    /// under it.
    pub fn markdown_table(&self) -> String {
        let pct =
            |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{:.1}", 100.0 * v));
        let mut t = String::from(
            "| system | accuracy | F1 | context recall | citation precision | citations located | \
             abstains (unanswerable) | false abstention | s / question | tokens |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        for s in &self.systems {
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.0} |",
                s.system,
                pct(Some(s.accuracy)),
                pct(Some(s.f1)),
                pct(Some(s.context_recall)),
                pct(s.citation_precision),
                pct(s.citations_located),
                pct(s.abstention),
                pct(Some(s.false_abstention)),
                s.seconds,
                s.tokens,
            );
        }
        let first = self.systems.first().map_or("", |s| s.system.as_str());
        for s in self.systems.iter().skip(1) {
            if let Some([a, f, c]) = s.intervals {
                let iv = |(lo, hi): (f64, f64)| format!("[{:+.1}, {:+.1}]", 100.0 * lo, 100.0 * hi);
                let _ = write!(
                    t,
                    "\n{} − {first} (95 % paired bootstrap, points): accuracy {}, F1 {}, \
                     context recall {}",
                    s.system,
                    iv(a),
                    iv(f),
                    iv(c)
                );
            }
        }
        t
    }
}

/// How the questions are asked.
#[allow(missing_debug_implementations)] // holds a closure
pub struct Asking<'a> {
    /// Tokens of context.
    pub context_tokens: usize,
    /// Answerable questions asked, at most (the first by id); the unanswerable likewise.
    pub limit: usize,
    /// Where indexes are built.
    pub work_dir: &'a str,
    /// Opens who answers, by `--llm` spec.
    pub answerers: &'a mut dyn FnMut(&str) -> Result<Answerer, ckeep_engine::Error>,
}

/// Asks every question of `dataset` (its answerable ones, then its unanswerable) of every
/// system, and scores the answers.
pub fn run(
    dataset: &Dataset,
    systems: &[System],
    asking: &mut Asking<'_>,
    models: ModelLoader<'_>,
    progress: Progress<'_>,
) -> Result<AnswerComparison, ckeep_engine::Error> {
    let strategies: Vec<Strategy> = systems.iter().map(|s| s.strategy.clone()).collect();
    let strategies = crate::experiment::with_fields(dataset, &strategies);
    let engines = crate::experiment::build_indexes(
        dataset,
        &strategies,
        asking.work_dir,
        models,
        &mut *progress,
    )?;
    let answerable: Vec<&Query> = dataset.queries.iter().take(asking.limit).collect();
    let unanswerable: Vec<&Query> = dataset.unanswerable.iter().take(asking.limit).collect();
    let texts: HashMap<&str, &str> =
        dataset.docs.iter().map(|d| (d.id.as_str(), d.text.as_str())).collect();
    let mut answerers: HashMap<String, Answerer> = HashMap::new();
    let mut results: Vec<SystemResult> = Vec::new();
    for (system, strategy) in systems.iter().zip(&strategies) {
        if !answerers.contains_key(&system.llm) {
            answerers.insert(system.llm.clone(), (asking.answerers)(&system.llm)?);
        }
        let answerer = &answerers[&system.llm];
        let engine = &engines[&crate::experiment::index_key(strategy)];
        let label = system.label();
        let questions: Vec<(&Query, bool)> = answerable
            .iter()
            .map(|q| (*q, false))
            .chain(unanswerable.iter().map(|q| (*q, true)))
            .collect();
        let mut scored = Vec::with_capacity(questions.len());
        for (i, (q, impossible)) in questions.iter().enumerate() {
            let search = SearchRequest::new(q.text.clone()).with_strategy(strategy.clone());
            let request = AskRequest::new(q.text.clone()).with_search(search).with_options(
                Some(asking.context_tokens),
                None,
                false,
            )?;
            let answer = request.answer(engine, answerer, &mut |_: &str| {})?;
            scored.push(score(q, *impossible, &answer, &texts));
            progress(&format!("answering with {label}"), i as u64 + 1, questions.len() as u64);
        }
        results.push(summarise(label, scored, results.first()));
    }
    Ok(AnswerComparison {
        dataset: dataset.name.clone(),
        questions: answerable.len(),
        unanswerable: unanswerable.len(),
        context_tokens: asking.context_tokens,
        systems: results,
    })
}

fn score(q: &Query, unanswerable: bool, answer: &Answer, texts: &HashMap<&str, &str>) -> Scored {
    let gold = &q.answers;
    let context: String =
        answer.passages.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n");
    let given = if answer.abstained { String::new() } else { answer.answer.clone() };
    let cites = answer.sentences.iter().filter(|s| !s.withheld).flat_map(|s| &s.citations);
    let (mut citations, mut located, mut precise) = (0, 0, 0);
    for c in cites {
        citations += 1;
        let (Some(span), Some(doc)) = (c.span, c.doc_id.as_deref()) else { continue };
        located += 1;
        let text = texts.get(doc).copied().unwrap_or_default();
        precise += usize::from(gold.iter().any(|g| overlaps_answer(text, span, g)));
    }
    Scored {
        qid: q.id.clone(),
        unanswerable,
        accuracy: f64::from(u8::from(
            !given.is_empty() && gold.iter().any(|g| contains(&given, g)),
        )),
        f1: gold.iter().map(|g| f1(&given, g)).fold(0.0, f64::max),
        context_recall: f64::from(u8::from(gold.iter().any(|g| contains(&context, g)))),
        answer: answer.answer.clone(),
        abstained: answer.abstained,
        citations,
        located,
        precise,
        seconds: answer.timings.total_ms / 1e3,
        tokens: answer.tokens.prompt + answer.tokens.answer,
    }
}

fn summarise(system: String, scored: Vec<Scored>, first: Option<&SystemResult>) -> SystemResult {
    let answerable: Vec<&Scored> = scored.iter().filter(|s| !s.unanswerable).collect();
    let impossible: Vec<&Scored> = scored.iter().filter(|s| s.unanswerable).collect();
    let mean = |v: &[&Scored], f: &dyn Fn(&Scored) -> f64| {
        v.iter().map(|s| f(s)).sum::<f64>() / v.len().max(1) as f64
    };
    let share = |part: usize, whole: usize| (whole > 0).then(|| part as f64 / whole as f64);
    let sum = |f: &dyn Fn(&Scored) -> usize| answerable.iter().map(|s| f(s)).sum::<usize>();
    let column = |v: &[Scored], f: fn(&Scored) -> f64| -> Vec<f64> {
        v.iter().filter(|s| !s.unanswerable).map(f).collect()
    };
    let intervals = first.map(|base| {
        let metric = |f: fn(&Scored) -> f64| {
            paired_bootstrap_ci(
                &column(&base.per_question, f),
                &column(&scored, f),
                BOOTSTRAP_ROUNDS,
            )
        };
        [metric(|s| s.accuracy), metric(|s| s.f1), metric(|s| s.context_recall)]
    });
    SystemResult {
        system,
        accuracy: mean(&answerable, &|s| s.accuracy),
        f1: mean(&answerable, &|s| s.f1),
        context_recall: mean(&answerable, &|s| s.context_recall),
        false_abstention: mean(&answerable, &|s| f64::from(u8::from(s.abstained))),
        abstention: (!impossible.is_empty())
            .then(|| mean(&impossible, &|s| f64::from(u8::from(s.abstained)))),
        citation_precision: share(sum(&|s| s.precise), sum(&|s| s.located)),
        citations_located: share(sum(&|s| s.located), sum(&|s| s.citations)),
        seconds: mean(&scored.iter().collect::<Vec<_>>(), &|s| s.seconds),
        tokens: mean(&scored.iter().collect::<Vec<_>>(), &|s| s.tokens as f64),
        intervals,
        per_question: scored,
    }
}

/// The normalised tokens of `text`, as the SQuAD evaluation reads English (lower case, no
/// punctuation, no articles) and the CMRC evaluation reads Chinese (each character a token).
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() && !matches!(word.as_str(), "a" | "an" | "the") {
            out.push(word.clone());
        }
        word.clear();
    };
    for c in text.chars() {
        if ckeep_core::script::is_cjk(c) {
            flush(&mut word, &mut out);
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if c.is_whitespace() {
            flush(&mut word, &mut out);
        }
        // Punctuation is dropped: "U.S." reads "us", as SQuAD's normalisation has it.
    }
    flush(&mut word, &mut out);
    out
}

/// Whether `text` holds `gold`, both normalised (a run of whole tokens).
pub fn contains(text: &str, gold: &str) -> bool {
    let (text, gold) = (tokens(text), tokens(gold));
    !gold.is_empty() && text.windows(gold.len()).any(|w| w == gold.as_slice())
}

/// SQuAD's token F1 of `answer` against `gold`.
pub fn f1(answer: &str, gold: &str) -> f64 {
    let (answer, gold) = (tokens(answer), tokens(gold));
    let mut left: HashMap<&str, usize> = HashMap::new();
    for t in &gold {
        *left.entry(t.as_str()).or_default() += 1;
    }
    let mut common = 0_u32;
    for t in &answer {
        if let Some(n) = left.get_mut(t.as_str()).filter(|n| **n > 0) {
            *n -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = f64::from(common) / answer.len() as f64;
    let recall = f64::from(common) / gold.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Whether the cited bytes `span` of `text` hold or overlap an occurrence of `gold` (case
/// folded), or hold it once normalised.
fn overlaps_answer(text: &str, span: ckeep_core::Span, gold: &str) -> bool {
    let gold = gold.trim();
    if gold.is_empty() {
        return false;
    }
    if contains(span.slice(text), gold) {
        return true;
    }
    let (hay, needle) = (text.to_lowercase(), gold.to_lowercase());
    // Lower-casing keeps byte offsets only where lengths agree; otherwise the held test above
    // is the one applied.
    hay.len() == text.len()
        && hay.match_indices(&needle).any(|(at, m)| at < span.end && at + m.len() > span.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squad_normalisation_and_f1() {
        assert!(contains("They were the Denver Broncos.", "Denver Broncos"));
        assert!(contains("In the U.S. of A", "US"));
        assert!(!contains("Denverite Broncos", "Denver Broncos"));
        assert!((f1("the Denver Broncos", "Denver Broncos") - 1.0).abs() < 1e-9);
        assert!((f1("Broncos of Denver", "Denver Broncos") - 0.8).abs() < 1e-9);
        assert!(f1("Panthers", "Denver Broncos").abs() < 1e-9);
    }

    #[test]
    fn chinese_by_characters() {
        assert!(contains("答案是北京大学。", "北京大学"));
        assert!(!contains("答案是清华大学。", "北京大学"));
        // 大学 in common: precision 2/4, recall 2/4.
        assert!((f1("清华大学", "北京大学") - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_citation_overlapping_an_answer_is_precise() {
        let text = "The game was won by the Denver Broncos in 2016.";
        let at = |from: usize, to: usize| ckeep_core::Span::new(from, to);
        assert!(overlaps_answer(text, at(0, 35), "Denver Broncos"));
        assert!(overlaps_answer(text, at(30, 47), "Denver Broncos"));
        assert!(!overlaps_answer(text, at(0, 12), "Denver Broncos"));
    }
}
