//! The AVX-512 kernels (x86_64: F, BW, VL and VNNI, with AVX2, FMA and F16C), chosen at run
//! time when the CPU has them all.
//!
//! Owns the 512-bit versions of the scalar kernels of `kernels`, `legacy` and `kquants`; each
//! must equal its scalar reference up to the order of float additions (the tests check it). It
//! must not choose kernels or split work: `kernels` picks, `linear` splits. The tiling (one
//! weight row against a tile of activation rows) is `avx2`'s.
//!
//! The k-quants' kernels are in `avx512_k`.
//!
//! The 32-value formats take two blocks per register and multiply bytes with VNNI's
//! `vpdpbusd` (unsigned × signed, four products summed per lane); signed weights meet their
//! activations offset by 128 (`a ^ 0x80`, unsigned), the offset's share `128·Σw` subtracted
//! once per weight block.

use std::arch::x86_64::*;

use super::avx2::{TileFn, Tiles, by_tiles, hsum, load32, rows_of};
use super::avx2_q45::{bits_to_bytes, nibbles};
use super::{Format, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1};

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    super::avx2::available()
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
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
        T::Q4K => super::avx512_k::q4_k,
        T::Q5K => super::avx512_k::q5_k,
        T::Q6K => super::avx512_k::q6_k,
        _ => return None,
    })
}

/// Activation rows computed together per weight row (prefill): twice `avx2`'s, as AVX-512 has
/// twice the registers to hold their sums; a weight block is unpacked once per tile.
pub(super) const TILE: usize = 8;

/// Covers `weights × acts` with `tile` (for `TILE` rows) and `single`.
pub(super) fn run(
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

/// `Q4_0 × Q8_0`; see [`super::Kernel::dots`].
fn q4_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_0_tile::<TILE>, q4_0_tile::<1>);
    let prepared: PreparedFn = q4_0_prepared;
    run_legacy(Q4_0, true, tiles, prepared, blocks, weights, acts, out);
}

/// `Q5_0 × Q8_0`; see [`super::Kernel::dots`].
fn q5_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_0_tile::<TILE>, q5_0_tile::<1>);
    let prepared: PreparedFn = q5_0_prepared;
    run_legacy(Q5_0, true, tiles, prepared, blocks, weights, acts, out);
}

/// `Q8_0 × Q8_0`; see [`super::Kernel::dots`].
fn q8_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q8_0_tile::<TILE>, q8_0_tile::<1>);
    let prepared: PreparedFn = q8_0_prepared;
    run_legacy(Q8_0, true, tiles, prepared, blocks, weights, acts, out);
}

/// `Q4_1 × Q8_1`; see [`super::Kernel::dots`].
fn q4_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_1_tile::<TILE>, q4_1_tile::<1>);
    let prepared: PreparedFn = q4_1_prepared;
    run_legacy(Q4_1, false, tiles, prepared, blocks, weights, acts, out);
}

/// `Q5_1 × Q8_1`; see [`super::Kernel::dots`].
fn q5_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_1_tile::<TILE>, q5_1_tile::<1>);
    let prepared: PreparedFn = q5_1_prepared;
    run_legacy(Q5_1, false, tiles, prepared, blocks, weights, acts, out);
}

/// Two 256-bit halves as one register: `low` in lanes 0..8, `high` in 8..16.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn join(low: __m256i, high: __m256i) -> __m512i {
    _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1)
}

/// The sum of the sixteen lanes.
#[inline]
#[target_feature(enable = "avx512f,avx2")]
fn hsum512(v: __m512) -> f32 {
    let halves = _mm256_add_ps(
        _mm512_castps512_ps256(v),
        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)),
    );
    hsum(halves)
}

/// A 32-value weight block unpacked: its 32 values, signed or unsigned as the format's kernel
/// expects.
type Unpacked = __m256i;

/// The f16 header fields of two blocks `first` and `second` (`d` alone, or `d` and `m`/`s`
/// when `both`), as `[d₀, m₀, d₁, m₁]` in f32 (`m` 0 when not `both`).
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

