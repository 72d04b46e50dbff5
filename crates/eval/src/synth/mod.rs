//! Test sets made from a corpus without human judgments, so a user can compare strategies on
//! their own documents (`ckeep eval synth`).
//!
//! Generators that need no model:
//! - `ict` (inverse cloze, Lee, Chang & Toutanova 2019): a sentence taken out of its document is
//!   the query; its document is relevant and the neighbouring sentence is the answer text.
//! - `title`: a document's title, or a Markdown heading, is the query for its document (the
//!   section's first sentence is the answer text).
//!
//! And `llm`: a language model writes the query a passage (a sentence with its neighbours)
//! answers ([`llm::QueryWriter`]); nothing is masked, and a query that copies corpus text is
//! dropped.
//!
//! A held-out sentence or title would be found word for word, which rewards lexical matching,
//! so each query carries `mask` spans: [`crate::dataset`] removes them from the corpus before a
//! set is scored. Two checks keep a set honest: a query whose text stands nearly word for word
//! (term-set Jaccard ≥ [`NEAR_COPY`]) elsewhere in its own document is dropped (masking one copy
//! would leave the other); one that stands in other documents ("bleed") makes those documents
//! relevant too and is masked there, or, in more than `max_bleed` documents, is dropped as
//! boilerplate. Sampling is seeded and spread: documents in a shuffled round robin, and within a
//! document positions in a low-discrepancy order, so sections of long documents are all visited.

mod files;
pub mod llm;
mod overlap;

pub use files::{make, write};

use std::collections::{BTreeSet, HashSet};
use std::str::FromStr;

use ckeep_core::Document;
use ckeep_engine::Analyzer;
use ckeep_text::{SizeCounter, WordCounter};
use serde::Serialize;

use crate::Error;
use crate::pairs::sample;
use crate::significance::SplitMix64;
use overlap::OverlapIndex;

/// Term-set Jaccard from which two pieces of text count as the same words.
pub const NEAR_COPY: f64 = 0.8;

/// Answers in a row a language model may give that are unusable or copy corpus text before it
/// is taken for the wrong model (or a server answering garbage) and stopped, rather than asked
/// about every passage of the corpus.
pub const MAX_UNUSABLE_IN_A_ROW: usize = 20;

/// How a query is made from a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Generator {
    /// Inverse cloze: a held-out sentence is the query.
    Ict,
    /// A title or heading is the query.
    Title,
    /// A language model writes the query a passage answers.
    Llm,
}

impl Generator {
    /// Every generator, for `--help` and errors.
    pub const ALL: [Generator; 3] = [Generator::Ict, Generator::Title, Generator::Llm];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Generator::Ict => "ict",
            Generator::Title => "title",
            Generator::Llm => "llm",
        }
    }
}

impl std::fmt::Display for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Generator {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL.into_iter().find(|g| g.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|g| g.name()).collect();
            Error::Invalid(format!("unknown generator `{s}`; expected one of {}", names.join(", ")))
        })
    }
}

/// What [`synthesize`] makes.
#[derive(Debug, Clone)]
pub struct SynthOptions {
    /// Queries wanted.
    pub count: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// How queries are made.
    pub generator: Generator,
    /// Shortest query in words (each CJK character counting as one, as chunk sizes do).
    pub min_words: usize,
    /// Longest query in words.
    pub max_words: usize,
    /// Most other documents a query's text may stand in before it is dropped as boilerplate.
    pub max_bleed: usize,
}

impl SynthOptions {
    /// `count` queries by `generator` from seed `seed`, with the default checks.
    pub fn new(count: usize, seed: u64, generator: Generator) -> Self {
        Self { count, seed, generator, ..Self::default() }
    }
}

impl Default for SynthOptions {
    fn default() -> Self {
        Self {
            count: 200,
            seed: 42,
            generator: Generator::Ict,
            min_words: 8,
            max_words: 64,
            max_bleed: 3,
        }
    }
}

/// A span of a document in characters (as the long-document layout counts, and Python slices).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mask {
    /// The document.
    pub doc_id: String,
    /// `text` or `title`.
    pub field: &'static str,
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
}

