//! llama.cpp's `Q8_K` activation quantization with AVX-512, the same bytes as the scalar
//! reference (`kquants::quantize_q8_k_scalar`): every k-quant layer of a prompt quantizes its
//! input rows, which scalar took about 3 % of a prefill on the 1.5B-shaped Q6_K file.
//!
//! Owns that loop. It must not choose when it runs (`kquants::quantize_q8_k` does), nor change
//! a result: the scale is the first value of largest magnitude, as the scalar loop's strict
//! comparison finds it, and each value is rounded with the scalar's additions in f32.

use std::arch::x86_64::*;

use super::QK_K;
use super::kquants::{Q8K, Q8K_SUMS, Q8K_VALUES};

/// Whether this CPU runs [`quantize_q8_k`].
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
}

/// Quantizes `row` into `out` as `kquants::quantize_q8_k_scalar` does; a block holding a NaN
/// is left to `scalar` (which ignores it for the scale, where a vector maximum would not).
pub(super) fn quantize_q8_k(row: &[f32], out: &mut [u8], scalar: fn(&[f32], &mut [u8])) {
    assert!(
        available(),
        "the AVX-512 quantizer on a CPU without AVX-512"
    );
    for (values, block) in row.chunks_exact(QK_K).zip(out.chunks_exact_mut(Q8K.bytes)) {
        // SAFETY: `available()` found AVX-512 F and BW.
        if !unsafe { quantize_block(values, block) } {
            scalar(values, block);
        }
    }
}

/// One block; `false` (and nothing written) when it holds a NaN.
#[target_feature(enable = "avx512f,avx512bw")]
fn quantize_block(values: &[f32], block: &mut [u8]) -> bool {
    assert!(
        values.len() == QK_K && block.len() == Q8K.bytes,
        "one block"
    );
    let load = |c: usize| -> __m512 {
        // SAFETY: `values` holds QK_K = 256 f32 and 16c + 16 ≤ 256.
        unsafe { _mm512_loadu_ps(values.as_ptr().add(16 * c)) }
    };
    let mut largest = _mm512_setzero_ps();
    for c in 0..QK_K / 16 {
        let x = load(c);
        if _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x) != 0 {
            return false;
        }
        largest = _mm512_max_ps(largest, _mm512_abs_ps(x));
    }
    let amax = _mm512_reduce_max_ps(largest);
    if amax == 0.0 {
        block.fill(0);
        return true;
    }
    // The first value of that magnitude, as the scalar's `|x| > amax` keeps it.
    let mut max = amax;
    for c in 0..QK_K / 16 {
        let hits = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_abs_ps(load(c)), _mm512_set1_ps(amax));
        if hits != 0 {
            max = values[16 * c + hits.trailing_zeros() as usize];
            break;
        }
    }
    let inverse = -127.0 / max;
    let shift = _mm512_set1_ps(12_582_912.0);
    for c in 0..QK_K / 16 {
        // round_even: (x + 1.5·2²³) − 1.5·2²³, in f32, then truncated (it is integral).
        let scaled = _mm512_mul_ps(_mm512_set1_ps(inverse), load(c));
        let rounded = _mm512_sub_ps(_mm512_add_ps(scaled, shift), shift);
        let q = _mm512_min_epi32(_mm512_cvttps_epi32(rounded), _mm512_set1_epi32(127));
        let bytes = _mm512_cvtepi32_epi8(q);
        let at = Q8K_VALUES + 16 * c;
        // SAFETY: 16 bytes at `at` ≤ Q8K_SUMS − 16 within the block; `storeu` needs no
        // alignment.
        unsafe { _mm_storeu_si128(block[at..at + 16].as_mut_ptr().cast(), bytes) };
        // Each 16 values are one group of the sums.
        let sum = _mm512_reduce_add_epi32(q) as i16;
        block[Q8K_SUMS + 2 * c..Q8K_SUMS + 2 * c + 2].copy_from_slice(&sum.to_le_bytes());
    }
    block[..4].copy_from_slice(&(1.0 / inverse).to_le_bytes());
    true
}
