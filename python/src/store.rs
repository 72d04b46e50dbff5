//! `Store`: one store (a directory or a `postgres://` URL) with one writer and a pool of
//! readers, so searches from several Python threads run at once beside each other.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, anyhow, bail};
use ckeep_core::Document;
use ckeep_embed::Embedder;
use ckeep_engine::{
    AnalyzerChoice, Answerer, AskRequest, DedupOptions, DocumentPart, Engine, Inputs, Lease,
    MetadataFilter, ModelSet, PairModel, ReaderPool, SearchRequest, StrategyFields,
};
use ckeep_store::{DynStore, StoreRead};
use ckeep_text::{ChunkerSpec, LoadOptions, Loader};
use pyo3::prelude::*;
use serde_json::{Value, json};

use crate::errors::{detached, usage};

type Eng = Engine<DynStore>;

/// A Context Keeper store. Methods answer JSON text that the Python layer turns into objects.
#[derive(Debug)]
#[pyclass(frozen, module = "ckeep._ckeep")]
pub struct Store {
    location: String,
    /// The model named when the store was opened (`None`: the one the store was built with).
    model: Option<String>,
    cache: bool,
    /// Writes go through this engine; readers share its loaded vectors. `None` until the
    /// store exists (it is created by the first add).
    writer: Mutex<Option<Eng>>,
    /// Idle readers, each with its own connection; grows to the most threads searching at once.
    readers: ReaderPool<DynStore>,
    /// Loaded models, shared by the writer and every reader.
    models: ModelSet,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic inside a call is reported to Python; the engine's writes are transactions, so
    // what the lock guards is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn parse<T: std::str::FromStr>(what: &str, value: Option<&str>) -> anyhow::Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    value.map(|v| v.parse::<T>().map_err(|e| usage(format!("{what} `{v}`: {e}")))).transpose()
}

impl Store {
    /// The writer, opening the store (or creating it, with `create`) on first use.
    fn writer(&self, create: bool) -> anyhow::Result<MutexGuard<'_, Option<Eng>>> {
        let mut guard = lock(&self.writer);
        if guard.is_none() {
            let store = if create {
                ckeep_store::open_or_create(&self.location)?
            } else {
                ckeep_store::open(&self.location)?
            };
            let mut engine = Engine::new(store).with_model_cache(self.cache);
            if self.cache {
                engine = engine.with_generation_cache(ckeep_engine::default_generation_cache());
            }
            *guard = Some(engine);
        }
        Ok(guard)
    }

    /// Runs `job` on the writer's connection (the store must exist).
    fn read<T>(&self, job: impl FnOnce(&Eng) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let guard = self.writer(false)?;
        job(guard.as_ref().context("the store is not open")?)
    }

    /// A loaded model by spec (loaded once per store object).
    fn model(&self, spec: &str) -> anyhow::Result<Arc<dyn Embedder>> {
        Ok(self.models.get(spec)?)
    }

    /// The model to use: the one asked for, else the store object's, else the store's own.
    fn model_spec(&self, asked: Option<&str>, engine: &Eng) -> anyhow::Result<Option<String>> {
        Ok(engine.searcher()?.model_for(asked.or(self.model.as_deref())))
    }

    /// An idle reader, or a new one over its own connection; back in the pool when dropped.
    fn take_reader(&self) -> anyhow::Result<Lease<DynStore>> {
        self.readers.lease_or(|| {
            let store = ckeep_store::open(&self.location)?;
            self.read(|writer| Ok(writer.reader(store)))
        })
    }

    fn ingest(&self, docs: Vec<Document>, opts: &AddOptions) -> anyhow::Result<String> {
        let started = std::time::Instant::now();
        let analyzer: Option<AnalyzerChoice> = parse("analyzer", opts.analyzer.as_deref())?;
        let unit: Option<ckeep_text::chunk::SizeUnit> =
            parse("size unit", opts.size_unit.as_deref())?;
        let mut guard = self.writer(true)?;
        let current = guard.as_ref().context("the store is not open")?;
        let model = match self.model_spec(opts.model.as_deref(), current)? {
            Some(spec) => Some(self.model(&spec)?),
            None => None,
        };
        // The writer outlives the call: an analyzer asked for once (even by a refused call)
        // must not stick to the next, so no analyzer means `auto` (the store's own) again.
        let mut engine = guard
            .take()
            .context("the store is not open")?
            .with_analyzer(analyzer.unwrap_or_default());
        if let Some(m) = model {
            engine = engine.with_embedder(m);
        }
        let engine = guard.insert(engine);
        let asked = opts.chunker.as_deref().map(str::parse::<ChunkerSpec>).transpose();
        let chunker = engine
            .searcher()?
            .chunker_for(asked.map_err(|e| usage(e.to_string()))?.as_ref(), unit)?;
        let mut ingest = engine.writer().ingest(&chunker)?;
        for doc in docs {
            ingest.add(doc)?;
        }
        let ingested = ingest.finish()?;
        let report = ckeep_engine::AddReport::new(
            &self.location,
            &chunker,
            engine.searcher()?.analyzer()?,
            engine.embedder().map(|e| e.info().name.clone()),
            ingested,
            started.elapsed().as_secs_f64(),
        );
        Ok(serde_json::to_string(&report)?)
    }
}

