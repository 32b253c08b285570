//! The AVX-VNNI kernels (x86_64: AVX2 with the VEX-encoded `vpdpbusd`, on CPUs without
//! AVX-512 such as Intel's Alder Lake and later client parts) for the 32-value formats.
//!
//! Owns the VNNI versions of `Q4_0`, `Q4_1`, `Q5_0`, `Q5_1` and `Q8_0`; each must equal its
//! scalar reference up to the order of float additions (the tests check it). It must not
//! choose kernels or split work: `kernels` picks, `linear` splits. The k-quants gain nothing
//! from VNNI here (their 16-bit scales want `vpmaddwd` anyway) and keep `avx2`'s kernels.
//!
//! As in `avx512`, signed weights meet activations offset by 128 (unsigned) and the offset's
//! share `128·Σx` is removed once per weight block; unsigned ones meet them as they are.

use std::arch::x86_64::*;

use super::avx2::{TILE, TileFn, Tiles, by_tiles, f16_one, f16_pair, hsum, load32, rows_of};
use super::avx2_q45::{bits_to_bytes, nibbles};
use super::{Format, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1};

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    super::avx2::available() && is_x86_feature_detected!("avxvnni")
}

/// The tile kernel of `dtype`, if there is one.
pub fn tiles(dtype: candle_core::quantized::GgmlDType) -> Option<super::TileDots> {
    use candle_core::quantized::GgmlDType as T;
    Some(match dtype {
        T::Q4_0 => q4_0,
        T::Q4_1 => q4_1,
        T::Q5_0 => q5_0,
        T::Q5_1 => q5_1,
        T::Q8_0 => q8_0,
        _ => return None,
    })
}

/// Covers `weights × acts` with `tile` (for `TILE` rows) and `single`.
fn run(
    weight: Format,
    activation: Format,
    (activation_tile, single): (TileFn, TileFn),
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
) {
    let tiles = Tiles {
        tile_rows: TILE,
        weight,
        activation,
        activation_tile,
        single,
    };
    by_tiles(&tiles, blocks, weights, acts, out);
}

fn q4_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_0_tile::<TILE>, q4_0_tile::<1>);
    run(Q4_0, Q8_0, tiles, blocks, weights, acts, out);
}

fn q5_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_0_tile::<TILE>, q5_0_tile::<1>);
    run(Q5_0, Q8_0, tiles, blocks, weights, acts, out);
}

fn q8_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q8_0_tile::<TILE>, q8_0_tile::<1>);
    run(Q8_0, Q8_0, tiles, blocks, weights, acts, out);
}

fn q4_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_1_tile::<TILE>, q4_1_tile::<1>);
    run(Q4_1, Q8_1, tiles, blocks, weights, acts, out);
}

fn q5_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_1_tile::<TILE>, q5_1_tile::<1>);
    run(Q5_1, Q8_1, tiles, blocks, weights, acts, out);
}

/// The tile loop of every 32-value format: one weight row × `R` activation rows of `blocks`
/// blocks. `SIGNED` formats have signed values `x` (`d·x`) and `Q8_0` activations; the
/// others unsigned values `q` with a minimum (`d·q + m`, the f16 after `d`) and `Q8_1`
/// activations. `unpack` gives a block's values; its scale is the f16 at its start.
#[inline]
#[target_feature(enable = "avx2,avxvnni,fma,f16c")]
fn legacy_tile<const R: usize, const SIGNED: bool>(
    weight: Format,
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
    unpack: impl Fn(&[u8]) -> __m256i,
) {
    let activation = if SIGNED { Q8_0 } else { Q8_1 };
    // Where a Q8_0 / Q8_1 block's values start.
    let values_at = activation.bytes - 32;
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * activation.bytes);
    assert!(weights.len() >= blocks * weight.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    let flip = _mm256_set1_epi8(0x80u8 as i8);
    // Two accumulators a row (even and odd blocks) so that consecutive multiply-adds overlap.
    let mut acc = [[_mm256_setzero_ps(); R]; 2];
    let mut mins = [0f32; R];
    for b in 0..blocks {
        let block = &weights[b * weight.bytes..(b + 1) * weight.bytes];
        let (d, m) = if SIGNED {
            (f16_one(block), 0.0)
        } else {
            f16_pair(block)
        };
        let x = unpack(block);
        // −128·Σx per lane: the share of the activations' +128 offset, removed once.
        let offset = if SIGNED {
            _mm256_sub_epi32(
                _mm256_setzero_si256(),
                _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), flip, x),
            )
        } else {
            _mm256_setzero_si256()
        };
        for (r, row) in act_rows.iter().enumerate() {
            let a = &row[b * activation.bytes..(b + 1) * activation.bytes];
            let values = load32(&a[values_at..]);
            let (dot, da) = if SIGNED {
                let dot = _mm256_dpbusd_avx_epi32(offset, _mm256_xor_si256(values, flip), x);
                (dot, f16_one(a))
            } else {
                let (da, sa) = f16_pair(a);
                mins[r] += m * sa;
                (_mm256_dpbusd_avx_epi32(offset, x, values), da)
            };
            let slot = &mut acc[b % 2][r];
            *slot = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * da), *slot);
        }
    }
    for r in 0..R {
        out[r] = hsum(_mm256_add_ps(acc[0][r], acc[1][r])) + mins[r];
    }
}

/// One `Q4_0` weight row × `R` activation rows: `x = q − 8`.
#[target_feature(enable = "avx2,avxvnni,fma,f16c")]
fn q4_0_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let eight = _mm256_set1_epi8(8);
    legacy_tile::<R, true>(Q4_0, blocks, weights, acts, out, |block| {
        _mm256_sub_epi8(nibbles(&block[2..]), eight)
    });
}

/// One `Q5_0` weight row × `R` activation rows: `x = q − 16`.
#[target_feature(enable = "avx2,avxvnni,fma,f16c")]
fn q5_0_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let high_nibble = _mm256_set1_epi8(0xf0u8 as i8);
    legacy_tile::<R, true>(Q5_0, blocks, weights, acts, out, |block| {
        // q − 16 is the low nibble when the fifth bit is set, else the nibble − 16, which as a
        // signed byte is the nibble with its high nibble all ones.
        let missing = _mm256_andnot_si256(bits_to_bytes(&block[2..]), high_nibble);
        _mm256_or_si256(nibbles(&block[6..]), missing)
    });
}

/// One `Q8_0` weight row × `R` activation rows.
#[target_feature(enable = "avx2,avxvnni,fma,f16c")]
fn q8_0_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    legacy_tile::<R, true>(Q8_0, blocks, weights, acts, out, |block| {
        load32(&block[2..])
    });
}

/// One `Q4_1` weight row × `R` activation rows.
#[target_feature(enable = "avx2,avxvnni,fma,f16c")]
fn q4_1_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    legacy_tile::<R, false>(Q4_1, blocks, weights, acts, out, |block| {
        nibbles(&block[4..])
    });
}

/// One `Q5_1` weight row × `R` activation rows.
#[target_feature(enable = "avx2,avxvnni,fma,f16c")]
fn q5_1_tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let fifth_bit = _mm256_set1_epi8(0x10);
    legacy_tile::<R, false>(Q5_1, blocks, weights, acts, out, |block| {
        let high = _mm256_and_si256(bits_to_bytes(&block[4..]), fifth_bit);
        _mm256_or_si256(nibbles(&block[8..]), high)
    });
}
