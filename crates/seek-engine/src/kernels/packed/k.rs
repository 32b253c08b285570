//! The k-quants (`Q4_K`, `Q5_K`, `Q6_K`) in tiles of 16 rows, and their AVX-512 VNNI kernels,
//! for `packed`.
//!
//! Owns the k-quants' tile layouts, their packing and reading back, and their kernels on
//! llama.cpp's `Q8_K` activations. It must not choose layers or split work (see `packed`).
//!
//! A tile holds one 256-value block of sixteen rows. Values go in groups of eight, sixteen
//! rows × four bytes, as in `packed`'s 32-value types: byte `j` of a row holds value `8g + j`
//! in its low nibble and `8g + j + 4` in its high one. `Q5_K` adds a byte of fifth bits per
//! row and group (bit `j` for value `8g + j`), `Q6_K` two more bits per value, a quad of
//! groups at a time: sixteen rows × four bytes for the low nibbles' values, then as many for
//! the high ones', bits `2g'`, `2g' + 1` of byte `j` for group `g'` of the quad. The six-bit
//! scales and minimums are unpacked to a byte per row and 32-value group (`Q6_K`'s signed
//! scales per 16 values are bytes already), the block scales stay f16: a `Q4_K`/`Q5_K` tile
//! is 2 % larger than the file's blocks, a `Q6_K` tile the same size.
//!
//! The sums are integers until a block ends, as in the scalar kernels: each group's products
//! are multiplied by its scale in 32-bit lanes, the minimums meet the activations' stored
//! sums through `vpdpwssd`, `Q6_K`'s offset of 32 starts each 16-value sum.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use super::super::avx2::load16;
#[cfg(target_arch = "x86_64")]
use super::super::avx512::load64;
#[cfg(target_arch = "x86_64")]
use super::legacy::{FifthBits, group_values, scales};

use super::super::kquants::{
    Q4K_SCALES, Q4K_VALUES, Q5K_HIGH, Q5K_VALUES, Q6K_D, Q6K_HIGH, Q6K_SCALES, Q8K, Q8K_SUMS,
    Q8K_VALUES, q4k_scale_min,
};
use super::super::{QK_K, f16_at};
use super::{Kind, ROWS};

/// Where a tile's parts start: (block minimum or none, scales, minimums, values, extra bits).
struct Layout {
    dmin: usize,
    scales: usize,
    mins: usize,
    values: usize,
    extra: usize,
    bytes: usize,
}

fn layout(kind: Kind) -> Layout {
    let values_bytes = ROWS * QK_K / 2;
    match kind {
        Kind::Q6K => Layout {
            dmin: 0,
            scales: 2 * ROWS,
            mins: 0,
            values: 2 * ROWS + 16 * ROWS,
            extra: 2 * ROWS + 16 * ROWS + values_bytes,
            bytes: 2 * ROWS + 16 * ROWS + values_bytes + ROWS * QK_K / 4,
        },
        _ => {
            let values = 4 * ROWS + 16 * ROWS;
            let extra = values + values_bytes;
            let fifth = if kind == Kind::Q5K {
                ROWS * QK_K / 8
            } else {
                0
            };
            Layout {
                dmin: 2 * ROWS,
                scales: 4 * ROWS,
                mins: 4 * ROWS + 8 * ROWS,
                values,
                extra,
                bytes: extra + fifth,
            }
        }
    }
}

/// Bytes of one tile (sixteen rows' block).
pub(super) fn tile_bytes(kind: Kind) -> usize {
    layout(kind).bytes
}

