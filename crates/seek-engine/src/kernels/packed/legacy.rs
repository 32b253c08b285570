//! The 32-value types' kernels on tiles of 16 rows (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0`),
//! for `packed`, which owns their layout (see there) and their activations (`Q8_SUMS`).
//!
//! Owns only the AVX-512 VNNI arithmetic; it must not pack, choose or split.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::super::avx2::load16;
use super::super::avx512::load64;
use super::super::{Q4_0, Q5_0, Q5_1, Q8_0, QK};
use super::{Q8_SUMS, ROWS, SUMS_VALUES, WIDE, f32_at, i32_at, prefetch_ahead};

/// The sixteen f16 scales at the start of `bytes`, as f32.
#[inline]
#[target_feature(enable = "avx512f,avx2")]
pub(super) fn scales(bytes: &[u8]) -> __m512 {
    assert!(bytes.len() >= 32, "sixteen scales");
    // SAFETY: the assert guarantees 32 readable bytes; `loadu` has no alignment requirement.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) })
}

/// The registers that add a group's fifth bits to its values, made once per call of a
/// kernel (made for every group, they cost the kernels of the five-bit types 15 %).
#[derive(Clone, Copy)]
struct FifthBits {
    /// Copies a row's byte of fifth bits to each byte of its lane.
    spread: __m512i,
    /// The bit each byte of a lane takes: bits 0..4 for the low nibbles' values, 4..8 for the
    /// high ones'.
    low_bits: __m512i,
    high_bits: __m512i,
    sixteen: __m512i,
}

impl FifthBits {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        Self {
            spread: _mm512_set4_epi32(0x0c0c_0c0c, 0x0808_0808, 0x0404_0404, 0),
            low_bits: _mm512_set1_epi32(0x0804_0201),
            high_bits: _mm512_set1_epi32(0x8040_2010u32 as i32),
            sixteen: _mm512_set1_epi8(0x10),
        }
    }
}

/// One group of eight values of sixteen rows, from `nibbles` (64 bytes: byte `j` of a row's
/// four holds value `8g + j` in its low nibble, `8g + j + 4` in its high one): the low
/// nibbles' values and the high ones', each plus 16 where `fifth`'s bytes (the sixteen rows'
/// bytes of fifth bits, bit `j` for value `8g + j`) set its bit.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn group_values(nibbles: &[u8], fifth: Option<(&FifthBits, &[u8])>) -> (__m512i, __m512i) {
    let low_nibbles = _mm512_set1_epi8(0x0f);
    let packed = load64(nibbles);
    let low = _mm512_and_si512(packed, low_nibbles);
    let high = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low_nibbles);
    let Some((bits, fifth)) = fifth else {
        return (low, high);
    };
    let each = _mm512_shuffle_epi8(_mm512_cvtepu8_epi32(load16(fifth)), bits.spread);
    let set_low = _mm512_test_epi8_mask(each, bits.low_bits);
    let set_high = _mm512_test_epi8_mask(each, bits.high_bits);
    (
        _mm512_mask_add_epi8(low, set_low, low, bits.sixteen),
        _mm512_mask_add_epi8(high, set_high, high, bits.sixteen),
    )
}

/// The four bytes at `bytes[at..at + 4]` in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast4(bytes: &[u8], at: usize) -> __m512i {
    _mm512_set1_epi32(i32_at(bytes, at))
}

