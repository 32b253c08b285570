//! The `f32` arithmetic between the matrix products: rotary embedding, causal attention of the
//! query heads that share one key/value head over its cached keys and values, the
//! feed-forward's SiLU, and the vector loops under them (with AVX2 + FMA when the CPU has them,
//! AVX-512 where it helps, chosen once).
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

/// The most query heads [`attend_heads`] takes at once: with AVX-512, four heads' sums of a
/// 64-value strip (sixteen registers) stay in registers beside the strip itself.
pub const MAX_HEADS: usize = 4;

/// The vector loops, for this CPU.
#[derive(Clone, Copy)]
pub struct Vectors {
    scores: fn(&[f32], &Cached<'_>, f32, &mut [f32]),
    weighted_sum: fn(&[f32], &Cached<'_>, &mut [f32]),
    exp_sum: fn(&mut [f32], f32) -> f32,
    silu: fn(&mut [f32]),
    /// Whether several query heads share each load of a key or value (AVX-512).
    heads_at_once: bool,
}

impl Vectors {
    pub fn for_this_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            let wide = simd::wide_available();
            return Self {
                scores: if wide {
                    simd::scores_wide
                } else {
                    simd::scores
                },
                weighted_sum: if wide {
                    simd::weighted_sum_wide
                } else {
                    simd::weighted_sum
                },
                exp_sum: simd::exp_sum,
                silu: simd::silu,
                heads_at_once: wide,
            };
        }
        Self::portable()
    }

    pub fn portable() -> Self {
        Self {
            scores: portable_scores,
            weighted_sum: portable_weighted_sum,
            exp_sum: portable_exp_sum,
            silu: portable_silu,
            heads_at_once: false,
        }
    }

    /// `x = x / (1 + exp(−x))` for every value, each alone (whatever is next to it).
    pub fn silu(&self, values: &mut [f32]) {
        (self.silu)(values)
    }

    /// `s = exp(s − max)` for every score, and their sum.
    pub fn exp_sum(&self, scores: &mut [f32], max: f32) -> f32 {
        (self.exp_sum)(scores, max)
    }

    /// `out[j] = (q · key j) · scale` for the first `out.len()` positions.
    pub fn scores(&self, q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
        (self.scores)(q, cache, scale, out)
    }

    /// `out = Σ weights[j] · value j`, summed in position order.
    pub fn weighted_sum(&self, weights: &[f32], cache: &Cached<'_>, out: &mut [f32]) {
        (self.weighted_sum)(weights, cache, out)
    }

    /// [`Vectors::scores`] of consecutive query heads of `dim` values (`queries`) that read the
    /// same key head, into `out`'s rows (one per head): each head's scores are the one-head
    /// loop's to the bit.
    fn scores_heads(
        &self,
        queries: &[f32],
        dim: usize,
        cache: &Cached<'_>,
        scale: f32,
        out: &mut [f32],
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.heads_at_once {
            simd::scores_heads_wide(queries, dim, cache, scale, out, self.scores);
            return;
        }
        let n = out.len() / (queries.len() / dim);
        for (q, o) in queries.chunks_exact(dim).zip(out.chunks_exact_mut(n)) {
            self.scores(q, cache, scale, o);
        }
    }

    /// [`Vectors::weighted_sum`] of consecutive heads (`weights`' and `out`'s rows) that read
    /// the same value head: each head's sums are the one-head loop's to the bit.
    fn weighted_sum_heads(&self, weights: &[f32], cache: &Cached<'_>, out: &mut [f32], dim: usize) {
        #[cfg(target_arch = "x86_64")]
        if self.heads_at_once {
            simd::weighted_sum_heads_wide(weights, cache, out, dim);
            return;
        }
        let n = weights.len() / (out.len() / dim);
        for (w, o) in weights.chunks_exact(n).zip(out.chunks_exact_mut(dim)) {
            self.weighted_sum(w, cache, o);
        }
    }
}

