//! A GGUF model run in-process by llama.cpp, greedy, in the model's chat template.
//!
//! What a generation service needs, on llama.cpp's own mechanisms: the tokens of the last prompt
//! stay in the KV cache, so the next prompt decodes only what differs (the same instructions
//! before every passage cost nothing the second time); independent prompts run as parallel
//! sequences of one context, their common prefix decoded once and copied; a one-line answer
//! stops at its newline; text streams as it is written; a prompt longer than the model reads is
//! refused before any work; the caller can cancel between tokens.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use crate::{Error, Generation, Generator, Prompt, Result, Silent, Sink};

/// Penalty on tokens already in the recent output: small models loop without one.
const REPEAT_PENALTY: f32 = 1.1;
/// How many recent tokens the penalty looks at.
const REPEAT_WINDOW: i32 = 64;
/// Prompts decoded side by side by [`Generator::generate_many`]: on 2 cores, 8 short answers
/// cost little more per step than one (a step reads the whole model either way).
const PARALLEL: usize = 8;
/// Tokens per `llama_decode` call (llama.cpp splits it into micro-batches of 512).
const BATCH: usize = 2048;
/// KV cells allocated at first use; grown to what a request needs, up to [`MAX_CELLS`].
const FIRST_CELLS: usize = 4096;
/// Most KV cells one context holds (400 MB for the 0.5B model): prompts beyond it are split.
const MAX_CELLS: usize = 32_768;

/// A GGUF model. Generation takes its lock: one request at a time, each using every core.
pub struct LlamaGguf {
    model: &'static LlamaModel,
    template: LlamaChatTemplate,
    state: Mutex<Option<State>>,
    name: String,
    threads: i32,
}

/// A context and what its KV cache holds.
struct State {
    ctx: LlamaContext<'static>,
    cells: usize,
    /// The tokens in sequence 0 from position 0: the last prompt and its answer.
    cached: Vec<LlamaToken>,
}

impl std::fmt::Debug for LlamaGguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaGguf").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Each file's weights, loaded once per process and kept (a server asks again and again).
fn weights(path: &Path) -> Result<&'static LlamaModel> {
    static LOADED: Mutex<Option<HashMap<PathBuf, &'static LlamaModel>>> = Mutex::new(None);
    let shown = path.display().to_string();
    let bad = |message: String| Error::ModelFile { path: shown.clone(), message };
    let key = path.canonicalize().map_err(|e| bad(e.to_string()))?;
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    let loaded = loaded.get_or_insert_with(HashMap::new);
    if let Some(model) = loaded.get(&key) {
        return Ok(model);
    }
    let mut magic = [0u8; 4];
    std::io::Read::read_exact(
        &mut std::fs::File::open(&key).map_err(|e| bad(e.to_string()))?,
        &mut magic,
    )
    .map_err(|_| bad("not a GGUF file: too short".into()))?;
    if &magic != b"GGUF" {
        return Err(bad("not a GGUF file (no GGUF magic)".into()));
    }
    let backend = crate::backends::backend()?;
    let model = LlamaModel::load_from_file(backend, &key, &LlamaModelParams::default())
        .map_err(|e| bad(format!("llama.cpp cannot load it: {e}")))?;
    let model: &'static LlamaModel = Box::leak(Box::new(model));
    loaded.insert(key, model);
    Ok(model)
}

impl LlamaGguf {
    /// Loads a GGUF file that holds a chat model (one with a chat template).
    pub fn load(path: &Path) -> Result<Self> {
        let model = weights(path)?;
        let template = model.chat_template(None).map_err(|_| Error::ModelFile {
            path: path.display().to_string(),
            message: "the model has no chat template: it is not an instruction model".into(),
        })?;
        let name = model.meta_val_str("general.name").unwrap_or_else(|_| {
            path.file_stem().unwrap_or_default().to_string_lossy().into_owned()
        });
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Ok(Self {
            model,
            template,
            state: Mutex::new(None),
            name,
            threads: i32::try_from(threads).unwrap_or(1),
        })
    }

