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
    Q4K, Q4K_SCALES, Q4K_VALUES, Q6K, Q6K_D, Q6K_HIGH, Q6K_SCALES, Q8K, Q8K_SUMS, Q8K_VALUES,
    q4k_scale_min, q8k_d,
};
use super::{Q4_1, Q8_0, Q8_1};

/// Activation rows computed together per weight row.
const TILE: usize = 4;

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// Runs `tile` over `out` in tiles of [`TILE`] activation rows, then one row at a time.
#[inline]
fn by_tiles(
    weight_row: &[u8],
    acts: &[u8],
    out: &mut [f32],
    row_bytes: usize,
    full: unsafe fn(&[u8], &[u8], &mut [f32]),
    single: unsafe fn(&[u8], &[u8], &mut [f32]),
) {
    let row_bytes = row_bytes.max(1);
    for (o, a) in out.chunks_mut(TILE).zip(acts.chunks(TILE * row_bytes)) {
        if o.len() == TILE {
            // SAFETY: the tile functions are installed only when `available()` found AVX2, FMA
            // and F16C; they check their slices' lengths themselves.
            unsafe { full(weight_row, a, o) }
        } else {
            for (o, a) in o.chunks_mut(1).zip(a.chunks(row_bytes)) {
                // SAFETY: as above.
                unsafe { single(weight_row, a, o) }
            }
        }
    }
}

/// `Q4_1 × Q8_1`; see [`super::Kernel::dots`].
pub fn q4_1(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4_1.bytes * Q8_1.bytes;
    by_tiles(
        weight_row,
        acts,
        out,
        row_bytes,
        q4_1_tile::<TILE>,
        q4_1_tile::<1>,
    );
}

/// `Q8_0 × Q8_0`; see [`super::Kernel::dots`].
pub fn q8_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len();
    by_tiles(
        weight_row,
        acts,
        out,
        row_bytes,
        q8_0_tile::<TILE>,
        q8_0_tile::<1>,
    );
}

/// `Q4_K × Q8_K`; see [`super::Kernel::dots`].
pub fn q4_k(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4K.bytes * Q8K.bytes;
    by_tiles(
        weight_row,
        acts,
        out,
        row_bytes,
        q4_k_tile::<TILE>,
        q4_k_tile::<1>,
    );
}

/// `Q6_K × Q8_K`; see [`super::Kernel::dots`].
pub fn q6_k(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q6K.bytes * Q8K.bytes;
    by_tiles(
        weight_row,
        acts,
        out,
        row_bytes,
        q6_k_tile::<TILE>,
        q6_k_tile::<1>,
    );
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

/// The sum of the eight lanes (upper half onto lower, then pairs).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn hsum(v: __m256) -> f32 {
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

/// `R` activation rows against one `Q4_1` weight row.
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_1_tile<const R: usize>(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4_1.bytes * Q8_1.bytes;
    assert!(acts.len() >= R * row_bytes && out.len() >= R, "a full tile");
    let rows: [&[u8]; R] = std::array::from_fn(|r| &acts[r * row_bytes..(r + 1) * row_bytes]);
    let mut acc = [_mm256_setzero_ps(); R];
    let mut mins = [0f32; R];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    for (b, w) in weight_row.chunks_exact(Q4_1.bytes).enumerate() {
        let (d, m) = f16_pair(w);
        let packed = load16(&w[4..]);
        // Values 0..16 are the low nibbles, 16..32 the high ones: one register, in order.
        let values = _mm256_and_si256(
            _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed),
            low_nibbles,
        );
        for r in 0..R {
            let a = &rows[r][b * Q8_1.bytes..(b + 1) * Q8_1.bytes];
            let (da, sa) = f16_pair(a);
            let products = dot_u8_i8(values, load32(&a[4..]));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * da), products, acc[r]);
            mins[r] += m * sa;
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]) + mins[r];
    }
}

/// `R` activation rows against one `Q8_0` weight row.
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_tile<const R: usize>(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len();
    assert!(acts.len() >= R * row_bytes && out.len() >= R, "a full tile");
    let rows: [&[u8]; R] = std::array::from_fn(|r| &acts[r * row_bytes..(r + 1) * row_bytes]);
    let mut acc = [_mm256_setzero_ps(); R];
    for (b, w) in weight_row.chunks_exact(Q8_0.bytes).enumerate() {
        let d = f16_one(w);
        let q = load32(&w[2..]);
        // maddubs wants unsigned × signed: |w| × (a with w's sign) is the same product.
        let magnitudes = _mm256_sign_epi8(q, q);
        for r in 0..R {
            let a = &rows[r][b * Q8_0.bytes..(b + 1) * Q8_0.bytes];
            let signed = _mm256_sign_epi8(load32(&a[2..]), q);
            let products = dot_u8_i8(magnitudes, signed);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * f16_one(a)), products, acc[r]);
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}

