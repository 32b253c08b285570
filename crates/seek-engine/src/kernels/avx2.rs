//! The AVX2 + FMA + F16C kernels (x86_64), chosen at run time when the CPU has them.
//!
//! Owns the SIMD versions of the scalar kernels in `kernels`; each must equal its scalar
//! reference up to the order of float additions (the tests check it). It must not choose
//! kernels or split work: `kernels` picks, `linear` splits.
//!
//! Every kernel works on a tile of activation rows per weight block: the weight block is
//! unpacked once into registers and multiplied with each row of the tile, so during prefill
//! the weights are read and unpacked once per tile instead of once per row. The per-row
//! arithmetic is the same whatever the tile, so a row's result does not depend on how many
//! rows were computed with it.

use std::arch::x86_64::*;

use super::kquants::{
    Q4K, Q4K_SCALES, Q4K_VALUES, Q6K, Q6K_D, Q6K_HIGH, Q6K_SCALES, Q8K, Q8K_SUMS, Q8K_VALUES, q8k_d,
};
use super::{Q4_1, Q8_0, Q8_1};

/// Activation rows computed together per weight row (prefill): the tile's results accumulate
/// in independent registers, which hides the latency of the multiply-adds, and each weight
/// block is unpacked once for the tile. Each result's own order of additions is the same
/// whatever the tile.
///
/// The tile functions can also take several weight rows per activation row (`W`), which is
/// faster for one activation row when the weights are in cache (`Q4_1`: 90 vs 105 µs for 1536²)
/// but measured much slower in the engine's decode (1 thread: 57 vs 91 tokens/s on SmolLM2),
/// where the weights stream from memory and interleaved rows defeat the prefetcher; so decode
/// multiplies single rows.
pub(super) const TILE: usize = 4;

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// A tile function: `W` weight rows × `R` activation rows of `blocks` blocks each, result
/// `(w, r)` written to `out[w·R + r]` (so one of `W`, `R` is 1 and `out` is contiguous).
pub(super) type TileFn = unsafe fn(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]);

/// One kernel's tiles: `R = tile_rows`, and a single row pair.
pub(super) struct Tiles {
    pub tile_rows: usize,
    pub weight: super::Format,
    pub activation: super::Format,
    pub activation_tile: TileFn,
    pub single: TileFn,
}

/// Covers `weights × acts` with tiles; see [`super::Kernel::dots`] for the layout of `out`.
pub(super) fn by_tiles(tiles: &Tiles, blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let (weight_bytes, act_bytes) = (blocks * tiles.weight.bytes, blocks * tiles.activation.bytes);
    if weight_bytes == 0 || act_bytes == 0 {
        return;
    }
    let (weight_rows, act_rows) = (weights.len() / weight_bytes, acts.len() / act_bytes);
    // Each weight row against tiles of activation rows (one row alone when decoding).
    for w in 0..weight_rows {
        let row = &weights[w * weight_bytes..(w + 1) * weight_bytes];
        let mut a = 0;
        while a < act_rows {
            let (tile, count) = if act_rows - a >= tiles.tile_rows {
                (tiles.activation_tile, tiles.tile_rows)
            } else {
                (tiles.single, 1)
            };
            let rows = &acts[a * act_bytes..(a + count) * act_bytes];
            let o = &mut out[w * act_rows + a..w * act_rows + a + count];
            // SAFETY: the tile functions are installed only when the CPU has the features they
            // are compiled for (`available()` here, the AVX-512 module's own check for its);
            // they check their slices' lengths themselves.
            unsafe { tile(blocks, row, rows, o) }
            a += count;
        }
    }
}

/// Splits `bytes` into `N` rows of `row_bytes`, after checking it holds them.
#[inline]
pub(super) fn rows_of<const N: usize>(bytes: &[u8], row_bytes: usize) -> [&[u8]; N] {
    assert!(
        bytes.len() >= N * row_bytes,
        "{N} rows of {row_bytes} bytes"
    );
    std::array::from_fn(|i| &bytes[i * row_bytes..(i + 1) * row_bytes])
}

