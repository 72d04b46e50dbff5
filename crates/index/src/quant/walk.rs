//! Scoring int8 rows picked one batch at a time, as a graph walk asks for them
//! ([`crate::Hnsw::search_codes`]), rather than scanned in order.

// The kernels must inline into the dispatched function to be compiled for its instruction set.
#![allow(clippy::inline_always)]

#[cfg(target_arch = "x86_64")]
use super::x86;
use super::{Codes, Prepared, dot_i8_i16};
use crate::vector::simd;

/// A query prepared against int8 codes.
pub(crate) struct Int8Query<'a> {
    codes: &'a Codes,
    q: Vec<i16>,
    scale: f32,
}

impl Codes {
    /// `q` (normalised, `dim` long) prepared for [`Int8Query::scores_at`]; `None` for
    /// binary codes, whose scores are too coarse to steer a graph walk.
    pub(crate) fn int8_query(&self, q: &[f32]) -> Option<Int8Query<'_>> {
        match self.prepare(q) {
            Prepared::Int8(q, scale) => Some(Int8Query { codes: self, q, scale }),
            Prepared::Binary(..) => None,
        }
    }
}

impl Int8Query<'_> {
    /// The estimated cosines of rows `ids`, into `out` (cleared first), under one dispatch.
    pub(crate) fn scores_at(&self, ids: &[u32], out: &mut Vec<f32>) {
        out.clear();
        let q = &self.q;
        #[cfg(target_arch = "x86_64")]
        {
            use pulp::x86::{V3, V4};
            if crate::vector::avx512_allowed()
                && let Some(simd) = V4::try_new()
            {
                return simd.vectorize(
                    #[inline(always)]
                    || self.each_row(ids, out, |r| x86::dot_avx512(simd, r, q)),
                );
            }
            if let Some(simd) = V3::try_new() {
                return simd.vectorize(
                    #[inline(always)]
                    || self.each_row(ids, out, |r| x86::dot_avx2(simd, r, q)),
                );
            }
        }
        simd(
            #[inline(always)]
            || self.each_row(ids, out, |r| dot_i8_i16(r, q)),
        );
    }

    /// Appends the score of each row of `ids`, `dot` giving its integer product with the
    /// query; generic so the kernel inlines into the dispatched function.
    #[inline(always)]
    fn each_row(&self, ids: &[u32], out: &mut Vec<f32>, dot: impl Fn(&[u8]) -> i32) {
        let (codes, stride) = (self.codes, self.codes.stride());
        for &i in ids {
            let i = i as usize;
            let row = &codes.bytes[i * stride..(i + 1) * stride];
            out.push(dot(row) as f32 * codes.scales[i] * self.scale);
        }
    }
}
