//! Dot products between quantized weight rows and quantized activation rows, in llama.cpp's
//! block layouts: the arithmetic under `linear`.
//!
//! Owns the block formats (bytes as the GGUF file stores them), the quantization of activations
//! (`Q8_1`, `Q8_0`, `Q8_K`, rounded as llama.cpp rounds them on x86), the portable scalar
//! kernels that are the reference, and the choice of a SIMD kernel for the running CPU. It must
//! not know about shapes of layers or threads: `linear` splits the work. Only `norm` (the
//! RMS normalisation computed as llama.cpp does) takes tensors, for `model`.
//!
//! A kernel computes the dot products of several weight rows with several activation rows.
//! The SIMD kernels work in tiles: several activation rows per weight row (prefill), so that a
//! weight block is unpacked once for the tile, or several weight rows per activation row
//! (decode), so that independent sums hide the latency of the multiply-adds. A kernel's
//! activations are quantized by its own `quantize`. On a CPU with AVX-512 VNNI the layers
//! are packed into tiles of rows and multiplied by `packed`'s kernels; the AVX-512 kernels on
//! the file's blocks are the k-quants' (`avx512_k`), for a row width `packed` cannot take.

#[cfg(target_arch = "x86_64")]
mod avx2;
/// The horizontal sum attention's score loops share with the kernels.
#[cfg(target_arch = "x86_64")]
pub(crate) use avx2::hsum;
#[cfg(target_arch = "x86_64")]
mod avx2_q45;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod avx512_k;
#[cfg(target_arch = "x86_64")]
mod avxvnni;
mod kquants;
mod legacy;
pub mod norm;
pub mod packed;
#[cfg(target_arch = "x86_64")]
mod quantize_avx512;
#[cfg(test)]
mod tests;

pub use kquants::{Q4K, Q5K, Q6K, Q8K};
pub use legacy::{Q4_0, Q5_0, Q5_1};

/// Values per block of the 32-wide formats.
pub const QK: usize = 32;
/// Values per block of the k-quant formats.
pub const QK_K: usize = 256;

/// A block format: how many values a block holds and how many bytes it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub name: &'static str,
    pub values: usize,
    pub bytes: usize,
}

/// `Q4_1`: f16 scale `d`, f16 minimum `m`, 16 bytes of 4-bit values (value `j` in the low
/// nibble of byte `j`, value `j + 16` in its high nibble); `x = d·q + m`.
pub const Q4_1: Format = Format {
    name: "Q4_1",
    values: QK,
    bytes: 4 + QK / 2,
};
/// `Q8_0`: f16 scale `d`, 32 signed bytes; `x = d·q`.
pub const Q8_0: Format = Format {
    name: "Q8_0",
    values: QK,
    bytes: 2 + QK,
};
/// `Q8_1`: f16 scale `d`, f16 `s = d·Σq`, 32 signed bytes (activations for `Q4_1`).
pub const Q8_1: Format = Format {
    name: "Q8_1",
    values: QK,
    bytes: 4 + QK,
};

/// The reference kernels' shape: `out[r] = weight_row · activation row r` for `out.len()`
/// activation rows laid end to end in `acts`.
type RowDots = fn(weight_row: &[u8], acts: &[u8], out: &mut [f32]);

/// The SIMD kernels' shape: several weight rows × several activation rows of `blocks` blocks;
/// see [`Kernel::dots`].
type TileDots = fn(blocks: usize, weights: &[u8], acts: &[u8], out: &mut [f32]);

/// Quantizes one activation row into its blocks.
type Quantize = fn(row: &[f32], out: &mut [u8]);

/// A weight format, the activation format it is multiplied with, and the dot kernel chosen for
/// this CPU.
#[derive(Clone, Copy)]
pub struct Kernel {
    pub weight: Format,
    pub activation: Format,
    quantize: Quantize,
    reference: RowDots,
    tiles: Option<TileDots>,
    /// Whether a SIMD kernel computes the dots (for reports and benchmarks).
    pub simd: bool,
    /// The instruction set of the kernel: `"scalar"`, or one of [`SIMD_ISAS`].
    pub isa: &'static str,
}

/// The instruction sets our SIMD kernels are written for, slowest first.
pub const SIMD_ISAS: [&str; 3] = ["avx2", "avxvnni", "avx512vnni"];

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}×{} ({})",
            self.weight.name, self.activation.name, self.isa
        )
    }
}