/// `Q4_1 × Q8_1`; see [`super::Kernel::dots`].
pub fn q4_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q4_1,
        activation: Q8_1,
        activation_tile: q4_1_tile::<TILE, 1>,
        single: q4_1_tile::<1, 1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// `Q8_0 × Q8_0`; see [`super::Kernel::dots`].
pub fn q8_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q8_0,
        activation: Q8_0,
        activation_tile: q8_0_tile::<TILE, 1>,
        single: q8_0_tile::<1, 1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// `Q4_K × Q8_K`; see [`super::Kernel::dots`].
pub fn q4_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q4K,
        activation: Q8K,
        activation_tile: q4_k_tile::<TILE, 1>,
        single: q4_k_tile::<1, 1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// `Q6_K × Q8_K`; see [`super::Kernel::dots`].
pub fn q6_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q6K,
        activation: Q8K,
        activation_tile: q6_k_tile::<TILE, 1>,
        single: q6_k_tile::<1, 1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// 16 bytes from the start of `bytes` (at least 16 long) into a register.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load16(bytes: &[u8]) -> __m128i {
    assert!(bytes.len() >= 16, "16 bytes to load");
    // SAFETY: the assert guarantees 16 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// 32 bytes from the start of `bytes` (at least 32 long) into a register.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load32(bytes: &[u8]) -> __m256i {
    assert!(bytes.len() >= 32, "32 bytes to load");
    // SAFETY: the assert guarantees 32 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// The two little-endian f16 at `bytes[0..4]` as f32: `(first, second)`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn f16_pair(bytes: &[u8]) -> (f32, f32) {
    let packed = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let both = _mm_cvtph_ps(_mm_cvtsi32_si128(packed));
    (_mm_cvtss_f32(both), _mm_cvtss_f32(_mm_movehdup_ps(both)))
}

/// The little-endian f16 at `bytes[0..2]` as f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn f16_one(bytes: &[u8]) -> f32 {
    let half = i32::from(u16::from_le_bytes([bytes[0], bytes[1]]));
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(half)))
}

/// The sum of the eight lanes (upper half onto lower, then pairs). Attention's scores are
/// summed in this order, and its eight-at-once sum (`attention::together::lanes_sums8`)
/// reproduces it to the bit: its tests fail if the order changes here alone.
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// Sums of adjacent products of unsigned bytes `u` and signed bytes `s`, as eight i32 → f32.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn dot_u8_i8(u: __m256i, s: __m256i) -> __m256 {
    // maddubs cannot saturate here: |u| ≤ 128 and |s| ≤ 127 (the quantizers never make -128)
    // give pairs of at most 2·128·127 < 32768.
    let pairs = _mm256_maddubs_epi16(u, s);
    _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
}

/// `W` `Q4_1` weight rows × `R` activation rows (see [`TileFn`]).
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_1_tile<const R: usize, const W: usize>(
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
) {
    let weight_rows: [&[u8]; W] = rows_of(weights, blocks * Q4_1.bytes);
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8_1.bytes);
    assert!(out.len() >= W * R, "room for the tile");
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut mins = [[0f32; R]; W];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    for b in 0..blocks {
        // The tile's activation blocks, read once for all its weight rows.
        let act: [(&[u8], f32, f32); R] = std::array::from_fn(|r| {
            let a = &act_rows[r][b * Q8_1.bytes..(b + 1) * Q8_1.bytes];
            let (da, sa) = f16_pair(a);
            (&a[4..], da, sa)
        });
        for w in 0..W {
            let block = &weight_rows[w][b * Q4_1.bytes..(b + 1) * Q4_1.bytes];
            let (d, m) = f16_pair(block);
            let packed = load16(&block[4..]);
            // Values 0..16 are the low nibbles, 16..32 the high ones: one register, in order.
            let values = _mm256_and_si256(
                _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed),
                low_nibbles,
            );
            for (r, (q, da, sa)) in act.iter().enumerate() {
                let products = dot_u8_i8(values, load32(q));
                acc[w][r] = _mm256_fmadd_ps(_mm256_set1_ps(d * da), products, acc[w][r]);
                mins[w][r] += m * sa;
            }
        }
    }
    for w in 0..W {
        for r in 0..R {
            out[w * R + r] = hsum(acc[w][r]) + mins[w][r];
        }
    }
}

