//! A linear layer over quantized weights: `y = x · Wᵀ`, with `W` repacked into tiles of rows
//! where the CPU has those kernels (`kernels::packed`), else kept in the file's blocks.
//!
//! Owns one matrix product: whole, split over the threads of the current rayon pool (the
//! engine's `[local] threads`) with the activations' quantization (`forward`, `forward_rows`),
//! or a range of weight rows at a time for a caller that splits the work itself (`Blocks`,
//! which the forward pass's team of threads uses); the block arithmetic is in `kernels`.
//! Weight types we have no kernel for (or, on a CPU without AVX2, a SIMD kernel for; see
//! `Kernel::for_layer`) use candle's `QMatMul`. It must not know about layers, attention or
//! tokens: `model` decides what is multiplied with what.
//!
//! The weights are never dequantized. A packed layer holds its tiles in place of the file's
//! bytes (the `QTensor` is dropped); otherwise the kernels read the `QTensor`'s bytes.

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use rayon::prelude::*;

use crate::kernels::Kernel;
use crate::kernels::packed::{self, Packed};

/// Activation rows multiplied with a weight row before moving to the next weight row: small
/// enough that the rows stay in L1 while a task's weight rows pass over them.
const ACTIVATION_GROUP: usize = 32;

/// A quantized weight matrix `(n, k)` and how to multiply by it.
pub struct Linear {
    inner: Inner,
}

enum Inner {
    /// Our kernels on the tensor's own bytes.
    Blocks {
        weight: Arc<QTensor>,
        kernel: Kernel,
        n: usize,
        k: usize,
    },
    /// `Q8_0`/`Q4_0` repacked into tiles of rows, in place of the file's bytes.
    Packed { packed: Packed, kernel: Kernel },
    /// A weight type we have no kernel for.
    Candle(QMatMul),
}

impl std::fmt::Debug for Linear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Blocks { kernel, n, k, .. } => write!(f, "Linear({n}×{k}, {kernel:?})"),
            Inner::Packed { packed, .. } => write!(f, "Linear({packed:?})"),
            Inner::Candle(_) => write!(f, "Linear(candle QMatMul)"),
        }
    }
}

impl Linear {
    /// A layer over `weight`, a `(n, k)` matrix (outputs × inputs).
    pub fn new(weight: QTensor) -> candle_core::Result<Self> {
        Self::from_arc(Arc::new(weight))
    }

    /// A layer over a shared weight (the embedding reused as the output projection).
    ///
    /// `Q8_0` and `Q4_0` weights are repacked (see `kernels::packed`) where the CPU has the
    /// kernels: the layer then holds the packed copy, and the file's bytes are freed unless
    /// another holder (the embedding) keeps them.
    pub fn from_arc(weight: Arc<QTensor>) -> candle_core::Result<Self> {
        if let Some(layer) = Self::packed(&weight)? {
            return Ok(layer);
        }
        let (_, k) = weight.shape().dims2()?;
        let kernel = Kernel::for_layer(weight.dtype(), k);
        Self::with_kernel(weight, kernel)
    }

    /// The layer over `weight` repacked, or `None` where it is not packed.
    pub fn packed(weight: &QTensor) -> candle_core::Result<Option<Self>> {
        let (n, k) = weight.shape().dims2()?;
        let data = weight.data()?;
        Ok(Packed::new(weight.dtype(), &data, n, k).map(|packed| Self {
            inner: Inner::Packed {
                kernel: packed.kernel(),
                packed,
            },
        }))
    }

