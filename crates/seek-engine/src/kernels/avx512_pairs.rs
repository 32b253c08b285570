//! The AVX-512 VNNI kernels of the 32-value formats (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0`),
//! on activations quantized into pair blocks laid out for them.
//!
//! Owns the pair-block activation formats ([`Q8_0_PAIRS`], [`Q8_1_PAIRS`]), their quantizers
//! and the tiles of several weight rows × several activation rows. Each kernel must equal its
//! scalar reference up to the order of float additions (the tests check it), and a result
//! must not depend on the tile it was computed in. It must not choose kernels or split work:
//! `kernels` picks, `linear` and the forward pass split.
//!
//! Why pair blocks: a register holds two 32-value blocks, and with the file's `Q8_0`/`Q8_1`
//! activations every weight row × activation row pair had to load both blocks, convert their
//! f16 scales and offset their values again: about three times the work of the product
//! itself. Here the activations carry, once per row, everything a product needs in the
//! register layout it needs: two blocks' 64 values, each block's scale as f32 in the eight
//! lanes its sums land in, and for the signed formats each lane's sum of values (see below),
//! for `Q8_1` each block's `d·Σq` in the first of its lanes.
//! A product is then a multiply-add of bytes, a conversion, a multiply of the two scale
//! vectors and a multiply-add (and one more for the minimum of `Q4_1`/`Q5_1`), whichever
//! weight and activation rows meet; the values are llama.cpp's `Q8_0`/`Q8_1`, only stored
//! differently, so the sums are the same. A row must hold a whole number of pairs (every
//! model's widths do); `Kernel::takes` sends the others to another kernel.
//!
//! `vpdpbusd` multiplies unsigned by signed bytes: the signed formats' values `x` are taken as
//! `u = x + 2^OFFSET` (8 for `Q4_0`, 16 for `Q5_0`, 128 for `Q8_0`), which is how `Q4_0` and
//! `Q5_0` store them anyway, and the offset's share `2^OFFSET·Σa` is stored (negated, per
//! lane) with the activations, as the multiply-add's starting value: the weights need no
//! more work than unpacking, which is what decoding (one activation row) spends its time on.

use std::arch::x86_64::*;

use super::avx2::load32;
use super::avx2_q45::{bits_to_bytes, nibbles};
use super::{Format, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, QK, f16_at};

/// Activations for the signed formats: per pair of 32-value blocks, their 64 values, then 16
/// f32: the first block's scale in lanes 0..8, the second's in 8..16, then 16 i32: minus the
/// sum of the four values each lane multiplies.
pub const Q8_0_PAIRS: Format = Format {
    name: "Q8_0 pairs",
    values: 2 * QK,
    bytes: 64 + 64 + 64,
};

/// Activations for `Q4_1`/`Q5_1`: 64 values and 16 scales as [`Q8_0_PAIRS`], then 16 f32:
/// each block's `s = d·Σq` in its first lane (0 and 8), zeros elsewhere.
pub const Q8_1_PAIRS: Format = Format {
    name: "Q8_1 pairs",
    values: 2 * QK,
    bytes: 64 + 64 + 64,
};

/// The tile kernel, activation format and quantizer of `dtype`, if it is a 32-value format.
pub fn kernel(
    dtype: candle_core::quantized::GgmlDType,
) -> Option<(super::TileDots, Format, super::Quantize)> {
    use candle_core::quantized::GgmlDType as T;
    Some(match dtype {
        T::Q4_0 => (q4_0, Q8_0_PAIRS, quantize_signed),
        T::Q5_0 => (q5_0, Q8_0_PAIRS, quantize_signed),
        T::Q8_0 => (q8_0, Q8_0_PAIRS, quantize_signed),
        T::Q4_1 => (q4_1, Q8_1_PAIRS, quantize_unsigned),
        T::Q5_1 => (q5_1, Q8_1_PAIRS, quantize_unsigned),
        _ => return None,
    })
}

