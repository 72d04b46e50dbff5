//! Near-duplicate search over a store: every chunk's nearest neighbours (through the HNSW
//! graph for large collections, an exact scan otherwise) propose candidate document pairs, and
//! only those are scored by chunk-pair similarity (the mean of their top-k chunk cosines), so
//! the cost grows with the collection rather than with its square.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use ckeep_core::{ChunkId, DocKey, Span};
use ckeep_index::dot_rows;
use ckeep_store::{StoreRead, VectorMatrix};
use rayon::prelude::*;
use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::pair_model::PairModel;
use crate::represent::PLAIN_REPR;
use crate::similar::{EmbeddedText, PairScorer};
use crate::strategy::Level;
use crate::vectors::ANN_MIN_VECTORS;

/// Below this many vectors candidates come from an exact scan (building a graph costs more).
const GRAPH_MIN_VECTORS: usize = 2_000;

/// Chunks shorter than this many bytes ("R.", "Notes.") are no evidence of duplication and
/// are left out.
const MIN_CHUNK_BYTES: usize = 24;

/// Documents embedded at once when a pair model scores candidates (bounds memory).
const LEARNED_BATCH: usize = 64;

/// Beam width of the neighbour searches.
const NEIGHBOUR_EF: usize = 64;

/// Near-duplicate search over one engine's store (`ckeep dedup`, Python's `Store.dedup`).
#[derive(Debug, Clone, Copy)]
pub struct Dedup<'a, S> {
    engine: &'a Engine<S>,
}

impl<'a, S> Dedup<'a, S> {
    /// Near-duplicate search over the store of `engine`, with its model.
    pub fn new(engine: &'a Engine<S>) -> Self {
        Self { engine }
    }
}

/// What to look for.
#[derive(Debug, Clone, Copy)]
pub struct DedupOptions {
    /// Pairs scoring at least this are duplicates.
    pub threshold: f32,
    /// Documents (scored by chunk pairs) or single chunks (scored by cosine).
    pub level: Level,
    /// Chunk pairs averaged for a document pair.
    pub top_k: usize,
    /// Neighbours looked up per chunk to propose candidates.
    pub neighbours: usize,
}

impl DedupOptions {
    /// Document pairs whose chunk pairs score at least this are near-duplicates.
    pub const THRESHOLD: f32 = 0.9;
    /// With a pair model: the chunk-pair score a pair needs to be put to the model, lower
    /// than [`Self::THRESHOLD`] because the model, not the score, decides.
    pub const LEARNED_FLOOR: f32 = 0.7;

    /// The default threshold, with or without a pair model.
    pub fn default_threshold(learned: bool) -> f32 {
        if learned { Self::LEARNED_FLOOR } else { Self::THRESHOLD }
    }
}

impl Default for DedupOptions {
    fn default() -> Self {
        Self { threshold: Self::THRESHOLD, level: Level::Doc, top_k: 3, neighbours: 10 }
    }
}

/// One side of a matching chunk pair.
#[derive(Debug, Clone, Serialize)]
pub struct MatchedChunk {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// Its bytes in its document.
    pub span: Span,
    /// Its text, once [`Dedup::add_match_texts`] has filled it in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its document, to read the text by.
    #[serde(skip)]
    doc: DocKey,
}

/// A matching chunk pair behind a duplicate.
#[derive(Debug, Clone, Serialize)]
pub struct ChunkMatch {
    /// Chunk of the first document.
    pub a: MatchedChunk,
    /// Chunk of the second document.
    pub b: MatchedChunk,
    /// Their cosine.
    pub cosine: f32,
}

/// Two documents found to be near-duplicates.
#[derive(Debug, Clone, Serialize)]
pub struct DuplicatePair {
    /// First document's id.
    pub a: String,
    /// Second document's id.
    pub b: String,
    /// Chunk-pair score (doc level) or cosine (chunk level).
    pub score: f32,
    /// The chunk pairs behind the score, most similar first.
    pub matches: Vec<ChunkMatch>,
}

/// Documents joined by duplicate pairs (connected components).
#[derive(Debug, Clone, Serialize)]
pub struct DuplicateCluster {
    /// The documents, sorted.
    pub documents: Vec<String>,
    /// The pairs inside the cluster, best first.
    pub pairs: Vec<DuplicatePair>,
}

/// What `ckeep dedup --json` prints: the options, the time taken, and the clusters.
#[derive(Debug, Clone, Serialize)]
pub struct DedupReport {
    /// Pairs scoring at least this are duplicates.
    pub threshold: f32,
    /// `doc` or `chunk`.
    pub level: String,
    /// Chunk pairs averaged for a document pair.
    pub top_k: usize,
    /// Seconds the search took.
    pub seconds: f64,
    /// The clusters, best first.
    pub clusters: Vec<DuplicateCluster>,
}

