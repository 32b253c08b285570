//! The `f32` arithmetic between the matrix products: rotary embedding, causal attention of one
//! query head over the cached keys and values, and the vector loops under them (with AVX2 + FMA
//! when the CPU has them, chosen once).
//!
//! Owns that arithmetic on plain slices. It must not know about threads or the cache's growth:
//! `forward` says which head of which position to compute and where the rows are. Every result
//! is computed by the same sequence of operations whatever else is computed with it, so a
//! prompt computed at once and token by token gives identical values.

/// How the rotary embedding pairs a head's dimensions (llama.cpp's rope types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rope {
    /// Adjacent pairs (llama.cpp's NORM, used with `llama` files, whose Q/K were permuted).
    Interleaved,
    /// The two halves of the head (NEOX, used by `qwen2`).
    Halves,
}

impl Rope {
    /// Rotates one head's values by a position's angles (`cos`, `sin`: half a head each).
    pub fn apply(self, head: &mut [f32], cos: &[f32], sin: &[f32]) {
        let half = head.len() / 2;
        match self {
            Rope::Interleaved => {
                for (pair, (c, s)) in head.chunks_exact_mut(2).zip(cos.iter().zip(sin)) {
                    let (a, b) = (pair[0], pair[1]);
                    pair[0] = a * c - b * s;
                    pair[1] = a * s + b * c;
                }
            }
            Rope::Halves => {
                let (first, second) = head.split_at_mut(half);
                for ((a, b), (c, s)) in first.iter_mut().zip(second).zip(cos.iter().zip(sin)) {
                    let (x, y) = (*a, *b);
                    *a = x * c - y * s;
                    *b = x * s + y * c;
                }
            }
        }
    }
}

/// The rotary tables: per position, `half` cosines and `half` sines.
pub struct RopeTables {
    pub cos: Vec<f32>,
    pub sin: Vec<f32>,
    pub half: usize,
}

impl RopeTables {
    /// Angles `position × inverse[i]` for every position below `positions`.
    pub fn new(inverse: &[f32], positions: usize) -> Self {
        let half = inverse.len();
        let mut cos = Vec::with_capacity(positions * half);
        let mut sin = Vec::with_capacity(positions * half);
        for position in 0..positions {
            for f in inverse {
                let angle = position as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Self { cos, sin, half }
    }

    /// One position's cosines and sines.
    pub fn at(&self, position: usize) -> (&[f32], &[f32]) {
        let range = position * self.half..(position + 1) * self.half;
        (&self.cos[range.clone()], &self.sin[range])
    }
}

/// The vector loops, for this CPU.
#[derive(Clone, Copy)]
pub struct Vectors {
    dot: fn(&[f32], &[f32]) -> f32,
    add_scaled: fn(f32, &[f32], &mut [f32]),
}

impl Vectors {
    pub fn for_this_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Self {
                dot: simd::dot,
                add_scaled: simd::add_scaled,
            };
        }
        Self::portable()
    }

    pub fn portable() -> Self {
        Self {
            dot: portable_dot,
            add_scaled: portable_add_scaled,
        }
    }

    /// `Σ a·b` over the shorter of the two.
    pub fn dot(&self, a: &[f32], b: &[f32]) -> f32 {
        (self.dot)(a, b)
    }

    /// `out += w · v`.
    pub fn add_scaled(&self, w: f32, v: &[f32], out: &mut [f32]) {
        (self.add_scaled)(w, v, out)
    }
}

fn portable_dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight partial sums, as the SIMD loop keeps them: independent additions vectorise.
    let mut sums = [0f32; 8];
    let (whole_a, whole_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let (tail_a, tail_b) = (whole_a.remainder(), whole_b.remainder());
    for (x, y) in whole_a.zip(whole_b) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    let mut sum = sums.iter().sum::<f32>();
    for (x, y) in tail_a.iter().zip(tail_b) {
        sum += x * y;
    }
    sum
}

fn portable_add_scaled(w: f32, v: &[f32], out: &mut [f32]) {
    for (o, x) in out.iter_mut().zip(v) {
        *o += w * x;
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: installed only when the CPU has AVX2 and FMA (`Vectors::for_this_cpu`).
        unsafe { dot_avx2(a, b) }
    }

    pub fn add_scaled(w: f32, v: &[f32], out: &mut [f32]) {
        // SAFETY: as for `dot`.
        unsafe { add_scaled_avx2(w, v, out) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        let len = a.len().min(b.len());
        let whole = len / 8 * 8;
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 8 ≤ len, within both slices.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(a.as_ptr().add(i)),
                    _mm256_loadu_ps(b.as_ptr().add(i)),
                )
            };
            acc = _mm256_fmadd_ps(x, y, acc);
            i += 8;
        }
        let s = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        let mut sum = _mm_cvtss_f32(s);
        for j in whole..len {
            sum += a[j] * b[j];
        }
        sum
    }

    #[target_feature(enable = "avx2,fma")]
    fn add_scaled_avx2(w: f32, v: &[f32], out: &mut [f32]) {
        let len = v.len().min(out.len());
        let whole = len / 8 * 8;
        let scale = _mm256_set1_ps(w);
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 8 ≤ len, within both slices.
            unsafe {
                let o = out.as_mut_ptr().add(i);
                let sum = _mm256_fmadd_ps(
                    scale,
                    _mm256_loadu_ps(v.as_ptr().add(i)),
                    _mm256_loadu_ps(o),
                );
                _mm256_storeu_ps(o, sum);
            }
            i += 8;
        }
        for j in whole..len {
            out[j] += w * v[j];
        }
    }
}