/// Text a good context for the query holds, with its place in the unmasked document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    /// The text.
    pub text: String,
    /// First character in the document's text.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
}

/// One query of a synthetic set, as a line of `queries.jsonl` in the long-document layout.
#[derive(Debug, Clone, Serialize)]
pub struct SynthQuery {
    /// Query id.
    pub qid: String,
    /// The query text.
    pub question: String,
    /// The document it was made from.
    pub doc_id: String,
    /// Other documents judged relevant because the query's text stands in them too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relevant: Vec<String>,
    /// Answer text, for `contain@k`.
    pub answers: Vec<Answer>,
    /// Spans removed from the corpus before the set is scored.
    pub mask: Vec<Mask>,
    /// The generator that made it.
    pub generator: Generator,
}

/// What happened while making a set: the counts every check dropped or changed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SynthReport {
    /// The generator.
    pub generator: Generator,
    /// The seed.
    pub seed: u64,
    /// Queries asked for.
    pub requested: usize,
    /// Queries made.
    pub queries: usize,
    /// Documents in the corpus.
    pub documents: usize,
    /// Documents with at least one candidate passage.
    pub documents_with_candidates: usize,
    /// Documents at least one query was made from.
    pub documents_used: usize,
    /// Candidates looked at.
    pub tried: usize,
    /// Dropped: the text stands nearly word for word elsewhere in its own document.
    pub near_copy_dropped: usize,
    /// Dropped: the text stands in more than `max_bleed` other documents.
    pub bleed_dropped: usize,
    /// Other documents made relevant (and masked) because a query's text stands in them.
    pub bleed_relevant_added: usize,
    /// Spans the scored corpus leaves out.
    pub masked_spans: usize,
    /// Dropped (`llm`): the model's answer was empty, too long or not text.
    pub unusable_answers: usize,
    /// The language model that wrote the queries (`llm`).
    pub model: Option<String>,
    /// Why making queries stopped early (a model server that failed); the queries made before
    /// are kept.
    pub stopped: Option<String>,
    /// The analyzer whose terms the checks compare.
    pub analyzer: &'static str,
    /// Query length bounds, in words.
    pub min_words: usize,
    /// See `min_words`.
    pub max_words: usize,
    /// How held-out text is kept from being found word for word.
    pub masking: &'static str,
}

/// Where a candidate's query text lives, as a byte span of the text or the title.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Text(usize, usize),
    Title,
}

/// A query a document could give.
#[derive(Debug, Clone)]
struct Candidate {
    question: String,
    place: Place,
    /// Its own overlap unit (a sentence, or the title), excluded from the checks.
    unit: Option<usize>,
    /// Sentences that may answer it, best first: unit and byte span.
    answers: Vec<(usize, usize, usize)>,
    /// The passage around it (byte span), which the `llm` generator reads.
    passage: (usize, usize),
}

/// Makes a test set from `docs` with a generator that needs no model (see the module docs).
/// An error only when no document can give a query at all; fewer queries than asked for is
/// reported, not refused.
pub fn synthesize(
    docs: &[Document],
    opts: &SynthOptions,
) -> Result<(Vec<SynthQuery>, SynthReport), Error> {
    synthesize_with(docs, opts, None, &mut |_, _| {})
}

