//! The kernels against their references: every SIMD kernel equals the scalar one on random
//! blocks, for tiles and tails of activation rows; the quantizers and f16 conversions against
//! candle's (the `half` crate's) and against the values they encode.

use super::*;
use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};

/// Every type with a kernel of ours.
const ALL_TYPES: [GgmlDType; 8] = [
    GgmlDType::Q4_0,
    GgmlDType::Q4_1,
    GgmlDType::Q5_0,
    GgmlDType::Q5_1,
    GgmlDType::Q8_0,
    GgmlDType::Q4K,
    GgmlDType::Q5K,
    GgmlDType::Q6K,
];

/// A deterministic xorshift stream.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }

    fn bytes(&mut self, count: usize) -> Vec<u8> {
        (0..count).map(|_| self.next() as u8).collect()
    }

    fn values(&mut self, count: usize) -> Vec<f32> {
        (0..count)
            .map(|i| self.unit() * if i % 53 == 0 { 20.0 } else { 1.0 })
            .collect()
    }
}

/// Random weight blocks of `format` whose f16 fields (listed by offset) hold sane scales, so
/// that the sums are finite and comparable.
fn random_weights(
    format: Format,
    blocks: usize,
    scales_at: &[usize],
    random: &mut Random,
) -> Vec<u8> {
    let mut bytes = random.bytes(blocks * format.bytes);
    for block in bytes.chunks_exact_mut(format.bytes) {
        for &at in scales_at {
            let scale = random.unit() * 0.05;
            block[at..at + 2].copy_from_slice(&f32_to_f16(scale).to_le_bytes());
        }
    }
    bytes
}

/// `values` (rows of equal length) quantized as `kernel` takes them, end to end.
fn quantized_rows(kernel: &Kernel, values: &[Vec<f32>]) -> Vec<u8> {
    let k = values.first().map_or(0, Vec::len);
    let row_bytes = kernel.activation_row_bytes(k);
    let mut acts = vec![0u8; values.len() * row_bytes];
    for (row, x) in acts.chunks_exact_mut(row_bytes).zip(values) {
        kernel.quantize(x, row);
    }
    acts
}

/// Every SIMD kernel of `dtype` this CPU runs agrees with the scalar one on rows of random
/// blocks, for tiles of activation rows and their tails; the instruction sets this CPU lacks
/// are named as skipped.
fn check_simd_equals_scalar(dtype: GgmlDType, scales_at: &[usize]) {
    let scalar = Kernel::scalar(dtype).unwrap();
    let variants = Kernel::variants(dtype);
    // Q4_0 has a kernel for every instruction set: its variants are what this CPU runs.
    let cpu_runs = |isa: &str| {
        Kernel::variants(GgmlDType::Q4_0)
            .iter()
            .any(|v| v.isa == isa)
    };
    for isa in SIMD_ISAS {
        if !variants.iter().any(|v| v.isa == isa) {
            if cpu_runs(isa) {
                eprintln!("{dtype:?}: no {isa} kernel (it would gain nothing over the others)");
            } else {
                eprintln!("{dtype:?}: skipped {isa} (this CPU lacks it)");
            }
        }
    }
    for chosen in variants {
        eprintln!("{dtype:?}: checking {chosen:?}");
        check_equal(&scalar, &chosen, scales_at);
    }
}

/// `chosen` equals `scalar` up to the order of float additions.
fn check_equal(scalar: &Kernel, chosen: &Kernel, scales_at: &[usize]) {
    let mut random = Random(0x9e37_79b9_7f4a_7c15 ^ scalar.weight.bytes as u64);
    // Weight-row tiles (one activation row) and activation-row tiles, with their tails.
    let shapes = [
        (1, 1),
        (4, 1),
        (5, 1),
        (9, 1),
        (1, 2),
        (1, 4),
        (2, 5),
        (3, 9),
        (1, 13),
    ];
    for blocks in [1, 2, 3, 7, 18] {
        let k = blocks * scalar.weight.values;
        assert!(chosen.takes(k), "{chosen:?} takes {k}");
        for (weight_rows, rows) in shapes {
            let weights =
                random_weights(scalar.weight, weight_rows * blocks, scales_at, &mut random);
            // The same activations in each kernel's own layout.
            let values: Vec<Vec<f32>> = (0..rows).map(|_| random.values(k)).collect();
            let acts = quantized_rows(scalar, &values);
            let chosen_acts = quantized_rows(chosen, &values);
            let outputs = weight_rows * rows;
            let (mut expected, mut got) = (vec![0f32; outputs], vec![0f32; outputs]);
            scalar.dots(k, &weights, &acts, &mut expected);
            chosen.dots(k, &weights, &chosen_acts, &mut got);
            let magnitude = expected.iter().fold(1f32, |m, v| m.max(v.abs()));
            for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
                assert!(
                    (e - g).abs() <= 1e-5 * magnitude * blocks as f32,
                    "{chosen:?}, {blocks} blocks, {weight_rows}×{rows}, output {i}: scalar {e}, simd {g}"
                );
            }
        }
    }
}

