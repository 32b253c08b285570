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

use super::{Q4_1, Q8_0, Q8_1};

/// Activation rows computed together per weight row.
const TILE: usize = 4;

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// `Q4_1 × Q8_1`; see [`super::Kernel::dots`].
pub fn q4_1(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4_1.bytes * Q8_1.bytes;
    for (o, a) in out
        .chunks_mut(TILE)
        .zip(acts.chunks(TILE * row_bytes.max(1)))
    {
        if o.len() == TILE {
            // SAFETY: this kernel is installed only when `available()` found AVX2, FMA and F16C.
            unsafe { q4_1_tile::<TILE>(weight_row, a, o) }
        } else {
            for (o, a) in o.chunks_mut(1).zip(a.chunks(row_bytes.max(1))) {
                // SAFETY: as above.
                unsafe { q4_1_tile::<1>(weight_row, a, o) }
            }
        }
    }
}

/// `Q8_0 × Q8_0`; see [`super::Kernel::dots`].
pub fn q8_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len();
    for (o, a) in out
        .chunks_mut(TILE)
        .zip(acts.chunks(TILE * row_bytes.max(1)))
    {
        if o.len() == TILE {
            // SAFETY: this kernel is installed only when `available()` found AVX2, FMA and F16C.
            unsafe { q8_0_tile::<TILE>(weight_row, a, o) }
        } else {
            for (o, a) in o.chunks_mut(1).zip(a.chunks(row_bytes.max(1))) {
                // SAFETY: as above.
                unsafe { q8_0_tile::<1>(weight_row, a, o) }
            }
        }
    }
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