/// [`synthesize`], with the model of the `llm` generator and `progress(made, wanted)`. A model
/// that fails stops the work: with queries made, they are returned and
/// [`SynthReport::stopped`] says why; with none, it is the error.
pub fn synthesize_with(
    docs: &[Document],
    opts: &SynthOptions,
    writer: Option<&llm::QueryWriter<'_>>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Vec<SynthQuery>, SynthReport), Error> {
    if opts.generator == Generator::Llm && writer.is_none() {
        return Err(Error::Invalid("the `llm` generator needs a language model".into()));
    }
    if docs.is_empty() {
        return Err(Error::Invalid("no documents to make queries from".into()));
    }
    let analyzer = Analyzer::detect(docs.iter().map(|d| d.text.as_str()));
    let (index, per_doc) = candidates(docs, opts, analyzer);
    let with_candidates = per_doc.iter().filter(|c| !c.is_empty()).count();
    let mut report = SynthReport::start(opts, docs.len(), with_candidates, writer, analyzer);
    if report.documents_with_candidates == 0 {
        return Err(Error::Invalid(no_candidates(docs.len(), opts)));
    }
    let mut queries = Vec::new();
    let mut taken = Taken::default();
    let mut used_docs: BTreeSet<usize> = BTreeSet::new();
    let mut cursor = vec![0usize; docs.len()];
    let mut watch = llm::ModelWatch::default();
    let order = sample(docs.len(), docs.len(), opts.seed);
    'rounds: loop {
        let mut progressed = false;
        for (at, &d) in order.iter().enumerate() {
            while let Some(c) = per_doc[d].get(cursor[d]) {
                cursor[d] += 1;
                let Some(answer) = taken.answer_for(c) else { continue };
                progressed = true;
                report.tried += 1;
                let made = match writer {
                    Some(w) => {
                        if w.ahead() > 1 {
                            let visit = (order.as_slice(), at, cursor.as_slice());
                            w.prefetch(&upcoming(docs, &per_doc, visit, &taken, c, w.ahead()));
                        }
                        match llm::check(docs, d, c, &index, opts, w, &mut report)
                            .and_then(|asked| watch.observe(asked, &mut report))
                        {
                            Ok(made) => made,
                            Err(e) if queries.is_empty() => return Err(e),
                            Err(e) => {
                                report.stopped = Some(e.to_string());
                                break 'rounds;
                            }
                        }
                    }
                    None => check(docs, d, c, answer, &index, opts, &mut taken, &mut report),
                };
                if let Some(q) = made {
                    taken.take(c, answer);
                    used_docs.insert(d);
                    queries.push(q);
                    progress(queries.len() as u64, opts.count as u64);
                }
                break;
            }
            if queries.len() >= opts.count {
                break 'rounds;
            }
        }
        if !progressed {
            break;
        }
    }
    if queries.is_empty() {
        return Err(Error::Invalid(format!(
            "no `{}` query survived the checks: of {} tried, {} copy their own document, {} \
             stand in more than {} other documents and {} model answers were unusable",
            opts.generator,
            report.tried,
            report.near_copy_dropped,
            report.bleed_dropped,
            opts.max_bleed,
            report.unusable_answers
        )));
    }
    for (i, q) in queries.iter_mut().enumerate() {
        q.qid = format!("{}-{:05}", opts.generator, i + 1);
    }
    report.queries = queries.len();
    report.documents_used = used_docs.len();
    report.masked_spans = queries.iter().map(|q| q.mask.len()).sum();
    Ok((queries, report))
}

/// Every document's sentences and title in an overlap index, and each document's candidates in
/// its spread order (seeded).
fn candidates(
    docs: &[Document],
    opts: &SynthOptions,
    analyzer: Analyzer,
) -> (OverlapIndex, Vec<Vec<Candidate>>) {
    let mut index = OverlapIndex::new(analyzer);
    let mut per_doc: Vec<Vec<Candidate>> = Vec::with_capacity(docs.len());
    let mut rng = SplitMix64(opts.seed);
    for (d, doc) in docs.iter().enumerate() {
        let sentences = ckeep_text::chunk::sentence_spans(&doc.text);
        let units: Vec<usize> = sentences
            .iter()
            .map(|s| index.add(d, Some((s.start, s.end)), s.slice(&doc.text)))
            .collect();
        let title_unit = (!doc.title.trim().is_empty()).then(|| index.add(d, None, &doc.title));
        let spans: Vec<(usize, usize)> = sentences.iter().map(|s| (s.start, s.end)).collect();
        let found = match opts.generator {
            Generator::Ict | Generator::Llm => ict_candidates(doc, &spans, &units, opts),
            Generator::Title => title_candidates(doc, &spans, &units, title_unit, opts),
        };
        let offset = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let order = spread_order(found.len(), offset);
        let mut ordered: Vec<Option<Candidate>> = found.into_iter().map(Some).collect();
        per_doc.push(order.into_iter().filter_map(|i| ordered[i].take()).collect());
    }
    (index, per_doc)
}