impl Kernel {
    /// The kernel `linear` uses for a layer of GGML type `dtype` whose rows hold `k` values
    /// when it keeps the file's blocks, or `None` where candle's `QMatMul` computes it: types
    /// we have no kernel for, and on a CPU without AVX2 the types candle has a kernel of its own
    /// for. (On a CPU with AVX-512 VNNI `linear` packs every layer of these types into tiles,
    /// see `packed`, so this choice is for other CPUs.)
    ///
    /// Ours for `Q4_1`, `Q5_0` and `Q5_1` always (candle has no fast x86 kernel for them), and
    /// for the others where ours are SIMD. Candle's repacked `Q8_0`, `Q4_K` and `Q6_K` kernels
    /// are faster than ours on one matrix and one thread, but in the engine a layer candle
    /// computes is one item of the forward pass's team while candle's own thread pool competes
    /// with the team for the cores. Measured with `cargo bench -p seek-engine --bench forward`
    /// on SmolLM2-135M, 2 threads, on this AVX-512 machine before layers were packed (AVX-512
    /// kernels on the file's blocks, since removed), ours against candle's: `Q8_0` 265 / 72
    /// tokens/s prefill (500 tokens), 40 / 7 decode; `Q6_K` 295 / 74 and 42 / 8; `Q4_K_M` 216 /
    /// 230 and 37 / 16 (load average 5-6, so low for both). Not measured on an AVX2-only CPU.
    pub fn for_layer(dtype: candle_core::quantized::GgmlDType, k: usize) -> Option<Self> {
        use candle_core::quantized::GgmlDType as T;
        match dtype {
            T::Q4_1 | T::Q5_0 | T::Q5_1 => Self::ours_for(dtype, k),
            T::Q4_0 | T::Q5K | T::Q8_0 | T::Q4K | T::Q6K => {
                Self::ours_for(dtype, k).filter(|kernel| kernel.simd)
            }
            _ => None,
        }
    }

    /// Our fastest kernel for `dtype` on this CPU (SIMD when the CPU has it), whether or not
    /// `linear` prefers it; `None` for types we have no kernel for. It may take only some row
    /// widths (see [`Kernel::takes`]); [`Kernel::ours_for`] chooses for a width.
    pub fn ours(dtype: candle_core::quantized::GgmlDType) -> Option<Self> {
        let scalar = Self::scalar(dtype)?;
        Some(Self::variants(dtype).pop().unwrap_or(scalar))
    }

    /// Our fastest kernel for `dtype` that takes rows of `k` values; `None` for types we have
    /// no kernel for or a width no kernel of ours takes.
    pub fn ours_for(dtype: candle_core::quantized::GgmlDType, k: usize) -> Option<Self> {
        let scalar = Self::scalar(dtype)?;
        Self::variants(dtype)
            .into_iter()
            .rev()
            .chain([scalar])
            .find(|kernel| kernel.takes(k))
    }

    /// Whether this kernel multiplies rows of `k` values: whole blocks of its weight format
    /// and of its activation format.
    pub fn takes(&self, k: usize) -> bool {
        k > 0 && k.is_multiple_of(self.weight.values) && k.is_multiple_of(self.activation.values)
    }

    /// Every SIMD kernel for `dtype` this CPU runs, slowest first (for tests and benchmarks,
    /// which compare each with the reference and with the others).
    pub fn variants(dtype: candle_core::quantized::GgmlDType) -> Vec<Self> {
        simd_kernels(dtype)
    }

    /// The portable reference kernel for `dtype`.
    pub fn scalar(dtype: candle_core::quantized::GgmlDType) -> Option<Self> {
        use candle_core::quantized::GgmlDType as T;
        let (weight, activation, quantize, reference): (_, _, Quantize, RowDots) = match dtype {
            T::Q4_0 => (Q4_0, Q8_0, quantize_q8_0, legacy::scalar_q4_0),
            T::Q4_1 => (Q4_1, Q8_1, quantize_q8_1, scalar_q4_1),
            T::Q5_0 => (Q5_0, Q8_0, quantize_q8_0, legacy::scalar_q5_0),
            T::Q5_1 => (Q5_1, Q8_1, quantize_q8_1, legacy::scalar_q5_1),
            T::Q8_0 => (Q8_0, Q8_0, quantize_q8_0, scalar_q8_0),
            T::Q4K => (Q4K, Q8K, kquants::quantize_q8_k, kquants::scalar_q4_k),
            T::Q5K => (Q5K, Q8K, kquants::quantize_q8_k, kquants::scalar_q5_k),
            T::Q6K => (Q6K, Q8K, kquants::quantize_q8_k, kquants::scalar_q6_k),
            _ => return None,
        };
        Some(Self {
            weight,
            activation,
            quantize,
            reference,
            tiles: None,
            simd: false,
            isa: "scalar",
        })
    }