    /// Tokens of `text` (chat-template markers are single tokens).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.encode(text).len()
    }

    /// Token ids of `text` (chat-template markers are single tokens).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.tokens(text).into_iter().map(|t| t.0.cast_unsigned()).collect()
    }

    /// The text of token ids.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            bytes.extend(self.model.vocab().token_to_piece(
                LlamaToken(id.cast_signed()),
                true,
                None,
            ));
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// How many tokens the model reads at most (its training context).
    pub fn context_length(&self) -> usize {
        self.model.n_ctx_train() as usize
    }

    /// The system and user turns in the model's own chat template, the assistant's turn opened.
    fn chat_text(&self, prompt: &Prompt) -> Result<String> {
        let turns = [("system", &prompt.system), ("user", &prompt.user)]
            .into_iter()
            .map(|(role, text)| LlamaChatMessage::new(role.into(), text.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Model(format!("chat message: {e}")))?;
        self.model
            .apply_chat_template(&self.template, &turns, true)
            .map_err(|e| Error::Model(format!("chat template: {e}")))
    }

    fn tokens(&self, text: &str) -> Vec<LlamaToken> {
        self.model.vocab().tokenize(text.as_bytes(), false, true)
    }

    /// The prompt in the model's chat template, tokenised; refused if it and the answer do not
    /// fit.
    fn input(&self, prompt: &Prompt) -> Result<Vec<LlamaToken>> {
        let tokens = self.tokens(&self.chat_text(prompt)?);
        let limit = self.context_length().min(MAX_CELLS);
        if tokens.len() + prompt.max_tokens > limit {
            return Err(Error::TooLong {
                model: self.name.clone(),
                prompt: tokens.len(),
                answer: prompt.max_tokens,
                limit,
            });
        }
        Ok(tokens)
    }

    /// Runs prompts side by side: [`PARALLEL`] at a time, fewer when their KV cells would not fit.
    fn run(&self, prompts: &[&Prompt], sinks: &mut [&mut dyn Sink]) -> Vec<Result<Generation>> {
        let mut out = Vec::with_capacity(prompts.len());
        let inputs: Vec<Result<Vec<LlamaToken>>> = prompts.iter().map(|p| self.input(p)).collect();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut start = 0;
        while start < prompts.len() {
            if let Err(e) = &inputs[start] {
                out.push(Err(e.clone()));
                start += 1;
                continue;
            }
            let mut end = start;
            let mut cells = 0;
            while end < prompts.len() && end - start < PARALLEL {
                let Ok(tokens) = &inputs[end] else { break };
                let need = tokens.len() + prompts[end].max_tokens;
                if end > start && cells + need > MAX_CELLS {
                    break;
                }
                cells += need;
                end += 1;
            }
            let group: Vec<&[LlamaToken]> =
                inputs[start..end].iter().filter_map(|t| t.as_deref().ok()).collect();
            match self.run_group(&mut state, &group, &prompts[start..end], &mut sinks[start..end]) {
                Ok(done) => out.extend(done.into_iter().map(Ok)),
                Err(e) => {
                    // A failed context is not reused: its cache may hold half a request.
                    *state = None;
                    out.extend((start..end).map(|_| Err(e.clone())));
                }
            }
            start = end;
        }
        out
    }

    /// A context with room for `cells` KV cells; the old one is kept when it is big enough.
    fn context<'s>(&self, state: &'s mut Option<State>, cells: usize) -> Result<&'s mut State> {
        if state.as_ref().is_none_or(|s| s.cells < cells) {
            *state = None;
            let cells = cells.next_power_of_two().clamp(FIRST_CELLS, MAX_CELLS);
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(u32::try_from(cells).unwrap_or(u32::MAX)))
                .with_n_batch(BATCH as u32)
                .with_n_seq_max(PARALLEL as u32)
                .with_kv_unified(true)
                .with_n_threads(self.threads)
                .with_n_threads_batch(self.threads);
            let ctx = self
                .model
                .new_context(crate::backends::backend()?, params)
                .map_err(|e| Error::Model(format!("llama.cpp context of {cells} tokens: {e}")))?;
            *state = Some(State { ctx, cells, cached: Vec::new() });
        }
        Ok(state.as_mut().expect("just made"))
    }

    /// One group of prompts as parallel sequences: their shared prefix decoded once (and not at
    /// all where sequence 0 already holds it), each prompt's remainder, then one token per
    /// sequence per step until every answer ends.
    fn run_group(
        &self,
        state: &mut Option<State>,
        inputs: &[&[LlamaToken]],
        prompts: &[&Prompt],
        sinks: &mut [&mut dyn Sink],
    ) -> Result<Vec<Generation>> {
        let started = Instant::now();
        // Every prompt keeps at least its last token to decode: its logits start the answer.
        let shared = inputs[1..]
            .iter()
            .fold(inputs[0].len() - 1, |n, t| n.min(common_prefix(inputs[0], t)).min(t.len() - 1));
        let cells = shared
            + inputs
                .iter()
                .zip(prompts)
                .map(|(t, p)| t.len() - shared + p.max_tokens)
                .sum::<usize>();
        let st = self.context(state, cells)?;
        let cancelled = |sinks: &[&mut dyn Sink]| sinks.iter().any(|s| s.cancelled());
        let kept = common_prefix(&st.cached, &inputs[0][..shared]);
        st.cached.truncate(kept);
        clear(&mut st.ctx, 0, kept)?;
        for seq in 1..PARALLEL {
            clear(&mut st.ctx, seq, 0)?;
        }
        let mut batch = LlamaBatch::new(BATCH.max(PARALLEL), 1);
        for (i, chunk) in inputs[0][kept..shared].chunks(BATCH).enumerate() {
            if cancelled(sinks) {
                return Err(Error::Cancelled);
            }
            feed(&mut st.ctx, &mut batch, chunk, kept + i * BATCH, 0)?;
        }
        st.cached.extend_from_slice(&inputs[0][kept..shared]);
        for seq in 1..inputs.len() {
            st.ctx
                .copy_kv_cache_seq(0, seq as i32, None, None)
                .map_err(|e| Error::Model(format!("KV cache copy: {e}")))?;
        }
        for (seq, tokens) in inputs.iter().enumerate() {
            let own = &tokens[shared..tokens.len() - 1];
            for (i, chunk) in own.chunks(BATCH).enumerate() {
                if cancelled(sinks) {
                    return Err(Error::Cancelled);
                }
                feed(&mut st.ctx, &mut batch, chunk, shared + i * BATCH, seq)?;
            }
        }
        // The last token of every prompt, together: their logits are the answers' first tokens.
        batch.clear();
        for (seq, tokens) in inputs.iter().enumerate() {
            add(
                &mut batch,
                *tokens.last().expect("a prompt has tokens"),
                tokens.len() - 1,
                seq,
                true,
            )?;
        }
        decode(&mut st.ctx, &mut batch)?;
        let answers = self.write(&mut st.ctx, &mut batch, inputs, prompts, sinks)?;
        // Sequence 0 holds its prompt and every answer token but the last (never decoded).
        st.cached = inputs[0].to_vec();
        let fed = answers[0].tokens.len().saturating_sub(1);
        st.cached.extend_from_slice(&answers[0].tokens[..fed]);
        clear(&mut st.ctx, 0, st.cached.len())?;
        let seconds = started.elapsed().as_secs_f64();
        Ok(answers
            .into_iter()
            .zip(inputs)
            .zip(sinks.iter_mut())
            .map(|((a, input), sink)| a.finish(input.len(), seconds, &mut **sink))
            .collect())
    }

    /// Writes the answers, one token per sequence per step, from the logits the prompts left in
    /// the batch's rows `0..n`.
    fn write(
        &self,
        ctx: &mut LlamaContext<'static>,
        batch: &mut LlamaBatch,
        inputs: &[&[LlamaToken]],
        prompts: &[&Prompt],
        sinks: &mut [&mut dyn Sink],
    ) -> Result<Vec<Answer>> {
        let mut answers: Vec<Answer> = prompts.iter().map(|p| Answer::new(p)).collect();
        let n_vocab = self.model.n_vocab();
        let mut samplers: Vec<LlamaSampler> = prompts
            .iter()
            .map(|_| {
                LlamaSampler::chain_simple([
                    LlamaSampler::penalties(n_vocab, REPEAT_WINDOW, REPEAT_PENALTY, 0.0, 0.0),
                    LlamaSampler::greedy(),
                ])
            })
            .collect();
        let mut rows: Vec<Option<i32>> = (0..inputs.len()).map(|seq| Some(seq as i32)).collect();
        let vocab = self.model.vocab();
        while rows.iter().any(Option::is_some) {
            if sinks.iter().any(|s| s.cancelled()) {
                return Err(Error::Cancelled);
            }
            let mut next = Vec::new();
            for seq in 0..inputs.len() {
                let Some(row) = rows[seq] else { continue };
                let token = samplers[seq].sample(ctx, row);
                let answer = &mut answers[seq];
                let more = !vocab.is_eog(token)
                    && answer.push(
                        token,
                        &vocab.token_to_piece(token, false, None),
                        &mut *sinks[seq],
                    );
                if more {
                    next.push((seq, token, inputs[seq].len() + answer.tokens.len() - 1));
                } else {
                    rows[seq] = None;
                }
            }
            if next.is_empty() {
                break;
            }
            batch.clear();
            for (row, &(seq, token, pos)) in next.iter().enumerate() {
                add(batch, token, pos, seq, true)?;
                rows[seq] = Some(row as i32);
            }
            decode(ctx, batch)?;
        }
        Ok(answers)
    }
}