impl SynthReport {
    /// When fewer queries were made than asked for: how many, why, and what to try. Said by
    /// `eval synth` and `eval recommend` alike, so a small set is never a silent one.
    pub fn shortfall(&self) -> Option<String> {
        if self.queries >= self.requested {
            return None;
        }
        let why = match self.generator {
            Generator::Ict | Generator::Llm => format!(
                "a query comes from a sentence of {}-{} words in a document of 3 sentences or \
                 more; short documents, or text whose sentences are not found (no full stops), \
                 give few",
                self.min_words, self.max_words
            ),
            Generator::Title => {
                "a query comes from a document's title or a Markdown heading".to_string()
            }
        };
        let try_else = match self.generator {
            Generator::Title => "try --generator ict",
            Generator::Ict => "try --generator title (titled documents) or llm",
            Generator::Llm => "try --generator title (titled documents)",
        };
        Some(format!(
            "made {} of the {} queries asked for: {} of {} documents give a `{}` query ({why}); \
             {} were dropped as near copies and {} as boilerplate; {try_else}",
            self.queries,
            self.requested,
            self.documents_with_candidates,
            self.documents,
            self.generator,
            self.near_copy_dropped,
            self.bleed_dropped,
        ))
    }

    /// The report before any query is tried.
    fn start(
        opts: &SynthOptions,
        documents: usize,
        documents_with_candidates: usize,
        writer: Option<&llm::QueryWriter<'_>>,
        analyzer: Analyzer,
    ) -> Self {
        Self {
            generator: opts.generator,
            seed: opts.seed,
            requested: opts.count,
            queries: 0,
            documents,
            documents_with_candidates,
            documents_used: 0,
            tried: 0,
            near_copy_dropped: 0,
            bleed_dropped: 0,
            bleed_relevant_added: 0,
            masked_spans: 0,
            unusable_answers: 0,
            model: writer.map(|w| w.name().to_string()),
            stopped: None,
            analyzer: analyzer.name(),
            min_words: opts.min_words,
            max_words: opts.max_words,
            masking: if opts.generator == Generator::Llm {
                "none: a query that copies corpus text nearly word for word is dropped instead"
            } else {
                "each query's own text, and its near copies in other documents, are removed from \
                 the corpus the set is scored on (the `mask` spans)"
            },
        }
    }
}

/// The `limit` passages the `llm` generator reads next, `c`'s first: the next eligible candidate
/// of each document in the order the rounds visit them, `(order, at, cursor)` (asked together, see
/// [`llm::QueryWriter::prefetch`]). Only a guess at what comes next: a passage it names but the
/// loop skips costs one answer and changes no result.
fn upcoming<'d>(
    docs: &'d [Document],
    per_doc: &[Vec<Candidate>],
    (order, at, cursor): (&[usize], usize, &[usize]),
    taken: &Taken,
    c: &Candidate,
    limit: usize,
) -> Vec<&'d str> {
    let passage = |d: usize, c: &Candidate| &docs[d].text[c.passage.0..c.passage.1];
    let mut out = vec![passage(order[at], c)];
    for &d in order[at + 1..].iter().chain(&order[..at]) {
        if out.len() >= limit {
            break;
        }
        if let Some(next) = per_doc[d][cursor[d].min(per_doc[d].len())..]
            .iter()
            .find(|n| taken.answer_for(n).is_some())
        {
            out.push(passage(d, next));
        }
    }
    out
}

fn no_candidates(documents: usize, opts: &SynthOptions) -> String {
    let what = match opts.generator {
        Generator::Ict | Generator::Llm => format!(
            "a document of at least 3 sentences with one of {}–{} words",
            opts.min_words, opts.max_words
        ),
        Generator::Title => {
            "a title or Markdown heading of at least 2 words before some text".into()
        }
    };
    format!(
        "no query can be made from {documents} document(s) with the `{}` generator: it needs {what}",
        opts.generator
    )
}

