//! The AVX-512 kernels of the k-quants (`Q4_K`, `Q5_K`, `Q6_K`), next to `avx512`'s for the
//! 32-value formats and run under the same check of the CPU.
//!
//! Owns the 512-bit versions of `kquants`' scalar kernels; each must equal its reference up
//! to the order of float additions (the tests check it). It must not choose kernels or split
//! work. They take 64 values per register with `vpmaddubsw` and VNNI's `vpdpwssd`, which
//! apply the 16-bit scales exactly as the scalar kernels do, and sum a block's products in
//! integers.

use std::arch::x86_64::*;

use super::Format;
use super::avx2::{TileFn, f16_one, f16_pair, hsum, load16, load32, rows_of};
use super::avx512::{TILE, join, load64, run};
use super::kquants::{
    Q4K, Q4K_SCALES, Q4K_VALUES, Q5K, Q5K_HIGH, Q5K_VALUES, Q6K, Q6K_D, Q6K_HIGH, Q6K_SCALES, Q8K,
    Q8K_SUMS, Q8K_VALUES, q4k_scales_mins, q8k_d,
};

/// `Q4_K × Q8_K`; see [`super::Kernel::dots`].
pub(super) fn q4_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_k_tile::<TILE>, q4_k_tile::<1>);
    run(Q4K, Q8K, tiles, blocks, weights, acts, out);
}

/// `Q5_K × Q8_K`; see [`super::Kernel::dots`].
pub(super) fn q5_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_k_tile::<TILE>, q5_k_tile::<1>);
    run(Q5K, Q8K, tiles, blocks, weights, acts, out);
}

/// `Q6_K × Q8_K`; see [`super::Kernel::dots`].
pub(super) fn q6_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q6_k_tile::<TILE>, q6_k_tile::<1>);
    run(Q6K, Q8K, tiles, blocks, weights, acts, out);
}

/// The eight 6-bit minimums of a `Q4_K`/`Q5_K` block as i16, and its eight scales as four
/// registers of 32 i16: `[scale 2c; 16] ++ [scale 2c + 1; 16]`, for the register of groups
/// `2c`, `2c + 1` (`spread[c]` picks them).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn k4_scales_mins(packed: &[u8], spread: &[__m512i; 4]) -> ([__m512i; 4], __m128i) {
    let [scales_low, scales_high, mins_low, mins_high] = q4k_scales_mins(packed);
    let bytes = _mm_set_epi32(
        mins_high as i32,
        mins_low as i32,
        scales_high as i32,
        scales_low as i32,
    );
    let scales16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(bytes));
    let mins = _mm_cvtepu8_epi16(_mm_srli_si128(bytes, 8));
    let scales = std::array::from_fn(|c| _mm512_permutexvar_epi16(spread[c], scales16));
    (scales, mins)
}

/// The indices `k4_scales_mins` spreads the scales with: lanes 0..16 of register `c` take
/// scale `2c`, lanes 16..32 scale `2c + 1`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn k4_spread() -> [__m512i; 4] {
    std::array::from_fn(|c| {
        let index: [i16; 32] = std::array::from_fn(|j| (2 * c + j / 16) as i16);
        // SAFETY: `index` is 64 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm512_loadu_si512(index.as_ptr().cast()) }
    })
}

/// The tile loop of `Q4_K` and `Q5_K`: `values` gives a block's four registers of 64 values
/// (groups `2c` and `2c + 1`, 0..32), the scales and minimums are `Q4_K`'s.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn k4_tile<const R: usize>(
    weight: Format,
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
    values: impl Fn(&[u8]) -> [__m512i; 4],
) {
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8K.bytes);
    assert!(weights.len() >= blocks * weight.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_mins = [_mm_setzero_ps(); R];
    let spread = k4_spread();
    for b in 0..blocks {
        let block = &weights[b * weight.bytes..(b + 1) * weight.bytes];
        let (d, dmin) = f16_pair(block);
        let (scales, mins) = k4_scales_mins(&block[Q4K_SCALES..Q4K_SCALES + 12], &spread);
        let v = values(block);
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
            acc_mins[r] = _mm_fmadd_ps(_mm_set1_ps(-da * dmin), products, acc_mins[r]);
            let mut dot = _mm512_setzero_si512();
            for c in 0..4 {
                let q = load64(&a[Q8K_VALUES + 64 * c..]);
                let pairs16 = _mm512_maddubs_epi16(v[c], q);
                // VNNI's `vpdpwssd`: `vpmaddwd` and the add in one instruction, as exact.
                dot = _mm512_dpwssd_epi32(dot, scales[c], pairs16);
            }
            let scaled = _mm256_cvtepi32_ps(fold(dot));
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

/// The upper eight i32 lanes added to the lower eight.
#[inline]
#[target_feature(enable = "avx512f,avx2")]
fn fold(v: __m512i) -> __m256i {
    _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1))
}