/// `W` `Q8_0` weight rows × `R` activation rows (see [`TileFn`]).
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_tile<const R: usize, const W: usize>(
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
) {
    let weight_rows: [&[u8]; W] = rows_of(weights, blocks * Q8_0.bytes);
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8_0.bytes);
    assert!(out.len() >= W * R, "room for the tile");
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    for b in 0..blocks {
        for w in 0..W {
            let block = &weight_rows[w][b * Q8_0.bytes..(b + 1) * Q8_0.bytes];
            let d = f16_one(block);
            let q = load32(&block[2..]);
            // maddubs wants unsigned × signed: |w| × (a with w's sign) is the same product.
            let magnitudes = _mm256_sign_epi8(q, q);
            for r in 0..R {
                let a = &act_rows[r][b * Q8_0.bytes..(b + 1) * Q8_0.bytes];
                let signed = _mm256_sign_epi8(load32(&a[2..]), q);
                let products = dot_u8_i8(magnitudes, signed);
                acc[w][r] = _mm256_fmadd_ps(_mm256_set1_ps(d * f16_one(a)), products, acc[w][r]);
            }
        }
    }
    for w in 0..W {
        for r in 0..R {
            out[w * R + r] = hsum(acc[w][r]);
        }
    }
}

/// `W` `Q4_K` weight rows × `R` activation rows (see [`TileFn`]).
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_k_tile<const R: usize, const W: usize>(
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
) {
    let weight_rows: [&[u8]; W] = rows_of(weights, blocks * Q4K.bytes);
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8K.bytes);
    assert!(out.len() >= W * R, "room for the tile");
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut acc_mins = [[_mm_setzero_ps(); R]; W];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    for b in 0..blocks {
        for w in 0..W {
            let block = &weight_rows[w][b * Q4K.bytes..(b + 1) * Q4K.bytes];
            let (d, dmin) = f16_pair(block);
            let packed = &block[Q4K_SCALES..Q4K_VALUES];
            let (scales, mins) = super::avx2_q45::k4_scales_mins(packed);
            // Group 2c is chunk c's low nibbles, group 2c + 1 its high ones.
            let mut values = [_mm256_setzero_si256(); 8];
            for c in 0..4 {
                let bits = load32(&block[Q4K_VALUES + 32 * c..]);
                values[2 * c] = _mm256_and_si256(bits, low_nibbles);
                values[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles);
            }
            for r in 0..R {
                let a = &act_rows[r][b * Q8K.bytes..(b + 1) * Q8K.bytes];
                let da = q8k_d(a);
                // The minimums times each group's activation sum (two 16-value sums a group).
                let sums = load32(&a[Q8K_SUMS..]);
                let group_sums = _mm_hadd_epi16(
                    _mm256_castsi256_si128(sums),
                    _mm256_extracti128_si256(sums, 1),
                );
                let products = _mm_cvtepi32_ps(_mm_madd_epi16(mins, group_sums));
                acc_mins[w][r] = _mm_fmadd_ps(_mm_set1_ps(-da * dmin), products, acc_mins[w][r]);
                let mut dot = _mm256_setzero_si256();
                for (j, (v, scale)) in values.iter().zip(&scales).enumerate() {
                    let q = load32(&a[Q8K_VALUES + 32 * j..]);
                    let pairs16 = _mm256_maddubs_epi16(*v, q);
                    dot = _mm256_add_epi32(dot, _mm256_madd_epi16(*scale, pairs16));
                }
                let scaled = _mm256_cvtepi32_ps(dot);
                acc[w][r] = _mm256_fmadd_ps(_mm256_set1_ps(da * d), scaled, acc[w][r]);
            }
        }
    }
    for w in 0..W {
        for r in 0..R {
            let m = acc_mins[w][r];
            let m = _mm_add_ps(m, _mm_movehl_ps(m, m));
            let m = _mm_add_ss(m, _mm_movehdup_ps(m));
            out[w * R + r] = hsum(acc[w][r]) + _mm_cvtss_f32(m);
        }
    }
}

