//! The AVX2 + FMA + F16C kernels for `Q4_0`, `Q5_0`, `Q5_1` and `Q5_K` (x86_64), next to the
//! ones of `avx2` and built on its helpers and tiling.
//!
//! Owns the SIMD versions of these types' scalar kernels (`legacy`, `kquants`); each must
//! equal its scalar reference up to the order of float additions (the tests check it). It must
//! not choose kernels or split work: `kernels` picks, `linear` splits.

use std::arch::x86_64::*;

use super::avx2::{
    TILE, Tiles, by_tiles, dot_u8_i8, f16_one, f16_pair, hsum, load16, load32, rows_of,
};
use super::kquants::{Q4K_SCALES, Q5K, Q5K_HIGH, Q5K_VALUES, Q8K, Q8K_SUMS, Q8K_VALUES};
use super::kquants::{q4k_scales_mins, q8k_d};
use super::{Q4_0, Q5_0, Q5_1, Q8_0, Q8_1};

/// `Q4_0 × Q8_0`; see [`super::Kernel::dots`].
pub fn q4_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q4_0,
        activation: Q8_0,
        activation_tile: q4_0_tile::<TILE>,
        single: q4_0_tile::<1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// `Q5_0 × Q8_0`; see [`super::Kernel::dots`].
pub fn q5_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q5_0,
        activation: Q8_0,
        activation_tile: q5_0_tile::<TILE>,
        single: q5_0_tile::<1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// `Q5_1 × Q8_1`; see [`super::Kernel::dots`].
pub fn q5_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q5_1,
        activation: Q8_1,
        activation_tile: q5_1_tile::<TILE>,
        single: q5_1_tile::<1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// `Q5_K × Q8_K`; see [`super::Kernel::dots`].
pub fn q5_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight: Q5K,
        activation: Q8K,
        activation_tile: q5_k_tile::<TILE>,
        single: q5_k_tile::<1>,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

/// The 32 values (0..16) of the 16 packed bytes at the start of `bytes`, in order: low nibbles
/// are values 0..16, high nibbles 16..32.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn nibbles(bytes: &[u8]) -> __m256i {
    let packed = load16(bytes);
    _mm256_and_si256(
        _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed),
        _mm256_set1_epi8(0x0f),
    )
}

/// 0xff in byte `j` where bit `j` of the little-endian u32 at the start of `bytes` is set.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn bits_to_bytes(bytes: &[u8]) -> __m256i {
    let bits = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    // Byte j gets the u32's byte j / 8, then every bit but bit j % 8 is set: all ones iff it was.
    let spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(bits),
        _mm256_set_epi64x(
            0x0303_0303_0303_0303,
            0x0202_0202_0202_0202,
            0x0101_0101_0101_0101,
            0,
        ),
    );
    let others = _mm256_set1_epi64x(0x7fbf_dfef_f7fb_fdfe);
    _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1))
}

/// The tile loop of the formats whose weights are signed bytes `x` times a scale, with `Q8_0`
/// activations: `unpack` gives a block's scale and its 32 values.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn signed_tile<const R: usize>(
    weight: super::Format,
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
    unpack: impl Fn(&[u8]) -> (f32, __m256i),
) {
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8_0.bytes);
    assert!(weights.len() >= blocks * weight.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    // Two accumulators a row (even and odd blocks) so that consecutive multiply-adds overlap.
    let mut acc = [[_mm256_setzero_ps(); R]; 2];
    for b in 0..blocks {
        let (d, x) = unpack(&weights[b * weight.bytes..(b + 1) * weight.bytes]);
        // maddubs wants unsigned × signed: |x| × (a with x's sign) is the same product.
        let magnitudes = _mm256_sign_epi8(x, x);
        for (r, row) in act_rows.iter().enumerate() {
            let a = &row[b * Q8_0.bytes..(b + 1) * Q8_0.bytes];
            let products = dot_u8_i8(magnitudes, _mm256_sign_epi8(load32(&a[2..]), x));
            let slot = &mut acc[b % 2][r];
            *slot = _mm256_fmadd_ps(_mm256_set1_ps(d * f16_one(a)), products, *slot);
        }
    }
    for r in 0..R {
        out[r] = hsum(_mm256_add_ps(acc[0][r], acc[1][r]));
    }
}

/// One `Q4_0` weight row × `R` activation rows.
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_0_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let eight = _mm256_set1_epi8(8);
    signed_tile::<R>(Q4_0, blocks, weights, acts, out, |block| {
        (f16_one(block), _mm256_sub_epi8(nibbles(&block[2..]), eight))
    });
}

/// One `Q5_0` weight row × `R` activation rows.
#[target_feature(enable = "avx2,fma,f16c")]
fn q5_0_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let high_nibble = _mm256_set1_epi8(0xf0u8 as i8);
    signed_tile::<R>(Q5_0, blocks, weights, acts, out, |block| {
        // q − 16 is the low nibble when the fifth bit is set, else the nibble − 16, which as a
        // signed byte is the nibble with its high nibble all ones.
        let missing = _mm256_andnot_si256(bits_to_bytes(&block[2..]), high_nibble);
        let x = _mm256_or_si256(nibbles(&block[6..]), missing);
        (f16_one(block), x)
    });
}

