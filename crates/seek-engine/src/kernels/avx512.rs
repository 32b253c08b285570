//! The AVX-512 kernels (x86_64: F, BW, VL and VNNI, with AVX2, FMA and F16C), chosen at run
//! time when the CPU has them all.
//!
//! Owns the check for the CPU features, the choice among the AVX-512 kernels and what the
//! k-quants' kernels (in `avx512_k`) share: the tiling (one weight row against a tile of
//! activation rows, `avx2`'s) and the register helpers. It must not choose between instruction
//! sets or split work: `kernels` picks, `linear` splits. The 32-value formats have no kernel
//! here: on a CPU with these features their layers are packed (`packed`), and the AVX-VNNI or
//! AVX2 kernels are the ones on the file's blocks.

use std::arch::x86_64::*;

use super::Format;
use super::avx2::{TileFn, Tiles, by_tiles};

/// Whether this CPU runs these kernels.
pub fn available() -> bool {
    super::avx2::available()
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
}

/// The tile kernel of `dtype`, if there is one here (the k-quants').
pub fn tiles(dtype: candle_core::quantized::GgmlDType) -> Option<super::TileDots> {
    use candle_core::quantized::GgmlDType as T;
    Some(match dtype {
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

/// Two 256-bit halves as one register: `low` in lanes 0..8, `high` in 8..16.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn join(low: __m256i, high: __m256i) -> __m512i {
    _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1)
}

/// 64 bytes from the start of `bytes` (at least 64 long) into a register.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn load64(bytes: &[u8]) -> __m512i {
    assert!(bytes.len() >= 64, "64 bytes to load");
    // SAFETY: the assert guarantees 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}