/// One activation row prepared once for many weight rows (decode): its values end to end,
/// offset by 128 for the signed formats, and each block's `[d, s]` as f32 (`s` 0 for `Q8_0`),
/// which the kernels would otherwise load, offset and convert again for every weight row.
pub(super) struct Prepared {
    values: Vec<u8>,
    headers: Vec<f32>,
}

impl Prepared {
    /// `row`, `blocks` blocks of `Q8_0` (`signed`) or `Q8_1`.
    fn new(signed: bool, blocks: usize, row: &[u8]) -> Self {
        let activation = if signed { Q8_0 } else { Q8_1 };
        let values_at = activation.bytes - 32;
        let flip = if signed { 0x80 } else { 0 };
        let mut values = Vec::with_capacity(32 * blocks);
        let mut headers = Vec::with_capacity(2 * blocks);
        for block in row.chunks_exact(activation.bytes).take(blocks) {
            values.extend(block[values_at..].iter().map(|&q| q ^ flip));
            headers.push(super::f16_at(block, 0));
            headers.push(if signed { 0.0 } else { super::f16_at(block, 2) });
        }
        Self { values, headers }
    }
}

/// The kernel of one weight row × one prepared activation row.
type PreparedFn = unsafe fn(blocks: usize, weights: &[u8], act: &Prepared, out: &mut [f32]);

/// Covers `weights × acts` for a 32-value format: one activation row against several weight
/// rows (decode) through `prepared`, anything else by tiles.
#[allow(clippy::too_many_arguments)]
fn run_legacy(
    weight: Format,
    signed: bool,
    tiles: (TileFn, TileFn),
    prepared: PreparedFn,
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
) {
    let activation = if signed { Q8_0 } else { Q8_1 };
    let weight_bytes = blocks * weight.bytes;
    if weight_bytes == 0
        || acts.len() != blocks * activation.bytes
        || weights.len() < 2 * weight_bytes
    {
        run(weight, activation, tiles, blocks, weights, acts, out);
        return;
    }
    let act = Prepared::new(signed, blocks, acts);
    for (row, o) in weights.chunks_exact(weight_bytes).zip(out.iter_mut()) {
        // SAFETY: installed only when `available()` found every feature these kernels are
        // compiled for; they check their slices' lengths themselves.
        unsafe { prepared(blocks, row, &act, std::slice::from_mut(o)) }
    }
}