/// Where one query head's attention reads: the cached rows of its key/value head.
pub struct Cached<'a> {
    /// Rows of `stride` values per position, from position 0; the head's values start at
    /// `offset` in each row.
    pub keys: &'a [f32],
    pub values: &'a [f32],
    pub stride: usize,
    pub offset: usize,
}

/// `out = softmax(q·Kᵀ / √d) · V` over the positions `0..=position` of `cache`, for one query
/// head `q` (already rotated). `scores` is scratch room (grown as needed).
pub fn attend(
    vectors: &Vectors,
    q: &[f32],
    cache: &Cached<'_>,
    position: usize,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let dim = q.len();
    let scale = 1.0 / (dim as f32).sqrt();
    let count = position + 1;
    scores.clear();
    scores.extend((0..count).map(|j| {
        let at = j * cache.stride + cache.offset;
        vectors.dot(q, &cache.keys[at..at + dim]) * scale
    }));
    let max = scores.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
    let mut sum = 0f32;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        sum += *s;
    }
    out.fill(0.0);
    for (j, w) in scores.iter().enumerate() {
        let at = j * cache.stride + cache.offset;
        vectors.add_scaled(*w, &cache.values[at..at + dim], out);
    }
    let inverse = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inverse;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simd_loops_equal_the_portable_ones_up_to_rounding() {
        let a: Vec<f32> = (0..77).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..77).map(|i| (i as f32 * 0.11).cos()).collect();
        let (fast, portable) = (Vectors::for_this_cpu(), Vectors::portable());
        assert!((fast.dot(&a, &b) - portable.dot(&a, &b)).abs() < 1e-4);
        let (mut x, mut y) = (b.clone(), b.clone());
        fast.add_scaled(0.5, &a, &mut x);
        portable.add_scaled(0.5, &a, &mut y);
        for (p, q) in x.iter().zip(&y) {
            assert!((p - q).abs() < 1e-6);
        }
    }

    #[test]
    fn attention_weights_the_values_by_the_softmax_of_the_scores() {
        // Two positions, head size 2, keys in a row of 4 at offset 2.
        let keys = [9.0, 9.0, 1.0, 0.0, 9.0, 9.0, 0.0, 1.0];
        let values = [9.0, 9.0, 10.0, 0.0, 9.0, 9.0, 0.0, 20.0];
        let cache = Cached {
            keys: &keys,
            values: &values,
            stride: 4,
            offset: 2,
        };
        let q = [2.0f32.sqrt() * 3.0, 0.0];
        let (mut scores, mut out) = (Vec::new(), [0f32; 2]);
        attend(&Vectors::portable(), &q, &cache, 1, &mut scores, &mut out);
        // Scores 3 and 0: weights e³/(e³+1) and 1/(e³+1).
        let w = 3f32.exp() / (3f32.exp() + 1.0);
        assert!((out[0] - 10.0 * w).abs() < 1e-4, "{out:?}");
        assert!((out[1] - 20.0 * (1.0 - w)).abs() < 1e-4, "{out:?}");
        // The first position sees only itself.
        attend(&Vectors::portable(), &q, &cache, 0, &mut scores, &mut out);
        assert_eq!(out, [10.0, 0.0]);
    }

    #[test]
    fn rope_rotates_pairs_by_the_positions_angle() {
        let tables = RopeTables::new(&[1.0, 0.5], 3);
        let (cos, sin) = tables.at(2);
        assert_eq!((cos[0], sin[1]), (2f32.cos(), 1f32.sin()));
        let mut interleaved = [1.0, 0.0, 0.0, 1.0];
        Rope::Interleaved.apply(&mut interleaved, cos, sin);
        assert!((interleaved[0] - 2f32.cos()).abs() < 1e-6);
        assert!((interleaved[1] - 2f32.sin()).abs() < 1e-6);
        assert!((interleaved[2] + 1f32.sin()).abs() < 1e-6);
        let mut halves = [1.0, 0.0, 0.0, 1.0];
        Rope::Halves.apply(&mut halves, cos, sin);
        assert!((halves[0] - 2f32.cos()).abs() < 1e-6);
        assert!((halves[2] - 2f32.sin()).abs() < 1e-6);
        assert!((halves[1] + 1f32.sin()).abs() < 1e-6);
    }
}
