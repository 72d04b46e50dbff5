//! The library facade: what the CLI, the server and users' programs call.
//!
//! # Brief overview
//! - [`Engine`] wraps a store. [`Writer::ingest`] opens an [`Ingest`] that chunks, indexes and
//!   writes documents in batches (one transaction each); unchanged documents are skipped by
//!   content hash, changed ones replaced.
//! - [`Engine::search`] runs a [`Strategy`] (`mode=bm25,level=doc,agg=max,k=10`) and returns a
//!   [`SearchResponse`] whose JSON form is the one in DESIGN.md.
//!
//! ```
//! use ckeep_core::Document;
//! use ckeep_engine::{Engine, SearchRequest};
//! use ckeep_store::SqliteStore;
//!
//! let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
//! let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
//! ingest.add(Document::new("d", "", "Cats purr. Dogs bark loudly.")).unwrap();
//! ingest.finish().unwrap();
//! let res = engine.search(&SearchRequest::new("barking dog")).unwrap();
//! assert_eq!(res.results[0].text, "Dogs bark loudly.");
//! ```

mod adapter;
mod adopt;
mod analysis;
mod answer;
mod dedup;
mod default_strategy;
mod defaults;
mod derive;
mod diversify;
mod engine;
mod error;
mod expand;
mod fault;
mod filtered;
mod ingest;
mod inputs;
mod lexical;
mod lines;
mod manifest;
mod models;
mod more_models;
mod no_results;
mod overrides;
mod pair_model;
mod pool;
mod rechunk;
mod report;
mod represent;
mod request;
mod rerank;
mod search;
mod searcher;
mod similar;
mod stage;
mod strategy;
mod summarize;
mod sync;
mod vectors;
mod view;
#[cfg(feature = "watch")]
mod watch;
mod writer;

pub use adapter::{AdaptableModel, QueryAdapter};
/// Training query adapters (`ckeep adapt`).
pub mod adapter_training {
    pub use crate::adapter::{Example, TrainOptions, Trained, mean_loss, train};
}
pub use analysis::AnalyzerChoice;
pub use answer::{
    Answer, AnswerSentence, Answerer, AskRequest, Assembly, Citation, Found, MatchKind, NO_ANSWER,
    Passage, Timings, Tokens, default_llm, locate,
};
pub use ckeep_index::Analyzer;
pub use ckeep_llm::Sink;
pub use ckeep_llm::default_cache_path as default_generation_cache;
pub use ckeep_store::MetadataFilter;
pub use dedup::{
    ChunkMatch, Dedup, DedupOptions, DedupReport, DuplicateCluster, DuplicatePair, MatchedChunk,
};

pub use defaults::{
    ANSWER_TOKENS, DEFAULT_CONTEXT_TOKENS, DEFAULT_LLM, DEFAULT_LLMS, DEFAULT_MODEL,
    DEFAULT_RERANK_K, DEFAULT_THRESHOLD, DEFAULT_TOP_K, MAX_ANSWER_TOKENS, MAX_CONTEXT_TOKENS,
    MAX_K, MAX_QUERY_BYTES, PAIR_CHUNKER,
};
pub use diversify::{Diversify, Redundancy, SimilarityOf};
pub use engine::{Engine, Searcher, Writer};
pub use error::{ChunkerAsked, Error, Result};
pub use expand::Expansion;
pub use fault::{ErrorBody, ErrorCode, McpAnswer, Rendering, UsageError};
pub use filtered::{FilterPlan, FilteredBy};
pub use ingest::{Ingest, IngestReport};
pub use inputs::{CheckedInputs, Inputs};
pub use lexical::{LexicalParams, PLAIN_FIELD, Thousandths};
pub use lines::LineSpan;
pub use models::{ModelSet, load_model, stored_model};
pub use no_results::{NoResults, NoResultsReason};
pub use overrides::{FilterSyntax, StrategyChoices, StrategyFields, StrategyOverrides};
pub use pair_model::{
    FEATURES as PAIR_FEATURES, FURTHER_MODEL_FEATURES as PAIR_FURTHER_MODEL_FEATURES,
    Features as PairFeatures, PairModel, best_threshold, feature_names as pair_feature_names,
    features as pair_features,
};
pub use pool::{Lease, ReaderPool};
pub use report::{AddReport, Skipped, StoreCheck, StoreSummary};
pub use represent::{
    ContextParts, Fields, PLAIN_REPR, Representation, parse_list as parse_representations,
};
pub use request::{
    ListExplanation, SearchLimits, SearchRequest, SearchResponse, SearchResult, SearchTiming,
};

pub use similar::{
    ChunkPair, EmbeddedText, MAX_FURTHER_PAIR_MODELS, MatchedPair, ModelPairScore, PairScore,
    PairScorer, PairSide, SimilarReport, TextVectors,
};
pub use stage::{DeriveProgress, DeriveReport, StageReport};
pub use strategy::{DefaultStrategy, Level, Mode, Strategy};
pub use summarize::{LoadedSummarizer, Summarizer};
pub use sync::{SyncPlan, SyncReport};
pub use vectors::{ANN_MIN_VECTORS, GraphCheck, VectorIndex, VectorIndexBuild};
pub use view::{ChunkView, DocumentPart, DocumentView, SpanText};
#[cfg(feature = "watch")]
pub use watch::{Changes, ChangesReport, Debounce, FolderWatch};
pub use writer::{MAX_REMOVE_IDS, RemoveRequest, Removed};