    /// A layer computed with `kernel` (it must be for the weight's type), or with candle's
    /// `QMatMul` for `None`: for tests and benchmarks that compare them.
    pub fn with_kernel(weight: Arc<QTensor>, kernel: Option<Kernel>) -> candle_core::Result<Self> {
        let (n, k) = weight.shape().dims2()?;
        if let Some(kernel) = kernel
            && Kernel::scalar(weight.dtype()).map(|s| s.weight) != Some(kernel.weight)
        {
            candle_core::bail!(
                "a {} kernel cannot multiply a {:?} weight",
                kernel.weight.name,
                weight.dtype()
            );
        }
        let inner = match kernel {
            Some(kernel) if kernel.takes(k) => {
                let bytes = weight.data()?.len();
                if bytes != n * kernel.weight_row_bytes(k) {
                    candle_core::bail!(
                        "a {:?} weight of shape ({n}, {k}) should take {} bytes, it has {bytes}",
                        weight.dtype(),
                        n * kernel.weight_row_bytes(k)
                    );
                }
                Inner::Blocks {
                    weight,
                    kernel,
                    n,
                    k,
                }
            }
            _ => Inner::Candle(QMatMul::from_arc(weight)?),
        };
        Ok(Self { inner })
    }

    /// Whether our kernels (rather than candle's) compute this layer.
    pub fn kernel(&self) -> Option<Kernel> {
        match &self.inner {
            Inner::Blocks { kernel, .. } | Inner::Packed { kernel, .. } => Some(*kernel),
            Inner::Candle(_) => None,
        }
    }

    /// Whether the layer holds its weights repacked (not the file's bytes).
    pub fn is_packed(&self) -> bool {
        matches!(self.inner, Inner::Packed { .. })
    }

    /// Weight row `r` as values into `out` (`k` long), for a packed layer (a token embedding
    /// shared with the output projection); an error for a row past the matrix or another
    /// kind of layer.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) -> candle_core::Result<()> {
        match &self.inner {
            Inner::Packed { packed, .. } if packed.dequantize_row(r, out) => Ok(()),
            Inner::Packed { packed, .. } => {
                candle_core::bail!("no row {r} of {} in a {packed:?} layer", out.len())
            }
            _ => candle_core::bail!("only a packed layer's rows are read one by one"),
        }
    }

    /// `(n, k)`: outputs × inputs.
    pub fn dims(&self) -> candle_core::Result<(usize, usize)> {
        match &self.inner {
            Inner::Blocks { n, k, .. } => Ok((*n, *k)),
            Inner::Packed { packed, .. } => Ok(packed.dims()),
            Inner::Candle(QMatMul::QTensor(weight)) => weight.shape().dims2(),
            Inner::Candle(QMatMul::Tensor(weight) | QMatMul::TensorF16(weight)) => weight.dims2(),
        }
    }

    /// The layer as our kernel sees it, for a caller that splits the work itself; `None` for
    /// a layer candle computes.
    pub fn blocks(&self) -> Option<Blocks<'_>> {
        match &self.inner {
            Inner::Blocks {
                weight,
                kernel,
                n,
                k,
            } => match weight.data().ok()? {
                // A CPU tensor's data is always borrowed; a copy would be a device's.
                std::borrow::Cow::Borrowed(weights) => Some(Blocks {
                    kernel: *kernel,
                    weights,
                    packed: None,
                    n: *n,
                    k: *k,
                }),
                std::borrow::Cow::Owned(_) => None,
            },
            Inner::Packed { packed, kernel } => {
                let (n, k) = packed.dims();
                Some(Blocks {
                    kernel: *kernel,
                    weights: &[],
                    packed: Some(packed),
                    n,
                    k,
                })
            }
            Inner::Candle(_) => None,
        }
    }

    /// `input (rows, k) · Wᵀ` → `(rows, n)`, row-major, on the current rayon pool.
    pub fn forward_rows(&self, input: &[f32]) -> candle_core::Result<Vec<f32>> {
        let (n, k) = self.dims()?;
        if k == 0 || !input.len().is_multiple_of(k) {
            candle_core::bail!("{} inputs are not rows of {k}", input.len());
        }
        match &self.inner {
            Inner::Blocks { weight, kernel, .. } => {
                Ok(multiply(kernel, &weight.data()?, (n, k), input))
            }
            Inner::Packed { packed, kernel } => Ok(multiply_packed(packed, kernel, input)),
            Inner::Candle(matmul) => {
                let x = Tensor::from_slice(input, (input.len() / k, k), &Device::Cpu)?;
                matmul.forward(&x)?.flatten_all()?.to_vec1::<f32>()
            }
        }
    }

    /// `x · Wᵀ` for `x` of shape `(…, k)`, giving `(…, n)`.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match &self.inner {
            Inner::Candle(matmul) => matmul.forward(x),
            Inner::Packed { .. } => {
                let dims = x.dims();
                let Some((&width, leading)) = dims.split_last() else {
                    candle_core::bail!("a linear layer's input cannot be a scalar");
                };
                let (n, k) = self.dims()?;
                if width != k {
                    candle_core::bail!(
                        "the input's last dimension is {width}, the weight ({n}, {k}) takes {k}"
                    );
                }
                let input = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                let out = self.forward_rows(&input)?;
                let mut shape = leading.to_vec();
                shape.push(n);
                Tensor::from_vec(out, shape, &Device::Cpu)
            }
            Inner::Blocks {
                weight,
                kernel,
                n,
                k,
            } => {
                let dims = x.dims();
                let Some((&width, leading)) = dims.split_last() else {
                    candle_core::bail!("a linear layer's input cannot be a scalar");
                };
                if width != *k {
                    candle_core::bail!(
                        "the input's last dimension is {width}, the weight ({n}, {k}) takes {k}"
                    );
                }
                let input = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                let weights = weight.data()?;
                let out = multiply(kernel, &weights, (*n, *k), &input);
                let mut shape = leading.to_vec();
                shape.push(*n);
                Tensor::from_vec(out, shape, &Device::Cpu)
            }
        }
    }
}