/// Quantizes a row into [`Q8_0_PAIRS`]: llama.cpp's `Q8_0` blocks, stored for the kernels.
fn quantize_signed(row: &[f32], out: &mut [u8]) {
    quantize_pairs(row, out, Q8_0_PAIRS, true);
}

/// Quantizes a row into [`Q8_1_PAIRS`]: llama.cpp's `Q8_1` blocks, stored for the kernels.
fn quantize_unsigned(row: &[f32], out: &mut [u8]) {
    quantize_pairs(row, out, Q8_1_PAIRS, false);
}

fn quantize_pairs(row: &[f32], out: &mut [u8], format: Format, signed: bool) {
    let source = if signed { Q8_0 } else { Q8_1 };
    let values_at = source.bytes - QK;
    let mut block = [0u8; 4 + QK];
    let block = &mut block[..source.bytes];
    for (values, pair) in row
        .chunks_exact(2 * QK)
        .zip(out.chunks_exact_mut(format.bytes))
    {
        pair.fill(0);
        for half in 0..2 {
            let values = &values[half * QK..(half + 1) * QK];
            if signed {
                super::quantize_q8_0(values, block);
            } else {
                super::quantize_q8_1(values, block);
            }
            for (q, v) in pair[half * QK..(half + 1) * QK]
                .iter_mut()
                .zip(&block[values_at..])
            {
                *q = *v;
            }
            let d = f16_at(block, 0).to_le_bytes();
            for lane in 0..8 {
                let at = 64 + 4 * (8 * half + lane);
                pair[at..at + 4].copy_from_slice(&d);
            }
            if signed {
                for (lane, four) in block[values_at..].chunks_exact(4).enumerate() {
                    let sum: i32 = four.iter().map(|&q| i32::from(q as i8)).sum();
                    let at = 128 + 4 * (8 * half + lane);
                    pair[at..at + 4].copy_from_slice(&(-sum).to_le_bytes());
                }
            } else {
                let at = 128 + 4 * 8 * half;
                pair[at..at + 4].copy_from_slice(&f16_at(block, 2).to_le_bytes());
            }
        }
    }
}

/// A tile: `W` weight rows × `R` activation rows.
type PairTile = unsafe fn(pairs: usize, weights: &[&[u8]], acts: &[&[u8]], out: &mut [f32]);

/// The tiles of one format, largest first.
struct Tiles {
    weight: Format,
    activation: Format,
    /// 2 weight rows × 8 activation rows (prefill).
    wide: PairTile,
    /// 4 weight rows × 1 activation row (decode).
    tall: PairTile,
    /// 1 × 8, 2 × 1 and 1 × 1, for what the others leave.
    column: PairTile,
    row: PairTile,
    single: PairTile,
}

/// Covers `weights × acts` (`out[w · A + a]` for `A` activation rows) with `tiles`.
fn by_tiles(tiles: &Tiles, blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    assert!(
        blocks.is_multiple_of(2),
        "a whole number of pairs of blocks"
    );
    let pairs = blocks / 2;
    let (weight_bytes, act_bytes) = (blocks * tiles.weight.bytes, pairs * tiles.activation.bytes);
    if weight_bytes == 0 {
        return;
    }
    let (weight_rows, act_rows) = (weights.len() / weight_bytes, acts.len() / act_bytes);
    let weight_row = |w: usize| &weights[w * weight_bytes..(w + 1) * weight_bytes];
    let act_row = |a: usize| &acts[a * act_bytes..(a + 1) * act_bytes];
    let mut w = 0;
    while w < weight_rows {
        let (count, across) = if act_rows < 8 && weight_rows - w >= 4 {
            (4, tiles.tall)
        } else if weight_rows - w >= 2 {
            (2, tiles.wide)
        } else {
            (1, tiles.column)
        };
        let mut rows: [&[u8]; 4] = [&[]; 4];
        for (i, row) in rows.iter_mut().take(count).enumerate() {
            *row = weight_row(w + i);
        }
        let mut a = 0;
        while a < act_rows {
            let (tile, take) = match (count, act_rows - a >= 8) {
                (4, _) => (across, 1),
                (2, true) | (1, true) => (across, 8),
                (2, false) => (tiles.row, 1),
                _ => (tiles.single, 1),
            };
            let mut cols: [&[u8]; 8] = [&[]; 8];
            for (i, col) in cols.iter_mut().take(take).enumerate() {
                *col = act_row(a + i);
            }
            let mut results = [0f32; 16];
            // SAFETY: installed only when `available()` found every feature these kernels are
            // compiled for; they check their slices' lengths themselves.
            unsafe { tile(pairs, &rows[..count], &cols[..take], &mut results) };
            for (i, result) in results[..count * take].iter().enumerate() {
                out[(w + i / take) * act_rows + a + i % take] = *result;
            }
            a += take;
        }
        w += count;
    }
}