/// A block's 256 values, unsigned (`Q6_K`'s six bits, 0..64; the others' 0..32), in value
/// order. Whole runs of bytes at a time, not value by value: this is most of packing, which is
/// part of loading a model.
fn values(kind: Kind, block: &[u8]) -> [u8; QK_K] {
    let mut u = [0u8; QK_K];
    match kind {
        Kind::Q6K => {
            // Per 128 values: 64 bytes of nibbles (values l and l + 64 low and high in byte
            // l, l + 32 and l + 96 in byte l + 32) and 32 bytes of two-bit pairs.
            for chunk in 0..2 {
                let low = &block[64 * chunk..64 * (chunk + 1)];
                let high = &block[Q6K_HIGH + 32 * chunk..Q6K_HIGH + 32 * (chunk + 1)];
                let out = &mut u[128 * chunk..128 * (chunk + 1)];
                for l in 0..32 {
                    let top = |group: usize| ((high[l] >> (2 * group)) & 3) << 4;
                    out[l] = (low[l] & 0x0f) | top(0);
                    out[l + 32] = (low[l + 32] & 0x0f) | top(1);
                    out[l + 64] = (low[l] >> 4) | top(2);
                    out[l + 96] = (low[l + 32] >> 4) | top(3);
                }
            }
        }
        _ => {
            let at = if kind == Kind::Q5K {
                Q5K_VALUES
            } else {
                Q4K_VALUES
            };
            // Per 64 values: 32 bytes, values l and l + 32 low and high in byte l.
            for chunk in 0..4 {
                let bytes = &block[at + 32 * chunk..at + 32 * (chunk + 1)];
                for (l, byte) in bytes.iter().enumerate() {
                    u[64 * chunk + l] = byte & 0x0f;
                    u[64 * chunk + 32 + l] = byte >> 4;
                }
            }
            if kind == Kind::Q5K {
                // Bit g of byte l is the fifth bit of value 32g + l.
                let fifth = &block[Q5K_HIGH..Q5K_HIGH + 32];
                for (i, value) in u.iter_mut().enumerate() {
                    *value |= ((fifth[i % 32] >> (i / 32)) & 1) << 4;
                }
            }
        }
    }
    u
}

/// `Q6_K`'s scale index (0..16) of value `i`, in the block's storage order.
fn q6k_scale_index(i: usize) -> usize {
    let (chunk, within) = (i / 128, i % 128);
    8 * chunk + 2 * (within / 32) + (within % 32) / 16
}

/// Packs the sixteen rows' blocks `rows` into `tile`.
pub(super) fn pack(kind: Kind, rows: &[&[u8]], tile: &mut [u8]) {
    let at = layout(kind);
    for (r, block) in rows.iter().enumerate() {
        if kind == Kind::Q6K {
            tile[2 * r..2 * r + 2].copy_from_slice(&block[Q6K_D..Q6K_D + 2]);
            for t in 0..16 {
                // The scale of values 16t .. 16t + 16 (in value order).
                tile[at.scales + 16 * t + r] = block[Q6K_SCALES + q6k_scale_index(16 * t)];
            }
        } else {
            tile[2 * r..2 * r + 2].copy_from_slice(&block[..2]);
            tile[at.dmin + 2 * r..at.dmin + 2 * r + 2].copy_from_slice(&block[2..4]);
            for s in 0..8 {
                let (scale, min) = q4k_scale_min(&block[Q4K_SCALES..], s);
                tile[at.scales + 16 * s + r] = scale;
                tile[at.mins + 16 * s + r] = min;
            }
        }
        let u = values(kind, block);
        for g in 0..QK_K / 8 {
            let mut fifth = 0u8;
            for j in 0..4 {
                let (first, second) = (u[8 * g + j], u[8 * g + j + 4]);
                tile[at.values + (g * ROWS + r) * 4 + j] = (first & 0x0f) | (second & 0x0f) << 4;
                fifth |= ((first >> 4) & 1) << j | ((second >> 4) & 1) << (j + 4);
                if kind == Kind::Q6K {
                    let (quad, within) = (g / 4, g % 4);
                    let base = at.extra + 128 * quad + r * 4 + j;
                    tile[base] |= (first >> 4) << (2 * within);
                    tile[base + 64] |= (second >> 4) << (2 * within);
                }
            }
            if kind == Kind::Q5K {
                tile[at.extra + g * ROWS + r] = fifth;
            }
        }
    }
}

/// Row `lane`'s 256 values of a tile into `out`, as the file's block would give them.
pub(super) fn dequantize(kind: Kind, tile: &[u8], lane: usize, out: &mut [f32]) {
    let at = layout(kind);
    let d = f16_at(tile, 2 * lane);
    for (i, value) in out.iter_mut().enumerate().take(QK_K) {
        let (g, j) = (i / 8, i % 8);
        let byte = tile[at.values + (g * ROWS + lane) * 4 + j % 4];
        let low = if j < 4 { byte & 0x0f } else { byte >> 4 };
        *value = match kind {
            Kind::Q6K => {
                let (quad, within) = (g / 4, g % 4);
                let bits = tile[at.extra + 128 * quad + 64 * (j / 4) + lane * 4 + j % 4];
                let q = low | ((bits >> (2 * within)) & 3) << 4;
                let scale = tile[at.scales + 16 * (i / 16) + lane] as i8;
                d * f32::from(scale) * (f32::from(q) - 32.0)
            }
            _ => {
                let fifth = if kind == Kind::Q5K {
                    (tile[at.extra + g * ROWS + lane] >> j) & 1
                } else {
                    0
                };
                let q = low | fifth << 4;
                let s = i / 32;
                let (scale, min) = (
                    tile[at.scales + 16 * s + lane],
                    tile[at.mins + 16 * s + lane],
                );
                let dmin = f16_at(tile, at.dmin + 2 * lane);
                d * f32::from(scale) * f32::from(q) - dmin * f32::from(min)
            }
        };
    }
}