/// Units already masked, and units already some query's answer (which must not be masked).
#[derive(Default)]
struct Taken {
    masked: HashSet<usize>,
    answers: HashSet<usize>,
}

impl Taken {
    /// The answer a candidate would get, if it can still be asked: its own text is neither
    /// masked nor another query's answer, and one of its answers is not masked.
    fn answer_for(&self, c: &Candidate) -> Option<(usize, usize, usize)> {
        if c.unit.is_some_and(|u| self.masked.contains(&u) || self.answers.contains(&u)) {
            return None;
        }
        c.answers.iter().find(|a| !self.masked.contains(&a.0)).copied()
    }

    /// Marks a query's own text and its answer as taken.
    fn take(&mut self, c: &Candidate, answer: (usize, usize, usize)) {
        if let Some(u) = c.unit {
            self.masked.insert(u);
        }
        self.answers.insert(answer.0);
    }
}

/// Runs the near-copy and bleed checks on one candidate; the query if it passes.
#[allow(clippy::too_many_arguments)]
fn check(
    docs: &[Document],
    d: usize,
    c: &Candidate,
    answer: (usize, usize, usize),
    index: &OverlapIndex,
    opts: &SynthOptions,
    taken: &mut Taken,
    report: &mut SynthReport,
) -> Option<SynthQuery> {
    let own = |u: usize| {
        let unit = &index.units[u];
        Some(u) == c.unit
            || (unit.doc == d
                && match (c.place, unit.span) {
                    (Place::Text(s, e), Some((us, ue))) => us < e && s < ue,
                    (Place::Title, None) => true,
                    _ => false,
                })
    };
    let hits: Vec<usize> =
        index.similar(&c.question, NEAR_COPY).into_iter().filter(|&u| !own(u)).collect();
    if hits.iter().any(|&u| index.units[u].doc == d) {
        report.near_copy_dropped += 1;
        return None;
    }
    let others: BTreeSet<usize> = hits.iter().map(|&u| index.units[u].doc).collect();
    if !bleed_allowed(&others, opts, report) {
        return None;
    }
    let doc = &docs[d];
    let mut mask = vec![mask_of(doc, c.place)];
    for &u in &hits {
        let unit = &index.units[u];
        let place = unit.span.map_or(Place::Title, |(s, e)| Place::Text(s, e));
        mask.push(mask_of(&docs[unit.doc], place));
        taken.masked.insert(u);
    }
    let (_, start, end) = answer;
    Some(query(docs, d, &others, c.question.clone(), (start, end), mask, opts.generator))
}

/// Whether a query whose text also stands in `others` is kept (they are then judged relevant
/// too); counted either way.
fn bleed_allowed(others: &BTreeSet<usize>, opts: &SynthOptions, report: &mut SynthReport) -> bool {
    if others.len() > opts.max_bleed {
        report.bleed_dropped += 1;
        return false;
    }
    report.bleed_relevant_added += others.len();
    true
}

/// A query of document `d`, with `others` judged relevant too and the byte span `answer` of
/// its text as the answer.
fn query(
    docs: &[Document],
    d: usize,
    others: &BTreeSet<usize>,
    question: String,
    (start, end): (usize, usize),
    mask: Vec<Mask>,
    generator: Generator,
) -> SynthQuery {
    let doc = &docs[d];
    SynthQuery {
        qid: String::new(),
        question,
        doc_id: doc.id.clone(),
        relevant: others.iter().map(|&o| docs[o].id.clone()).collect(),
        answers: vec![Answer {
            text: doc.text[start..end].to_string(),
            start: chars_before(&doc.text, start),
            end: chars_before(&doc.text, end),
        }],
        mask,
        generator,
    }
}

fn mask_of(doc: &Document, place: Place) -> Mask {
    match place {
        Place::Text(s, e) => Mask {
            doc_id: doc.id.clone(),
            field: "text",
            start: chars_before(&doc.text, s),
            end: chars_before(&doc.text, e),
        },
        Place::Title => Mask {
            doc_id: doc.id.clone(),
            field: "title",
            start: 0,
            end: doc.title.chars().count(),
        },
    }
}