/// `[d₀, m₀, d₁, m₁]` of two weight blocks (the f16 fields at their start; `m` 0 when not
/// `both`), in f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn headers(first: &[u8], second: &[u8], both: bool) -> __m128 {
    let field = |block: &[u8]| {
        let bytes = if both {
            [block[0], block[1], block[2], block[3]]
        } else {
            [block[0], block[1], 0, 0]
        };
        i32::from_le_bytes(bytes)
    };
    _mm_cvtph_ps(_mm_set_epi32(0, 0, field(second), field(first)))
}

/// 64 bytes from the start of `bytes` (at least 64 long).
#[inline]
#[target_feature(enable = "avx512f")]
fn load_bytes(bytes: &[u8]) -> __m512i {
    assert!(bytes.len() >= 64, "64 bytes to load");
    // SAFETY: the assert guarantees 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

/// 16 f32 from the start of `bytes` (at least 64 long).
#[inline]
#[target_feature(enable = "avx512f")]
fn load_floats(bytes: &[u8]) -> __m512 {
    assert!(bytes.len() >= 64, "16 floats to load");
    // SAFETY: as `load_bytes`.
    unsafe { _mm512_loadu_ps(bytes.as_ptr().cast()) }
}

/// The sum of the sixteen lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn hsum(v: __m512) -> f32 {
    _mm512_reduce_add_ps(v)
}

/// `W` weight rows × `R` activation rows of `pairs` pairs of blocks. `SIGNED` formats have
/// values `x = u − 2^OFFSET` (`d·x`) for unsigned `u`, and [`Q8_0_PAIRS`] activations; the
/// others unsigned values `q` with a minimum (`d·q + m`) and [`Q8_1_PAIRS`] activations.
/// `unpack` gives a block's unsigned values. Every pair of rows is summed by the same
/// operations in the same order, whatever `W` and `R`: a row's result does not depend on its
/// tile.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn tile<const W: usize, const R: usize, const SIGNED: bool, const OFFSET: u32>(
    weight: Format,
    pairs: usize,
    weights: &[&[u8]],
    acts: &[&[u8]],
    out: &mut [f32],
    unpack: impl Fn(&[u8]) -> __m256i,
) {
    let activation = if SIGNED { Q8_0_PAIRS } else { Q8_1_PAIRS };
    assert!(weights.len() == W && acts.len() == R, "a {W} × {R} tile");
    assert!(out.len() >= W * R, "room for the tile");
    for row in weights {
        assert!(row.len() >= 2 * pairs * weight.bytes, "a weight row");
    }
    for row in acts {
        assert!(row.len() >= pairs * activation.bytes, "an activation row");
    }
    // Lane 0 (the first block's d) for lanes 0..8, lane 2 (the second's) for 8..16; lanes 1
    // and 3 likewise for the minimums.
    let spread_d = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
    let spread_m = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
    let mut acc = [[_mm512_setzero_ps(); R]; W];
    for pair in 0..pairs {
        let mut values = [_mm512_setzero_si512(); W];
        let mut scales = [_mm512_setzero_ps(); W];
        let mut mins = [_mm512_setzero_ps(); W];
        for w in 0..W {
            let at = 2 * pair * weight.bytes;
            let (b0, b1) = (
                &weights[w][at..at + weight.bytes],
                &weights[w][at + weight.bytes..at + 2 * weight.bytes],
            );
            let h = _mm512_castps128_ps512(headers(b0, b1, !SIGNED));
            values[w] = _mm512_inserti64x4(_mm512_castsi256_si512(unpack(b0)), unpack(b1), 1);
            scales[w] = _mm512_permutexvar_ps(spread_d, h);
            if !SIGNED {
                mins[w] = _mm512_permutexvar_ps(spread_m, h);
            }
        }
        for r in 0..R {
            let block = &acts[r][pair * activation.bytes..(pair + 1) * activation.bytes];
            let a = load_bytes(block);
            let d = load_floats(&block[64..]);
            // Σu·a − 2^OFFSET·Σa = Σx·a: the offset's share starts each lane's sum.
            let start = if SIGNED {
                _mm512_slli_epi32::<OFFSET>(load_bytes(&block[128..]))
            } else {
                _mm512_setzero_si512()
            };
            let min_sums = if SIGNED {
                _mm512_setzero_ps()
            } else {
                load_floats(&block[128..])
            };
            for w in 0..W {
                let dot = _mm512_dpbusd_epi32(start, values[w], a);
                let scale = _mm512_mul_ps(scales[w], d);
                let slot = &mut acc[w][r];
                *slot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, *slot);
                if !SIGNED {
                    *slot = _mm512_fmadd_ps(mins[w], min_sums, *slot);
                }
            }
        }
    }
    for w in 0..W {
        for r in 0..R {
            out[w * R + r] = hsum(acc[w][r]);
        }
    }
}