/// `R` activation rows against one `Q4_K` weight row.
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_k_tile<const R: usize>(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4K.bytes * Q8K.bytes;
    assert!(acts.len() >= R * row_bytes && out.len() >= R, "a full tile");
    let rows: [&[u8]; R] = std::array::from_fn(|r| &acts[r * row_bytes..(r + 1) * row_bytes]);
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_mins = [_mm_setzero_ps(); R];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    for (b, w) in weight_row.chunks_exact(Q4K.bytes).enumerate() {
        let (d, dmin) = f16_pair(w);
        let packed = &w[Q4K_SCALES..Q4K_VALUES];
        let pairs: [(u8, u8); 8] = std::array::from_fn(|j| q4k_scale_min(packed, j));
        let scales: [__m256i; 8] =
            std::array::from_fn(|j| _mm256_set1_epi16(i16::from(pairs[j].0)));
        let min = |j: usize| i16::from(pairs[j].1);
        let mins = _mm_set_epi16(
            min(7),
            min(6),
            min(5),
            min(4),
            min(3),
            min(2),
            min(1),
            min(0),
        );
        // Group 2c is chunk c's low nibbles, group 2c + 1 its high ones.
        let mut values = [_mm256_setzero_si256(); 8];
        for c in 0..4 {
            let bits = load32(&w[Q4K_VALUES + 32 * c..]);
            values[2 * c] = _mm256_and_si256(bits, low_nibbles);
            values[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles);
        }
        for r in 0..R {
            let a = &rows[r][b * Q8K.bytes..(b + 1) * Q8K.bytes];
            let da = q8k_d(a);
            // The minimums times each group's activation sum (two 16-value sums per group).
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
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(da * d), _mm256_cvtepi32_ps(dot), acc[r]);
        }
    }
    for r in 0..R {
        let m = acc_mins[r];
        let m = _mm_add_ps(m, _mm_movehl_ps(m, m));
        let m = _mm_add_ss(m, _mm_movehdup_ps(m));
        out[r] = hsum(acc[r]) + _mm_cvtss_f32(m);
    }
}

/// `R` activation rows against one `Q6_K` weight row.
#[target_feature(enable = "avx2,fma,f16c")]
fn q6_k_tile<const R: usize>(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q6K.bytes * Q8K.bytes;
    assert!(acts.len() >= R * row_bytes && out.len() >= R, "a full tile");
    let rows: [&[u8]; R] = std::array::from_fn(|r| &acts[r * row_bytes..(r + 1) * row_bytes]);
    let mut acc = [_mm256_setzero_ps(); R];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    let two_bits = _mm256_set1_epi8(3);
    let offset = _mm256_set1_epi8(32);
    for (b, w) in weight_row.chunks_exact(Q6K.bytes).enumerate() {
        let d = f16_one(&w[Q6K_D..]);
        // The 6-bit values of the 8 groups of 32: 4 bits from `low`, 2 from `high`.
        let mut values = [_mm256_setzero_si256(); 8];
        for c in 0..2 {
            let low_a = load32(&w[64 * c..]);
            let low_b = load32(&w[64 * c + 32..]);
            let high = load32(&w[Q6K_HIGH + 32 * c..]);
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
            let scale = |h: usize| i16::from(w[Q6K_SCALES + 2 * g + h] as i8);
            _mm256_set_m128i(_mm_set1_epi16(scale(1)), _mm_set1_epi16(scale(0)))
        });
        for r in 0..R {
            let a = &rows[r][b * Q8K.bytes..(b + 1) * Q8K.bytes];
            let mut dot = _mm256_setzero_si256();
            for (g, (v, scale)) in values.iter().zip(&scales).enumerate() {
                let q = load32(&a[Q8K_VALUES + 32 * g..]);
                // (v − 32)·q as v·q − 32·q: maddubs wants its first operand unsigned.
                let pairs16 =
                    _mm256_sub_epi16(_mm256_maddubs_epi16(*v, q), _mm256_maddubs_epi16(offset, q));
                dot = _mm256_add_epi32(dot, _mm256_madd_epi16(pairs16, *scale));
            }
            acc[r] = _mm256_fmadd_ps(
                _mm256_set1_ps(q8k_d(a) * d),
                _mm256_cvtepi32_ps(dot),
                acc[r],
            );
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}