/// Reading and writing speed on one machine, measured as llama.cpp's `llama-bench` measures it:
/// a prompt of pseudo-random tokens decoded in batches, then tokens written one at a time after
/// it (the end-of-text token does not stop them).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Speed {
    /// Prompt tokens read.
    pub prompt_tokens: usize,
    /// Prompt tokens read per second.
    pub prompt_per_second: f64,
    /// Tokens written after the prompt.
    pub generated_tokens: usize,
    /// Tokens written per second.
    pub generated_per_second: f64,
}

impl LlamaGguf {
    /// [`LlamaGguf::speed`] for each prompt length, the mean of `repeat` runs, after one
    /// warm-up run (as `llama-bench` reports it).
    pub fn speeds(&self, prompts: &[usize], generate: usize, repeat: usize) -> Result<Vec<Speed>> {
        self.speed(16, 1)?;
        prompts
            .iter()
            .map(|&prompt| {
                let runs = (0..repeat.max(1))
                    .map(|_| self.speed(prompt, generate))
                    .collect::<Result<Vec<_>>>()?;
                let mean =
                    |f: fn(&Speed) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
                Ok(Speed {
                    prompt_tokens: prompt,
                    prompt_per_second: mean(|s| s.prompt_per_second),
                    generated_tokens: generate,
                    generated_per_second: mean(|s| s.generated_per_second),
                })
            })
            .collect()
    }