#[test]
fn simd_q4_0_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q4_0, &[0]);
}

#[test]
fn simd_q5_0_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q5_0, &[0]);
}

#[test]
fn simd_q5_1_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q5_1, &[0, 2]);
}

#[test]
fn simd_q5_k_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q5K, &[0, 2]);
}

#[test]
fn simd_q4_1_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q4_1, &[0, 2]);
}

#[test]
fn simd_q8_0_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q8_0, &[0]);
}

#[test]
fn simd_q4_k_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q4K, &[0, 2]);
}

#[test]
fn simd_q6_k_equals_scalar() {
    check_simd_equals_scalar(GgmlDType::Q6K, &[Q6K.bytes - 2]);
}

#[test]
fn round_even_is_round_ties_even_for_quantized_magnitudes() {
    let mut random = Random(3);
    let mut samples: Vec<f32> = (0..100_000).map(|_| random.unit() * 130.0).collect();
    samples.extend((-260..=260).map(|i| i as f32 / 2.0));
    samples.extend([
        0.49999997,
        -0.49999997,
        126.5,
        -126.5,
        127.0,
        -127.0,
        0.0,
        -0.0,
    ]);
    for x in samples {
        assert_eq!(round_even(x), x.round_ties_even() as i32, "{x}");
    }
}

#[test]
fn f16_to_f32_matches_half_for_every_value() {
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let halves: Vec<f32> = all.iter().map(|&h| f16_to_f32(h)).collect();
    // candle converts through the `half` crate: build the halves from their f32 values back.
    let round_trip = Tensor::from_vec(halves.clone(), all.len(), &Device::Cpu)
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    for ((&h, a), b) in all.iter().zip(&halves).zip(&round_trip) {
        if a.is_nan() {
            assert!(b.is_nan(), "{h:#06x}");
        } else {
            assert_eq!(a.to_bits(), b.to_bits(), "{h:#06x}: {a} vs {b}");
            assert_eq!(f32_to_f16(*a), h, "{h:#06x} round trip");
        }
    }
}

#[test]
fn f32_to_f16_rounds_like_half() {
    let mut random = Random(42);
    let mut samples: Vec<f32> = (0..20_000)
        .map(|i| random.unit() * 10f32.powi(i % 12 - 8))
        .collect();
    // Ties, subnormals, overflow and the edges.
    samples.extend([
        1.0 + 1.0 / 2048.0,
        1.0 + 3.0 / 2048.0,
        65504.0,
        65520.0,
        1e6,
        -1e6,
        6.0e-8,
        2.9e-8,
        3.0e-8,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ]);
    let expected = Tensor::from_vec(samples.clone(), samples.len(), &Device::Cpu)
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    for (x, e) in samples.iter().zip(&expected) {
        let ours = f16_to_f32(f32_to_f16(*x));
        assert_eq!(ours.to_bits(), e.to_bits(), "{x}: {ours} vs {e}");
    }
}