/// `take` (1 or 8) activation rows (`Q8_K`) × one row of tiles (`blocks` blocks), into
/// `sums[m][r]`.
#[cfg(target_arch = "x86_64")]
pub(super) fn tile_products(
    kind: Kind,
    blocks: usize,
    tiles: &[u8],
    acts: &[&[u8]; 8],
    take: usize,
    sums: &mut [[f32; ROWS]; 8],
) {
    // SAFETY: a `Packed` exists only where `available()` found every feature the kernels are
    // compiled for; they check their slices' lengths themselves.
    unsafe {
        match (kind, take) {
            (Kind::Q6K, 8) => q6k_tile::<8>(blocks, tiles, acts, sums),
            (Kind::Q6K, _) => q6k_tile::<1>(blocks, tiles, acts, sums),
            (Kind::Q5K, 8) => k4_tile::<8, true>(blocks, tiles, acts, sums),
            (Kind::Q5K, _) => k4_tile::<1, true>(blocks, tiles, acts, sums),
            (_, 8) => k4_tile::<8, false>(blocks, tiles, acts, sums),
            (_, _) => k4_tile::<1, false>(blocks, tiles, acts, sums),
        }
    }
}

/// The four bytes at `bytes[at..at + 4]` in every lane.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast4(bytes: &[u8], at: usize) -> __m512i {
    _mm512_set1_epi32(super::word_at(bytes, at))
}

/// `Q4_K` (or `Q5_K`, with `FIFTH`) tiles × `M` `Q8_K` rows; `out[m][r]` is row `r` · act `m`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
fn k4_tile<const M: usize, const FIFTH: bool>(
    blocks: usize,
    tiles: &[u8],
    acts: &[&[u8]; 8],
    out: &mut [[f32; ROWS]; 8],
) {
    let at = layout(if FIFTH { Kind::Q5K } else { Kind::Q4K });
    assert!(tiles.len() >= blocks * at.bytes, "a row of tiles");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8K.bytes, "an activation row");
    }
    let fifth_bits = FifthBits::new();
    let mut acc = [_mm512_setzero_ps(); M];
    for b in 0..blocks {
        let tile = &tiles[b * at.bytes..(b + 1) * at.bytes];
        let mut dots = [_mm512_setzero_si512(); M];
        for s in 0..8 {
            let scale = _mm512_cvtepu8_epi32(load16(&tile[at.scales + 16 * s..]));
            let mut low = [_mm512_setzero_si512(); 4];
            let mut high = [_mm512_setzero_si512(); 4];
            for i in 0..4 {
                let g = 4 * s + i;
                let fifth = FIFTH.then(|| (&fifth_bits, &tile[at.extra + 16 * g..]));
                (low[i], high[i]) = group_values(&tile[at.values + 64 * g..], fifth);
            }
            for m in 0..M {
                let act = acts[m];
                let base = b * Q8K.bytes;
                let mut even = _mm512_setzero_si512();
                let mut odd = _mm512_setzero_si512();
                for i in 0..4 {
                    let values = base + Q8K_VALUES + 32 * s + 8 * i;
                    even = _mm512_dpbusd_epi32(even, low[i], broadcast4(act, values));
                    odd = _mm512_dpbusd_epi32(odd, high[i], broadcast4(act, values + 4));
                }
                let group = _mm512_add_epi32(even, odd);
                dots[m] = _mm512_add_epi32(dots[m], _mm512_mullo_epi32(group, scale));
            }
        }
        // The minimums times the groups' activation sums, apart from the values' loop so
        // that its registers hold the values.
        let min_pairs: [__m512i; 8] = std::array::from_fn(|s| {
            let min = _mm512_cvtepu8_epi32(load16(&tile[at.mins + 16 * s..]));
            // The minimum in both 16-bit halves, for the two 16-value sums of the group.
            _mm512_or_si512(min, _mm512_slli_epi32(min, 16))
        });
        let mut mins = [_mm512_setzero_si512(); M];
        for (m, sum) in mins.iter_mut().enumerate() {
            for (s, pair) in min_pairs.iter().enumerate() {
                let sums = broadcast4(acts[m], b * Q8K.bytes + Q8K_SUMS + 4 * s);
                *sum = _mm512_dpwssd_epi32(*sum, *pair, sums);
            }
        }
        let (d, dmin) = (scales(tile), scales(&tile[at.dmin..]));
        for m in 0..M {
            let da = _mm512_set1_ps(f32::from_bits(super::word_at(acts[m], b * Q8K.bytes) as u32));
            // As the scalar kernel: d_a·d·dot − d_a·dmin·mins, then added.
            let term = _mm512_sub_ps(
                _mm512_mul_ps(_mm512_mul_ps(da, d), _mm512_cvtepi32_ps(dots[m])),
                _mm512_mul_ps(_mm512_mul_ps(da, dmin), _mm512_cvtepi32_ps(mins[m])),
            );
            acc[m] = _mm512_add_ps(acc[m], term);
        }
    }
    for m in 0..M {
        // SAFETY: `out[m]` is 16 f32, 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_ps(out[m].as_mut_ptr(), acc[m]) };
    }
}