/// A metadata filter given as JSON text: a dict of keys and values (or conditions).
fn parse_filter(json: &str) -> anyhow::Result<MetadataFilter> {
    let Value::Object(map) = serde_json::from_str::<Value>(json)? else {
        bail!(usage("filter must be a dict of metadata keys and values"));
    };
    let filter = MetadataFilter(map);
    filter.check().map_err(usage)?;
    Ok(filter)
}

/// What `add` may set; every part optional.
#[derive(Debug, Default)]
struct AddOptions {
    chunker: Option<String>,
    model: Option<String>,
    analyzer: Option<String>,
    size_unit: Option<String>,
}

#[pymethods]
impl Store {
    #[new]
    #[pyo3(signature = (location, *, model=None, cache=true))]
    fn new(location: String, model: Option<String>, cache: bool) -> Self {
        Self {
            location,
            model,
            cache,
            writer: Mutex::new(None),
            readers: ReaderPool::default(),
            models: ModelSet::new(cache),
        }
    }

    /// Where the store is.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Adds files and directories (txt, md, ipynb, jsonl, rst), all checked before any is stored.
    #[pyo3(signature = (paths, *, chunker=None, model=None, analyzer=None, size_unit=None, lossy=false))]
    #[allow(clippy::too_many_arguments)]
    fn add_paths(
        &self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        chunker: Option<String>,
        model: Option<String>,
        analyzer: Option<String>,
        size_unit: Option<String>,
        lossy: bool,
    ) -> PyResult<String> {
        let opts = AddOptions { chunker, model, analyzer, size_unit };
        detached(py, || {
            let load = LoadOptions { lossy, ..LoadOptions::default() };
            let inputs = Inputs { paths, load, keep_going: false };
            let docs = inputs.check("added", || {})?.documents(|_| {}).collect::<Result<_, _>>()?;
            self.ingest(docs, &opts)
        })
    }

    /// Adds documents given as JSONL text (the `ckeep add` JSONL rules: `id`, `text`, optional
    /// `title` and `metadata`).
    #[pyo3(signature = (jsonl, *, chunker=None, model=None, analyzer=None, size_unit=None))]
    fn add_jsonl(
        &self,
        py: Python<'_>,
        jsonl: String,
        chunker: Option<String>,
        model: Option<String>,
        analyzer: Option<String>,
        size_unit: Option<String>,
    ) -> PyResult<String> {
        let opts = AddOptions { chunker, model, analyzer, size_unit };
        detached(py, || {
            let docs = Loader::default().jsonl("documents", &jsonl)?;
            self.ingest(docs, &opts)
        })
    }