/// Dequantized `Q8_0`/`Q8_1` rows are within half a step of the input.
#[test]
fn activation_quantizers_round_to_the_nearest_step() {
    let mut random = Random(7);
    let row = random.values(4 * QK);
    let mut q8_0 = vec![0u8; 4 * Q8_0.bytes];
    let mut q8_1 = vec![0u8; 4 * Q8_1.bytes];
    quantize_q8_0(&row, &mut q8_0);
    quantize_q8_1(&row, &mut q8_1);
    for (i, x) in row.iter().enumerate() {
        let (b, j) = (i / QK, i % QK);
        let d0 = f16_at(&q8_0, b * Q8_0.bytes);
        let d1 = f16_at(&q8_1, b * Q8_1.bytes);
        let v0 = d0 * f32::from(q8_0[b * Q8_0.bytes + 2 + j] as i8);
        let v1 = d1 * f32::from(q8_1[b * Q8_1.bytes + 4 + j] as i8);
        assert!(
            (v0 - x).abs() <= 0.51 * d0 + 1e-3 * x.abs(),
            "{i}: {x} vs {v0}"
        );
        assert!(
            (v1 - x).abs() <= 0.51 * d1 + 1e-3 * x.abs(),
            "{i}: {x} vs {v1}"
        );
    }
    for b in 0..4 {
        let block = &q8_1[b * Q8_1.bytes..(b + 1) * Q8_1.bytes];
        let sum: i32 = block[4..].iter().map(|&q| i32::from(q as i8)).sum();
        let s = f16_at(block, 2);
        assert!((s - f16_at(block, 0) * sum as f32).abs() <= 1e-3 * s.abs().max(1e-3));
    }
    // A block of zeros quantizes to zeros, with no division by zero.
    let mut zeros = vec![1u8; Q8_1.bytes];
    quantize_q8_1(&[0.0; QK], &mut zeros);
    assert!(zeros.iter().all(|&b| b == 0));
    let mut zeros = vec![1u8; Q8K.bytes];
    kquants::quantize_q8_k(&[0.0; QK_K], &mut zeros);
    assert!(zeros.iter().all(|&b| b == 0));
}

/// The AVX-512 `Q8_K` quantizer writes the scalar one's bytes: random rows, ties of magnitude
/// (the first wins), a NaN (the block goes to the scalar loop), zeros.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx512_q8_k_quantizer_writes_the_scalar_bytes() {
    if !super::quantize_avx512::available() {
        eprintln!("AVX-512 Q8_K quantizer skipped (this CPU lacks AVX-512)");
        return;
    }
    let mut random = Random(11);
    let mut row = random.values(6 * QK_K);
    // Block 1: +3 then −3, the largest magnitudes (the first sets the sign of the scale).
    row[QK_K + 7] = 3.0;
    row[QK_K + 200] = -3.0;
    // Block 2: −3 first.
    row[2 * QK_K + 5] = -3.0;
    row[2 * QK_K + 9] = 3.0;
    // Block 3: a NaN; block 4: zeros; block 5: values exactly halfway between steps.
    row[3 * QK_K + 17] = f32::NAN;
    row[4 * QK_K..5 * QK_K].fill(0.0);
    for (i, x) in row[5 * QK_K..].iter_mut().enumerate() {
        *x = (i as f32 - 128.0) + 0.5;
    }
    assert_same_blocks(
        &row,
        kquants::quantize_q8_k,
        kquants::quantize_q8_k_scalar,
        Q8K.bytes,
        QK_K,
    );
}

/// `fast` and `scalar` write the same bytes for `row`, block by block (`bytes` a block of
/// `values`); their buffers start different, so a block left unwritten fails too.
#[cfg(target_arch = "x86_64")]
fn assert_same_blocks(
    row: &[f32],
    fast: fn(&[f32], &mut [u8]),
    scalar: fn(&[f32], &mut [u8]),
    bytes: usize,
    values: usize,
) {
    let blocks = row.len() / values;
    let (mut a, mut b) = (vec![1u8; blocks * bytes], vec![2u8; blocks * bytes]);
    fast(row, &mut a);
    scalar(row, &mut b);
    for (i, (f, s)) in a.chunks(bytes).zip(b.chunks(bytes)).enumerate() {
        assert_eq!(f, s, "block {i}");
    }
}

/// The AVX-512 `Q8_SUMS` quantizer writes the scalar one's bytes: random rows of several
/// magnitudes, values halfway between steps, zeros, a NaN, an infinity and a subnormal
/// maximum (those three go to the scalar loop).
#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx512_q8_sums_quantizer_writes_the_scalar_bytes() {
    use super::packed::{Q8_SUMS, quantize_sums, quantize_sums_scalar};
    if !super::quantize_avx512::available() {
        eprintln!("AVX-512 Q8_SUMS quantizer skipped (this CPU lacks AVX-512)");
        return;
    }
    let blocks = 64;
    let mut random = Random(17);
    let mut row = random.values(blocks * QK);
    for (b, block) in row.chunks_exact_mut(QK).enumerate() {
        let magnitude = 10f32.powi(b as i32 % 9 - 4);
        block.iter_mut().for_each(|x| *x *= magnitude);
    }
    for (i, x) in row[QK..2 * QK].iter_mut().enumerate() {
        *x = (i as f32 - 16.0) + 0.5;
    }
    row[2 * QK..3 * QK].fill(0.0);
    row[3 * QK + 4] = f32::NAN;
    row[4 * QK + 30] = f32::INFINITY;
    row[5 * QK..6 * QK].fill(0.0);
    row[5 * QK + 3] = 1e-45;
    row[5 * QK + 9] = -1e-45;
    assert_same_blocks(&row, quantize_sums, quantize_sums_scalar, Q8_SUMS.bytes, QK);
}