/// `Q4_0`'s values `q`, for `x = q − 8`.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q4_0(block: &[u8]) -> __m256i {
    nibbles(&block[2..])
}

/// `Q5_0`'s values `q` (a nibble and a fifth bit), for `x = q − 16`.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q5_0(block: &[u8]) -> __m256i {
    let high = _mm256_and_si256(bits_to_bytes(&block[2..]), _mm256_set1_epi8(0x10));
    _mm256_or_si256(nibbles(&block[6..]), high)
}

/// `Q8_0`'s values plus 128, for `x = u − 128`.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q8_0(block: &[u8]) -> __m256i {
    _mm256_xor_si256(load32(&block[2..]), _mm256_set1_epi8(0x80u8 as i8))
}

/// `Q4_1`'s values.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q4_1(block: &[u8]) -> __m256i {
    nibbles(&block[4..])
}

/// `Q5_1`'s values.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q5_1(block: &[u8]) -> __m256i {
    let high = _mm256_and_si256(bits_to_bytes(&block[4..]), _mm256_set1_epi8(0x10));
    _mm256_or_si256(nibbles(&block[8..]), high)
}

/// The kernel of a 32-value format: its tiles from its unpacking, and the [`TileDots`] entry.
///
/// [`TileDots`]: super::TileDots
macro_rules! pair_kernel {
    ($name:ident, $format:expr, $signed:expr, $offset:expr, $unpack:ident) => {
        fn $name(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
            fn sized<const W: usize, const R: usize>(
                pairs: usize,
                weights: &[&[u8]],
                acts: &[&[u8]],
                out: &mut [f32],
            ) {
                tile::<W, R, $signed, $offset>($format, pairs, weights, acts, out, |b| $unpack(b));
            }
            let activation = if $signed { Q8_0_PAIRS } else { Q8_1_PAIRS };
            let tiles = Tiles {
                weight: $format,
                activation,
                wide: sized::<2, 8>,
                tall: sized::<4, 1>,
                column: sized::<1, 8>,
                row: sized::<2, 1>,
                single: sized::<1, 1>,
            };
            by_tiles(&tiles, blocks, weights, acts, out);
        }
    };
}

pair_kernel!(q4_0, Q4_0, true, 3, unpack_q4_0);
pair_kernel!(q5_0, Q5_0, true, 4, unpack_q5_0);
pair_kernel!(q8_0, Q8_0, true, 7, unpack_q8_0);
pair_kernel!(q4_1, Q4_1, false, 0, unpack_q4_1);
pair_kernel!(q5_1, Q5_1, false, 0, unpack_q5_1);
