//! The AVX-512 kernels (x86_64: F, BW, VL and VNNI, with AVX2, FMA and F16C), chosen at run
//! time when the CPU has them all.
//!
//! Owns the 512-bit versions of the scalar kernels of `kernels`, `legacy` and `kquants`; each
//! must equal its scalar reference up to the order of float additions (the tests check it). It
//! must not choose kernels or split work: `kernels` picks, `linear` splits. The tiling (one
//! weight row against a tile of activation rows) is `avx2`'s.
//!
//! The 32-value formats take two blocks per register and multiply bytes with VNNI's
//! `vpdpbusd` (unsigned × signed, four products summed per lane); signed weights meet their
//! activations offset by 128 (`a ^ 0x80`, unsigned), the offset's share `128·Σw` subtracted
//! once per weight block. The k-quants take 64 values per register with `vpmaddubsw` and
//! `vpmaddwd`, which apply their 16-bit scales exactly as the scalar kernels do.

use std::arch::x86_64::*;

use super::avx2::{TileFn, Tiles, by_tiles, f16_one, f16_pair, hsum, load16, load32, rows_of};
use super::avx2_q45::{bits_to_bytes, nibbles};
use super::kquants::{
    Q4K, Q4K_SCALES, Q4K_VALUES, Q5K, Q5K_HIGH, Q5K_VALUES, Q6K, Q6K_D, Q6K_HIGH, Q6K_SCALES, Q8K,
    Q8K_SUMS, Q8K_VALUES, q4k_scales_mins, q8k_d,
};
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
        T::Q4K => q4_k,
        T::Q5K => q5_k,
        T::Q6K => q6_k,
        _ => return None,
    })
}

/// Activation rows computed together per weight row (prefill): twice `avx2`'s, as AVX-512 has
/// twice the registers to hold their sums; a weight block is unpacked once per tile.
const TILE: usize = 8;

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
    let prepared: PreparedFn = q4_0_prepared;
    run_legacy(Q4_0, true, tiles, prepared, blocks, weights, acts, out);
}

fn q5_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_0_tile::<TILE>, q5_0_tile::<1>);
    let prepared: PreparedFn = q5_0_prepared;
    run_legacy(Q5_0, true, tiles, prepared, blocks, weights, acts, out);
}

fn q8_0(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q8_0_tile::<TILE>, q8_0_tile::<1>);
    let prepared: PreparedFn = q8_0_prepared;
    run_legacy(Q8_0, true, tiles, prepared, blocks, weights, acts, out);
}

fn q4_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_1_tile::<TILE>, q4_1_tile::<1>);
    let prepared: PreparedFn = q4_1_prepared;
    run_legacy(Q4_1, false, tiles, prepared, blocks, weights, acts, out);
}

fn q5_1(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_1_tile::<TILE>, q5_1_tile::<1>);
    let prepared: PreparedFn = q5_1_prepared;
    run_legacy(Q5_1, false, tiles, prepared, blocks, weights, acts, out);
}

fn q4_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q4_k_tile::<TILE>, q4_k_tile::<1>);
    run(Q4K, Q8K, tiles, blocks, weights, acts, out);
}

fn q5_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q5_k_tile::<TILE>, q5_k_tile::<1>);
    run(Q5K, Q8K, tiles, blocks, weights, acts, out);
}

fn q6_k(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
    let tiles: (TileFn, TileFn) = (q6_k_tile::<TILE>, q6_k_tile::<1>);
    run(Q6K, Q8K, tiles, blocks, weights, acts, out);
}

/// Two 256-bit halves as one register: `low` in lanes 0..8, `high` in 8..16.
#[inline]
#[target_feature(enable = "avx512f")]
fn join(low: __m256i, high: __m256i) -> __m512i {
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
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
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
                dot = _mm512_add_epi32(dot, _mm512_madd_epi16(scales[c], pairs16));
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

/// 64 bytes from the start of `bytes` (at least 64 long) into a register.
#[inline]
#[target_feature(enable = "avx512f")]
fn load64(bytes: &[u8]) -> __m512i {
    assert!(bytes.len() >= 64, "64 bytes to load");
    // SAFETY: the assert guarantees 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
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
                dot = _mm512_add_epi32(dot, _mm512_madd_epi16(pairs16, scales[h]));
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