/// The tile loop of every 32-value format: one weight row × `R` activation rows of `blocks`
/// blocks. `SIGNED` formats have signed values `x` (`d·x`) and `Q8_0` activations;
/// the others unsigned values `q` with a minimum (`d·q + m`) and `Q8_1` activations. `unpack`
/// gives a block's values; the scale (and minimum) are the f16 at its start. `act_pair(r, p)`
/// gives activation row `r`'s blocks `2p`, `2p + 1` as `[d₀, s₀, d₁, s₁]` and their 64
/// values (offset by 128 when `SIGNED`); `act_one(r, b)` block `b` as `[d, s, d, s]` and its
/// 32 values.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn legacy_core<const R: usize, const SIGNED: bool>(
    weight: Format,
    blocks: usize,
    weights: &[u8],
    out: &mut [f32],
    unpack: impl Fn(&[u8]) -> Unpacked,
    act_pair: impl Fn(usize, usize) -> (__m128, __m512i),
    act_one: impl Fn(usize, usize) -> (__m128, __m256i),
) {
    assert!(weights.len() >= blocks * weight.bytes, "a weight row");
    assert!(out.len() >= R, "room for the tile");
    let weight_block = |b: usize| &weights[b * weight.bytes..(b + 1) * weight.bytes];
    let flip = _mm512_set1_epi8(0x80u8 as i8);
    // Lane 0 (the first block's d·d) for lanes 0..8, lane 2 (the second's) for 8..16.
    let spread = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
    // Two accumulators a row (even and odd pairs) so that consecutive multiply-adds overlap.
    let mut acc = [[_mm512_setzero_ps(); R]; 2];
    // Lanes 1 and 3 gather the minimums' products `m·s`.
    let mut mins = [_mm_setzero_ps(); R];
    for pair in 0..blocks / 2 {
        let (w0, w1) = (weight_block(2 * pair), weight_block(2 * pair + 1));
        let weight_headers = headers(w0, w1, !SIGNED);
        let x = join(unpack(w0), unpack(w1));
        // −128·Σx per lane: the share of the activations' +128 offset, removed once.
        let offset = if SIGNED {
            _mm512_sub_epi32(
                _mm512_setzero_si512(),
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, x),
            )
        } else {
            _mm512_setzero_si512()
        };
        for r in 0..R {
            let (act_headers, a) = act_pair(r, pair);
            let products = _mm_mul_ps(weight_headers, act_headers);
            let dot = if SIGNED {
                _mm512_dpbusd_epi32(offset, a, x)
            } else {
                mins[r] = _mm_add_ps(mins[r], products);
                _mm512_dpbusd_epi32(offset, x, a)
            };
            let scale = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(products));
            let slot = &mut acc[pair % 2][r];
            *slot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, *slot);
        }
    }
    let mut tail = [_mm256_setzero_ps(); R];
    if blocks % 2 == 1 {
        let b = blocks - 1;
        let w = weight_block(b);
        let weight_headers = headers(w, w, !SIGNED);
        let x = unpack(w);
        let flip = _mm256_set1_epi8(0x80u8 as i8);
        let offset = if SIGNED {
            _mm256_sub_epi32(
                _mm256_setzero_si256(),
                _mm256_dpbusd_epi32(_mm256_setzero_si256(), flip, x),
            )
        } else {
            _mm256_setzero_si256()
        };
        for r in 0..R {
            let (act_headers, values) = act_one(r, b);
            // Both halves are this block: the minimum's product counts once (lane 1).
            let products = _mm_mul_ps(weight_headers, act_headers);
            let dot = if SIGNED {
                _mm256_dpbusd_epi32(offset, values, x)
            } else {
                mins[r] = _mm_add_ps(mins[r], _mm_blend_ps(_mm_setzero_ps(), products, 0b0010));
                _mm256_dpbusd_epi32(offset, x, values)
            };
            let scale = _mm256_broadcastss_ps(products);
            tail[r] = _mm256_mul_ps(_mm256_cvtepi32_ps(dot), scale);
        }
    }
    for r in 0..R {
        let m = mins[r];
        let min_sum = if SIGNED {
            0.0
        } else {
            _mm_cvtss_f32(_mm_add_ss(
                _mm_movehdup_ps(m),
                _mm_movehl_ps(m, _mm_movehdup_ps(m)),
            ))
        };
        out[r] = hsum512(_mm512_add_ps(acc[0][r], acc[1][r])) + hsum(tail[r]) + min_sum;
    }
}

/// [`legacy_core`] on `R` rows of activation blocks as quantized.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn legacy_tile<const R: usize, const SIGNED: bool>(
    weight: Format,
    blocks: usize,
    weights: &[u8],
    acts: &[u8],
    out: &mut [f32],
    unpack: impl Fn(&[u8]) -> Unpacked,
) {
    let activation = if SIGNED { Q8_0 } else { Q8_1 };
    // Where a Q8_0 / Q8_1 block's values start.
    let values_at = activation.bytes - 32;
    let act_rows: [&[u8]; R] = rows_of(acts, blocks * activation.bytes);
    let act_block = |r: usize, b: usize| -> &[u8] {
        &act_rows[r][b * activation.bytes..(b + 1) * activation.bytes]
    };
    let flip = _mm512_set1_epi8(if SIGNED { 0x80u8 as i8 } else { 0 });
    let act_pair = |r: usize, pair: usize| {
        let (a0, a1) = (act_block(r, 2 * pair), act_block(r, 2 * pair + 1));
        let values = join(load32(&a0[values_at..]), load32(&a1[values_at..]));
        (headers(a0, a1, !SIGNED), _mm512_xor_si512(values, flip))
    };
    let act_one = |r: usize, b: usize| {
        let a = act_block(r, b);
        let values = _mm256_xor_si256(load32(&a[values_at..]), _mm512_castsi512_si256(flip));
        (headers(a, a, !SIGNED), values)
    };
    legacy_core::<R, SIGNED>(weight, blocks, weights, out, unpack, act_pair, act_one);
}