/// `Q8_K`: the largest magnitude maps to ∓127, values are within half a step, and the
/// 16-value sums are the values' sums.
#[test]
fn q8_k_quantizer_keeps_values_and_sums() {
    let mut random = Random(5);
    let row = random.values(2 * QK_K);
    let mut blocks = vec![0u8; 2 * Q8K.bytes];
    kquants::quantize_q8_k(&row, &mut blocks);
    for (values, block) in row.chunks_exact(QK_K).zip(blocks.chunks_exact(Q8K.bytes)) {
        let d = f32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        let q = |i: usize| i32::from(block[4 + i] as i8);
        for (i, x) in values.iter().enumerate() {
            assert!(
                (d * q(i) as f32 - x).abs() <= 0.51 * d.abs() + 1e-4,
                "{i}: {x}"
            );
        }
        for g in 0..16 {
            let at = 4 + QK_K + 2 * g;
            let sum = i32::from(i16::from_le_bytes([block[at], block[at + 1]]));
            assert_eq!(sum, (16 * g..16 * (g + 1)).map(q).sum::<i32>());
        }
    }
}

/// The scalar kernels against the dequantized weights of candle (the file's meaning).
#[test]
fn scalar_kernels_match_dequantized_weights() {
    for dtype in ALL_TYPES {
        let kernel = Kernel::scalar(dtype).unwrap();
        let mut random = Random(11);
        let k = 3 * kernel.weight.values;
        let dense = Tensor::from_vec(random.values(k), (1, k), &Device::Cpu).unwrap();
        let weight = candle_core::quantized::QTensor::quantize(&dense, dtype).unwrap();
        let exact = dense_values(&weight);
        let x = random.values(k);
        let mut acts = vec![0u8; kernel.activation_row_bytes(k)];
        kernel.quantize(&x, &mut acts);
        let mut got = [0f32];
        kernel.dots(k, &weight.data().unwrap(), &acts, &mut got);
        let expected: f32 = exact.iter().zip(&x).map(|(w, x)| w * x).sum();
        let norm: f32 = exact.iter().zip(&x).map(|(w, x)| (w * x).abs()).sum();
        assert!(
            (got[0] - expected).abs() <= 0.02 * norm,
            "{dtype:?}: {} vs {expected}",
            got[0]
        );
    }
}

/// The values an activation row's blocks encode (`d·q` for each of its formats).
fn dequantized_activations(kernel: &Kernel, bytes: &[u8]) -> Vec<f32> {
    let format = kernel.activation;
    let (values_at, d): (usize, fn(&[u8]) -> f32) = match format.name {
        "Q8_0" => (2, |b| f16_at(b, 0)),
        "Q8_1" => (4, |b| f16_at(b, 0)),
        _ => (4, kquants::q8k_d),
    };
    bytes
        .chunks_exact(format.bytes)
        .flat_map(|block| {
            let d = d(block);
            block[values_at..values_at + format.values]
                .iter()
                .map(move |&q| d * f32::from(q as i8))
        })
        .collect()
}

