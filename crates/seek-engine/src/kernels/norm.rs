//! RMS normalisation computed as llama.cpp computes it: the sum of squares accumulated in f64.
//!
//! Owns that one operation, on slices and (for `model`) on tensors. It must not know about
//! layers. Why it exists beside candle's `rms_norm`: candle sums in f32, and the last bits of
//! the norm move the rounding of the next layer's quantized activations; on SmolLM2 that was
//! enough to flip a near-tie in the greedy reply that llama.cpp gives (see `linear`'s tests and
//! `tests/local/local_engine.rs`). With the sum in f64 the replies agree.

use candle_core::{DType, Device, Tensor};

/// `out = x / sqrt(mean(x²) + eps) · weight` for one row.
pub fn rms_norm_row(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    scale_row(x, weight, rms_scale(x, eps), out);
}

/// `1 / sqrt(mean(x²) + eps)` for one row.
pub fn rms_scale(x: &[f32], eps: f32) -> f32 {
    let sum: f64 = x.iter().map(|v| f64::from(v * v)).sum();
    let mean = (sum / x.len().max(1) as f64) as f32;
    1.0 / (mean + eps).sqrt()
}

/// `out = x · scale · weight`: the norm of part of a row, with the whole row's `scale`
/// ([`rms_scale`]); equal to that part of [`rms_norm_row`]'s result.
pub fn scale_row(x: &[f32], weight: &[f32], scale: f32, out: &mut [f32]) {
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * scale * w;
    }
}

/// [`rms_norm_row`] over the last dimension of `x`, with `weight` of that length.
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f32) -> candle_core::Result<Tensor> {
    let width = x.dims().last().copied().unwrap_or(0);
    if width == 0 || weight.elem_count() != width {
        candle_core::bail!(
            "rms_norm: an input of shape {:?} with a weight of {} values",
            x.dims(),
            weight.elem_count()
        );
    }
    let values = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let weight = weight
        .to_dtype(DType::F32)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let mut out = vec![0f32; values.len()];
    for (row, o) in values.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
        rms_norm_row(row, &weight, eps, o);
    }
    Tensor::from_vec(out, x.dims(), &Device::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_candles_norm_up_to_rounding() {
        let x: Vec<f32> = (0..3 * 576)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let w: Vec<f32> = (0..576).map(|i| 0.5 + (i % 13) as f32 / 10.0).collect();
        let x = Tensor::from_vec(x, (1, 3, 576), &Device::Cpu).unwrap();
        let w = Tensor::from_vec(w, 576, &Device::Cpu).unwrap();
        let ours = rms_norm(&x, &w, 1e-5).unwrap().flatten_all().unwrap();
        let candle = candle_nn::ops::rms_norm(&x, &w, 1e-5)
            .unwrap()
            .flatten_all()
            .unwrap();
        for (a, b) in ours
            .to_vec1::<f32>()
            .unwrap()
            .iter()
            .zip(candle.to_vec1::<f32>().unwrap())
        {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn a_row_of_zeros_stays_zero_and_a_bad_weight_is_an_error() {
        let mut out = [1f32; 4];
        rms_norm_row(&[0.0; 4], &[1.0; 4], 1e-6, &mut out);
        assert_eq!(out, [0.0; 4]);
        let x = Tensor::zeros((1, 2, 8), DType::F32, &Device::Cpu).unwrap();
        let w = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
        assert!(rms_norm(&x, &w, 1e-6).is_err());
    }
}