/// `Q6_K` tiles × `M` `Q8_K` rows; `out[m][r]` is row `r` · act `m`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
fn q6k_tile<const M: usize>(
    blocks: usize,
    tiles: &[u8],
    acts: &[&[u8]; 8],
    out: &mut [[f32; ROWS]; 8],
) {
    let at = layout(Kind::Q6K);
    assert!(tiles.len() >= blocks * at.bytes, "a row of tiles");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8K.bytes, "an activation row");
    }
    let nibbles = _mm512_set1_epi8(0x0f);
    let two = _mm512_set1_epi8(3);
    let mut acc = [_mm512_setzero_ps(); M];
    for b in 0..blocks {
        let tile = &tiles[b * at.bytes..(b + 1) * at.bytes];
        let mut dots = [_mm512_setzero_si512(); M];
        for quad in 0..8 {
            let mut low_top = load64(&tile[at.extra + 128 * quad..]);
            let mut high_top = load64(&tile[at.extra + 128 * quad + 64..]);
            let mut low = [_mm512_setzero_si512(); 4];
            let mut high = [_mm512_setzero_si512(); 4];
            for i in 0..4 {
                let packed = load64(&tile[at.values + 64 * (4 * quad + i)..]);
                let top = |bits: __m512i| _mm512_slli_epi16(_mm512_and_si512(bits, two), 4);
                low[i] = _mm512_or_si512(_mm512_and_si512(packed, nibbles), top(low_top));
                high[i] = _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibbles),
                    top(high_top),
                );
                low_top = _mm512_srli_epi16(low_top, 2);
                high_top = _mm512_srli_epi16(high_top, 2);
            }
            let scales: [__m512i; 2] = std::array::from_fn(|h| {
                _mm512_cvtepi8_epi32(load16(&tile[at.scales + 16 * (2 * quad + h)..]))
            });
            for m in 0..M {
                let act = acts[m];
                let base = b * Q8K.bytes;
                for (h, scale) in scales.iter().enumerate() {
                    // Values 16t .. 16t + 16: groups 2h, 2h + 1 of the quad.
                    let t = 2 * quad + h;
                    let at_sum = base + Q8K_SUMS + 2 * t;
                    let two = &act[at_sum..at_sum + 2];
                    let sum = i16::from_le_bytes([two[0], two[1]]);
                    let mut even = _mm512_set1_epi32(-32 * i32::from(sum));
                    let mut odd = _mm512_setzero_si512();
                    for i in [2 * h, 2 * h + 1] {
                        let values = base + Q8K_VALUES + 32 * quad + 8 * i;
                        even = _mm512_dpbusd_epi32(even, low[i], broadcast4(act, values));
                        odd = _mm512_dpbusd_epi32(odd, high[i], broadcast4(act, values + 4));
                    }
                    let group = _mm512_add_epi32(even, odd);
                    dots[m] = _mm512_add_epi32(dots[m], _mm512_mullo_epi32(group, *scale));
                }
            }
        }
        let d = scales(tile);
        for m in 0..M {
            let da = _mm512_set1_ps(f32::from_bits(super::word_at(acts[m], b * Q8K.bytes) as u32));
            let term = _mm512_mul_ps(_mm512_mul_ps(da, d), _mm512_cvtepi32_ps(dots[m]));
            acc[m] = _mm512_add_ps(acc[m], term);
        }
    }
    for m in 0..M {
        // SAFETY: `out[m]` is 16 f32, 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_ps(out[m].as_mut_ptr(), acc[m]) };
    }
}
