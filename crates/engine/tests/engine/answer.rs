//! Answers with checked citations (`AskRequest`):
//! 1. a model's quotes are located in the stored documents and come back as byte spans whose
//!    text is the quote (exactly, or folded, or with a slip); a quote the sources do not hold
//!    is unverified, and a strict answer leaves its sentence out; `NOT FOUND` abstains and
//!    still gives the passages; Chinese answers with full-width brackets and 「」 are read the
//!    same way; an answer without a quote is backed by its own words in a source, or by the
//!    source sentence holding its new words, or not at all. The model here writes a fixed
//!    answer, so what is checked is the checking;
//! 2. the extractive answer (no model) gives the context's best sentences, each a span;
//! 3. bad input: an empty question, a store without documents, a zero budget;
//! 4. (real tier) the local model answers SQuAD and CMRC 2018 questions from their articles,
//!    and every citation it gets verified for is the stored text at its span.

use std::sync::{Arc, Mutex};

use ckeep_core::Document;
use ckeep_engine::{Answer, Answerer, AskRequest, Engine, MatchKind, NO_ANSWER};
use ckeep_llm::{Generation, Generator, Prompt, Sink};
use ckeep_store::SqliteStore;

/// A model that writes `answer` whatever it is asked, three characters at a time, and keeps
/// the last prompt where the test can read it.
#[derive(Debug)]
struct Scripted {
    answer: String,
    asked: Arc<Mutex<Option<Prompt>>>,
}

impl Scripted {
    fn answering(answer: &str) -> Answerer {
        Self::keeping(answer).0
    }

    fn keeping(answer: &str) -> (Answerer, Arc<Mutex<Option<Prompt>>>) {
        let asked = Arc::new(Mutex::new(None));
        let model = Self { answer: answer.into(), asked: Arc::clone(&asked) };
        (Answerer::Model(Box::new(model)), asked)
    }
}

impl Generator for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn stream(&self, prompt: &Prompt, sink: &mut dyn Sink) -> ckeep_llm::Result<Generation> {
        *self.asked.lock().unwrap() = Some(prompt.clone());
        let chars: Vec<char> = self.answer.chars().collect();
        for piece in chars.chunks(3) {
            sink.text(&piece.iter().collect::<String>());
        }
        Ok(Generation {
            text: self.answer.clone(),
            prompt_tokens: 100,
            completion_tokens: 10,
            seconds: 0.0,
            cached: false,
        })
    }
}

const EIFFEL: &str = "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in \
Paris. It is 330 metres (1,083 ft) tall, about the same height as an 81-storey building. It was \
built by Gustave Eiffel's company for the 1889 World's Fair.";
const LOUVRE: &str = "The Louvre is the world's most-visited art museum. It holds the Mona Lisa, \
painted by Leonardo da Vinci.";
const TOWER_ZH: &str =
    "埃菲尔铁塔位于法国巴黎战神广场，高330米，建于1889年。它是巴黎最著名的地标。";

fn store() -> Engine<SqliteStore> {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.add(Document::new("eiffel", "Eiffel Tower", EIFFEL)).unwrap();
    ingest.add(Document::new("louvre", "Louvre", LOUVRE)).unwrap();
    ingest.add(Document::new("tower-zh", "埃菲尔铁塔", TOWER_ZH)).unwrap();
    ingest.finish().unwrap();
    engine
}

fn ask(
    engine: &Engine<SqliteStore>,
    question: &str,
    answerer: &Answerer,
    strict: bool,
) -> (Answer, String) {
    let request = AskRequest { strict, ..AskRequest::new(question) };
    let mut streamed = String::new();
    let answer = request.answer(engine, answerer, &mut |p: &str| streamed.push_str(p)).unwrap();
    (answer, streamed)
}

/// The stored text of `doc` at a verified citation's span.
fn cited_text<'a>(doc: &'a str, answer: &Answer, sentence: usize, citation: usize) -> &'a str {
    let c = &answer.sentences[sentence].citations[citation];
    assert!(c.verified, "{c:?}");
    c.span.unwrap().slice(doc)
}

