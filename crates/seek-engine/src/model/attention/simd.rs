//! Attention's vector loops for x86, one query at a time: scores, weighted sums, `exp` and SiLU
//! with AVX2 + FMA. With AVX-512, `together`'s loops take the scores and weighted sums of heads
//! of 64 and 128 values and give these loops' results to the bit.
//!
//! Owns that arithmetic on the slices `attention` hands it. It must not choose which loop runs
//! (`Vectors::for_this_cpu` does) nor know about positions, heads or threads.

use std::arch::x86_64::*;

use super::Cached;
use crate::kernels::hsum;

/// Output columns kept in registers while the positions pass: eight registers of eight.
pub(super) const STRIP: usize = 64;

/// Whether the CPU runs these loops (for tests that call them directly).
#[cfg(test)]
pub fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// The general loop, for comparing the one for heads of 64 with it.
#[cfg(test)]
pub fn scores_general(q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
    // SAFETY: the caller checked `available`.
    unsafe { scores_any(q, cache, scale, out) }
}

pub fn scores(q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
    // SAFETY: installed only when the CPU has AVX2 and FMA (`Vectors::for_this_cpu`).
    unsafe { scores_avx2(q, cache, scale, out) }
}

pub fn weighted_sum(weights: &[f32], cache: &Cached<'_>, out: &mut [f32]) {
    // SAFETY: as for `scores`.
    unsafe { weighted_sum_avx2(weights, cache, out) }
}

#[target_feature(enable = "avx2,fma")]
fn scores_avx2(q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
    if q.len() == 64 {
        scores_64(q, cache, scale, out)
    } else {
        scores_any(q, cache, scale, out)
    }
}

#[target_feature(enable = "avx2,fma")]
fn scores_any(q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
    let dim = q.len();
    let whole = dim / 16 * 16;
    for (j, o) in out.iter_mut().enumerate() {
        let key = cache.key(j, dim);
        // Two sums, so that consecutive multiply-adds do not wait for each other.
        let (mut even, mut odd) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 16 ≤ dim, the length of both `q` and `key`.
            unsafe {
                let (qp, kp) = (q.as_ptr().add(i), key.as_ptr().add(i));
                even = _mm256_fmadd_ps(_mm256_loadu_ps(qp), _mm256_loadu_ps(kp), even);
                odd = _mm256_fmadd_ps(_mm256_loadu_ps(qp.add(8)), _mm256_loadu_ps(kp.add(8)), odd);
            }
            i += 16;
        }
        let both = _mm256_add_ps(even, odd);
        let mut sum = hsum(both);
        for t in whole..dim {
            sum += q[t] * key[t];
        }
        *o = sum * scale;
    }
}

/// [`scores_any`] for heads of 64 with the query kept in registers: the same additions in
/// the same order, so the same results.
#[target_feature(enable = "avx2,fma")]
fn scores_64(q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
    // SAFETY: q has 64 values (checked by the caller); 8·r + 8 ≤ 64.
    let query: [__m256; 8] =
        std::array::from_fn(|r| unsafe { _mm256_loadu_ps(q.as_ptr().add(8 * r)) });
    for (j, o) in out.iter_mut().enumerate() {
        let key = cache.key(j, 64);
        let (mut even, mut odd) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for pair in 0..4 {
            // SAFETY: 16·pair + 16 ≤ 64, the key's length.
            unsafe {
                let kp = key.as_ptr().add(16 * pair);
                even = _mm256_fmadd_ps(query[2 * pair], _mm256_loadu_ps(kp), even);
                odd = _mm256_fmadd_ps(query[2 * pair + 1], _mm256_loadu_ps(kp.add(8)), odd);
            }
        }
        let both = _mm256_add_ps(even, odd);
        *o = hsum(both) * scale;
    }
}

pub fn exp_sum(scores: &mut [f32], max: f32) -> f32 {
    // SAFETY: as for `scores`.
    unsafe { exp_sum_avx2(scores, max) }
}

/// `exp(x)` of eight values: Cephes' `expf` (2ⁿ · a polynomial of the rest, the rest
/// taken off in two parts of ln 2), within 2 ulp of the correctly rounded value for the
/// arguments attention gives it (at most 0). Below −87.3 it returns exp(−87.3) (about
/// 1.2·10⁻³⁸, nothing beside the largest score's 1); a NaN stays a NaN.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(super) fn exp8(x: __m256) -> __m256 {
    let x = _mm256_min_ps(
        _mm256_set1_ps(88.0),
        _mm256_max_ps(_mm256_set1_ps(-87.3), x),
    );
    let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        x,
        _mm256_set1_ps(std::f32::consts::LOG2_E),
    ));
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
    let mut p = _mm256_set1_ps(1.987_569_1e-4);
    for c in [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        0.166_666_65,
        0.5,
    ] {
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
    }
    let y = _mm256_add_ps(
        _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r),
        _mm256_set1_ps(1.0),
    );
    let two_n = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
        _mm256_cvtps_epi32(n),
        _mm256_set1_epi32(127),
    )));
    _mm256_mul_ps(y, two_n)
}