/// [`legacy_core`] on one prepared activation row.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn legacy_prepared<const SIGNED: bool>(
    weight: Format,
    blocks: usize,
    weights: &[u8],
    act: &Prepared,
    out: &mut [f32],
    unpack: impl Fn(&[u8]) -> Unpacked,
) {
    assert!(
        act.values.len() >= 32 * blocks && act.headers.len() >= 2 * blocks,
        "a prepared row of {blocks} blocks"
    );
    let act_pair = |_: usize, pair: usize| {
        let h = &act.headers[4 * pair..4 * pair + 4];
        (
            _mm_set_ps(h[3], h[2], h[1], h[0]),
            load64(&act.values[64 * pair..]),
        )
    };
    let act_one = |_: usize, b: usize| {
        let (d, s) = (act.headers[2 * b], act.headers[2 * b + 1]);
        (_mm_set_ps(s, d, s, d), load32(&act.values[32 * b..]))
    };
    legacy_core::<1, SIGNED>(weight, blocks, weights, out, unpack, act_pair, act_one);
}

/// `Q4_0`'s values: `x = q − 8`.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q4_0(block: &[u8]) -> __m256i {
    _mm256_sub_epi8(nibbles(&block[2..]), _mm256_set1_epi8(8))
}

/// `Q5_0`'s values: `x = q − 16`, which is the low nibble when the fifth bit is set, else the
/// nibble − 16, which as a signed byte is the nibble with its high nibble all ones.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q5_0(block: &[u8]) -> __m256i {
    let high_nibble = _mm256_set1_epi8(0xf0u8 as i8);
    let missing = _mm256_andnot_si256(bits_to_bytes(&block[2..]), high_nibble);
    _mm256_or_si256(nibbles(&block[6..]), missing)
}

/// `Q8_0`'s values.
#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q8_0(block: &[u8]) -> __m256i {
    load32(&block[2..])
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

/// The tile and prepared-row kernels of a 32-value format, from its unpacking.
macro_rules! legacy_kernels {
    ($tile:ident, $prepared:ident, $format:expr, $signed:expr, $unpack:ident) => {
        /// One weight row × `R` activation rows.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
        fn $tile<const R: usize>(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
            legacy_tile::<R, $signed>($format, blocks, weights, acts, out, |b| $unpack(b));
        }

        /// One weight row × one prepared activation row.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
        fn $prepared(blocks: usize, weights: &[u8], act: &Prepared, out: &mut [f32]) {
            legacy_prepared::<$signed>($format, blocks, weights, act, out, |b| $unpack(b));
        }
    };
}

legacy_kernels!(q4_0_tile, q4_0_prepared, Q4_0, true, unpack_q4_0);
legacy_kernels!(q5_0_tile, q5_0_prepared, Q5_0, true, unpack_q5_0);
legacy_kernels!(q8_0_tile, q8_0_prepared, Q8_0, true, unpack_q8_0);
legacy_kernels!(q4_1_tile, q4_1_prepared, Q4_1, false, unpack_q4_1);
legacy_kernels!(q5_1_tile, q5_1_prepared, Q5_1, false, unpack_q5_1);

/// 64 bytes from the start of `bytes` (at least 64 long) into a register.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn load64(bytes: &[u8]) -> __m512i {
    assert!(bytes.len() >= 64, "64 bytes to load");
    // SAFETY: the assert guarantees 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}