/// A layer's weights in our kernel's blocks, borrowed from the layer.
#[derive(Clone, Copy)]
pub struct Blocks<'a> {
    pub kernel: Kernel,
    weights: &'a [u8],
    /// The weights in tiles, in place of `weights`, for a packed layer.
    packed: Option<&'a Packed>,
    /// Outputs (weight rows) and inputs (values per row).
    pub n: usize,
    pub k: usize,
}

impl Blocks<'_> {
    /// Bytes of one quantized input row.
    pub fn activation_row_bytes(&self) -> usize {
        self.kernel.activation_row_bytes(self.k)
    }

    /// The dot products of weight rows `rows` with every quantized input row in `acts`, into
    /// `out` weight row by weight row: `out[i · R + r]` = weight row `rows.start + i` · input
    /// row `r`, for `R` input rows. Each result is the same whatever `R` and `rows` are.
    pub fn multiply_rows(&self, rows: std::ops::Range<usize>, acts: &[u8], out: &mut [f32]) {
        if let Some(packed) = self.packed {
            packed.multiply(rows, acts, out);
            return;
        }
        let (act_bytes, weight_bytes) = (
            self.activation_row_bytes(),
            self.kernel.weight_row_bytes(self.k),
        );
        let inputs = acts.len() / act_bytes.max(1);
        let weights = &self.weights[rows.start * weight_bytes..rows.end * weight_bytes];
        if inputs <= 1 {
            self.kernel.dots(self.k, weights, acts, out);
            return;
        }
        if inputs <= ACTIVATION_GROUP {
            self.kernel.dots(self.k, weights, acts, out);
            return;
        }
        let mut group_out = Vec::new();
        group_products(
            &self.kernel,
            self.k,
            weights,
            acts,
            inputs,
            out,
            &mut group_out,
        );
    }
}