/// [`super::portable_exp_sum`] eight scores at a time; the last `len % 8` go through the
/// same eight-wide `exp` and are added one by one.
#[target_feature(enable = "avx2,fma")]
fn exp_sum_avx2(scores: &mut [f32], max: f32) -> f32 {
    let max8 = _mm256_set1_ps(max);
    let mut sums = _mm256_setzero_ps();
    let mut chunks = scores.chunks_exact_mut(8);
    for chunk in &mut chunks {
        // SAFETY: a chunk is eight f32; `loadu`/`storeu` need no alignment.
        unsafe {
            let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(chunk.as_ptr()), max8));
            _mm256_storeu_ps(chunk.as_mut_ptr(), e);
            sums = _mm256_add_ps(sums, e);
        }
    }
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` is eight f32.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sums) };
    let mut sum = lanes.iter().sum::<f32>();
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut tail = [0f32; 8];
        tail[..rest.len()].copy_from_slice(rest);
        // SAFETY: `tail` is eight f32.
        unsafe {
            let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(tail.as_ptr()), max8));
            _mm256_storeu_ps(tail.as_mut_ptr(), e);
        }
        for (s, e) in rest.iter_mut().zip(tail) {
            *s = e;
            sum += e;
        }
    }
    sum
}

pub fn silu(values: &mut [f32]) {
    // SAFETY: as for `scores`.
    unsafe { silu_avx2(values) }
}

/// [`super::portable_silu`] eight values at a time with [`exp8`]; the last `len % 8`
/// through the same eight-wide loop, so a value's result does not depend on its place.
#[target_feature(enable = "avx2,fma")]
fn silu_avx2(values: &mut [f32]) {
    let one = _mm256_set1_ps(1.0);
    let silu8 = |x: __m256| {
        let e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_div_ps(x, _mm256_add_ps(one, e))
    };
    let mut chunks = values.chunks_exact_mut(8);
    for chunk in &mut chunks {
        // SAFETY: a chunk is eight f32; `loadu`/`storeu` need no alignment.
        unsafe { _mm256_storeu_ps(chunk.as_mut_ptr(), silu8(_mm256_loadu_ps(chunk.as_ptr()))) };
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut tail = [0f32; 8];
        tail[..rest.len()].copy_from_slice(rest);
        // SAFETY: `tail` is eight f32.
        unsafe { _mm256_storeu_ps(tail.as_mut_ptr(), silu8(_mm256_loadu_ps(tail.as_ptr()))) };
        rest.copy_from_slice(&tail[..rest.len()]);
    }
}

/// The columns from `column` on of a head whose size is not a multiple of 64 (both weighted
/// sums' rest), column by column.
fn weighted_sum_rest(weights: &[f32], cache: &Cached<'_>, out: &mut [f32], column: usize) {
    let dim = out.len();
    for (c, o) in out.iter_mut().enumerate().skip(column) {
        let mut sum = 0f32;
        for (j, w) in weights.iter().enumerate() {
            sum = w.mul_add(cache.value(j, dim)[c], sum);
        }
        *o = sum;
    }
}

#[target_feature(enable = "avx2,fma")]
fn weighted_sum_avx2(weights: &[f32], cache: &Cached<'_>, out: &mut [f32]) {
    let dim = out.len();
    let mut column = 0;
    // Strips of 64 columns summed in registers over every position.
    while column + STRIP <= dim {
        let mut acc = [_mm256_setzero_ps(); STRIP / 8];
        for (j, w) in weights.iter().enumerate() {
            let value = &cache.value(j, dim)[column..column + STRIP];
            let w = _mm256_set1_ps(*w);
            for (r, a) in acc.iter_mut().enumerate() {
                // SAFETY: 8·r + 8 ≤ STRIP, the length of `value`.
                let v = unsafe { _mm256_loadu_ps(value.as_ptr().add(8 * r)) };
                *a = _mm256_fmadd_ps(w, v, *a);
            }
        }
        for (r, a) in acc.iter().enumerate() {
            // SAFETY: column + 8·r + 8 ≤ dim, the length of `out`.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(column + 8 * r), *a) };
        }
        column += STRIP;
    }
    weighted_sum_rest(weights, cache, out, column);
}

/// Whether the CPU runs the AVX-512 loops of `together`.
pub fn wide_available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
}