#[test]
fn quotes_are_located_in_the_stored_text_and_unfound_ones_marked() {
    let engine = store();
    let script = "It is 330 metres tall [1: \"330 metres (1,083 ft) tall\"]. It was built in \
                  1889 [1: \"built by Gustave Eifel's company for the 1889\"]. It is painted red \
                  [1: \"painted bright red\"].";
    let (answer, streamed) =
        ask(&engine, "How tall is the Eiffel Tower?", &Scripted::answering(script), false);
    assert_eq!(streamed, script, "the model's text is passed on as it is written");
    assert_eq!(answer.passages[0].doc_id, "eiffel");
    assert_eq!(answer.passages[0].number, 1);
    assert_eq!(answer.answer, "It is 330 metres tall. It was built in 1889. It is painted red.");
    let kinds: Vec<(bool, Option<MatchKind>)> =
        answer.sentences.iter().map(|s| (s.verified, s.citations[0].how)).collect();
    assert_eq!(
        kinds,
        vec![(true, Some(MatchKind::Exact)), (true, Some(MatchKind::Fuzzy)), (false, None)]
    );
    assert_eq!(cited_text(EIFFEL, &answer, 0, 0), "330 metres (1,083 ft) tall");
    assert_eq!(cited_text(EIFFEL, &answer, 1, 0), "built by Gustave Eiffel's company for the 1889");
    assert_eq!(answer.sentences[2].citations[0].span, None);
    assert!(!answer.abstained);
    assert_eq!((answer.tokens.prompt, answer.tokens.answer), (100, 10));

    // Strict: the sentence without a located quote is left out.
    let (strict, _) =
        ask(&engine, "How tall is the Eiffel Tower?", &Scripted::answering(script), true);
    assert_eq!(strict.answer, "It is 330 metres tall. It was built in 1889.");
    assert!(strict.sentences[2].withheld && !strict.abstained);
}

#[test]
fn an_answer_without_a_quote_is_backed_by_its_own_words_or_not_at_all() {
    let engine = store();
    let question = "How tall is the Eiffel Tower?";
    // The source's own words, no citation: located as a quote would be.
    let (answer, _) = ask(&engine, question, &Scripted::answering("330 metres"), false);
    let c = &answer.sentences[0].citations[0];
    assert_eq!((c.verified, c.how, c.quote.as_deref()), (true, Some(MatchKind::Exact), None));
    assert_eq!(cited_text(EIFFEL, &answer, 0, 0), "330 metres");
    // A paraphrase with a bare number: the source sentence holding its new words.
    let (answer, _) =
        ask(&engine, question, &Scripted::answering("The tower is 330 metres tall [1]."), false);
    let c = &answer.sentences[0].citations[0];
    assert_eq!((c.verified, c.how), (true, Some(MatchKind::Supported)));
    assert!(cited_text(EIFFEL, &answer, 0, 0).starts_with("It is 330 metres (1,083 ft) tall"));
    // A number no source sentence holds: unverified, and withheld when strict.
    let (answer, _) =
        ask(&engine, question, &Scripted::answering("The tower is 324 metres tall [1]."), true);
    assert!(!answer.sentences[0].verified && answer.sentences[0].withheld);
    assert!(answer.abstained);
    assert_eq!(answer.answer, NO_ANSWER);
}

#[test]
fn the_prompt_numbers_the_passages_and_not_found_abstains() {
    let engine = store();
    let (answerer, asked) = Scripted::keeping("NOT FOUND");
    let request = AskRequest::new("Who painted the Mona Lisa?");
    let answer = request.answer(&engine, &answerer, &mut ckeep_llm::Silent).unwrap();
    let prompt = asked.lock().unwrap().clone().unwrap();
    let first = format!("Sources:\n\n[1] Louvre\n{}\n", answer.passages[0].text);
    assert!(prompt.user.starts_with(&first), "{}", prompt.user);
    assert!(LOUVRE.contains(&answer.passages[0].text));
    assert!(prompt.user.ends_with("\n\nQuestion: Who painted the Mona Lisa?"), "{}", prompt.user);
    assert!(prompt.system.contains("NOT FOUND"));
    // NOT FOUND: the answer says so, and the passages are still there.
    assert!(answer.abstained);
    assert_eq!(answer.answer, NO_ANSWER);
    assert!(answer.sentences.is_empty());
    assert_eq!(answer.passages[0].doc_id, "louvre");
    assert_eq!(answer.passages.iter().map(|p| p.tokens).sum::<usize>(), answer.context.tokens);
    assert!(answer.context.tokens <= answer.context.budget);
}

#[test]
fn chinese_answers_with_full_width_citations() {
    let engine = store();
    let script = "埃菲尔铁塔高330米【1：「高３３０米」】，建于1889年［1：「建于1889年」］。";
    let (answer, _) = ask(&engine, "埃菲尔铁塔有多高？", &Scripted::answering(script), true);
    assert_eq!(answer.passages[0].doc_id, "tower-zh");
    assert_eq!(answer.answer, "埃菲尔铁塔高330米，建于1889年。");
    let c = &answer.sentences[0].citations;
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].how, Some(MatchKind::Folded));
    assert_eq!(c[0].span.unwrap().slice(TOWER_ZH), "高330米");
    assert_eq!(c[1].how, Some(MatchKind::Exact));
    assert_eq!(c[1].span.unwrap().slice(TOWER_ZH), "建于1889年");
}

