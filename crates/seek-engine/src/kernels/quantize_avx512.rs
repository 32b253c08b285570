//! The activations' quantization with AVX-512, the same bytes as the scalar references:
//! llama.cpp's `Q8_K` (`kquants::quantize_q8_k_scalar`) for the k-quants, and `packed`'s
//! `Q8_SUMS` (`packed::quantize_sums_scalar`: `Q8_1` with its sum) for the 32-value types.
//! Every layer of a prompt quantizes its input rows: scalar, `Q8_K` took about 3 % of a
//! prefill on the 1.5B-shaped Q6_K file, `Q8_SUMS` 6.5 % of one on SmolLM2 Q4_0.
//!
//! Owns those loops. It must not choose when they run (`kquants::quantize_q8_k`,
//! `packed::quantize_sums` do), nor change a result: `Q8_K`'s scale is the first value of
//! largest magnitude, as the scalar loop's strict comparison finds it; each value is rounded
//! with the scalar's additions in f32; a block the vector maximum would treat otherwise than
//! the scalar fold (a NaN, an infinity) is left to the scalar loop.

use std::arch::x86_64::*;

use super::kquants::{Q8K, Q8K_SUMS, Q8K_VALUES};
use super::packed::{Q8_SUMS, SUMS_VALUES};
use super::{QK, QK_K, f16_to_f32, f32_to_f16};

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

/// Quantizes `row` into `out` as `packed::quantize_sums_scalar` does (`Q8_SUMS`: the scale and
/// the scaled sum as f16 values widened to f32, the sum of the values, then the 32 values); a
/// block whose largest magnitude is not finite is left to `scalar`.
pub(super) fn quantize_sums(row: &[f32], out: &mut [u8], scalar: fn(&[f32], &mut [u8])) {
    assert!(
        available(),
        "the AVX-512 quantizer on a CPU without AVX-512"
    );
    for (values, block) in row
        .chunks_exact(QK)
        .zip(out.chunks_exact_mut(Q8_SUMS.bytes))
    {
        // SAFETY: `available()` found AVX-512 F and BW.
        if !unsafe { sums_block(values, block) } {
            scalar(values, block);
        }
    }
}

/// One `Q8_SUMS` block; `false` (and nothing written) when its largest magnitude is a NaN or
/// an infinity.
#[target_feature(enable = "avx512f,avx512bw")]
fn sums_block(values: &[f32], block: &mut [u8]) -> bool {
    assert!(
        values.len() == QK && block.len() == Q8_SUMS.bytes,
        "one block"
    );
    // SAFETY: `values` holds QK = 32 f32.
    let halves = unsafe {
        [
            _mm512_loadu_ps(values.as_ptr()),
            _mm512_loadu_ps(values.as_ptr().add(16)),
        ]
    };
    let max = _mm512_reduce_max_ps(_mm512_max_ps(
        _mm512_abs_ps(halves[0]),
        _mm512_abs_ps(halves[1]),
    ));
    // A NaN anywhere: the scalar fold skips it where the vector maximum may not.
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(halves[0], halves[0])
        | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(halves[1], halves[1]);
    if nan != 0 || !max.is_finite() {
        return false;
    }
    let scale = if max != 0.0 { 127.0 / max } else { 0.0 };
    if !scale.is_finite() {
        // A subnormal maximum: 127/max overflows, and the scalar's saturating conversions of
        // infinite products differ from the vector's.
        return false;
    }
    let d = max / 127.0;
    let shift = _mm512_set1_ps(12_582_912.0);
    let mut sum = 0i32;
    for (h, half) in halves.iter().enumerate() {
        // round_even: (x + 1.5·2²³) − 1.5·2²³, in f32, then truncated (it is integral).
        let scaled = _mm512_mul_ps(_mm512_set1_ps(scale), *half);
        let q = _mm512_cvttps_epi32(_mm512_sub_ps(_mm512_add_ps(scaled, shift), shift));
        sum += _mm512_reduce_add_epi32(q);
        let at = SUMS_VALUES + 16 * h;
        // SAFETY: 16 bytes at `at` ≤ Q8_SUMS.bytes − 16 within the block; `storeu` needs no
        // alignment. The values are within ±127, so the narrowing keeps them.
        unsafe {
            _mm_storeu_si128(
                block[at..at + 16].as_mut_ptr().cast(),
                _mm512_cvtepi32_epi8(q),
            )
        };
    }
    let widened = |value: f32| f16_to_f32(f32_to_f16(value));
    block[..4].copy_from_slice(&widened(d).to_le_bytes());
    block[4..8].copy_from_slice(&sum.to_le_bytes());
    block[8..12].copy_from_slice(&widened(d * sum as f32).to_le_bytes());
    true
}