/// Chunk `c`'s 32 bytes of nibbles as 64 values: low nibbles, then high ones.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn chunk_nibbles(bits: __m256i) -> __m512i {
    let both = join(bits, _mm256_srli_epi16(bits, 4));
    _mm512_and_si512(both, _mm512_set1_epi8(0x0f))
}

/// One `Q4_K` weight row × `R` activation rows.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn q4_k_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    k4_tile::<R>(Q4K, blocks, weights, acts, out, |block| {
        std::array::from_fn(|c| chunk_nibbles(load32(&block[Q4K_VALUES + 32 * c..])))
    });
}

/// One `Q5_K` weight row × `R` activation rows.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn q5_k_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let sixteen = _mm512_set1_epi8(16);
    k4_tile::<R>(Q5K, blocks, weights, acts, out, |block| {
        let high = load32(&block[Q5K_HIGH..]);
        let both = join(high, high);
        std::array::from_fn(|c| {
            // Group g's fifth bits are bit g of the 32 bytes: groups 2c and 2c + 1 here.
            let bits = join(
                _mm256_set1_epi8(1 << (2 * c)),
                _mm256_set1_epi8(1 << (2 * c + 1)),
            );
            let set = _mm512_test_epi8_mask(both, bits);
            let low = chunk_nibbles(load32(&block[Q5K_VALUES + 32 * c..]));
            _mm512_mask_add_epi8(low, set, low, sixteen)
        })
    });
}

/// One `Q6_K` weight row × `R` activation rows: `Σ scale·(v − 32)·q` as `Σ scale·v·q` less
/// `32·Σ scale·(16-value sum of q)`, the sums being stored with the activations.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn q6_k_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * Q8K.bytes);
    assert!(weights.len() >= blocks * Q6K.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    let mut acc = [_mm256_setzero_ps(); R];
    let low_nibbles = _mm256_set1_epi8(0x0f);
    let two_bits = _mm256_set1_epi8(3);
    for b in 0..blocks {
        let block = &weights[b * Q6K.bytes..(b + 1) * Q6K.bytes];
        let d = f16_one(&block[Q6K_D..]);
        // The 6-bit values of the 8 groups of 32: 4 bits from `low`, 2 from `high`.
        let mut groups = [_mm256_setzero_si256(); 8];
        for c in 0..2 {
            let low_a = load32(&block[64 * c..]);
            let low_b = load32(&block[64 * c + 32..]);
            let high = load32(&block[Q6K_HIGH + 32 * c..]);
            let top = |bits: __m256i| _mm256_slli_epi16(_mm256_and_si256(bits, two_bits), 4);
            groups[4 * c] = _mm256_or_si256(_mm256_and_si256(low_a, low_nibbles), top(high));
            groups[4 * c + 1] = _mm256_or_si256(
                _mm256_and_si256(low_b, low_nibbles),
                top(_mm256_srli_epi16(high, 2)),
            );
            groups[4 * c + 2] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(low_a, 4), low_nibbles),
                top(_mm256_srli_epi16(high, 4)),
            );
            groups[4 * c + 3] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(low_b, 4), low_nibbles),
                top(_mm256_srli_epi16(high, 6)),
            );
        }
        let values: [__m512i; 4] = std::array::from_fn(|h| join(groups[2 * h], groups[2 * h + 1]));
        // The 16 scales as i16; register h's 32 pair sums take scales 4h .. 4h + 4, 8 each.
        let scales16 = _mm256_cvtepi8_epi16(load16(&block[Q6K_SCALES..]));
        let wide = _mm512_castsi256_si512(scales16);
        let scales: [__m512i; 4] = std::array::from_fn(|h| {
            let index: [i16; 32] = std::array::from_fn(|j| (4 * h + j / 8) as i16);
            // SAFETY: `index` is 64 readable bytes; `loadu` has no alignment requirement.
            let index = unsafe { _mm512_loadu_si512(index.as_ptr().cast()) };
            _mm512_permutexvar_epi16(index, wide)
        });
        for r in 0..R {
            let a = &act_rows[r][b * Q8K.bytes..(b + 1) * Q8K.bytes];
            let mut dot = _mm512_setzero_si512();
            for h in 0..4 {
                let q = load64(&a[Q8K_VALUES + 64 * h..]);
                let pairs16 = _mm512_maddubs_epi16(values[h], q);
                dot = _mm512_dpwssd_epi32(dot, pairs16, scales[h]);
            }
            let offsets = _mm256_madd_epi16(scales16, load32(&a[Q8K_SUMS..]));
            let total = _mm256_sub_epi32(fold(dot), _mm256_slli_epi32(offsets, 5));
            let scaled = _mm256_cvtepi32_ps(total);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * d), scaled, acc[r]);
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}