/// Two matrix rows and their cosine.
type RowPair = (u32, u32, f32);

/// A scored document pair and the row pairs behind its score.
struct Found {
    a: DocKey,
    b: DocKey,
    score: f32,
    rows: Vec<RowPair>,
}

/// Row pairs `(i, j)`, `i < j`, of different documents, each row with its nearest neighbours
/// (found through the graph of `m` read at `generation`, when it has one).
fn candidate_rows<S: StoreRead>(
    engine: &Engine<S>,
    (m, generation): (&VectorMatrix, Option<u64>),
    usable: &[bool],
    neighbours: usize,
) -> Vec<RowPair> {
    let graph = generation
        .filter(|_| m.len() >= GRAPH_MIN_VECTORS.min(ANN_MIN_VECTORS))
        .and_then(|generation| engine.vectors().graph(PLAIN_REPR, m, generation));
    let rows: Vec<usize> = (0..m.len()).filter(|&i| usable[i]).collect();
    rows.par_iter()
        .flat_map_iter(|&i| {
            let q = &m.data[i * m.dim..(i + 1) * m.dim];
            let found: Vec<(u32, f32)> = if let Some(g) = &graph {
                g.search(&m.data, q, neighbours + 1, NEIGHBOUR_EF.max(neighbours + 1))
            } else {
                let mut scores = Vec::with_capacity(m.len());
                dot_rows(&m.data, m.dim, q, &mut scores);
                let mut all: Vec<(u32, f32)> =
                    scores.into_iter().enumerate().map(|(j, s)| (j as u32, s)).collect();
                let keep = (neighbours + 1).min(all.len());
                if keep < all.len() {
                    all.select_nth_unstable_by(keep, |a, b| b.1.total_cmp(&a.1));
                    all.truncate(keep);
                }
                all
            };
            // A neighbour too short to count is no candidate either.
            found
                .into_iter()
                .filter(move |&(j, _)| usable[j as usize] && m.docs[j as usize] != m.docs[i])
                .map(move |(j, s)| {
                    let (a, b) = if (i as u32) < j { (i as u32, j) } else { (j, i as u32) };
                    (a, b, s)
                })
        })
        .collect()
}

/// Union-find root of `k`, compressing the path.
fn root(parent: &mut HashMap<DocKey, DocKey>, k: DocKey) -> DocKey {
    let p = *parent.entry(k).or_insert(k);
    if p == k {
        return k;
    }
    let r = root(parent, p);
    parent.insert(k, r);
    r
}

/// Connected components of `pairs` over document keys.
fn components(pairs: &[(DocKey, DocKey)]) -> Vec<Vec<DocKey>> {
    let mut parent: HashMap<DocKey, DocKey> = HashMap::new();
    for &(a, b) in pairs {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            parent.insert(ra.max(rb), ra.min(rb));
        }
    }
    let keys: Vec<DocKey> = parent.keys().copied().collect();
    let mut groups: BTreeMap<DocKey, Vec<DocKey>> = BTreeMap::new();
    for k in keys {
        let r = root(&mut parent, k);
        groups.entry(r).or_default().push(k);
    }
    groups.into_values().collect()
}