    /// Times a prompt of `prompt` tokens and `generate` tokens written after it, on a fresh
    /// context (nothing reused from earlier prompts).
    pub fn speed(&self, prompt: usize, generate: usize) -> Result<Speed> {
        let limit = self.context_length().min(MAX_CELLS);
        if prompt == 0 || prompt + generate > limit {
            return Err(Error::TooLong {
                model: self.name.clone(),
                prompt,
                answer: generate,
                limit,
            });
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        *state = None;
        let st = self.context(&mut state, prompt + generate)?;
        // llama-bench's prompt: pseudo-random token ids (a fixed LCG here, so runs repeat).
        let n_vocab = u64::try_from(self.model.n_vocab()).unwrap_or(1);
        let mut x: u64 = 0x2545_f491;
        let tokens: Vec<LlamaToken> = (0..prompt)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                LlamaToken(i32::try_from((x >> 33) % n_vocab).unwrap_or(0))
            })
            .collect();
        let mut batch = LlamaBatch::new(BATCH, 1);
        let started = Instant::now();
        for (i, chunk) in tokens.chunks(BATCH).enumerate() {
            batch.clear();
            for (j, &t) in chunk.iter().enumerate() {
                let pos = i * BATCH + j;
                add(&mut batch, t, pos, 0, pos + 1 == prompt)?;
            }
            decode(&mut st.ctx, &mut batch)?;
        }
        let prompt_seconds = started.elapsed().as_secs_f64();
        let mut sampler = LlamaSampler::greedy();
        let started = Instant::now();
        for pos in prompt..prompt + generate {
            let t = sampler.sample(&st.ctx, batch.n_tokens() - 1);
            batch.clear();
            add(&mut batch, t, pos, 0, true)?;
            decode(&mut st.ctx, &mut batch)?;
        }
        let generate_seconds = started.elapsed().as_secs_f64();
        *state = None;
        Ok(Speed {
            prompt_tokens: prompt,
            prompt_per_second: prompt as f64 / prompt_seconds,
            generated_tokens: generate,
            generated_per_second: generate as f64 / generate_seconds.max(f64::MIN_POSITIVE),
        })
    }
}