fn chars_before(text: &str, byte: usize) -> usize {
    text[..byte].chars().count()
}

fn words(text: &str) -> usize {
    WordCounter.count(text)
}

/// Sentences of a document of at least three, of a query's length, not headings, each with a
/// neighbour as its answer.
fn ict_candidates(
    doc: &Document,
    sentences: &[(usize, usize)],
    units: &[usize],
    opts: &SynthOptions,
) -> Vec<Candidate> {
    if sentences.len() < 3 {
        return Vec::new();
    }
    (0..sentences.len())
        .filter_map(|i| {
            let (s, e) = sentences[i];
            let text = &doc.text[s..e];
            let n = words(text);
            if n < opts.min_words || n > opts.max_words || text.starts_with('#') {
                return None;
            }
            let neighbours = [i + 1, i.wrapping_sub(1)];
            let passage =
                (sentences[i.saturating_sub(1)].0, sentences[(i + 1).min(sentences.len() - 1)].1);
            Some(Candidate {
                passage,
                question: text.split_whitespace().collect::<Vec<_>>().join(" "),
                place: Place::Text(s, e),
                unit: Some(units[i]),
                answers: neighbours
                    .into_iter()
                    .filter(|&a| a < sentences.len())
                    .map(|a| (units[a], sentences[a].0, sentences[a].1))
                    .collect(),
            })
        })
        .collect()
}

/// The document's title and its Markdown headings, each answered by the first sentence after.
fn title_candidates(
    doc: &Document,
    sentences: &[(usize, usize)],
    units: &[usize],
    title_unit: Option<usize>,
    opts: &SynthOptions,
) -> Vec<Candidate> {
    let min = opts.min_words.min(2);
    let first_after = |at: usize| sentences.iter().position(|&(s, _)| s >= at);
    let mut out = Vec::new();
    let title = doc.title.trim();
    if let (Some(unit), Some(a)) = (title_unit, first_after(0)) {
        let n = words(title);
        if n >= min && n <= opts.max_words {
            out.push(Candidate {
                passage: (0, sentences[a].1),
                question: title.to_string(),
                place: Place::Title,
                unit: Some(unit),
                answers: vec![(units[a], sentences[a].0, sentences[a].1)],
            });
        }
    }
    let mut at = 0;
    for line in doc.text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let body = line.trim_start();
        let hashes = body.bytes().take_while(|&b| b == b'#').count();
        if !(1..=6).contains(&hashes) || !body[hashes..].starts_with([' ', '\t']) {
            continue;
        }
        let text = body[hashes..].trim().trim_end_matches('#').trim();
        let n = words(text);
        let Some(a) = first_after(at) else { continue };
        if n < min || n > opts.max_words {
            continue;
        }
        let s = start + line.find(text).unwrap_or(0);
        out.push(Candidate {
            passage: (start, sentences[a].1),
            question: text.to_string(),
            place: Place::Text(s, s + text.len()),
            unit: None,
            answers: vec![(units[a], sentences[a].0, sentences[a].1)],
        });
    }
    out
}

/// `0..n` in a low-discrepancy order (van der Corput, rotated by `offset` in [0, 1)): the first
/// picks spread over the whole range, so a long document's sections are all visited early.
fn spread_order(n: usize, offset: f64) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(n);
    for r in 0..(4 * n as u32 + 64) {
        if out.len() == n {
            break;
        }
        let x = (radical_inverse(r) + offset).fract();
        let i = ((x * n as f64) as usize).min(n.saturating_sub(1));
        if n > 0 && !seen[i] {
            seen[i] = true;
            out.push(i);
        }
    }
    out.extend((0..n).filter(|&i| !seen[i]));
    out
}

/// The base-2 radical inverse: bits of `r` mirrored after the binary point.
fn radical_inverse(r: u32) -> f64 {
    f64::from(r.reverse_bits()) / 4_294_967_296.0
}

#[cfg(test)]
mod tests;