#[test]
fn an_extractive_answer_is_the_contexts_best_sentences() {
    let engine = store();
    let (answer, streamed) =
        ask(&engine, "Who built the Eiffel Tower?", &Answerer::Extractive, false);
    assert_eq!(answer.answerer, "extractive");
    assert!(answer.answer.contains("built by Gustave Eiffel's company"), "{answer:?}");
    assert_eq!(streamed, answer.answer);
    for s in &answer.sentences {
        let c = &s.citations[0];
        let doc = if c.doc_id.as_deref() == Some("eiffel") { EIFFEL } else { LOUVRE };
        assert_eq!(c.span.unwrap().slice(doc), s.text);
    }
    let (zh, _) = ask(&engine, "埃菲尔铁塔建于哪一年？", &Answerer::Extractive, false);
    assert!(zh.sentences[0].text.contains("1889"), "{zh:?}");
    assert_eq!(zh.sentences[0].citations[0].doc_id.as_deref(), Some("tower-zh"));
}

#[test]
fn bad_questions_and_empty_stores_are_the_users_errors() {
    let engine = store();
    let err = |request: AskRequest, engine: &Engine<SqliteStore>| {
        let e = request.answer(engine, &Answerer::Extractive, &mut ckeep_llm::Silent).unwrap_err();
        assert_eq!(e.code().exit_code(), 2, "{e}");
        e.to_string()
    };
    assert!(err(AskRequest::new("  "), &engine).contains("empty"));
    let zero = AskRequest { context_tokens: 0, ..AskRequest::new("tower") };
    assert!(err(zero, &engine).contains("budget"));
    let empty = Engine::new(SqliteStore::in_memory().unwrap());
    assert!(err(AskRequest::new("tower"), &empty).contains("no documents"));
}

/// The first `articles` documents of a long-document set and their first `per` questions each,
/// with their gold answers.
fn long_documents(
    docs: &str,
    queries: &str,
    articles: usize,
    per: usize,
) -> (Vec<Document>, Vec<(String, Vec<String>)>) {
    let dir = ckeep_testkit::data_dir();
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let docs: Vec<Document> = read(docs)
        .lines()
        .take(articles)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let title = v["title"].as_str().unwrap_or_default();
            Document::new(v["doc_id"].as_str().unwrap(), title, v["text"].as_str().unwrap())
        })
        .collect();
    let mut questions = Vec::new();
    for d in &docs {
        let of_doc = read(queries)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["doc_id"] == d.id.as_str())
            .take(per)
            .map(|v| {
                let answers = v["answers"].as_array().unwrap().iter();
                let gold = answers
                    .map(|a| a.as_str().or(a["text"].as_str()).unwrap().to_string())
                    .collect();
                (v["question"].as_str().unwrap().to_string(), gold)
            })
            .collect::<Vec<_>>();
        questions.extend(of_doc);
    }
    (docs, questions)
}

#[test]
#[ignore = "real tier (scripts/test.sh): the installed language model and ../shared/data"]
fn the_local_model_answers_squad_and_cmrc_with_located_citations() {
    // The model CI installs, named: the default is whichever is installed first in line.
    let model = Answerer::load(Some("qwen2.5-coder-0.5b-instruct"), None)
        .expect("ckeep model pull qwen2.5-coder-0.5b-instruct");
    for (docs, queries) in [
        ("squad_dev/longdoc-v1.1.docs.jsonl", "squad_dev/longdoc-v1.1.queries.jsonl"),
        ("zh/retrieval/cmrc2018/dev/docs.jsonl", "zh/retrieval/cmrc2018/dev/queries.jsonl"),
    ] {
        let (docs, questions) = long_documents(docs, queries, 2, 1);
        let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
        let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
        for d in &docs {
            ingest.add(d.clone()).unwrap();
        }
        ingest.finish().unwrap();
        let mut asked = 0;
        for (question, gold) in &questions {
            let (answer, streamed) = ask(&engine, question, &model, false);
            assert!(!answer.passages.is_empty());
            assert!(answer.context.tokens <= answer.context.budget);
            // The model's text came through the sink.
            assert!(!streamed.trim().is_empty());
            let context: String = answer.passages.iter().map(|p| p.text.as_str()).collect();
            assert!(
                gold.iter().any(|g| context.contains(g.as_str())),
                "{question}: {gold:?} not in the context"
            );
            // Every verified citation is the stored text at its span: its quote found there
            // (as folded, at most), or the sentence backing an answer given without one.
            for c in answer.sentences.iter().flat_map(|s| &s.citations).filter(|c| c.verified) {
                let doc = docs.iter().find(|d| Some(&d.id) == c.doc_id.as_ref()).unwrap();
                let span = c.span.unwrap();
                assert!(doc.text.get(span.start..span.end).is_some(), "{c:?}");
                match c.quote.as_deref() {
                    Some(quote) => {
                        let at = ckeep_engine::locate(quote, &doc.text, span).unwrap();
                        assert_eq!(at.span, span, "{c:?}");
                    }
                    None => assert!(c.how.is_some(), "{c:?}"),
                }
            }
            asked += 1;
        }
        assert_eq!(asked, questions.len());
    }
}
