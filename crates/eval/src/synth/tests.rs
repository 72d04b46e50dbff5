use super::*;

/// Documents of `sentences` sentences each, of ten made-up words drawn at random from a
/// thousand, so no two sentences share much.
fn corpus(docs: usize, sentences: usize) -> Vec<Document> {
    let syllables = ["ka", "lo", "mi", "ten", "ra", "sul", "bo", "ne", "vi", "dor"];
    let mut rng = SplitMix64(3);
    let mut word = || {
        let n = rng.next() as usize;
        format!("{}{}{}", syllables[n % 10], syllables[n / 10 % 10], syllables[n / 100 % 10])
    };
    (0..docs)
        .map(|d| {
            let text: Vec<String> = (0..sentences)
                .map(|_| {
                    let words: Vec<String> = (0..10).map(|_| word()).collect();
                    // Capitalised, as sentence boundaries (UAX #29) expect.
                    format!("{}{}.", words[0][..1].to_uppercase(), &words.join(" ")[1..])
                })
                .collect();
            Document::new(format!("doc{d}"), format!("{} {}", word(), word()), text.join(" "))
        })
        .collect()
}

fn chars(text: &str, start: usize, end: usize) -> String {
    text.chars().skip(start).take(end - start).collect()
}

#[test]
fn inverse_cloze_is_seeded_spread_and_masks_what_it_asks() {
    let docs = corpus(12, 9);
    let opts = SynthOptions { count: 20, ..SynthOptions::default() };
    let (queries, report) = synthesize(&docs, &opts).unwrap();
    assert_eq!(queries.len(), 20);
    assert_eq!(report.queries, 20);
    // A round robin over documents: no document gives a second query before all gave one.
    assert_eq!(report.documents_used, 12);
    for q in &queries {
        let doc = docs.iter().find(|d| d.id == q.doc_id).unwrap();
        let own = &q.mask[0];
        assert_eq!((own.doc_id.as_str(), own.field), (doc.id.as_str(), "text"));
        assert_eq!(chars(&doc.text, own.start, own.end), q.question);
        // The answer is other text of the same document, which masking leaves in place.
        let a = &q.answers[0];
        assert_eq!(chars(&doc.text, a.start, a.end), a.text);
        assert!(a.end <= own.start || a.start >= own.end);
        assert!(q.qid.starts_with("ict-"));
    }
    let again = synthesize(&docs, &opts).unwrap().0;
    let ids = |qs: &[SynthQuery]| qs.iter().map(|q| q.question.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&queries), ids(&again));
    let other = synthesize(&docs, &SynthOptions { seed: 7, ..opts }).unwrap().0;
    assert_ne!(ids(&queries), ids(&other));
}

#[test]
fn a_long_document_is_visited_in_all_its_sections() {
    let docs = corpus(1, 60);
    let opts = SynthOptions { count: 6, ..SynthOptions::default() };
    let (queries, _) = synthesize(&docs, &opts).unwrap();
    let len = docs[0].text.chars().count();
    let mut thirds = [0; 3];
    for q in &queries {
        thirds[(q.mask[0].start * 3 / len).min(2)] += 1;
    }
    assert!(thirds.iter().all(|&n| n >= 1), "{thirds:?}");
}