impl<S: StoreRead> Dedup<'_, S> {
    /// All near-duplicate document pairs (or chunk pairs) of the store, grouped into clusters,
    /// largest score first.
    pub fn dedup(&self, opts: &DedupOptions) -> Result<Vec<DuplicateCluster>> {
        let (m, found) = self.scored_pairs(opts)?;
        self.clusters(&m, &found)
    }

    /// The store's plain vectors and the pairs scoring at least the threshold.
    fn scored_pairs(&self, opts: &DedupOptions) -> Result<(Arc<VectorMatrix>, Vec<Found>)> {
        if self.engine.store.manifest()?.model.is_none() {
            return Err(Error::ModelRequired(
                "the store has no vectors: dedup compares chunk embeddings; build the store with `ckeep add --model NAME`".into(),
            ));
        }
        if opts.top_k == 0 || opts.neighbours == 0 {
            return Err(Error::Invalid("top-k and neighbours must be at least 1".into()));
        }
        let vectors = self.engine.vectors();
        let (m, generation) = vectors.matrix(&vectors.plain()?)?;
        let long: HashSet<ChunkId> = self
            .engine
            .store
            .chunks_by_id(&m.ids)?
            .into_iter()
            .filter(|c| c.chunk.span.len() >= MIN_CHUNK_BYTES)
            .map(|c| c.id)
            .collect();
        let usable: Vec<bool> = m.ids.iter().map(|id| long.contains(id)).collect();
        let candidates = candidate_rows(self.engine, (&m, generation), &usable, opts.neighbours);
        let mut found: Vec<Found> = Vec::new();
        match opts.level {
            Level::Chunk => {
                let mut seen = HashSet::new();
                for (i, j, s) in candidates {
                    if s >= opts.threshold && seen.insert((i, j)) {
                        let (a, b) = (m.docs[i as usize], m.docs[j as usize]);
                        found.push(Found { a, b, score: s, rows: vec![(i, j, s)] });
                    }
                }
            }
            Level::Doc => {
                let mut rows_of: HashMap<DocKey, Vec<u32>> = HashMap::new();
                for (i, d) in m.docs.iter().enumerate().filter(|(i, _)| usable[*i]) {
                    rows_of.entry(*d).or_default().push(i as u32);
                }
                let pairs: HashSet<(DocKey, DocKey)> = candidates
                    .iter()
                    .map(|&(i, j, _)| {
                        let (a, b) = (m.docs[i as usize], m.docs[j as usize]);
                        (a.min(b), a.max(b))
                    })
                    .collect();
                let pairs: Vec<(DocKey, DocKey)> = pairs.into_iter().collect();
                found = pairs
                    .par_iter()
                    .filter_map(|&(a, b)| {
                        let top = top_pairs(&m, &rows_of[&a], &rows_of[&b], opts.top_k);
                        let score = top.iter().map(|t| t.2).sum::<f32>() / top.len().max(1) as f32;
                        (score >= opts.threshold).then_some(Found { a, b, score, rows: top })
                    })
                    .collect();
            }
        }
        Ok((m, found))
    }

    /// Near-duplicate documents as a learned pair model decides (`ckeep dedup --pair-model`):
    /// the pairs whose chunk-pair score reaches `opts.threshold` are candidates; each is scored
    /// again as `ckeep similar` scores a pair (the model's chunker and top-k over the whole
    /// texts) and kept when the model's probability reaches its threshold. A pair's score is
    /// that probability; its matching chunks are still the store's.
    pub fn dedup_learned(
        &self,
        opts: &DedupOptions,
        model: &PairModel,
    ) -> Result<Vec<DuplicateCluster>> {
        if opts.level != Level::Doc {
            return Err(Error::Invalid("a pair model scores document pairs; use level doc".into()));
        }
        let Some(embedder) = self.engine.embedder.clone() else {
            return Err(Error::ModelRequired("a pair model needs the store's model loaded".into()));
        };
        let chunker = model.chunker.parse().map_err(|e: ckeep_text::Error| {
            Error::Invalid(format!("the pair model's chunker: {e}"))
        })?;
        let manifest = self.engine.store.manifest()?;
        let further = model
            .further_models
            .iter()
            .map(|m| self.engine.more_models.pair_embedder(&manifest, m))
            .collect::<Result<Vec<_>>>()?;
        let scorer =
            PairScorer::new(embedder, chunker, model.top_k)?.with_further_models(further)?;
        model.check(&scorer)?;
        let (m, found) = self.scored_pairs(opts)?;
        let mut keys: Vec<DocKey> = found.iter().flat_map(|f| [f.a, f.b]).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut embedded: HashMap<DocKey, (String, EmbeddedText)> = HashMap::new();
        for batch in keys.chunks(LEARNED_BATCH) {
            let mut texts = Vec::with_capacity(batch.len());
            for id in self.engine.store.doc_ids_by_key(batch)? {
                let doc = self.engine.store.document(&id)?;
                texts.push(doc.map(|d| d.document.text).unwrap_or_default());
            }
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = scorer.embed(&refs)?;
            embedded.extend(batch.iter().copied().zip(texts.into_iter().zip(vectors)));
        }
        let kept: Vec<Found> = found
            .into_iter()
            .filter_map(|f| {
                let ((ta, ea), (tb, eb)) = (&embedded[&f.a], &embedded[&f.b]);
                let p =
                    model.probability(&crate::pair_model::features(&scorer.score(ea, eb), ta, tb));
                (p >= model.threshold).then_some(Found { score: p as f32, ..f })
            })
            .collect();
        self.clusters(&m, &kept)
    }

    /// [`Dedup::dedup`] timed and described, with each matching chunk's text if `texts`.
    /// With `model`, pairs are decided by it ([`Dedup::dedup_learned`]).
    pub fn report(
        &self,
        opts: &DedupOptions,
        model: Option<&PairModel>,
        texts: bool,
    ) -> Result<DedupReport> {
        let started = std::time::Instant::now();
        let mut clusters = match model {
            Some(model) => self.dedup_learned(opts, model)?,
            None => self.dedup(opts)?,
        };
        if texts {
            self.add_match_texts(&mut clusters)?;
        }
        Ok(DedupReport {
            threshold: opts.threshold,
            level: opts.level.to_string(),
            top_k: opts.top_k,
            seconds: started.elapsed().as_secs_f64(),
            clusters,
        })
    }

    /// Fills in the text of every matching chunk (one store read for all of them).
    pub fn add_match_texts(&self, clusters: &mut [DuplicateCluster]) -> Result<()> {
        let mut sides: Vec<&mut MatchedChunk> = clusters
            .iter_mut()
            .flat_map(|c| c.pairs.iter_mut())
            .flat_map(|p| p.matches.iter_mut())
            .flat_map(|m| [&mut m.a, &mut m.b])
            .collect();
        let spans: Vec<(DocKey, Span)> = sides.iter().map(|s| (s.doc, s.span)).collect();
        for (side, text) in sides.iter_mut().zip(self.engine.store.span_texts(&spans)?) {
            side.text = Some(text);
        }
        Ok(())
    }

    /// Groups scored pairs into clusters with document ids and chunk spans.
    fn clusters(&self, m: &VectorMatrix, found: &[Found]) -> Result<Vec<DuplicateCluster>> {
        let ids: Vec<ChunkId> = found
            .iter()
            .flat_map(|f| {
                f.rows.iter().flat_map(|&(i, j, _)| [m.ids[i as usize], m.ids[j as usize]])
            })
            .collect();
        let spans: HashMap<ChunkId, Span> = self
            .engine
            .store
            .chunks_by_id(&ids)?
            .into_iter()
            .map(|c| (c.id, c.chunk.span))
            .collect();
        let keys: Vec<DocKey> = {
            let mut k: Vec<DocKey> = found.iter().flat_map(|f| [f.a, f.b]).collect();
            k.sort_unstable();
            k.dedup();
            k
        };
        let names: HashMap<DocKey, String> =
            keys.iter().copied().zip(self.engine.store.doc_ids_by_key(&keys)?).collect();
        let side = |row: u32| {
            let id = m.ids[row as usize];
            MatchedChunk {
                chunk_id: id,
                span: spans.get(&id).copied().unwrap_or(Span::new(0, 0)),
                text: None,
                doc: m.docs[row as usize],
            }
        };
        let edges: Vec<(DocKey, DocKey)> = found.iter().map(|f| (f.a, f.b)).collect();
        let mut out: Vec<DuplicateCluster> = components(&edges)
            .into_iter()
            .map(|members| {
                let set: HashSet<DocKey> = members.iter().copied().collect();
                let mut pairs: Vec<DuplicatePair> = found
                    .iter()
                    .filter(|f| set.contains(&f.a))
                    .map(|f| DuplicatePair {
                        a: names[&f.a].clone(),
                        b: names[&f.b].clone(),
                        score: f.score,
                        matches: f
                            .rows
                            .iter()
                            .map(|&(i, j, cosine)| ChunkMatch { a: side(i), b: side(j), cosine })
                            .collect(),
                    })
                    .collect();
                pairs.sort_by(|x, y| y.score.total_cmp(&x.score).then(x.a.cmp(&y.a)));
                let mut documents: Vec<String> = members.iter().map(|k| names[k].clone()).collect();
                documents.sort();
                DuplicateCluster { documents, pairs }
            })
            .collect();
        out.sort_by(|x, y| {
            let best = |c: &DuplicateCluster| c.pairs.first().map_or(0.0, |p| p.score);
            best(y).total_cmp(&best(x)).then(x.documents.cmp(&y.documents))
        });
        Ok(out)
    }
}