/// `out[i · R + r]` = weight row `i` · input row `r` for the `R` input rows in `acts`, a group
/// of input rows at a time: the group stays in cache while the weight rows pass over it, and
/// the kernel takes all the weight rows at once, so that it can tile several of them with
/// several input rows. `scratch` holds a group's results before they go to their places.
fn group_products(
    kernel: &Kernel,
    k: usize,
    weights: &[u8],
    acts: &[u8],
    inputs: usize,
    out: &mut [f32],
    scratch: &mut Vec<f32>,
) {
    let act_bytes = kernel.activation_row_bytes(k);
    let weight_rows = weights.len() / kernel.weight_row_bytes(k).max(1);
    for group in (0..inputs).step_by(ACTIVATION_GROUP) {
        let group_rows = ACTIVATION_GROUP.min(inputs - group);
        let group_acts = &acts[group * act_bytes..(group + group_rows) * act_bytes];
        scratch.clear();
        scratch.resize(weight_rows * group_rows, 0.0);
        kernel.dots(k, weights, group_acts, scratch);
        for (i, results) in scratch.chunks_exact(group_rows).enumerate() {
            out[i * inputs + group..i * inputs + group + group_rows].copy_from_slice(results);
        }
    }
}

/// `(rows, n)` row-major from `columns`, `(n, rows)` row-major (a weight row's products with
/// every input row together, as the kernels give them).
fn rows_of_columns(columns: &[f32], rows: usize) -> Vec<f32> {
    let n = columns.len() / rows.max(1);
    let mut out = vec![0f32; rows * n];
    for (j, column) in columns.chunks_exact(rows).enumerate() {
        for (s, v) in column.iter().enumerate() {
            out[s * n + j] = *v;
        }
    }
    out
}

/// `input (rows, k) · packedᵀ` → `(rows, n)`, row-major, on the current rayon pool, a few
/// tiles of weight rows per task.
fn multiply_packed(packed: &Packed, kernel: &Kernel, input: &[f32]) -> Vec<f32> {
    let (n, k) = packed.dims();
    let rows = input.len() / k;
    if rows == 0 || n == 0 {
        return Vec::new();
    }
    let act_bytes = kernel.activation_row_bytes(k);
    let mut acts = vec![0u8; rows * act_bytes];
    acts.par_chunks_mut(act_bytes)
        .zip(input.par_chunks(k))
        .for_each(|(q, x)| kernel.quantize(x, q));
    let tiles = n.div_ceil(packed::ROWS);
    let per_task = tiles.div_ceil(rayon::current_num_threads() * 4).max(1) * packed::ROWS;
    let mut transposed = vec![0f32; n * rows];
    transposed
        .par_chunks_mut(per_task * rows)
        .enumerate()
        .for_each(|(task, outs)| {
            let first = task * per_task;
            packed.multiply(first..first + outs.len() / rows, &acts, outs);
        });
    rows_of_columns(&transposed, rows)
}

