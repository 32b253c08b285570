//! The AVX-512 VNNI + GFNI kernels of the k-quants' tiles, on llama.cpp's `Q8_K` activations.
//!
//! Owns the arithmetic of a row of tiles with one or eight activation rows. It must not know
//! the layout beyond `k`'s `Layout`, nor choose layers or split work (see `packed`).
//!
//! Each group's integer sum (sixteen rows' lanes, `vpdpbusd` on four broadcast activation
//! values at a time) is converted to f32 and multiplied by its row's `d · scale` there: one
//! conversion and one fused multiply-add per group, where an integer multiplication by the
//! scale (`vpmulld`, two micro-operations on the port `vpdpbusd` uses) cost more than the
//! products it scaled. The minimums (`Q4_K`, `Q5_K`) and `Q6_K`'s offset of 32 meet the
//! activations' stored 16-value sums through `vpdpwssd` once per block, apart from the
//! values' loop. A group's higher bits are moved into place by one `gf2p8affine` per register.

use std::arch::x86_64::*;

use super::super::super::avx2::load16;
use super::super::super::avx512::load64;
use super::super::super::kquants::{Q8K, Q8K_SUMS, Q8K_VALUES};
use super::super::legacy::scales;
use super::super::{Kind, ROWS, WIDE, prefetch_ahead};
use super::layout;

/// The `gf2p8affine` matrix that moves bit `from` of each byte to bit `to`, for each pair
/// `(from, to)`, and clears every other bit: result bit `i` is the parity of the byte ANDed
/// with the matrix's byte `7 − i`.
const fn bit_moves(moves: &[(u32, u32)]) -> i64 {
    let mut matrix = 0u64;
    let mut i = 0;
    while i < moves.len() {
        let (from, to) = moves[i];
        matrix |= (1u64 << from) << (8 * (7 - to));
        i += 1;
    }
    matrix as i64
}

/// `Q5_K`: the fifth bit of group `i`'s low nibbles' values (bit `i`) and of its high ones'
/// (bit `4 + i`), to bit 4.
const Q5K_LOW_FIFTH: [i64; 4] = [
    bit_moves(&[(0, 4)]),
    bit_moves(&[(1, 4)]),
    bit_moves(&[(2, 4)]),
    bit_moves(&[(3, 4)]),
];
const Q5K_HIGH_FIFTH: [i64; 4] = [
    bit_moves(&[(4, 4)]),
    bit_moves(&[(5, 4)]),
    bit_moves(&[(6, 4)]),
    bit_moves(&[(7, 4)]),
];
/// `Q6_K`: group `i`'s two top bits (`2i`, `2i + 1`) to bits 4 and 5.
const Q6K_TOP: [i64; 4] = [
    bit_moves(&[(0, 4), (1, 5)]),
    bit_moves(&[(2, 4), (3, 5)]),
    bit_moves(&[(4, 4), (5, 5)]),
    bit_moves(&[(6, 4), (7, 5)]),
];

/// `(a & b) | c`, bit for bit, as `vpternlog`'s table.
const AND_OR: i32 = 0xEA;

/// Whether this CPU runs these kernels (besides `packed`'s AVX-512 VNNI).
pub(in super::super) fn available() -> bool {
    is_x86_feature_detected!("gfni")
}

/// `take` (1, 8, or 16 for `Q6_K`) activation rows (`Q8_K`) × one row of tiles (`blocks`
/// blocks), into
/// `sums[m][r]`.
pub(in super::super) fn tile_products(
    kind: Kind,
    blocks: usize,
    tiles: &[u8],
    acts: &[&[u8]; WIDE],
    take: usize,
    sums: &mut [[f32; ROWS]; WIDE],
) {
    // SAFETY: a `Packed` of a k-quant exists only where `packed::available()` and
    // `available()` found every feature the kernels are compiled for; they check their
    // slices' lengths themselves.
    unsafe {
        match (kind, take) {
            (Kind::Q6K, 16) => q6k_tile::<16>(blocks, tiles, acts, sums),
            (Kind::Q6K, 8) => q6k_tile::<8>(blocks, tiles, acts, sums),
            (Kind::Q6K, _) => q6k_tile::<1>(blocks, tiles, acts, sums),
            (Kind::Q5K, 8) => k4_tile::<8, true>(blocks, tiles, acts, sums),
            (Kind::Q5K, _) => k4_tile::<1, true>(blocks, tiles, acts, sums),
            (_, 8) => k4_tile::<8, false>(blocks, tiles, acts, sums),
            (_, _) => k4_tile::<1, false>(blocks, tiles, acts, sums),
        }
    }
}

/// One activation block (`Q8_K`), read without bounds checks in the kernels' inner loops:
/// a check per broadcast kept the compiler from unrolling the loop over activation rows, whose
/// sums then lived on the stack.
#[derive(Clone, Copy)]
struct ActBlock(*const u8);

