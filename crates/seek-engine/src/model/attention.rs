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

/// The most query heads of one key/value head an attention item takes (the forward pass parts
/// larger groups): more items for the threads to share, while each key and value is still
/// read once for up to four heads.
pub const MAX_HEADS: usize = 4;

/// The vector loops, for this CPU.
#[derive(Clone, Copy)]
pub struct Vectors {
    scores: fn(&[f32], &Cached<'_>, f32, &mut [f32]),
    weighted_sum: fn(&[f32], &Cached<'_>, &mut [f32]),
    exp_sum: fn(&mut [f32], f32) -> f32,
    silu: fn(&mut [f32]),
    /// Whether several queries share each load of a key or value (AVX-512, `together`).
    shared_reads: bool,
}

impl Vectors {
    pub fn for_this_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            let wide = simd::wide_available();
            return Self {
                scores: simd::scores,
                weighted_sum: simd::weighted_sum,
                exp_sum: simd::exp_sum,
                silu: simd::silu,
                shared_reads: wide,
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
            shared_reads: false,
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
#[cfg(target_arch = "x86_64")]
mod together;

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
/// [`attend_block`]'s shared reads are tested against, and its path where they are not.
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

/// [`attend`] for every head of a block of positions (`out`: the layout of `queries.values`):
/// each result is `attend`'s to the bit, and with AVX-512, for heads of 64 and 128 values, each
/// key and value is read from memory once for the whole block, not once per position and head
/// (a prompt read at a depth of 2,000 tokens spent most of its time re-reading them).
pub fn attend_block(
    vectors: &Vectors,
    queries: &Queries<'_>,
    cache: &Cached<'_>,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if vectors.shared_reads && together::attend_block_wide(queries, cache, scores, out) {
        return;
    }
    let per_position = queries.values.len() / queries.positions;
    let dim = queries.dim;
    for (p, (q, o)) in queries
        .values
        .chunks_exact(per_position)
        .zip(out.chunks_exact_mut(per_position))
        .enumerate()
    {
        for (head, result) in q.chunks_exact(dim).zip(o.chunks_exact_mut(dim)) {
            attend(
                vectors,
                head,
                cache,
                queries.first_position + p,
                scores,
                result,
            );
        }
    }
}

#[cfg(test)]
mod tests;