/// The scalar kernels equal, up to float rounding, the dot products of candle's dequantized
/// weights with the values our activation blocks encode: the layouts are read as the file
/// means them, for every type and several rows.
#[test]
fn scalar_kernels_equal_dequantized_products() {
    for dtype in ALL_TYPES {
        let kernel = Kernel::scalar(dtype).unwrap();
        let mut random = Random(13);
        let (n, rows, k) = (5, 3, 4 * kernel.weight.values);
        let dense = Tensor::from_vec(random.values(n * k), (n, k), &Device::Cpu).unwrap();
        let weight = candle_core::quantized::QTensor::quantize(&dense, dtype).unwrap();
        let exact = dense_values(&weight);
        let inputs: Vec<Vec<f32>> = (0..rows).map(|_| random.values(k)).collect();
        let acts = quantized_rows(&kernel, &inputs);
        let values = dequantized_activations(&kernel, &acts);
        let mut got = vec![0f32; n * rows];
        kernel.dots(k, &weight.data().unwrap(), &acts, &mut got);
        let weights = weight.data().unwrap();
        let (weight_row, act_row) = (kernel.weight_row_bytes(k), kernel.activation_row_bytes(k));
        for (i, g) in got.iter().enumerate() {
            let (w, r) = (i / rows, i % rows);
            let mut products: Vec<f32> = exact[w * k..(w + 1) * k]
                .iter()
                .zip(&values[r * k..(r + 1) * k])
                .map(|(w, x)| w * x)
                .collect();
            if kernel.activation == Q8_1 {
                // `x = d·q + m`: the minimum meets the block's stored sum `s = d·Σq`, which is
                // rounded to f16, rather than the sum of the values.
                let blocks = k / QK;
                for b in 0..blocks {
                    let weight_block = &weights[w * weight_row + b * kernel.weight.bytes..];
                    let act_block = &acts[r * act_row + b * Q8_1.bytes..];
                    let m = f16_at(weight_block, 2);
                    for j in 0..QK {
                        products[b * QK + j] -= m * values[r * k + b * QK + j];
                    }
                    products.push(m * f16_at(act_block, 2));
                }
            }
            let expected: f32 = products.iter().sum();
            let norm: f32 = products.iter().map(|p| p.abs()).sum();
            assert!(
                (g - expected).abs() <= 1e-4 * norm,
                "{dtype:?} ({w}, {r}): {g} vs {expected}"
            );
        }
    }
}

/// The packed `Q4_K` scales and minimums unpack the same all at once as one by one.
#[test]
fn q4_k_scales_unpack_alike_at_once_and_one_by_one() {
    let mut random = Random(17);
    for _ in 0..1000 {
        let packed = random.bytes(12);
        let words = kquants::q4k_scales_mins(&packed);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        for j in 0..8 {
            assert_eq!(
                kquants::q4k_scale_min(&packed, j),
                (bytes[j], bytes[8 + j]),
                "{packed:?}, group {j}"
            );
        }
    }
}

/// The types packed, with the offsets of their blocks' f16 scales.
const PACKED_TYPES: [(GgmlDType, &[usize]); 8] = [
    (GgmlDType::Q8_0, &[0]),
    (GgmlDType::Q4_0, &[0]),
    (GgmlDType::Q4_1, &[0, 2]),
    (GgmlDType::Q5_0, &[0]),
    (GgmlDType::Q5_1, &[0, 2]),
    (GgmlDType::Q4K, &[0, 2]),
    (GgmlDType::Q5K, &[0, 2]),
    (GgmlDType::Q6K, &[Q6K.bytes - 2]),
];

/// Matrices `(n, blocks, activation rows)`: whole tiles and a last tile of 5 rows (21), one
/// activation row and tiles of them with their tails.
fn packed_shapes(k_quant: bool) -> [(usize, usize, usize); 6] {
    [
        (16, 1, 1),
        (32, 3, 1),
        (21, 2, 3),
        (48, if k_quant { 2 } else { 7 }, 9),
        (16, if k_quant { 5 } else { 18 }, 11),
        (64, 2, 40),
    ]
}

/// The values a `(n, k)` weight of `dtype` in the file's `bytes` encodes, as candle reads them.
fn dequantized_weights(dtype: GgmlDType, bytes: &[u8], n: usize, k: usize) -> Vec<f32> {
    let storage = candle_core::quantized::QStorage::from_data(
        std::borrow::Cow::Borrowed(bytes),
        &Device::Cpu,
        dtype,
    )
    .unwrap();
    dense_values(&candle_core::quantized::QTensor::new(storage, (n, k)).unwrap())
}