/// The `k` most similar row pairs between two documents' rows, best first, each row in at most
/// one pair (greedy matching): a passage repeated in one document counts once, so a single
/// shared sentence cannot fill all k slots.
fn top_pairs(m: &VectorMatrix, a: &[u32], b: &[u32], k: usize) -> Vec<RowPair> {
    let block: Vec<f32> =
        b.iter().flat_map(|&j| m.data[j as usize * m.dim..][..m.dim].iter().copied()).collect();
    let mut all = Vec::with_capacity(a.len() * b.len());
    let mut scores = Vec::with_capacity(b.len());
    for &i in a {
        scores.clear();
        dot_rows(&block, m.dim, &m.data[i as usize * m.dim..][..m.dim], &mut scores);
        all.extend(b.iter().zip(&scores).map(|(&j, &s)| (i, j, s)));
    }
    all.sort_unstable_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)).then(x.1.cmp(&y.1)));
    let (mut used_a, mut used_b) = (HashSet::new(), HashSet::new());
    let mut top = Vec::with_capacity(k);
    for p in all {
        if top.len() == k {
            break;
        }
        if !used_a.contains(&p.0) && !used_b.contains(&p.1) {
            used_a.insert(p.0);
            used_b.insert(p.1);
            top.push(p);
        }
    }
    top
}
