//! The AVX-512 loops that read each key and value once for several queries of one key/value
//! head: the query heads of a group, at one position (a decode step) or at a block of
//! positions (a prompt), `attend_block_wide`. Each result is the one-query loops' of `simd` to
//! the bit: the same multiply-adds and additions in the same order, only the loads shared.
//!
//! Owns that arithmetic on the slices `attention` hands it. It must not choose which loop runs
//! (`Vectors` does) nor know about threads or the cache's growth.

use std::arch::x86_64::*;

use super::simd::{STRIP, exp_sum};
use super::{Cached, Queries};
use crate::kernels::hsum;

/// One score's eight lanes for a query and a key of `16 · P` values. A 512-bit register holds
/// what `simd`'s AVX2 loop keeps in two: its `even` sum (values `16p .. 16p + 8`) in the low
/// half and its `odd` one (`16p + 8 .. 16p + 16`) in the high half, multiplied and added in
/// the same order from zero; the halves are then added as there, so every score is the AVX2
/// loop's to the bit, with half the loads and multiply-adds.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
fn score_lanes<const P: usize>(q: &[f32], key: &[f32]) -> __m256 {
    assert!(q.len() >= 16 * P && key.len() >= 16 * P, "16·P values each");
    let mut sums = _mm512_setzero_ps();
    for r in 0..P {
        // SAFETY: 16·r + 16 ≤ 16·P, at most the length of the query and of the key.
        let (q, k) = unsafe {
            (
                _mm512_loadu_ps(q.as_ptr().add(16 * r)),
                _mm512_loadu_ps(key.as_ptr().add(16 * r)),
            )
        };
        sums = _mm512_fmadd_ps(q, k, sums);
    }
    let even = _mm512_castps512_ps256(sums);
    let odd = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(sums)));
    _mm256_add_ps(even, odd)
}

/// [`hsum`] of eight vectors at once, each summed in exactly its order (lanes `i` and
/// `i + 4`, then the pairs, then the two halves), through shuffles that serve all eight: about
/// three operations a score instead of six.
#[inline]
#[target_feature(enable = "avx2")]
fn lanes_sums8(b: [__m256; 8]) -> __m256 {
    // [b_i + b_{i+4} of a | the same of c].
    let fold = |a: __m256, c: __m256| {
        _mm256_add_ps(
            _mm256_permute2f128_ps::<0x20>(a, c),
            _mm256_permute2f128_ps::<0x31>(a, c),
        )
    };
    let (f01, f23, f45, f67) = (
        fold(b[0], b[1]),
        fold(b[2], b[3]),
        fold(b[4], b[5]),
        fold(b[6], b[7]),
    );
    // Per 128-bit half: [s0 + s2, s1 + s3] of two vectors.
    let pairs = |a: __m256, c: __m256| {
        _mm256_add_ps(
            _mm256_shuffle_ps::<0b01_00_01_00>(a, c),
            _mm256_shuffle_ps::<0b11_10_11_10>(a, c),
        )
    };
    let (p0123, p4567) = (pairs(f01, f23), pairs(f45, f67));
    // The two halves: vectors 0, 2, 4, 6 in the low half, 1, 3, 5, 7 in the high one.
    let sums = _mm256_add_ps(
        _mm256_shuffle_ps::<0b10_00_10_00>(p0123, p4567),
        _mm256_shuffle_ps::<0b11_01_11_01>(p0123, p4567),
    );
    _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
}

/// Keys whose values one pass of [`attend_block_wide`]'s weighted sums takes (their rows stay in
/// L1 while every query of the block uses them).
const VALUE_BLOCK: usize = 16;

/// [`super::attend_block`] for heads of 64 and 128 values (`false` for others: nothing is
/// done). Each key and value is read from memory once for the whole block instead of once per
/// position: the keys eight at a time and the values sixteen at a time stay in L1 while every
/// query uses them. Each query's scores, softmax and weighted sums are computed by the very
/// operations of the one-query loops, in the same order, so the results are theirs to the bit.
pub fn attend_block_wide(
    queries: &Queries<'_>,
    cache: &Cached<'_>,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) -> bool {
    // SAFETY: installed only when `wide_available()` (`Vectors::for_this_cpu`); the loops
    // check their slices' lengths.
    unsafe {
        match queries.dim {
            64 => attend_block_avx512::<4>(queries, cache, scores, out),
            128 => attend_block_avx512::<8>(queries, cache, scores, out),
            _ => return false,
        }
    }
    true
}