fn portable_scores(q: &[f32], cache: &Cached<'_>, scale: f32, out: &mut [f32]) {
    for (j, o) in out.iter_mut().enumerate() {
        let key = cache.key(j, q.len());
        // Eight partial sums, as the SIMD loop keeps them: independent additions vectorise.
        let mut sums = [0f32; 8];
        let (whole_q, whole_k) = (q.chunks_exact(8), key.chunks_exact(8));
        let (tail_q, tail_k) = (whole_q.remainder(), whole_k.remainder());
        for (x, y) in whole_q.zip(whole_k) {
            for i in 0..8 {
                sums[i] += x[i] * y[i];
            }
        }
        let mut sum = sums.iter().sum::<f32>();
        for (x, y) in tail_q.iter().zip(tail_k) {
            sum += x * y;
        }
        *o = sum * scale;
    }
}

fn portable_exp_sum(scores: &mut [f32], max: f32) -> f32 {
    let mut sum = 0f32;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        sum += *s;
    }
    sum
}

fn portable_silu(values: &mut [f32]) {
    for x in values.iter_mut() {
        *x /= 1.0 + (-*x).exp();
    }
}

fn portable_weighted_sum(weights: &[f32], cache: &Cached<'_>, out: &mut [f32]) {
    out.fill(0.0);
    let dim = out.len();
    for (j, w) in weights.iter().enumerate() {
        for (o, v) in out.iter_mut().zip(cache.value(j, dim)) {
            *o += w * v;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd;

/// Where one query head's attention reads: the cached rows of its key/value head.
pub struct Cached<'a> {
    /// Rows of `stride` values per position, from position 0; the head's values start at
    /// `offset` in each row.
    pub keys: &'a [f32],
    pub values: &'a [f32],
    pub stride: usize,
    pub offset: usize,
}

impl Cached<'_> {
    fn key(&self, position: usize, dim: usize) -> &[f32] {
        let at = position * self.stride + self.offset;
        &self.keys[at..at + dim]
    }

    fn value(&self, position: usize, dim: usize) -> &[f32] {
        let at = position * self.stride + self.offset;
        &self.values[at..at + dim]
    }
}

/// `out = softmax(q·Kᵀ / √d) · V` over the positions `0..=position` of `cache`, for one query
/// head `q` (already rotated). `scores` is scratch room (grown as needed). The reference
/// [`attend_heads`] is tested against, head by head.
#[cfg(test)]
pub fn attend(
    vectors: &Vectors,
    q: &[f32],
    cache: &Cached<'_>,
    position: usize,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let scale = 1.0 / (q.len() as f32).sqrt();
    scores.clear();
    scores.resize(position + 1, 0.0);
    vectors.scores(q, cache, scale, scores);
    let max = scores.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
    let sum = vectors.exp_sum(scores, max);
    vectors.weighted_sum(scores, cache, out);
    let inverse = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inverse;
    }
}

/// [`attend`] for consecutive query heads of `dim` values (`queries`, at most [`MAX_HEADS`])
/// that read the same key/value head, into `out` (the same layout): each head's result is
/// `attend`'s to the bit, and where the CPU has the loops for it each key and value is read
/// once for all of them (prefill at depth was bound by reading them again for every head).
pub fn attend_heads(
    vectors: &Vectors,
    queries: &[f32],
    dim: usize,
    cache: &Cached<'_>,
    position: usize,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let heads = queries.len() / dim;
    assert!(
        (1..=MAX_HEADS).contains(&heads) && queries.len() == heads * dim,
        "whole heads, at most MAX_HEADS"
    );
    assert_eq!(out.len(), queries.len(), "one output per query value");
    let n = position + 1;
    let scale = 1.0 / (dim as f32).sqrt();
    scores.clear();
    scores.resize(heads * n, 0.0);
    vectors.scores_heads(queries, dim, cache, scale, scores);
    let mut sums = [0f32; MAX_HEADS];
    for (row, sum) in scores.chunks_exact_mut(n).zip(&mut sums) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        *sum = vectors.exp_sum(row, max);
    }
    vectors.weighted_sum_heads(scores, cache, out, dim);
    for (head, sum) in out.chunks_exact_mut(dim).zip(sums) {
        let inverse = 1.0 / sum;
        for o in head.iter_mut() {
            *o *= inverse;
        }
    }
}