/// A quantized tensor's values, flat.
fn dense_values(tensor: &candle_core::quantized::QTensor) -> Vec<f32> {
    tensor
        .dequantize(&Device::Cpu)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

/// The tiles hold the file's rows: each row read back from them is the row candle reads from
/// the file, on any CPU (a last tile's rows of zeros are never read).
#[test]
fn packed_tiles_hold_the_files_rows() {
    for (dtype, scales_at) in PACKED_TYPES {
        let format = Kernel::scalar(dtype).unwrap().weight;
        let mut random = Random(0x7a11 ^ format.bytes as u64);
        for (n, blocks, _) in packed_shapes(format.values > QK) {
            let k = blocks * format.values;
            let weights = random_weights(format, n * blocks, scales_at, &mut random);
            let packed = packed::Packed::tiles_only(dtype, &weights, n, k).unwrap();
            let dense = dequantized_weights(dtype, &weights, n, k);
            for w in 0..n {
                let mut row = vec![0f32; k];
                assert!(packed.dequantize_row(w, &mut row));
                assert_eq!(row[..], dense[w * k..(w + 1) * k], "{dtype:?} row {w}");
            }
            assert!(!packed.dequantize_row(n, &mut vec![0f32; k]));
        }
    }
}

/// The packed kernels equal their references on the file's rows (up to the order of float
/// additions), for tiles and tails of activation rows; a row's result does not depend on the
/// range of rows or the activation rows computed with it. Only where the CPU runs them (the
/// AVX-512 VNNI ones); the tiles themselves are tested on any CPU above.
#[test]
fn packed_kernels_equal_their_references() {
    if !packed::available() {
        eprintln!("packed kernels skipped (this CPU lacks AVX-512 VNNI)");
        return;
    }
    for (dtype, scales_at) in PACKED_TYPES {
        let format = Kernel::scalar(dtype).unwrap().weight;
        let mut random = Random(0x51ed_2701 ^ format.bytes as u64);
        for (n, blocks, rows) in packed_shapes(format.values > QK) {
            let k = blocks * format.values;
            let weights = random_weights(format, n * blocks, scales_at, &mut random);
            let packed = packed::Packed::new(dtype, &weights, n, k).unwrap();
            let kernel = packed.kernel();
            let values: Vec<Vec<f32>> = (0..rows).map(|_| random.values(k)).collect();
            let acts = quantized_rows(&kernel, &values);
            let (mut expected, mut got) = (vec![0f32; n * rows], vec![0f32; n * rows]);
            kernel.dots(k, &weights, &acts, &mut expected);
            packed.multiply(0..n, &acts, &mut got);
            let magnitude = expected.iter().fold(1f32, |m, v| m.max(v.abs()));
            for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
                assert!(
                    (e - g).abs() <= 1e-5 * magnitude * blocks as f32,
                    "{dtype:?} {n}×{k}, {rows} rows, output {i}: reference {e}, packed {g}"
                );
            }
            // A part of the rows (not whole tiles), and the last activation row alone.
            let part = 5.min(n)..(n - 3);
            let mut some = vec![0f32; part.len() * rows];
            packed.multiply(part.clone(), &acts, &mut some);
            assert_eq!(
                some[..],
                got[part.start * rows..part.end * rows],
                "{dtype:?}"
            );
            let last = &acts[(rows - 1) * kernel.activation_row_bytes(k)..];
            let mut alone = vec![0f32; n];
            packed.multiply(0..n, last, &mut alone);
            for (w, value) in alone.iter().enumerate() {
                assert_eq!(*value, got[w * rows + rows - 1], "{dtype:?} row {w}");
            }
        }
    }
}

/// The packed kernels' references on `Q8_SUMS` activations compute exactly what the scalar
/// kernels do on llama.cpp's `Q8_0`/`Q8_1` activations: the same values, stored apart.
#[test]
fn the_packed_activation_format_holds_llama_cpps_q8_0_and_q8_1() {
    let references: [(GgmlDType, super::RowDots, &[usize]); 5] = [
        (GgmlDType::Q8_0, packed::reference_q8_0, &[0]),
        (GgmlDType::Q4_0, packed::reference_q4_0, &[0]),
        (GgmlDType::Q4_1, packed::reference_q4_1, &[0, 2]),
        (GgmlDType::Q5_0, packed::reference_q5_0, &[0]),
        (GgmlDType::Q5_1, packed::reference_q5_1, &[0, 2]),
    ];
    for (dtype, reference, scales_at) in references {
        let scalar = Kernel::scalar(dtype).unwrap();
        let mut random = Random(77);
        let (n, blocks, rows) = (16, 5, 3);
        let k = blocks * QK;
        let weights = random_weights(scalar.weight, n * blocks, scales_at, &mut random);
        let values: Vec<Vec<f32>> = (0..rows).map(|_| random.values(k)).collect();
        let sums_kernel = Kernel {
            activation: packed::Q8_SUMS,
            quantize: packed::quantize_sums,
            reference,
            tiles: None,
            ..scalar
        };
        let (mut expected, mut got) = (vec![0f32; n * rows], vec![0f32; n * rows]);
        scalar.dots(
            k,
            &weights,
            &quantized_rows(&scalar, &values),
            &mut expected,
        );
        sums_kernel.dots(
            k,
            &weights,
            &quantized_rows(&sums_kernel, &values),
            &mut got,
        );
        assert_eq!(expected, got, "{dtype:?}");
    }
}