#[test]
fn copies_are_dropped_or_judged_and_masked_where_they_stand() {
    let repeated = "Copper wiring conducts electricity far better than aluminium wiring does.";
    let opts = SynthOptions { count: 1000, ..SynthOptions::default() };
    // doc0 says it twice: masking one copy would leave the other, so it is dropped.
    let mut docs = corpus(6, 4);
    docs[0].text = format!("{repeated} Too short to ask. Also short. {repeated}");
    let (queries, report) = synthesize(&docs, &opts).unwrap();
    assert_eq!(report.near_copy_dropped, 2, "{report:?}");
    assert!(queries.iter().all(|q| q.question != repeated));

    // doc1 says it once and doc2 nearly the same: whichever is asked, the other document is
    // relevant too, and masked there.
    let mut docs = corpus(6, 4);
    docs[1].text = format!("{repeated} {}", docs[1].text);
    let near = repeated.replace("far ", "much ");
    docs[2].text = format!("{} {near}", docs[2].text);
    let (queries, report) = synthesize(&docs, &opts).unwrap();
    let asked: Vec<&SynthQuery> =
        queries.iter().filter(|q| q.question == repeated || q.question == near).collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = asked[0];
    let other = if q.doc_id == "doc1" { 2 } else { 1 };
    assert_eq!(q.relevant, [docs[other].id.clone()]);
    assert_eq!(q.mask.len(), 2);
    assert_eq!(q.mask[1].doc_id, docs[other].id);
    assert!(chars(&docs[other].text, q.mask[1].start, q.mask[1].end).starts_with("Copper wiring"));
    assert_eq!(report.bleed_relevant_added, 1);

    // Boilerplate in more documents than `max_bleed` is dropped.
    let mut docs = corpus(6, 4);
    for d in &mut docs {
        d.text = format!("{} {repeated}", d.text);
    }
    let (queries, report) = synthesize(&docs, &opts).unwrap();
    assert!(queries.iter().all(|q| q.question != repeated));
    assert!(report.bleed_dropped >= 1, "{report:?}");
}

#[test]
fn titles_and_headings_become_queries() {
    let docs = vec![
        Document::new(
            "a",
            "Volcanic soils of the island",
            "Ash makes the soil rich. It holds water well.",
        ),
        Document::new(
            "b",
            "",
            "# Building the harbor wall\n\nStones were carried by boat. The wall took years.\n\n\
             ## Repairs after the storm\n\nWaves broke the northern end.",
        ),
    ];
    let opts = SynthOptions { generator: Generator::Title, count: 10, ..SynthOptions::default() };
    let (queries, _) = synthesize(&docs, &opts).unwrap();
    let mut asked: Vec<&str> = queries.iter().map(|q| q.question.as_str()).collect();
    asked.sort_unstable();
    assert_eq!(
        asked,
        ["Building the harbor wall", "Repairs after the storm", "Volcanic soils of the island"]
    );
    let title = queries.iter().find(|q| q.doc_id == "a").unwrap();
    assert_eq!(title.mask[0].field, "title");
    assert_eq!(title.answers[0].text, "Ash makes the soil rich.");
    let repairs = queries.iter().find(|q| q.question.starts_with("Repairs")).unwrap();
    assert_eq!(chars(&docs[1].text, repairs.mask[0].start, repairs.mask[0].end), repairs.question);
    assert_eq!(repairs.answers[0].text, "Waves broke the northern end.");
}

#[test]
fn chinese_and_japanese_documents_give_queries_in_their_language() {
    let zh = Document::new(
        "zh",
        "长江",
        "长江是中国最长的河流，全长约六千三百公里。它发源于青藏高原的唐古拉山脉。\
         长江流经十一个省级行政区，最后注入东海。三峡大坝位于湖北省宜昌市境内。\
         长江流域的人口约占全国的三分之一。",
    );
    let ja = Document::new(
        "ja",
        "富士山",
        "富士山は日本で最も高い山で、標高は三千七百七十六メートルです。\
         山頂からの眺めはとても美しく、多くの登山者が訪れます。\
         夏の登山シーズンには山小屋が営業しています。冬は雪に覆われます。",
    );
    for doc in [zh, ja] {
        let opts = SynthOptions { count: 3, ..SynthOptions::default() };
        let (queries, report) = synthesize(std::slice::from_ref(&doc), &opts).unwrap();
        assert!(!queries.is_empty(), "{report:?}");
        for q in &queries {
            assert!(q.question.chars().any(ckeep_core::script::is_cjk), "{}", q.question);
            let n = WordCounter.count(&q.question);
            assert!((8..=64).contains(&n), "{n} units: {}", q.question);
            assert_eq!(chars(&doc.text, q.mask[0].start, q.mask[0].end), q.question);
        }
    }
}