    /// Searches; the JSON is `ckeep search --json`'s, with each result's spans also in
    /// characters (`char_spans`). `fields` is the strategy's fields as JSON, as `POST /search`
    /// takes them beside `query` (the engine's `StrategyFields`).
    #[pyo3(signature = (query, fields, *, filter=None, explain=false))]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        fields: &str,
        filter: Option<String>,
        explain: bool,
    ) -> PyResult<String> {
        detached(py, || {
            let mut fields: StrategyFields =
                serde_json::from_str(fields).map_err(|e| usage(format!("search options: {e}")))?;
            fields.model = fields.model.or_else(|| self.model.clone());
            let req = SearchRequest::from_fields(query, &fields)?
                .with_explain(explain)
                .with_filter(filter.as_deref().map(parse_filter).transpose()?);
            let reader = self.take_reader()?;
            let res = reader.search(&req)?;
            with_char_spans(&reader, &res)
        })
    }

    /// An answer with located citations: `ckeep ask --json`'s. `fields` as for `search`;
    /// `llm` is `none` (extractive) or a chat server `URL#MODEL` (the wheel has no local
    /// language model yet).
    #[pyo3(signature = (question, fields, *, llm=None, context_tokens=None, max_tokens=None, strict=false, filter=None))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of `Store.ask`
    fn ask(
        &self,
        py: Python<'_>,
        question: String,
        fields: &str,
        llm: Option<String>,
        context_tokens: Option<usize>,
        max_tokens: Option<usize>,
        strict: bool,
        filter: Option<String>,
    ) -> PyResult<String> {
        detached(py, || {
            let mut fields: StrategyFields =
                serde_json::from_str(fields).map_err(|e| usage(format!("ask options: {e}")))?;
            fields.model = fields.model.or_else(|| self.model.clone());
            let search = SearchRequest::from_fields(question.clone(), &fields)?
                .with_filter(filter.as_deref().map(parse_filter).transpose()?);
            let request = AskRequest::new(question).with_search(search).with_options(
                context_tokens,
                max_tokens,
                strict,
            )?;
            let answerer =
                Answerer::load(llm.as_deref(), Some(&ckeep_engine::default_generation_cache()))?;
            let reader = self.take_reader()?;
            let answer = request.answer(&reader, &answerer, &mut |_: &str| {})?;
            Ok(serde_json::to_string(&answer)?)
        })
    }

    /// A document: `ckeep show --json` with its text.
    fn show(&self, py: Python<'_>, doc_id: String) -> PyResult<String> {
        detached(py, || {
            let view =
                self.read(|engine| Ok(engine.searcher()?.view(&doc_id, DocumentPart::Text)?))?;
            Ok(serde_json::to_string(&view)?)
        })
    }

    /// A document's chunks: `ckeep show --chunks --json`'s list.
    fn chunks(&self, py: Python<'_>, doc_id: String) -> PyResult<String> {
        detached(py, || {
            let view =
                self.read(|engine| Ok(engine.searcher()?.view(&doc_id, DocumentPart::Chunks)?))?;
            Ok(serde_json::to_string(&view.chunks.unwrap_or_default())?)
        })
    }

    /// Removes documents; none is removed if any id is unknown.
    fn remove(&self, py: Python<'_>, ids: Vec<String>) -> PyResult<usize> {
        detached(py, || {
            let request = ckeep_engine::RemoveRequest::new(ids)?;
            let mut guard = self.writer(false)?;
            let engine = guard.as_mut().context("the store is not open")?;
            Ok(engine.writer().remove(&request)?.removed)
        })
    }

    /// `ckeep add --model OWN --model FURTHER` (no inputs): keeps a further model's vectors of
    /// every stored chunk beside the store's own model's, for `models=A+B` strategies; the
    /// report of the embedding stage as JSON.
    fn add_model(&self, py: Python<'_>, model: String) -> PyResult<String> {
        detached(py, || {
            let embedder = self.model(&model)?;
            let mut guard = self.writer(false)?;
            let engine = guard.as_mut().context("the store is not open")?;
            let report = engine.writer().add_model(embedder, &mut |_, _, _| {})?;
            Ok(serde_json::to_string(&report)?)
        })
    }

    /// `ckeep add --quantize [REPR=]KIND`: how the store's vectors are held for dense search.
    #[pyo3(signature = (kind, repr=None))]
    fn quantize(&self, py: Python<'_>, kind: &str, repr: Option<String>) -> PyResult<()> {
        detached(py, || {
            let kind: ckeep_index::Quantization =
                kind.parse().map_err(|e: ckeep_index::Error| usage(e.to_string()))?;
            let mut guard = self.writer(false)?;
            let engine = guard.as_mut().context("the store is not open")?;
            engine.writer().set_quantization(repr.as_deref(), kind)?;
            Ok(())
        })
    }

    /// `ckeep eval recommend --json`: candidates compared on a test set made from the
    /// store's documents (or `dataset`), the best recommended with its evidence, and with
    /// `apply` made the store's default when its gain is confident.
    #[pyo3(signature = (*, dataset=None, split="test".to_string(), set_out=None, count=200,
        seed=42, generator="ict".to_string(), strategies=Vec::new(),
        metric="ndcg@10".to_string(), folds=5, model=None, work_dir=None, apply=false,
        progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn recommend(
        &self,
        py: Python<'_>,
        dataset: Option<PathBuf>,
        split: String,
        set_out: Option<PathBuf>,
        count: usize,
        seed: u64,
        generator: String,
        strategies: Vec<String>,
        metric: String,
        folds: usize,
        model: Option<String>,
        work_dir: Option<String>,
        apply: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        use ckeep_eval::recommend::{self as rec, RecommendRequest, TestSet};
        detached(py, || {
            let set = match dataset {
                Some(dir) => TestSet::Given { dir, split },
                None => TestSet::Synthetic {
                    options: ckeep_eval::synth::SynthOptions::new(count, seed, generator.parse()?),
                    keep: set_out,
                },
            };
            let request = RecommendRequest {
                set,
                strategies,
                metric: metric.parse()?,
                folds,
                seed,
                model: model.or_else(|| self.model.clone()),
                work_dir,
            };
            let mut report_progress = crate::progress::reporter(progress.as_ref());
            let plan = self.read(|e| Ok(request.plan(Some(e), &mut report_progress)?))?;
            let mut models = |spec: &str| self.models.get(spec).map_err(ckeep_engine::Error::Embed);
            let found = plan.run(&mut models, &mut report_progress)?;
            let applied = if apply {
                let mut guard = self.writer(false)?;
                let engine = guard.as_mut().context("the store is not open")?;
                rec::apply(engine, plan.offered(), &found)? == rec::Applied::Applied
            } else {
                false
            };
            Ok(json!({"recommendation": found, "applied": applied}).to_string())
        })
    }

    /// Adapts the store's models to its documents: `ckeep adapt --json` (`undo=True`: `ckeep
    /// adapt --undo --json`).
    #[pyo3(signature = (*, minutes=None, queries=None, seed=42, dry_run=false, undo=false,
        save=None, load=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn adapt(
        &self,
        py: Python<'_>,
        minutes: Option<f64>,
        queries: Option<usize>,
        seed: u64,
        dry_run: bool,
        undo: bool,
        save: Option<PathBuf>,
        load: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        use ckeep_eval::adapt::{self, AdaptOptions};
        detached(py, || {
            let mut guard = self.writer(false)?;
            let engine = guard.as_mut().context("the store is not open")?;
            if undo {
                return Ok(json!({"removed": adapt::undo(engine)?}).to_string());
            }
            if let Some(spec) = self.model_spec(None, engine)? {
                engine.set_embedder(self.model(&spec)?);
            }
            if let Some(file) = load {
                return Ok(json!({"loaded": adapt::load(engine, &file)?}).to_string());
            }
            let opts = AdaptOptions {
                queries,
                seed,
                minutes,
                apply: !dry_run,
                save,
                ..AdaptOptions::default()
            };
            let mut report_progress = crate::progress::reporter(progress.as_ref());
            Ok(serde_json::to_string(&adapt::adapt(engine, &opts, &mut report_progress)?)?)
        })
    }

    /// `ckeep stats --json`.
    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        detached(py, || {
            self.read(|engine| Ok(serde_json::to_string(&engine.searcher()?.summary()?)?))
        })
    }

    /// Near-duplicate clusters of the store: `ckeep dedup --json`.
    /// With `pair_model` (a file `ckeep pairs --learn --save-model` wrote), candidates from
    /// `threshold` (default 0.7, else 0.9) are decided by the model, as `ckeep dedup
    /// --pair-model` does.
    #[pyo3(signature = (*, threshold=None, level="doc".to_string(), top_k=3, neighbours=10,
        explain=false, pair_model=None))]
    #[allow(clippy::too_many_arguments)]
    fn dedup(
        &self,
        py: Python<'_>,
        threshold: Option<f32>,
        level: String,
        top_k: usize,
        neighbours: usize,
        explain: bool,
        pair_model: Option<PathBuf>,
    ) -> PyResult<String> {
        detached(py, || {
            let level = parse("level", Some(&level))?.unwrap_or_default();
            let model = pair_model.as_deref().map(PairModel::load).transpose()?;
            let threshold =
                threshold.unwrap_or_else(|| DedupOptions::default_threshold(model.is_some()));
            let opts = DedupOptions { threshold, level, top_k, neighbours };
            let mut reader = self.take_reader()?;
            // The model decides on the whole texts, embedded by the store's own model.
            if model.is_some()
                && let Some(spec) = self.model_spec(None, &reader)?
            {
                reader.set_embedder(self.model(&spec)?);
            }
            let report =
                ckeep_engine::Dedup::new(&reader).report(&opts, model.as_ref(), explain)?;
            Ok(serde_json::to_string(&report)?)
        })
    }

    /// `ckeep check --json`.
    fn check(&self, py: Python<'_>) -> PyResult<String> {
        detached(py, || {
            let check = self.read(|engine| Ok(engine.searcher()?.check()?))?;
            Ok(serde_json::to_string(&check)?)
        })
    }
}

/// The response as JSON, each result with its spans also counted in characters, which is what
/// Python strings index by.
fn with_char_spans(engine: &Eng, res: &ckeep_engine::SearchResponse) -> anyhow::Result<String> {
    // Through text, so scores keep the shortest form of their f32 value, as the CLI prints them.
    let mut value: Value = serde_json::from_str(&serde_json::to_string(res)?)?;
    let mut texts: HashMap<&str, String> = HashMap::new();
    for (r, out) in res.results.iter().zip(value["results"].as_array_mut().into_iter().flatten()) {
        if !texts.contains_key(r.doc_id.as_str()) {
            let doc = engine
                .store()
                .document(&r.doc_id)?
                .ok_or_else(|| anyhow!("document `{}` vanished during the search", r.doc_id))?;
            texts.insert(&r.doc_id, doc.document.text);
        }
        let text = &texts[r.doc_id.as_str()];
        let chars: Vec<[usize; 2]> =
            r.spans.iter().map(|s| crate::char_span(text, s.start, s.end)).collect();
        out["char_spans"] = json!(chars);
    }
    Ok(value.to_string())
}