/// The query heads of consecutive positions that read one key/value head (see
/// [`attend_block`]).
pub struct Queries<'a> {
    /// Per position, its heads, consecutive, each of `dim` values.
    pub values: &'a [f32],
    pub dim: usize,
    pub positions: usize,
    /// The first position's place in the cache.
    pub first_position: usize,
}

/// [`attend_heads`] for a block of positions' heads (`out`: the layout of `queries.values`):
/// each result is `attend_heads`'s to the bit, and where the CPU has the loops for it each key
/// and value is read from memory once for the whole block, not once per position (a prompt
/// read at a depth of 2,000 tokens spent most of its time re-reading them).
pub fn attend_block(
    vectors: &Vectors,
    queries: &Queries<'_>,
    cache: &Cached<'_>,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if vectors.heads_at_once
        && queries.positions > 1
        && simd::attend_block_wide(queries, cache, scores, out)
    {
        return;
    }
    let per_position = queries.values.len() / queries.positions;
    for (p, (q, o)) in queries
        .values
        .chunks_exact(per_position)
        .zip(out.chunks_exact_mut(per_position))
        .enumerate()
    {
        attend_heads(
            vectors,
            q,
            queries.dim,
            cache,
            queries.first_position + p,
            scores,
            o,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simd_loops_equal_the_portable_ones_up_to_rounding() {
        // Heads of 64 and 80 values (a strip and a rest), rows of 3 heads, 37 positions.
        for dim in [64, 80, 6] {
            let stride = 3 * dim;
            let keys: Vec<f32> = (0..37 * stride).map(|i| (i as f32 * 0.37).sin()).collect();
            let values: Vec<f32> = (0..37 * stride).map(|i| (i as f32 * 0.11).cos()).collect();
            let cache = Cached {
                keys: &keys,
                values: &values,
                stride,
                offset: dim,
            };
            let q: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.05).cos()).collect();
            let (fast, portable) = (Vectors::for_this_cpu(), Vectors::portable());
            let (mut a, mut b) = (vec![0f32; 37], vec![0f32; 37]);
            fast.scores(&q, &cache, 0.5, &mut a);
            portable.scores(&q, &cache, 0.5, &mut b);
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() < 1e-4, "{dim}: {x} vs {y}");
            }
            let (mut x, mut y) = (vec![0f32; dim], vec![1f32; dim]);
            fast.weighted_sum(&a, &cache, &mut x);
            portable.weighted_sum(&a, &cache, &mut y);
            for (p, q) in x.iter().zip(&y) {
                assert!((p - q).abs() < 1e-4, "{dim}: {p} vs {q}");
            }
        }
    }

    /// The eight-wide `exp` is within 2 ulp of the exact value over attention's arguments
    /// (−87 to 0, and a little above), keeps a NaN, and the sums it gives equal the portable
    /// loop's up to rounding, for lengths with and without a tail.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_exp_is_within_two_ulp() {
        use std::arch::x86_64::*;
        if !simd::available() {
            return;
        }
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 1.0 {
            let input = [
                x,
                x * 0.999,
                x + 1e-3,
                -x.abs() * 1e-3,
                0.0,
                -1e-30,
                x / 7.0,
                -0.5,
            ];
            let mut out = [0f32; 8];
            // SAFETY: `simd::available()` checked AVX2 and FMA; both arrays are eight f32.
            unsafe {
                _mm256_storeu_ps(
                    out.as_mut_ptr(),
                    simd::exp8(_mm256_loadu_ps(input.as_ptr())),
                )
            };
            for (i, o) in input.iter().zip(out) {
                let exact = f64::from(*i).exp();
                let ulp = f64::from(f32::EPSILON) * exact;
                worst = worst.max((f64::from(o) - exact).abs() / ulp);
            }
            x += 0.0137;
        }
        assert!(worst <= 2.0, "{worst} ulp");
        let mut nan = [f32::NAN; 8];
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(nan.as_mut_ptr(), simd::exp8(_mm256_loadu_ps(nan.as_ptr()))) };
        assert!(nan.iter().all(|v| v.is_nan()));
        for len in [1, 7, 8, 37, 200] {
            let scores: Vec<f32> = (0..len).map(|i| ((i * 37) % 23) as f32 * -0.7).collect();
            let (mut fast, mut portable) = (scores.clone(), scores);
            let (f, p) = (
                Vectors::for_this_cpu().exp_sum(&mut fast, 0.5),
                Vectors::portable().exp_sum(&mut portable, 0.5),
            );
            assert!((f - p).abs() <= 1e-6 * p, "{len}: {f} against {p}");
            for (a, b) in fast.iter().zip(&portable) {
                assert!((a - b).abs() <= 2.5e-7 * b, "{len}: {a} against {b}");
            }
        }
    }

    /// The vector SiLU is the portable one up to the exp's rounding, and a value's result does
    /// not depend on where it sits (a tail of fewer than eight goes through the same loop).
    #[test]
    fn the_vector_silu_equals_the_portable_one_and_ignores_its_place() {
        let values: Vec<f32> = (0..203).map(|i| (i as f32 - 100.0) * 0.37).collect();
        let (mut fast, mut portable) = (values.clone(), values.clone());
        Vectors::for_this_cpu().silu(&mut fast);
        Vectors::portable().silu(&mut portable);
        for (a, b) in fast.iter().zip(&portable) {
            assert!(
                (a - b).abs() <= 3e-7 * b.abs().max(1e-30),
                "{a} against {b}"
            );
        }
        for start in [0, 1, 5, 197] {
            let mut alone = values[start..].to_vec();
            Vectors::for_this_cpu().silu(&mut alone);
            assert_eq!(alone, fast[start..], "from {start}");
        }
    }

    /// The AVX-512 scores and weighted sums are the AVX2 loops' to the bit: heads of 64 and
    /// 128 (their own loops), 80 (a strip and a rest) and 6 (the AVX2 loop's).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_loops_give_the_avx2_results_to_the_bit() {
        if !simd::wide_available() {
            eprintln!("AVX-512 attention loops skipped (this CPU lacks AVX-512)");
            return;
        }
        for dim in [64, 128, 80, 6] {
            let stride = 3 * dim;
            let positions = 45;
            let keys: Vec<f32> = (0..positions * stride)
                .map(|i| (i as f32 * 0.37).sin() * 3.0)
                .collect();
            let values: Vec<f32> = (0..positions * stride)
                .map(|i| (i as f32 * 0.11).cos())
                .collect();
            let cache = Cached {
                keys: &keys,
                values: &values,
                stride,
                offset: 2 * dim,
            };
            let q: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.05).cos() - 0.3).collect();
            let (mut wide, mut avx2) = (vec![0f32; positions], vec![1f32; positions]);
            simd::scores_wide_any(&q, &cache, 0.125, &mut wide);
            simd::scores(&q, &cache, 0.125, &mut avx2);
            assert_eq!(wide, avx2, "scores, heads of {dim}");
            let (mut x, mut y) = (vec![0f32; dim], vec![1f32; dim]);
            simd::weighted_sum_wide_any(&wide, &cache, &mut x);
            simd::weighted_sum(&wide, &cache, &mut y);
            assert_eq!(x, y, "weighted sums, heads of {dim}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn heads_of_64_score_exactly_as_any_other_size() {
        if !simd::available() {
            return;
        }
        let keys: Vec<f32> = (0..20 * 128).map(|i| (i as f32 * 0.37).sin()).collect();
        let cache = Cached {
            keys: &keys,
            values: &keys,
            stride: 128,
            offset: 64,
        };
        let q: Vec<f32> = (0..64).map(|i| (i as f32 * 0.05).cos()).collect();
        let (mut fast, mut general) = (vec![0f32; 20], vec![0f32; 20]);
        simd::scores(&q, &cache, 0.125, &mut fast);
        simd::scores_general(&q, &cache, 0.125, &mut general);
        assert_eq!(fast, general);
    }

    /// Heads read together give each head's one-head result to the bit: heads of 64 and 128
    /// (the AVX-512 loops), 80 and 6 (one by one), one to four heads, at several depths.
    #[test]
    fn heads_read_together_equal_each_head_alone_to_the_bit() {
        for vectors in [Vectors::for_this_cpu(), Vectors::portable()] {
            for dim in [64, 128, 80, 6] {
                let stride = 2 * dim;
                let positions = 77;
                let keys: Vec<f32> = (0..positions * stride)
                    .map(|i| (i as f32 * 0.37).sin() * 2.0)
                    .collect();
                let values: Vec<f32> = (0..positions * stride)
                    .map(|i| (i as f32 * 0.11).cos())
                    .collect();
                let cache = Cached {
                    keys: &keys,
                    values: &values,
                    stride,
                    offset: dim,
                };
                for heads in 1..=MAX_HEADS {
                    let queries: Vec<f32> = (0..heads * dim)
                        .map(|i| (i as f32 * 0.05).cos() - 0.2)
                        .collect();
                    for position in [0, 1, 15, 16, 76] {
                        let mut together = vec![0f32; heads * dim];
                        let mut scores = Vec::new();
                        attend_heads(
                            &vectors,
                            &queries,
                            dim,
                            &cache,
                            position,
                            &mut scores,
                            &mut together,
                        );
                        for (h, q) in queries.chunks_exact(dim).enumerate() {
                            let mut alone = vec![0f32; dim];
                            attend(&vectors, q, &cache, position, &mut scores, &mut alone);
                            assert_eq!(
                                together[h * dim..(h + 1) * dim],
                                alone[..],
                                "heads of {dim}, {heads} at once, head {h}, position {position}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A block of positions gives each position's and head's one-head result to the bit:
    /// heads of 64 and 128 (the AVX-512 block loops), 80 (position by position), blocks
    /// starting at several depths, with whole and partial eights and sixteens of keys.
    #[test]
    fn a_block_of_positions_equals_each_position_alone_to_the_bit() {
        for vectors in [Vectors::for_this_cpu(), Vectors::portable()] {
            for dim in [64, 128, 80] {
                let stride = 3 * dim;
                let cached = 70;
                let keys: Vec<f32> = (0..cached * stride)
                    .map(|i| (i as f32 * 0.29).sin() * 2.5)
                    .collect();
                let values: Vec<f32> = (0..cached * stride)
                    .map(|i| (i as f32 * 0.13).cos())
                    .collect();
                let cache = Cached {
                    keys: &keys,
                    values: &values,
                    stride,
                    offset: 2 * dim,
                };
                for heads in [1, 3, 4] {
                    for (first, positions) in [(0, 1), (0, 16), (5, 3), (7, 9), (40, 16), (53, 17)]
                    {
                        let queries: Vec<f32> = (0..positions * heads * dim)
                            .map(|i| (i as f32 * 0.021).cos() - 0.1)
                            .collect();
                        let mut block = vec![0f32; queries.len()];
                        let mut scores = Vec::new();
                        let block_queries = Queries {
                            values: &queries,
                            dim,
                            positions,
                            first_position: first,
                        };
                        attend_block(&vectors, &block_queries, &cache, &mut scores, &mut block);
                        for (i, q) in queries.chunks_exact(dim).enumerate() {
                            let mut alone = vec![0f32; dim];
                            let position = first + i / heads;
                            attend(&vectors, q, &cache, position, &mut scores, &mut alone);
                            assert_eq!(
                                block[i * dim..(i + 1) * dim],
                                alone[..],
                                "heads of {dim}, {heads} heads, block at {first} of \
                                 {positions}, query {i}"
                            );
                        }
                    }
                }
            }
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