#[test]
fn corpora_that_give_no_query_are_refused_clearly() {
    let err = synthesize(&[], &SynthOptions::default()).unwrap_err();
    assert!(err.to_string().contains("no documents"), "{err}");
    let tiny = [Document::new("t", "", "Too short.")];
    let err = synthesize(&tiny, &SynthOptions::default()).unwrap_err();
    assert!(err.to_string().contains("at least 3 sentences"), "{err}");
    assert!(err.is_user_error());
    // Fewer than asked for is a report, not an error.
    let (queries, report) =
        synthesize(&corpus(2, 3), &SynthOptions { count: 50, ..SynthOptions::default() }).unwrap();
    assert!(queries.len() < 50 && report.queries == queries.len());
}

#[test]
fn spread_order_is_a_permutation() {
    for n in [0, 1, 2, 7, 100] {
        let mut order = spread_order(n, 0.37);
        assert_eq!(order.len(), n);
        if n >= 4 {
            // The first four picks land in four different quarters.
            let mut quarters: Vec<usize> = order[..4].iter().map(|&i| i * 4 / n).collect();
            quarters.sort_unstable();
            quarters.dedup();
            assert_eq!(quarters.len(), 4, "{n}: {:?}", &order[..4]);
        }
        order.sort_unstable();
        assert_eq!(order, (0..n).collect::<Vec<_>>());
    }
}