    /// Bytes of one quantized activation row of `k` values.
    pub fn activation_row_bytes(&self, k: usize) -> usize {
        k / self.activation.values * self.activation.bytes
    }

    /// Bytes of one weight row of `k` values.
    pub fn weight_row_bytes(&self, k: usize) -> usize {
        k / self.weight.values * self.weight.bytes
    }

    /// Quantizes one row of `k` activations (`k` a multiple of the block size) into `out`
    /// (`activation_row_bytes(k)` bytes).
    pub fn quantize(&self, row: &[f32], out: &mut [u8]) {
        assert_eq!(
            row.len() % self.activation.values,
            0,
            "a whole number of blocks"
        );
        assert_eq!(
            out.len(),
            self.activation_row_bytes(row.len()),
            "room for the row"
        );
        (self.quantize)(row, out)
    }

    /// The dot products of `weights` (whole rows of `k` values) with `acts` (whole rows of `k`
    /// values quantized by [`Kernel::quantize`]; `k` one the kernel [`takes`](Kernel::takes)):
    /// `out[w · R + r]` = weight row `w` · activation row `r`, for `R` activation rows. Panics if the lengths disagree (a bug in the caller, never bad input:
    /// `linear` checks shapes before).
    pub fn dots(&self, k: usize, weights: &[u8], acts: &[u8], out: &mut [f32]) {
        let (weight_bytes, act_bytes) = (self.weight_row_bytes(k), self.activation_row_bytes(k));
        assert!(
            self.takes(k),
            "{k} is a positive number of {} and {} blocks",
            self.weight.name,
            self.activation.name
        );
        let (weight_rows, act_rows) = (weights.len() / weight_bytes, acts.len() / act_bytes);
        assert_eq!(
            weights.len(),
            weight_rows * weight_bytes,
            "whole weight rows"
        );
        assert_eq!(acts.len(), act_rows * act_bytes, "whole activation rows");
        assert_eq!(
            out.len(),
            weight_rows * act_rows,
            "one output per pair of rows"
        );
        if act_rows == 0 {
            return;
        }
        match self.tiles {
            Some(tiles) => tiles(k / self.weight.values, weights, acts, out),
            None => {
                for (row, o) in weights
                    .chunks_exact(weight_bytes)
                    .zip(out.chunks_exact_mut(act_rows))
                {
                    (self.reference)(row, acts, o)
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn simd_kernels(dtype: candle_core::quantized::GgmlDType) -> Vec<Kernel> {
    use candle_core::quantized::GgmlDType as T;
    let Some(scalar) = Kernel::scalar(dtype) else {
        return Vec::new();
    };
    let with = |tiles: TileDots, isa: &'static str| Kernel {
        tiles: Some(tiles),
        simd: true,
        isa,
        ..scalar
    };
    let mut kernels = Vec::new();
    if avx2::available() {
        let tiles: Option<TileDots> = match dtype {
            T::Q4_0 => Some(avx2_q45::q4_0),
            T::Q4_1 => Some(avx2::q4_1),
            T::Q5_0 => Some(avx2_q45::q5_0),
            T::Q5_1 => Some(avx2_q45::q5_1),
            T::Q8_0 => Some(avx2::q8_0),
            T::Q4K => Some(avx2::q4_k),
            T::Q5K => Some(avx2_q45::q5_k),
            T::Q6K => Some(avx2::q6_k),
            _ => None,
        };
        kernels.extend(tiles.map(|t| with(t, SIMD_ISAS[0])));
    }
    if avxvnni::available() {
        kernels.extend(avxvnni::tiles(dtype).map(|t| with(t, SIMD_ISAS[1])));
    }
    if avx512::available() {
        kernels.extend(avx512::tiles(dtype).map(|t| with(t, SIMD_ISAS[2])));
    }
    kernels
}

#[cfg(not(target_arch = "x86_64"))]
fn simd_kernels(_: candle_core::quantized::GgmlDType) -> Vec<Kernel> {
    Vec::new()
}

/// The f16 at `bytes[at..at + 2]` (little-endian), as f32.
#[inline]
pub fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// IEEE half to single precision (exact: every half is a single).
pub fn f16_to_f32(half: u16) -> f32 {
    let sign = u32::from(half & 0x8000) << 16;
    let exponent = u32::from(half >> 10) & 0x1f;
    let mantissa = u32::from(half & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: shift the mantissa up until its leading one is the implicit bit.
            let shift = mantissa.leading_zeros() - 21;
            let mantissa = (mantissa << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (mantissa << 13)
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000 | (mantissa << 13),
        _ => sign | ((exponent + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(bits)
}

/// Single to half precision, rounding to nearest even (as F16C's `vcvtps2ph` with mode 0 does).
pub fn f32_to_f16(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x007f_ffff;
    if exponent == 0xff {
        let nan = if mantissa != 0 { 0x200 } else { 0 };
        return sign | 0x7c00 | nan | (mantissa >> 13) as u16;
    }
    let half_exponent = exponent - 127 + 15;
    if half_exponent >= 0x1f {
        return sign | 0x7c00;
    }
    // The significand with its implicit bit, and how many low bits the half drops.
    let (significand, dropped, base) = if half_exponent <= 0 {
        if half_exponent < -10 {
            return sign;
        }
        (mantissa | 0x0080_0000, (14 - half_exponent) as u32, 0u32)
    } else {
        (mantissa, 13u32, (half_exponent as u32) << 10)
    };
    let kept = significand >> dropped;
    let remainder = significand & ((1 << dropped) - 1);
    let halfway = 1u32 << (dropped - 1);
    let round_up = remainder > halfway || (remainder == halfway && kept & 1 == 1);
    // A carry out of the mantissa correctly bumps the exponent (or reaches infinity).
    sign | (base + kept + u32::from(round_up)) as u16
}

/// Round half to even, as x86's `vroundps` with the nearest mode (llama.cpp's AVX path), for
/// |x| ≤ 2²², which quantized values (|x| ≤ 127) always are.
///
/// Adding 1.5·2²³ leaves no fraction bits, so the addition itself rounds (to nearest even,
/// the default mode); subtracting it back is exact. `round_ties_even` would call libm's
/// `rintf` here (no SSE4.1 at compile time), which cost 7 % of a decode step.
#[inline]
fn round_even(x: f32) -> i32 {
    const SHIFT: f32 = 12_582_912.0;
    ((x + SHIFT) - SHIFT) as i32
}

/// The largest magnitude in a block.
fn abs_max(block: &[f32]) -> f32 {
    block.iter().fold(0f32, |m, x| m.max(x.abs()))
}

/// Quantizes activations to `Q8_0`, as llama.cpp's x86 `quantize_row_q8_0` does.
pub fn quantize_q8_0(row: &[f32], out: &mut [u8]) {
    for (values, block) in row.chunks_exact(QK).zip(out.chunks_exact_mut(Q8_0.bytes)) {
        let max = abs_max(values);
        let scale = if max != 0.0 { 127.0 / max } else { 0.0 };
        block[..2].copy_from_slice(&f32_to_f16(max / 127.0).to_le_bytes());
        for (q, x) in block[2..].iter_mut().zip(values) {
            *q = round_even(x * scale) as i8 as u8;
        }
    }
}

/// Quantizes activations to `Q8_1`, as llama.cpp's x86 `quantize_row_q8_1` does.
pub fn quantize_q8_1(row: &[f32], out: &mut [u8]) {
    for (values, block) in row.chunks_exact(QK).zip(out.chunks_exact_mut(Q8_1.bytes)) {
        let max = abs_max(values);
        let scale = if max != 0.0 { 127.0 / max } else { 0.0 };
        let d = max / 127.0;
        let mut sum = 0i32;
        for (q, x) in block[4..].iter_mut().zip(values) {
            let v = round_even(x * scale);
            sum += v;
            *q = v as i8 as u8;
        }
        block[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
        block[2..4].copy_from_slice(&f32_to_f16(d * sum as f32).to_le_bytes());
    }
}

/// The reference `Q4_1 × Q8_1` kernel.
fn scalar_q4_1(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4_1.bytes * Q8_1.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q4_1.bytes)
            .zip(act.chunks_exact(Q8_1.bytes))
        {
            let packed = &w[4..];
            let q = &a[4..];
            let mut dot = 0i32;
            for j in 0..QK / 2 {
                dot += i32::from(packed[j] & 0x0f) * i32::from(q[j] as i8);
                dot += i32::from(packed[j] >> 4) * i32::from(q[j + QK / 2] as i8);
            }
            sum += f16_at(w, 0) * f16_at(a, 0) * dot as f32 + f16_at(w, 2) * f16_at(a, 2);
        }
        *o = sum;
    }
}

/// The reference `Q8_0 × Q8_0` kernel.
fn scalar_q8_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len();
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q8_0.bytes)
            .zip(act.chunks_exact(Q8_0.bytes))
        {
            let dot: i32 = w[2..]
                .iter()
                .zip(&a[2..])
                .map(|(&x, &y)| i32::from(x as i8) * i32::from(y as i8))
                .sum();
            sum += f16_at(w, 0) * f16_at(a, 0) * dot as f32;
        }
        *o = sum;
    }
}