#[target_feature(enable = "avx512f,avx2,fma")]
fn attend_block_avx512<const P: usize>(
    block: &Queries<'_>,
    cache: &Cached<'_>,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let (queries, positions, first) = (block.values, block.positions, block.first_position);
    let dim = 16 * P;
    assert_eq!(block.dim, dim, "heads of 16·P values");
    let rows = queries.len() / dim;
    assert!(
        positions > 0 && rows.is_multiple_of(positions) && out.len() == queries.len(),
        "whole heads of every position"
    );
    let heads = rows / positions;
    // Query `q` (position `q / heads`) attends over keys `0..keys(q)`; rows of `stride` scores.
    let keys = |q: usize| first + q / heads + 1;
    let stride = first + positions;
    scores.clear();
    scores.resize(rows * stride, 0.0);
    let scale = 1.0 / (dim as f32).sqrt();
    let scale8 = _mm256_set1_ps(scale);
    // Scores, eight keys at a time for every query whose keys cover the eight (as the
    // one-query loop takes them), one by one past its last whole eight.
    for j in (0..stride).step_by(8) {
        for q in 0..rows {
            let n = keys(q);
            if j >= n {
                continue;
            }
            let query = &queries[q * dim..(q + 1) * dim];
            let row = &mut scores[q * stride..q * stride + n];
            if j + 8 <= n {
                let lanes: [__m256; 8] =
                    std::array::from_fn(|k| score_lanes::<P>(query, cache.key(j + k, dim)));
                // SAFETY: j + 8 ≤ n, the row's length; `storeu` needs no alignment.
                unsafe {
                    _mm256_storeu_ps(
                        row.as_mut_ptr().add(j),
                        _mm256_mul_ps(lanes_sums8(lanes), scale8),
                    )
                };
            } else {
                for (k, score) in row.iter_mut().enumerate().skip(j) {
                    *score = hsum(score_lanes::<P>(query, cache.key(k, dim))) * scale;
                }
            }
        }
    }
    let mut sums = vec![0f32; rows];
    for (q, sum) in sums.iter_mut().enumerate() {
        let row = &mut scores[q * stride..q * stride + keys(q)];
        let max = row.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        *sum = exp_sum(row, max);
    }
    // Weighted sums in `out`, each column of each query summed over its keys in order; the
    // sums wait in `out` between two blocks of keys. Up to four queries whose keys cover the
    // block alike go together: one query's four sums of a strip, each a multiply-add after
    // the last, would leave the multiply-add units waiting.
    out.fill(0.0);
    for column in (0..dim).step_by(STRIP) {
        for j in (0..stride).step_by(VALUE_BLOCK) {
            let end = |q: usize| keys(q).min(j + VALUE_BLOCK);
            let mut q = 0;
            while q < rows {
                let e = end(q);
                if j >= e {
                    q += 1;
                    continue;
                }
                let mut take = 1;
                while take < 4 && q + take < rows && end(q + take) == e {
                    take += 1;
                }
                let block = WeightBlock {
                    scores,
                    stride,
                    cache,
                    dim,
                    column,
                    first_query: q,
                    keys: j..e,
                };
                match take {
                    4 => block.add::<4>(out),
                    3 => block.add::<3>(out),
                    2 => block.add::<2>(out),
                    _ => block.add::<1>(out),
                }
                q += take;
            }
        }
    }
    for (head, sum) in out.chunks_exact_mut(dim).zip(sums) {
        let inverse = 1.0 / sum;
        for o in head.iter_mut() {
            *o *= inverse;
        }
    }
}

/// A block of keys' values weighted into the sums of `T` consecutive queries (see
/// [`attend_block_avx512`]).
struct WeightBlock<'a, 'c> {
    scores: &'a [f32],
    stride: usize,
    cache: &'a Cached<'c>,
    dim: usize,
    column: usize,
    first_query: usize,
    keys: std::ops::Range<usize>,
}

impl WeightBlock<'_, '_> {
    /// `out[q][column..column + STRIP] += Σ scores[q][k] · value k` for the `T` queries, key
    /// by key in order, each value's strip loaded once for them.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn add<const T: usize>(&self, out: &mut [f32]) {
        let at = |t: usize| (self.first_query + t) * self.dim + self.column;
        for t in 0..T {
            assert!(at(t) + STRIP <= out.len(), "the queries' sums");
        }
        // SAFETY: at(t) + STRIP ≤ out.len(), checked above; 16·r + 16 ≤ STRIP.
        let mut acc: [[__m512; STRIP / 16]; T] = std::array::from_fn(|t| {
            std::array::from_fn(|r| unsafe { _mm512_loadu_ps(out.as_ptr().add(at(t) + 16 * r)) })
        });
        for k in self.keys.clone() {
            let value = &self.cache.value(k, self.dim)[self.column..self.column + STRIP];
            // SAFETY: 16·r + 16 ≤ STRIP, the length of `value`.
            let v: [__m512; STRIP / 16] =
                std::array::from_fn(|r| unsafe { _mm512_loadu_ps(value.as_ptr().add(16 * r)) });
            for (t, acc) in acc.iter_mut().enumerate() {
                let w = _mm512_set1_ps(self.scores[(self.first_query + t) * self.stride + k]);
                for (a, v) in acc.iter_mut().zip(&v) {
                    *a = _mm512_fmadd_ps(w, *v, *a);
                }
            }
        }
        for (t, acc) in acc.iter().enumerate() {
            for (r, a) in acc.iter().enumerate() {
                // SAFETY: as above.
                unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(at(t) + 16 * r), *a) };
            }
        }
    }
}