#[test]
fn a_written_set_loads_with_its_text_masked_and_its_bleed_judged() {
    let repeated = "Copper wiring conducts electricity far better than aluminium wiring does.";
    let mut docs = corpus(8, 6);
    docs[3].text = format!("{repeated} {}", docs[3].text);
    docs[5].text = format!("{} {repeated}", docs[5].text);
    docs[4].title = "Cables and their metals".into();
    let (queries, report) =
        synthesize(&docs, &SynthOptions { count: 1000, ..SynthOptions::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &docs, &queries, &report).unwrap();
    let data = crate::dataset::load_dir(dir.path(), "test").unwrap();
    assert_eq!(data.queries.len(), queries.len());
    assert_eq!(data.masked, report.masked_spans);
    for q in &queries {
        for d in std::iter::once(&q.doc_id).chain(&q.relevant) {
            let doc = data.docs.iter().find(|x| &x.id == d).unwrap();
            assert!(!doc.text.contains(&q.question), "{} still says {}", d, q.question);
            assert_eq!(data.qrels.0[&q.qid].get(d), Some(&1));
        }
        // The answer text survives masking.
        let doc = data.docs.iter().find(|x| x.id == q.doc_id).unwrap();
        assert!(doc.text.contains(&q.answers[0].text));
    }
    let bled = queries.iter().find(|q| q.question == repeated).expect("asked");
    assert_eq!(bled.relevant.len(), 1);
    // What is not masked is kept as it was.
    assert_eq!(data.docs[4].title, "Cables and their metals");
    assert!(!dir.path().join(".queries.jsonl.partial").exists());
}

#[test]
fn a_mask_outside_the_corpus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("docs.jsonl"), "{\"doc_id\":\"a\",\"text\":\"Short text.\"}\n")
        .unwrap();
    for (mask, expect) in [
        (r#"[{"doc_id":"a","start":3,"end":400}]"#, "outside document `a`"),
        (r#"[{"doc_id":"zz","start":0,"end":1}]"#, "not in the corpus"),
        (r#"[{"doc_id":"a","start":3}]"#, "needs `doc_id`, `start` and `end`"),
    ] {
        std::fs::write(
            dir.path().join("queries.jsonl"),
            format!("{{\"qid\":\"q\",\"question\":\"x\",\"doc_id\":\"a\",\"mask\":{mask}}}\n"),
        )
        .unwrap();
        let err = crate::dataset::load_dir(dir.path(), "test").unwrap_err().to_string();
        assert!(err.contains(expect), "{err}");
    }
}

/// A chat server whose `n`-th answer (from 0) is `answer(n)`, and the count of requests.
fn chat_server(
    answer: impl Fn(usize) -> String + Send + Sync + 'static,
) -> (mockito::ServerGuard, String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut server = mockito::Server::new();
    let asked = std::sync::Arc::new(AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&asked);
    server
        .mock("POST", "/v1/chat/completions")
        .with_header("content-type", "application/json")
        .with_body_from_request(move |_| {
            let n = count.fetch_add(1, Ordering::SeqCst);
            serde_json::json!({"choices": [{"message": {"role": "assistant", "content": answer(n)}}]})
                .to_string()
                .into()
        })
        .create();
    let url = format!("{}/v1#test-model", server.url());
    (server, url, asked)
}

#[test]
fn a_model_answering_garbage_is_stopped_and_what_it_wrote_before_is_kept() {
    let docs = corpus(30, 6);
    let llm = SynthOptions::new(10, 1, Generator::Llm);
    // Garbage from the first answer: stopped after MAX_UNUSABLE_IN_A_ROW questions, not one per
    // passage of the corpus, with an error that shows what the model said.
    let (_server, url, asked) = chat_server(|n| match n % 5 {
        0 => String::new(),
        1 => "1234 5678".into(),
        2 => "…".into(),
        3 => "?!".into(),
        _ => "word ".repeat(100),
    });
    let model = ckeep_llm::load(&url).unwrap();
    let writer = llm::QueryWriter::new(model.as_ref(), None).unwrap();
    let err = synthesize_with(&docs, &llm, Some(&writer), &mut |_, _| {}).unwrap_err();
    assert!(matches!(err, Error::UnusableModel(_)) && !err.is_user_error(), "{err}");
    assert!(err.to_string().contains("20 answers in a row"), "{err}");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), MAX_UNUSABLE_IN_A_ROW);

    // A model that copies the passage, or says the same thing to every passage, is no better.
    let copied = docs[0].text.clone();
    let (_server, url, _) = chat_server(move |_| copied.clone());
    let model = ckeep_llm::load(&url).unwrap();
    let writer = llm::QueryWriter::new(model.as_ref(), None).unwrap();
    let err = synthesize_with(&docs, &llm, Some(&writer), &mut |_, _| {}).unwrap_err();
    assert!(matches!(err, Error::UnusableModel(_)), "{err}");
    let (_server, url, _) = chat_server(|_| "what is this passage about".into());
    let model = ckeep_llm::load(&url).unwrap();
    let writer = llm::QueryWriter::new(model.as_ref(), None).unwrap();
    let (queries, report) = synthesize_with(&docs, &llm, Some(&writer), &mut |_, _| {}).unwrap();
    assert_eq!(queries.len(), 1);
    assert!(report.stopped.as_deref().unwrap().contains("a repeat"), "{report:?}");

    // Three good answers, then garbage: the three queries are kept and the report says why it
    // stopped; isolated bad answers between good ones are dropped and counted, not fatal.
    let (_server, url, _) = chat_server(|n| match n {
        0 | 2 | 4 => format!("query number {n} about tenkalo"),
        1 | 3 => String::new(),
        _ => "!!!".into(),
    });
    let model = ckeep_llm::load(&url).unwrap();
    let writer = llm::QueryWriter::new(model.as_ref(), None).unwrap();
    let (queries, report) = synthesize_with(&docs, &llm, Some(&writer), &mut |_, _| {}).unwrap();
    assert_eq!(queries.len(), 3);
    assert_eq!(queries[1].question, "query number 2 about tenkalo");
    assert!(queries.iter().all(|q| q.mask.is_empty() && q.generator == Generator::Llm));
    assert_eq!(report.unusable_answers, 2 + MAX_UNUSABLE_IN_A_ROW);
    assert!(report.stopped.as_deref().unwrap().contains("\"!!!\""), "{report:?}");
    assert_eq!(report.model.as_deref(), Some("test-model"));
}

#[test]
fn a_server_that_answers_no_chat_response_is_named() {
    let mut server = mockito::Server::new();
    let html = server
        .mock("POST", "/v1/chat/completions")
        .with_header("content-type", "text/html")
        .with_body("<html>Welcome to nginx!</html>")
        .expect(1)
        .create();
    let model = ckeep_llm::load(&format!("{}/v1#m", server.url())).unwrap();
    let writer = llm::QueryWriter::new(model.as_ref(), None).unwrap();
    let llm = SynthOptions::new(5, 1, Generator::Llm);
    let err = synthesize_with(&corpus(5, 6), &llm, Some(&writer), &mut |_, _| {}).unwrap_err();
    assert!(matches!(err, Error::Generation(_)), "{err}");
    assert!(err.to_string().contains(&server.url()), "{err}");
    html.assert();
}