/// `W` `Q6_K` weight rows × `R` activation rows (see [`TileFn`]).
#[target_feature(enable = "avx2,fma,f16c")]
fn q6_k_tile<const R: usize, const W: usize>(
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
) {
    let weight_rows: [&[u8]; W] = rows_of(weights, blocks * Q6K.bytes);
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8K.bytes);
    assert!(out.len() >= W * R, "room for the tile");
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    let two_bits = _mm256_set1_epi8(3);
    let offset = _mm256_set1_epi8(32);
    for b in 0..blocks {
        for w in 0..W {
            let block = &weight_rows[w][b * Q6K.bytes..(b + 1) * Q6K.bytes];
            let d = f16_one(&block[Q6K_D..]);
            // The 6-bit values of the 8 groups of 32: 4 bits from `low`, 2 from `high`.
            let mut values = [_mm256_setzero_si256(); 8];
            for c in 0..2 {
                let low_a = load32(&block[64 * c..]);
                let low_b = load32(&block[64 * c + 32..]);
                let high = load32(&block[Q6K_HIGH + 32 * c..]);
                let top = |bits: __m256i| _mm256_slli_epi16(_mm256_and_si256(bits, two_bits), 4);
                values[4 * c] = _mm256_or_si256(_mm256_and_si256(low_a, low_nibbles), top(high));
                values[4 * c + 1] = _mm256_or_si256(
                    _mm256_and_si256(low_b, low_nibbles),
                    top(_mm256_srli_epi16(high, 2)),
                );
                values[4 * c + 2] = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16(low_a, 4), low_nibbles),
                    top(_mm256_srli_epi16(high, 4)),
                );
                values[4 * c + 3] = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16(low_b, 4), low_nibbles),
                    top(_mm256_srli_epi16(high, 6)),
                );
            }
            // Each group's two 16-value halves have their own scale: one per 128-bit lane.
            let scales: [__m256i; 8] = std::array::from_fn(|g| {
                let scale = |h: usize| i16::from(block[Q6K_SCALES + 2 * g + h] as i8);
                _mm256_set_m128i(_mm_set1_epi16(scale(1)), _mm_set1_epi16(scale(0)))
            });
            for r in 0..R {
                let a = &act_rows[r][b * Q8K.bytes..(b + 1) * Q8K.bytes];
                let mut dot = _mm256_setzero_si256();
                for (g, (v, scale)) in values.iter().zip(&scales).enumerate() {
                    let q = load32(&a[Q8K_VALUES + 32 * g..]);
                    // (v − 32)·q as v·q − 32·q: maddubs wants its first operand unsigned.
                    let pairs16 = _mm256_sub_epi16(
                        _mm256_maddubs_epi16(*v, q),
                        _mm256_maddubs_epi16(offset, q),
                    );
                    dot = _mm256_add_epi32(dot, _mm256_madd_epi16(pairs16, *scale));
                }
                let scaled = _mm256_cvtepi32_ps(dot);
                acc[w][r] = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * d), scaled, acc[w][r]);
            }
        }
    }
    for w in 0..W {
        for r in 0..R {
            out[w * R + r] = hsum(acc[w][r]);
        }
    }
}