/// One answer as it is written.
struct Answer {
    tokens: Vec<LlamaToken>,
    bytes: Vec<u8>,
    /// Bytes already passed to the sink.
    sent: usize,
    max_tokens: usize,
    one_line: bool,
}

impl Answer {
    fn new(prompt: &Prompt) -> Self {
        Self {
            tokens: Vec::new(),
            bytes: Vec::new(),
            sent: 0,
            max_tokens: prompt.max_tokens,
            one_line: prompt.one_line,
        }
    }

    /// Takes a token and its text; whether the answer goes on.
    fn push(&mut self, token: LlamaToken, piece: &[u8], sink: &mut dyn Sink) -> bool {
        self.tokens.push(token);
        self.bytes.extend_from_slice(piece);
        let mut more = self.tokens.len() < self.max_tokens;
        if let Some(end) = self.one_line.then(|| crate::line_end(&self.bytes)).flatten() {
            self.bytes.truncate(end);
            more = false;
        }
        // Whole characters only: a token can end inside one.
        let valid = match std::str::from_utf8(&self.bytes[self.sent..]) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        if valid > 0 {
            sink.text(&String::from_utf8_lossy(&self.bytes[self.sent..self.sent + valid]));
            self.sent += valid;
        }
        more
    }

    fn finish(self, prompt_tokens: usize, seconds: f64, sink: &mut dyn Sink) -> Generation {
        if self.sent < self.bytes.len() {
            sink.text(&String::from_utf8_lossy(&self.bytes[self.sent..]));
        }
        Generation {
            text: String::from_utf8_lossy(&self.bytes).into_owned(),
            prompt_tokens,
            completion_tokens: self.tokens.len(),
            seconds,
            cached: false,
        }
    }
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Drops sequence `seq` from position `from` on.
fn clear(ctx: &mut LlamaContext<'_>, seq: usize, from: usize) -> Result<()> {
    ctx.clear_kv_cache_seq(Some(seq as u32), Some(from as u32), None)
        .map(drop)
        .map_err(|e| Error::Model(format!("KV cache: {e}")))
}

fn add(
    batch: &mut LlamaBatch,
    token: LlamaToken,
    pos: usize,
    seq: usize,
    logits: bool,
) -> Result<()> {
    batch
        .add(token, pos as i32, &[seq as i32], logits)
        .map_err(|e| Error::Model(format!("batch: {e}")))
}

fn decode(ctx: &mut LlamaContext<'_>, batch: &mut LlamaBatch) -> Result<()> {
    ctx.decode(batch).map_err(|e| Error::Model(format!("llama.cpp decode: {e}")))
}

/// Decodes `tokens` into sequence `seq` from position `pos`, without logits.
fn feed(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    tokens: &[LlamaToken],
    pos: usize,
    seq: usize,
) -> Result<()> {
    if tokens.is_empty() {
        return Ok(());
    }
    batch.clear();
    for (i, &t) in tokens.iter().enumerate() {
        add(batch, t, pos + i, seq, false)?;
    }
    decode(ctx, batch)
}

impl Generator for LlamaGguf {
    fn name(&self) -> &str {
        &self.name
    }

    fn count_tokens(&self, text: &str) -> usize {
        LlamaGguf::count_tokens(self, text)
    }

    fn stream(&self, prompt: &Prompt, sink: &mut dyn Sink) -> Result<Generation> {
        self.run(&[prompt], &mut [sink]).pop().expect("one answer per prompt")
    }

    fn side_by_side(&self) -> usize {
        PARALLEL
    }

    fn generate_many(&self, prompts: &[Prompt]) -> Vec<Result<Generation>> {
        let mut silent: Vec<Silent> = vec![Silent; prompts.len()];
        let mut sinks: Vec<&mut dyn Sink> = silent.iter_mut().map(|s| s as &mut dyn Sink).collect();
        self.run(&prompts.iter().collect::<Vec<_>>(), &mut sinks)
    }
}