/// One `Q5_1` weight row × `R` activation rows.
#[target_feature(enable = "avx2,fma,f16c")]
fn q5_1_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8_1.bytes);
    assert!(weights.len() >= blocks * Q5_1.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    // Two accumulators a row (even and odd blocks) so that consecutive multiply-adds overlap.
    let mut acc = [[_mm256_setzero_ps(); R]; 2];
    let mut mins = [0f32; R];
    let fifth_bit = _mm256_set1_epi8(0x10);
    for b in 0..blocks {
        let block = &weights[b * Q5_1.bytes..(b + 1) * Q5_1.bytes];
        let (d, m) = f16_pair(block);
        let high = _mm256_and_si256(bits_to_bytes(&block[4..]), fifth_bit);
        let values = _mm256_or_si256(nibbles(&block[8..]), high);
        for (r, row) in act_rows.iter().enumerate() {
            let a = &row[b * Q8_1.bytes..(b + 1) * Q8_1.bytes];
            let (da, sa) = f16_pair(a);
            let products = dot_u8_i8(values, load32(&a[4..]));
            let slot = &mut acc[b % 2][r];
            *slot = _mm256_fmadd_ps(_mm256_set1_ps(d * da), products, *slot);
            mins[r] += m * sa;
        }
    }
    for r in 0..R {
        out[r] = hsum(_mm256_add_ps(acc[0][r], acc[1][r])) + mins[r];
    }
}

/// The eight scales of a `Q4_K`/`Q5_K` block's 12 packed bytes, each in all 16 i16 lanes of
/// a register, and its eight minimums as i16.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn k4_scales_mins(packed: &[u8]) -> ([__m256i; 8], __m128i) {
    let [scales_low, scales_high, mins_low, mins_high] = q4k_scales_mins(packed);
    let bytes = _mm_set_epi32(
        mins_high as i32,
        mins_low as i32,
        scales_high as i32,
        scales_low as i32,
    );
    let scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(bytes));
    let mins = _mm_cvtepu8_epi16(_mm_srli_si128(bytes, 8));
    // Scale j is bytes 2j, 2j + 1 of each half: copied into every 16-bit lane.
    let scales = std::array::from_fn(|j| {
        let pick = (((2 * j + 1) << 8) | (2 * j)) as i16;
        _mm256_shuffle_epi8(scales16, _mm256_set1_epi16(pick))
    });
    (scales, mins)
}

/// One `Q5_K` weight row × `R` activation rows.
#[target_feature(enable = "avx2,fma,f16c")]
fn q5_k_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8K.bytes);
    assert!(weights.len() >= blocks * Q5K.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_mins = [_mm_setzero_ps(); R];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    let one = _mm256_set1_epi8(1);
    for b in 0..blocks {
        let block = &weights[b * Q5K.bytes..(b + 1) * Q5K.bytes];
        let (d, dmin) = f16_pair(block);
        let packed = &block[Q4K_SCALES..Q5K_HIGH];
        let (scales, mins) = k4_scales_mins(packed);
        // Group 2c is chunk c's low nibbles, group 2c + 1 its high ones; group g's fifth bits
        // are bit g of the 32 high bytes.
        let high = load32(&block[Q5K_HIGH..]);
        let fifth = |g: i32| {
            let bit = _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(g)), one);
            _mm256_slli_epi16(bit, 4)
        };
        let mut values = [_mm256_setzero_si256(); 8];
        for c in 0..4 {
            let bits = load32(&block[Q5K_VALUES + 32 * c..]);
            let (low, top) = (2 * c, 2 * c + 1);
            values[low] = _mm256_or_si256(_mm256_and_si256(bits, low_nibbles), fifth(low as i32));
            values[top] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles),
                fifth(top as i32),
            );
        }
        for (r, row) in act_rows.iter().enumerate() {
            let a = &row[b * Q8K.bytes..(b + 1) * Q8K.bytes];
            let da = q8k_d(a);
            // The minimums times each group's activation sum (two 16-value sums a group).
            let sums = load32(&a[Q8K_SUMS..]);
            let group_sums = _mm_hadd_epi16(
                _mm256_castsi256_si128(sums),
                _mm256_extracti128_si256(sums, 1),
            );
            let products = _mm_cvtepi32_ps(_mm_madd_epi16(mins, group_sums));
            acc_mins[r] = _mm_fmadd_ps(_mm_set1_ps(-da * dmin), products, acc_mins[r]);
            let mut dot = _mm256_setzero_si256();
            for (j, (v, scale)) in values.iter().zip(&scales).enumerate() {
                let q = load32(&a[Q8K_VALUES + 32 * j..]);
                let pairs16 = _mm256_maddubs_epi16(*v, q);
                dot = _mm256_add_epi32(dot, _mm256_madd_epi16(*scale, pairs16));
            }
            let scaled = _mm256_cvtepi32_ps(dot);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(da * d), scaled, acc[r]);
        }
    }
    for r in 0..R {
        let m = acc_mins[r];
        let m = _mm_add_ps(m, _mm_movehl_ps(m, m));
        let m = _mm_add_ss(m, _mm_movehdup_ps(m));
        out[r] = hsum(acc[r]) + _mm_cvtss_f32(m);
    }
}