impl ActBlock {
    /// Block `block` of `act`. Panics if `act` does not hold it.
    fn new(act: &[u8], block: usize) -> Self {
        let bytes = &act[block * Q8K.bytes..(block + 1) * Q8K.bytes];
        Self(bytes.as_ptr())
    }

    /// The four bytes at `at` (a constant offset below `Q8K.bytes − 3`) in every lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn broadcast4(self, at: usize) -> __m512i {
        debug_assert!(at + 4 <= Q8K.bytes);
        // SAFETY: `new` checked that the block's `Q8K.bytes` bytes are readable, and the
        // callers' offsets are below `Q8K.bytes − 3`; `read_unaligned` needs no alignment.
        _mm512_set1_epi32(unsafe { self.0.add(at).cast::<i32>().read_unaligned() })
    }

    /// The block's scale `d_a` in every lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn scale(self) -> __m512 {
        _mm512_castsi512_ps(self.broadcast4(0))
    }
}

/// `sums += scale · block`, lane by lane.
#[inline]
#[target_feature(enable = "avx512f,fma")]
fn add(sums: &mut [f32; ROWS], scale: __m512, block: __m512) {
    // SAFETY: `sums` is 16 f32, 64 bytes; `loadu`/`storeu` need no alignment.
    unsafe {
        let acc = _mm512_loadu_ps(sums.as_ptr());
        _mm512_storeu_ps(sums.as_mut_ptr(), _mm512_fmadd_ps(scale, block, acc));
    }
}

/// The sixteen rows' bytes at `bytes[..16]`, unsigned, as f32 times `d`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn scaled(d: __m512, bytes: &[u8]) -> __m512 {
    _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(bytes))))
}

/// `Q4_K` (or `Q5_K`, with `FIFTH`) tiles × `M` `Q8_K` rows; `out[m][r]` is row `r` · act `m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c,gfni")]
fn k4_tile<const M: usize, const FIFTH: bool>(
    blocks: usize,
    tiles: &[u8],
    acts: &[&[u8]; WIDE],
    out: &mut [[f32; ROWS]; WIDE],
) {
    let at = layout(if FIFTH { Kind::Q5K } else { Kind::Q4K });
    assert!(tiles.len() >= blocks * at.bytes, "a row of tiles");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8K.bytes, "an activation row");
    }
    let nibbles = _mm512_set1_epi8(0x0f);
    // The sums across blocks live in `out` (sixteen rows' would not fit in registers
    // beside a block's).
    for sums in out.iter_mut().take(M) {
        *sums = [0.0; ROWS];
    }
    for b in 0..blocks {
        let tile = &tiles[b * at.bytes..(b + 1) * at.bytes];
        if M == 1 {
            prefetch_ahead(tile);
        }
        let act: [ActBlock; M] = std::array::from_fn(|m| ActBlock::new(acts[m], b));
        let (d, dmin) = (scales(tile), scales(&tile[at.dmin..]));
        let mut dots = [_mm512_setzero_ps(); M];
        for s in 0..8 {
            let scale = scaled(d, &tile[at.scales + 16 * s..]);
            let fifth = if FIFTH {
                load64(&tile[at.extra + 64 * s..])
            } else {
                _mm512_setzero_si512()
            };
            let mut low = [_mm512_setzero_si512(); 4];
            let mut high = [_mm512_setzero_si512(); 4];
            for i in 0..4 {
                let packed = load64(&tile[at.values + 64 * (4 * s + i)..]);
                let shifted = _mm512_srli_epi16(packed, 4);
                if FIFTH {
                    let fifth_low = _mm512_gf2p8affine_epi64_epi8::<0>(
                        fifth,
                        _mm512_set1_epi64(Q5K_LOW_FIFTH[i]),
                    );
                    let fifth_high = _mm512_gf2p8affine_epi64_epi8::<0>(
                        fifth,
                        _mm512_set1_epi64(Q5K_HIGH_FIFTH[i]),
                    );
                    low[i] = _mm512_ternarylogic_epi32::<AND_OR>(packed, nibbles, fifth_low);
                    high[i] = _mm512_ternarylogic_epi32::<AND_OR>(shifted, nibbles, fifth_high);
                } else {
                    low[i] = _mm512_and_si512(packed, nibbles);
                    high[i] = _mm512_and_si512(shifted, nibbles);
                }
            }
            for m in 0..M {
                let values = Q8K_VALUES + 32 * s;
                let mut group = _mm512_setzero_si512();
                for i in 0..4 {
                    group = _mm512_dpbusd_epi32(group, low[i], act[m].broadcast4(values + 8 * i));
                    group =
                        _mm512_dpbusd_epi32(group, high[i], act[m].broadcast4(values + 8 * i + 4));
                }
                dots[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(group), scale, dots[m]);
            }
        }
        // The minimums times the groups' activation sums.
        let min_pairs: [__m512i; 8] = std::array::from_fn(|s| {
            let min = _mm512_cvtepu8_epi32(load16(&tile[at.mins + 16 * s..]));
            // The minimum in both 16-bit halves, for the two 16-value sums of the group.
            _mm512_or_si512(min, _mm512_slli_epi32(min, 16))
        });
        for m in 0..M {
            let mut mins = _mm512_setzero_si512();
            for (s, pair) in min_pairs.iter().enumerate() {
                mins = _mm512_dpwssd_epi32(mins, *pair, act[m].broadcast4(Q8K_SUMS + 4 * s));
            }
            // d_a · (Σ d·scale·dot − dmin · Σ min·sum).
            let block = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(mins), dots[m]);
            add(&mut out[m], act[m].scale(), block);
        }
    }
}