/// `input (rows, k) · weights (n, k)ᵀ` → `(rows, n)`, row-major, on the current rayon pool.
fn multiply(kernel: &Kernel, weights: &[u8], (n, k): (usize, usize), input: &[f32]) -> Vec<f32> {
    let rows = input.len() / k;
    if rows == 0 || n == 0 {
        return Vec::new();
    }
    let act_bytes = kernel.activation_row_bytes(k);
    let weight_bytes = kernel.weight_row_bytes(k);
    let mut acts = vec![0u8; rows * act_bytes];
    if rows > 1 {
        acts.par_chunks_mut(act_bytes)
            .zip(input.par_chunks(k))
            .for_each(|(q, x)| kernel.quantize(x, q));
    } else {
        kernel.quantize(input, &mut acts);
    }
    // A few tasks per thread so that a slow thread (the machine is shared) is caught up on.
    let per_task = n
        .div_ceil(rayon::current_num_threads() * 4)
        .clamp(8, 256)
        .min(n);
    if rows == 1 {
        let mut out = vec![0f32; n];
        out.par_chunks_mut(per_task)
            .enumerate()
            .for_each(|(task, outs)| {
                let first = task * per_task;
                let rows = &weights[first * weight_bytes..(first + outs.len()) * weight_bytes];
                kernel.dots(k, rows, &acts, outs);
            });
        return out;
    }
    // Each task fills `per_task` weight rows' results for every activation row: (n, rows).
    let mut transposed = vec![0f32; n * rows];
    transposed
        .par_chunks_mut(per_task * rows)
        .enumerate()
        .for_each_init(Vec::new, |scratch, (task, outs)| {
            let first = task * per_task;
            let count = outs.len() / rows;
            let task_weights = &weights[first * weight_bytes..(first + count) * weight_bytes];
            group_products(kernel, k, task_weights, &acts, rows, outs, scratch);
        });
    rows_of_columns(&transposed, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;

    /// Deterministic values in [-1, 1) with a few larger outliers, like activations.
    fn values(count: usize, seed: u64) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..count)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let v = (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                if i % 97 == 0 { v * 8.0 } else { v }
            })
            .collect()
    }

    fn weight(dtype: GgmlDType, n: usize, k: usize, seed: u64) -> QTensor {
        let dense = Tensor::from_vec(values(n * k, seed), (n, k), &Device::Cpu).unwrap();
        QTensor::quantize(&dense, dtype).unwrap()
    }

    /// Both results within a tolerance scaled by the size of the products.
    fn assert_close(ours: &Tensor, reference: &Tensor, tolerance: f32) {
        assert_eq!(ours.dims(), reference.dims());
        let ours = ours.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let reference = reference.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let scale = reference.iter().fold(1f32, |m, v| m.max(v.abs()));
        for (i, (a, b)) in ours.iter().zip(&reference).enumerate() {
            assert!(
                (a - b).abs() <= tolerance * scale,
                "element {i}: {a} vs {b} (scale {scale})"
            );
        }
    }

    #[test]
    fn equals_candles_quantized_matmul_on_odd_shapes() {
        // Even block counts: candle's Q4_1 kernel asserts them (ours need not; see `kernels`).
        for dtype in [
            GgmlDType::Q4_0,
            GgmlDType::Q4_1,
            GgmlDType::Q5_0,
            GgmlDType::Q5_1,
            GgmlDType::Q8_0,
        ] {
            for (n, k, seq) in [
                (1, 64, 1),
                (37, 128, 1),
                (45, 192, 3),
                (130, 64, 37),
                (9, 64, 5),
            ] {
                let w = weight(dtype, n, k, n as u64 * 31 + k as u64);
                let x =
                    Tensor::from_vec(values(seq * k, 7 + seq as u64), (1, seq, k), &Device::Cpu)
                        .unwrap();
                let reference =
                    QMatMul::from_qtensor(weight(dtype, n, k, n as u64 * 31 + k as u64))
                        .unwrap()
                        .forward(&x)
                        .unwrap();
                let linear = Linear::with_kernel(Arc::new(w), Kernel::ours(dtype)).unwrap();
                assert!(linear.kernel().is_some(), "{dtype:?} has a kernel");
                // Candle rounds activations slightly differently (half away from zero).
                assert_close(&linear.forward(&x).unwrap(), &reference, 2e-2);
            }
        }
    }

    #[test]
    fn k_quants_equal_candles_quantized_matmul() {
        for dtype in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K] {
            for (n, k, seq) in [(3, 256, 1), (21, 512, 1), (10, 768, 6)] {
                let seed = n as u64 * 7 + k as u64;
                let x = Tensor::from_vec(values(seq * k, seed), (1, seq, k), &Device::Cpu).unwrap();
                let reference = QMatMul::from_qtensor(weight(dtype, n, k, seed))
                    .unwrap()
                    .forward(&x)
                    .unwrap();
                // Linear may leave these types to candle; ours are compared to it explicitly.
                let linear =
                    Linear::with_kernel(Arc::new(weight(dtype, n, k, seed)), Kernel::ours(dtype))
                        .unwrap();
                assert!(linear.kernel().is_some(), "{dtype:?} has a kernel");
                assert_close(&linear.forward(&x).unwrap(), &reference, 2e-2);
            }
        }
    }

    #[test]
    fn each_row_of_a_batch_equals_the_row_alone() {
        // An odd number of 32-value blocks (9), so that the AVX-512 kernels' tail block is in it.
        for (dtype, k) in [
            (GgmlDType::Q4_0, 288),
            (GgmlDType::Q4_1, 288),
            (GgmlDType::Q5_0, 288),
            (GgmlDType::Q5_1, 288),
            (GgmlDType::Q8_0, 288),
            (GgmlDType::Q4K, 512),
            (GgmlDType::Q5K, 512),
            (GgmlDType::Q6K, 512),
        ] {
            let (n, seq) = (70, 11);
            let linear =
                Linear::with_kernel(Arc::new(weight(dtype, n, k, 3)), Kernel::ours_for(dtype, k))
                    .unwrap();
            let x = Tensor::from_vec(values(seq * k, 5), (1, seq, k), &Device::Cpu).unwrap();
            let batch = linear.forward(&x).unwrap();
            for s in 0..seq {
                let alone = linear.forward(&x.narrow(1, s, 1).unwrap()).unwrap();
                let in_batch = batch.narrow(1, s, 1).unwrap();
                // Identical, not merely close: a prompt computed at once or token by token agrees.
                assert_eq!(
                    alone.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    in_batch.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    "{dtype:?}"
                );
            }
        }
    }

    #[test]
    fn ours_are_chosen_where_faster_and_candles_elsewhere() {
        for dtype in [GgmlDType::Q4_1, GgmlDType::Q5_0, GgmlDType::Q5_1] {
            let linear = Linear::new(weight(dtype, 2, 64, 1)).unwrap();
            assert!(linear.kernel().is_some(), "{dtype:?}");
        }
        // The others are ours where we have a SIMD kernel, candle's otherwise.
        for (dtype, k) in [
            (GgmlDType::Q4_0, 64),
            (GgmlDType::Q8_0, 64),
            (GgmlDType::Q4K, 256),
            (GgmlDType::Q5K, 256),
            (GgmlDType::Q6K, 256),
        ] {
            let simd = Kernel::ours_for(dtype, k).unwrap().simd;
            let linear = Linear::new(weight(dtype, 2, k, 1)).unwrap();
            assert_eq!(linear.kernel().is_some(), simd, "{dtype:?}");
        }
        // A width of an odd number of 32-value blocks goes to a kernel that takes it.
        let linear = Linear::new(weight(GgmlDType::Q4_1, 2, 96, 1)).unwrap();
        assert!(linear.kernel().is_some_and(|kernel| kernel.takes(96)));
    }

    #[test]
    fn types_without_a_kernel_use_candle() {
        let w = weight(GgmlDType::Q3K, 33, 256, 9);
        let x = Tensor::from_vec(values(2 * 256, 1), (1, 2, 256), &Device::Cpu).unwrap();
        let reference = QMatMul::from_qtensor(weight(GgmlDType::Q3K, 33, 256, 9))
            .unwrap()
            .forward(&x)
            .unwrap();
        let linear = Linear::new(w).unwrap();
        assert!(linear.kernel().is_none());
        assert_close(&linear.forward(&x).unwrap(), &reference, 0.0);
    }

    #[test]
    fn a_wrong_input_width_is_an_error() {
        let linear = Linear::new(weight(GgmlDType::Q4_1, 4, 64, 2)).unwrap();
        let x = Tensor::zeros((1, 1, 32), DType::F32, &Device::Cpu).unwrap();
        let e = linear.forward(&x).unwrap_err().to_string();
        assert!(e.contains("last dimension is 32"), "{e}");
    }

    #[test]
    fn a_kernel_for_another_type_is_refused() {
        let w = Arc::new(weight(GgmlDType::Q4_1, 4, 64, 2));
        let e = Linear::with_kernel(w, Kernel::ours(GgmlDType::Q8_0)).unwrap_err();
        assert!(e.to_string().contains("cannot multiply"), "{e}");
    }
}
