//! Token vectors of a whole document, for late chunking (Günther et al. 2024): the encoder reads
//! far more than one chunk, so each chunk's pooled vector carries the context around it.
//!
//! A document longer than the model's positions is read in overlapping windows; each token takes
//! its vector from the window in which it sits most centrally, so every token has at least a
//! quarter window of context on each side except at the document's ends.

use tokenizers::Tokenizer;

use crate::bert::Bert;
use crate::{Error, Result};

/// Token vectors of one text: one row per content token (no `[CLS]`/`[SEP]`), with its byte span
/// in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenVectors {
    /// Byte span of each token in the text.
    pub offsets: Vec<(usize, usize)>,
    /// Vector dimension.
    pub dim: usize,
    /// `offsets.len() × dim` values, row-major.
    pub vectors: Vec<f32>,
    /// Windows the encoder read.
    pub windows: usize,
}

impl TokenVectors {
    /// Mean of the vectors of the tokens that start inside `[start, end)`, or `None` if none
    /// does. Not normalised.
    pub fn mean_in(&self, start: usize, end: usize) -> Option<Vec<f32>> {
        let mut sum = vec![0f32; self.dim];
        let mut n = 0usize;
        for (i, &(s, _)) in self.offsets.iter().enumerate() {
            if s >= start && s < end {
                for (a, b) in sum.iter_mut().zip(&self.vectors[i * self.dim..(i + 1) * self.dim]) {
                    *a += b;
                }
                n += 1;
            }
        }
        (n > 0).then(|| {
            let n = n as f32;
            for a in &mut sum {
                *a /= n;
            }
            sum
        })
    }
}

/// Reads `text` through `model` in windows of at most `positions` tokens.
pub(crate) struct LateReader<'a> {
    pub(crate) model: &'a Bert,
    /// The model's tokenizer without truncation.
    pub(crate) tokenizer: &'a Tokenizer,
    pub(crate) positions: usize,
    pub(crate) dim: usize,
}

/// Tokens per forward pass (as in the sentence encoder): many windows, of one text or several,
/// go through the encoder together.
const BATCH_TOKENS: usize = 8192;

/// One window to read: its text, where it starts among the text's tokens, its input ids.
struct Window {
    text: usize,
    start: usize,
    seq: Vec<u32>,
}

impl LateReader<'_> {
    /// Token vectors of each text, each window read as `[CLS] prefix tokens… [SEP]`.
    pub(crate) fn read(&self, prefix: &str, texts: &[&str]) -> Result<Vec<TokenVectors>> {
        let encode = |s: &str, special: bool| {
            self.tokenizer.encode(s, special).map_err(|e| Error::Tokenizer(e.to_string()))
        };
        let specials = encode("", true)?.get_ids().to_vec();
        let [cls, sep] = specials[..] else {
            return Err(Error::Tokenizer(format!(
                "late chunking needs a [CLS] … [SEP] template; this tokenizer adds {} special tokens",
                specials.len()
            )));
        };
        let prefix_ids =
            if prefix.is_empty() { Vec::new() } else { encode(prefix, false)?.get_ids().to_vec() };
        let width = self.positions.saturating_sub(2 + prefix_ids.len());
        if width < 8 {
            return Err(Error::Tokenizer(format!(
                "the model's {} positions leave no room for text after the prompt",
                self.positions
            )));
        }
        let h = self.dim;
        let mut out = Vec::with_capacity(texts.len());
        let mut windows = Vec::new();
        let mut starts_of = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let body = encode(text, false)?;
            let ids = body.get_ids();
            let starts = if ids.is_empty() { Vec::new() } else { window_starts(ids.len(), width) };
            for &s in &starts {
                let mut seq = Vec::with_capacity(width + 2 + prefix_ids.len());
                seq.push(cls);
                seq.extend(&prefix_ids);
                seq.extend(&ids[s..(s + width).min(ids.len())]);
                seq.push(sep);
                windows.push(Window { text: i, start: s, seq });
            }
            out.push(TokenVectors {
                offsets: body.get_offsets().to_vec(),
                dim: h,
                vectors: vec![0.0; ids.len() * h],
                windows: starts.len(),
            });
            starts_of.push(starts);
        }
        let mut first = 0;
        while first < windows.len() {
            let mut end = first;
            let mut budget = 0;
            while end < windows.len()
                && (end == first || budget + windows[end].seq.len() <= BATCH_TOKENS)
            {
                budget += windows[end].seq.len();
                end += 1;
            }
            let group = &windows[first..end];
            let seqs: Vec<Vec<u32>> = group.iter().map(|w| w.seq.clone()).collect();
            let hidden = self.model.forward(&seqs)?;
            let mut row = 0;
            for w in group {
                let tv = &mut out[w.text];
                let n = tv.offsets.len();
                let starts = &starts_of[w.text];
                let body = row + 1 + prefix_ids.len();
                for t in w.start..(w.start + width).min(n) {
                    if starts[most_central(starts, width, n, t)] == w.start {
                        let r = body + t - w.start;
                        tv.vectors[t * h..(t + 1) * h].copy_from_slice(&hidden[r * h..(r + 1) * h]);
                    }
                }
                row += w.seq.len();
            }
            first = end;
        }
        Ok(out)
    }
}

/// Window starts covering `n` tokens with windows of `width`, advancing by half a window (so
/// the most central window leaves a token a quarter window on each side); the last window ends
/// at the last token.
pub(crate) fn window_starts(n: usize, width: usize) -> Vec<usize> {
    if n <= width {
        return vec![0];
    }
    let stride = (width / 2).max(1);
    let mut starts: Vec<usize> = (0..n).step_by(stride).take_while(|&s| s + width < n).collect();
    starts.push(n - width);
    starts
}

/// The window in which token `t` is farthest from an edge that has more text beyond it.
fn most_central(starts: &[usize], width: usize, n: usize, t: usize) -> usize {
    let margin = |&s: &usize| {
        let end = (s + width).min(n);
        if t < s || t >= end {
            return None;
        }
        // An edge at the document's boundary costs no context.
        let left = if s == 0 { usize::MAX } else { t - s };
        let right = if end == n { usize::MAX } else { end - 1 - t };
        Some(left.min(right))
    };
    starts
        .iter()
        .enumerate()
        .filter_map(|(i, s)| margin(s).map(|m| (i, m)))
        .max_by_key(|&(i, m)| (m, std::cmp::Reverse(i)))
        .map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_token_with_context() {
        assert_eq!(window_starts(10, 510), vec![0]);
        assert_eq!(window_starts(510, 510), vec![0]);
        let starts = window_starts(2000, 510);
        assert_eq!(starts, vec![0, 255, 510, 765, 1020, 1275, 1490]);
        for t in 0..2000 {
            let w = most_central(&starts, 510, 2000, t);
            let (s, e) = (starts[w], starts[w] + 510);
            assert!(t >= s && t < e);
            // At least a quarter window of context on each side, except at the ends.
            assert!(s == 0 || t - s >= 510 / 4 - 1, "token {t} window {w}");
            assert!(e == 2000 || e - 1 - t >= 510 / 4 - 1, "token {t} window {w}");
        }
    }
}