/// `Q6_K` tiles × `M` `Q8_K` rows; `out[m][r]` is row `r` · act `m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c,gfni")]
fn q6k_tile<const M: usize>(
    blocks: usize,
    tiles: &[u8],
    acts: &[&[u8]; WIDE],
    out: &mut [[f32; ROWS]; WIDE],
) {
    let at = layout(Kind::Q6K);
    assert!(tiles.len() >= blocks * at.bytes, "a row of tiles");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8K.bytes, "an activation row");
    }
    let nibbles = _mm512_set1_epi8(0x0f);
    let low_halves = _mm512_set1_epi32(0xffff);
    // The sums across blocks live in `out` (sixteen rows' would not fit in registers
    // beside a block's).
    for sums in out.iter_mut().take(M) {
        *sums = [0.0; ROWS];
    }
    for b in 0..blocks {
        let tile = &tiles[b * at.bytes..(b + 1) * at.bytes];
        if M == 1 {
            prefetch_ahead(tile);
        }
        let act: [ActBlock; M] = std::array::from_fn(|m| ActBlock::new(acts[m], b));
        let d = scales(tile);
        let mut dots = [_mm512_setzero_ps(); M];
        // Per quad, the scales of its two 16-value groups as 16-bit pairs, for the offset.
        let mut scale_pairs = [_mm512_setzero_si512(); 8];
        for (quad, pair) in scale_pairs.iter_mut().enumerate() {
            let low_top = load64(&tile[at.extra + 128 * quad..]);
            let high_top = load64(&tile[at.extra + 128 * quad + 64..]);
            let mut low = [_mm512_setzero_si512(); 4];
            let mut high = [_mm512_setzero_si512(); 4];
            for i in 0..4 {
                let packed = load64(&tile[at.values + 64 * (4 * quad + i)..]);
                let moves = _mm512_set1_epi64(Q6K_TOP[i]);
                let top_low = _mm512_gf2p8affine_epi64_epi8::<0>(low_top, moves);
                let top_high = _mm512_gf2p8affine_epi64_epi8::<0>(high_top, moves);
                low[i] = _mm512_ternarylogic_epi32::<AND_OR>(packed, nibbles, top_low);
                high[i] = _mm512_ternarylogic_epi32::<AND_OR>(
                    _mm512_srli_epi16(packed, 4),
                    nibbles,
                    top_high,
                );
            }
            let signed: [__m512i; 2] = std::array::from_fn(|h| {
                _mm512_cvtepi8_epi32(load16(&tile[at.scales + 16 * (2 * quad + h)..]))
            });
            *pair = _mm512_or_si512(
                _mm512_and_si512(signed[0], low_halves),
                _mm512_slli_epi32(signed[1], 16),
            );
            let scale: [__m512; 2] =
                std::array::from_fn(|h| _mm512_mul_ps(d, _mm512_cvtepi32_ps(signed[h])));
            for m in 0..M {
                for (h, scale) in scale.iter().enumerate() {
                    // Values 16t .. 16t + 16, t = 2·quad + h: groups 2h, 2h + 1 of the quad.
                    let mut group = _mm512_setzero_si512();
                    for i in [2 * h, 2 * h + 1] {
                        let values = Q8K_VALUES + 32 * quad + 8 * i;
                        group = _mm512_dpbusd_epi32(group, low[i], act[m].broadcast4(values));
                        group = _mm512_dpbusd_epi32(group, high[i], act[m].broadcast4(values + 4));
                    }
                    dots[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(group), *scale, dots[m]);
                }
            }
        }
        // The values are unsigned (q + 32): −32 · Σ scale·sum, the sums the activations'.
        let minus_32d = _mm512_mul_ps(d, _mm512_set1_ps(-32.0));
        for m in 0..M {
            let mut offset = _mm512_setzero_si512();
            for (quad, pair) in scale_pairs.iter().enumerate() {
                let sums = act[m].broadcast4(Q8K_SUMS + 4 * quad);
                offset = _mm512_dpwssd_epi32(offset, *pair, sums);
            }
            let block = _mm512_fmadd_ps(_mm512_cvtepi32_ps(offset), minus_32d, dots[m]);
            add(&mut out[m], act[m].scale(), block);
        }
    }
}