/// `acc += (sum as f32) · d_w · d_a` for the sixteen rows, plus `m · s` for the types with a
/// minimum; `start` and `other` are the two chains of the block's integer sums.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
fn finish(
    (start, other): (__m512i, __m512i),
    weight_scales: __m512,
    weight_mins: Option<__m512>,
    act: &[u8],
    acc: &mut __m512,
) {
    let sum = _mm512_add_epi32(start, other);
    let scale = _mm512_mul_ps(weight_scales, _mm512_set1_ps(f32_at(act, 0)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, *acc);
    if let Some(mins) = weight_mins {
        *acc = _mm512_fmadd_ps(mins, _mm512_set1_ps(f32_at(act, 8)), *acc);
    }
}

/// One `Q8_0` tile (`blocks` blocks) × `M` activation rows; `out[m][r]` is row `r` · act `m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub(super) fn q8_0_tile<const M: usize>(
    blocks: usize,
    tile: &[u8],
    acts: &[&[u8]; WIDE],
    out: &mut [[f32; ROWS]; WIDE],
) {
    let tile_bytes = ROWS * Q8_0.bytes;
    assert!(tile.len() >= blocks * tile_bytes, "a tile");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8_SUMS.bytes, "an activation row");
    }
    let mut acc = [_mm512_setzero_ps(); M];
    for b in 0..blocks {
        let block = &tile[b * tile_bytes..(b + 1) * tile_bytes];
        if M == 1 {
            prefetch_ahead(block);
        }
        let weight_scales = scales(block);
        let values: [__m512i; 8] = std::array::from_fn(|g| load64(&block[2 * ROWS + 64 * g..]));
        for m in 0..M {
            let act = &acts[m][b * Q8_SUMS.bytes..(b + 1) * Q8_SUMS.bytes];
            let mut even = _mm512_set1_epi32(-128 * i32_at(act, 4));
            let mut odd = _mm512_setzero_si512();
            for g in (0..8).step_by(2) {
                let at = SUMS_VALUES + 4 * g;
                even = _mm512_dpbusd_epi32(even, values[g], broadcast4(act, at));
                odd = _mm512_dpbusd_epi32(odd, values[g + 1], broadcast4(act, at + 4));
            }
            finish((even, odd), weight_scales, None, act, &mut acc[m]);
        }
    }
    for m in 0..M {
        // SAFETY: `out[m]` is 16 f32, 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_ps(out[m].as_mut_ptr(), acc[m]) };
    }
}

/// One tile of a nibble type (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`: `OFFSET` subtracted, `MIN` for a
/// minimum, `FIFTH` for a fifth bit) × `M` activation rows; `out[m][r]` is row `r` · act `m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
pub(super) fn nibble_tile<const M: usize, const OFFSET: i32, const MIN: bool, const FIFTH: bool>(
    blocks: usize,
    tile: &[u8],
    acts: &[&[u8]; WIDE],
    out: &mut [[f32; ROWS]; WIDE],
) {
    let format = match (MIN, FIFTH) {
        (false, false) => Q4_0,
        (true, false) => super::super::Q4_1,
        (false, true) => Q5_0,
        (true, true) => Q5_1,
    };
    let tile_bytes = ROWS * format.bytes;
    let values_at = if MIN { 4 * ROWS } else { 2 * ROWS };
    let high_at = values_at + ROWS * QK / 2;
    assert!(tile.len() >= blocks * tile_bytes, "a tile");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8_SUMS.bytes, "an activation row");
    }
    let fifth_bits = FifthBits::new();
    let mut acc = [_mm512_setzero_ps(); M];
    for b in 0..blocks {
        let block = &tile[b * tile_bytes..(b + 1) * tile_bytes];
        if M == 1 {
            prefetch_ahead(block);
        }
        let weight_scales = scales(block);
        let weight_mins = MIN.then(|| scales(&block[2 * ROWS..]));
        let mut low = [_mm512_setzero_si512(); 4];
        let mut high = [_mm512_setzero_si512(); 4];
        for g in 0..4 {
            let fifth = FIFTH.then(|| (&fifth_bits, &block[high_at + 16 * g..]));
            (low[g], high[g]) = group_values(&block[values_at + 64 * g..], fifth);
        }
        for m in 0..M {
            let act = &acts[m][b * Q8_SUMS.bytes..(b + 1) * Q8_SUMS.bytes];
            let mut even = _mm512_set1_epi32(-OFFSET * i32_at(act, 4));
            let mut odd = _mm512_setzero_si512();
            for g in 0..4 {
                let at = SUMS_VALUES + 8 * g;
                even = _mm512_dpbusd_epi32(even, low[g], broadcast4(act, at));
                odd = _mm512_dpbusd_epi32(odd, high[g], broadcast4(act, at + 4));
            }
            finish((even, odd), weight_scales, weight_mins, act, &mut acc[m]);
        }
    }
    for m in 0..M {
        // SAFETY: `out[m]` is 16 f32, 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_ps(out[m].as_mut_ptr(), acc[m]) };
    }
}
