//! The k-quant formats of 256-value super-blocks (`Q4_K`, `Q5_K`, `Q6_K`, the Q4_K_M and Q5_K_M
//! files' types),
//! their activations' `Q8_K` quantization, and their scalar reference kernels.
//!
//! Owns these layouts as llama.cpp stores them; it must not choose kernels (`kernels` does).

use super::{Format, QK_K, f16_at, round_even};

/// `Q4_K`: f16 `d`, f16 `dmin`, 12 bytes packing eight 6-bit scales and eight 6-bit minimums,
/// 128 bytes of 4-bit values (in 4 chunks of 32 bytes: the low nibbles are the chunk's first
/// 32 values, the high nibbles its next 32); `x = d·scale·q − dmin·min` per 32 values.
pub const Q4K: Format = Format {
    name: "Q4_K",
    values: QK_K,
    bytes: 4 + 12 + QK_K / 2,
};
/// `Q5_K`: f16 `d`, f16 `dmin`, the 12 bytes of scales and minimums of `Q4_K`, 32 bytes of fifth
/// bits (value `64c + l` has its fifth bit in bit `2c` of byte `l`, value `64c + 32 + l` in bit
/// `2c + 1`), 128 bytes of low 4 bits laid out as `Q4_K`'s values; `x = d·scale·q − dmin·min`.
pub const Q5K: Format = Format {
    name: "Q5_K",
    values: QK_K,
    bytes: 4 + 12 + QK_K / 8 + QK_K / 2,
};
/// `Q6_K`: 128 bytes of low 4 bits, 64 bytes of high 2 bits, 16 signed 8-bit scales (one per
/// 16 values), f16 `d`; `x = d·scale·(q − 32)`.
pub const Q6K: Format = Format {
    name: "Q6_K",
    values: QK_K,
    bytes: QK_K / 2 + QK_K / 4 + QK_K / 16 + 2,
};
/// `Q8_K` (activations): f32 `d`, 256 signed bytes, 16 i16 sums of 16 values each.
pub const Q8K: Format = Format {
    name: "Q8_K",
    values: QK_K,
    bytes: 4 + QK_K + QK_K / 16 * 2,
};

/// Offsets inside the blocks.
pub(super) const Q4K_SCALES: usize = 4;
pub(super) const Q4K_VALUES: usize = 16;
pub(super) const Q5K_HIGH: usize = 16;
pub(super) const Q5K_VALUES: usize = 16 + QK_K / 8;
pub(super) const Q6K_HIGH: usize = QK_K / 2;
pub(super) const Q6K_SCALES: usize = QK_K / 2 + QK_K / 4;
pub(super) const Q6K_D: usize = Q6K_SCALES + QK_K / 16;
pub(super) const Q8K_VALUES: usize = 4;
pub(super) const Q8K_SUMS: usize = 4 + QK_K;

/// The scale and the minimum of 32-value group `j` (0..8) of a `Q4_K` block's 12 packed bytes:
/// groups 0..4 hold theirs in the low 6 bits of bytes `j` and `j + 4`; groups 4..8 in the
/// nibbles of byte `j + 4` with the top 2 bits of bytes `j − 4` and `j` above them.
#[inline]
pub(super) fn q4k_scale_min(packed: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (packed[j] & 63, packed[j + 4] & 63)
    } else {
        (
            (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4),
            (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4),
        )
    }
}

/// All eight scales and minimums of a `Q4_K`/`Q5_K` block's 12 packed bytes at once, as the
/// bytes of four u32: scales 0..4, scales 4..8, minimums 0..4, minimums 4..8 (what
/// [`q4k_scale_min`] gives one by one).
///
/// With the bytes as u32 `u₀ u₁ u₂`: scales 0..4 are the low 6 bits of `u₀`'s bytes, minimums
/// 0..4 of `u₁`'s; scales 4..8 are `u₂`'s low nibbles under `u₀`'s top 2 bits, minimums 4..8
/// `u₂`'s high nibbles under `u₁`'s.
#[inline]
pub(super) fn q4k_scales_mins(packed: &[u8]) -> [u32; 4] {
    const SIX_BITS: u32 = 0x3f3f_3f3f;
    const NIBBLES: u32 = 0x0f0f_0f0f;
    const TWO_BITS: u32 = 0x0303_0303;
    let word = |i: usize| {
        u32::from_le_bytes([
            packed[4 * i],
            packed[4 * i + 1],
            packed[4 * i + 2],
            packed[4 * i + 3],
        ])
    };
    let (u0, u1, u2) = (word(0), word(1), word(2));
    [
        u0 & SIX_BITS,
        (u2 & NIBBLES) | (((u0 >> 6) & TWO_BITS) << 4),
        u1 & SIX_BITS,
        ((u2 >> 4) & NIBBLES) | (((u1 >> 6) & TWO_BITS) << 4),
    ]
}

/// The f32 `d` of a `Q8_K` block.
#[inline]
pub(super) fn q8k_d(block: &[u8]) -> f32 {
    f32::from_le_bytes([block[0], block[1], block[2], block[3]])
}

/// Quantizes activations to `Q8_K` as llama.cpp does: the scale comes from the signed value of
/// largest magnitude, which maps to −127. With AVX-512 where the CPU has it (the same bytes).
pub fn quantize_q8_k(row: &[f32], out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if super::quantize_avx512::available() {
        super::quantize_avx512::quantize_q8_k(row, out, quantize_q8_k_scalar);
        return;
    }
    quantize_q8_k_scalar(row, out);
}

/// [`quantize_q8_k`] value by value, as llama.cpp's x86 build does (it has no SIMD version).
pub(super) fn quantize_q8_k_scalar(row: &[f32], out: &mut [u8]) {
    for (values, block) in row.chunks_exact(QK_K).zip(out.chunks_exact_mut(Q8K.bytes)) {
        let (mut max, mut amax) = (0f32, 0f32);
        for &x in values {
            if x.abs() > amax {
                amax = x.abs();
                max = x;
            }
        }
        if amax == 0.0 {
            block.fill(0);
            continue;
        }
        let inverse = -127.0 / max;
        for (q, x) in block[Q8K_VALUES..Q8K_SUMS].iter_mut().zip(values) {
            *q = round_even(inverse * x).min(127) as i8 as u8;
        }
        for group in 0..QK_K / 16 {
            let sum: i32 = block[Q8K_VALUES + 16 * group..Q8K_VALUES + 16 * (group + 1)]
                .iter()
                .map(|&q| i32::from(q as i8))
                .sum();
            let at = Q8K_SUMS + 2 * group;
            block[at..at + 2].copy_from_slice(&(sum as i16).to_le_bytes());
        }
        block[..4].copy_from_slice(&(1.0 / inverse).to_le_bytes());
    }
}

/// The `Q8_K` value `i` of a block.
fn q8(block: &[u8], i: usize) -> i32 {
    i32::from(block[Q8K_VALUES + i] as i8)
}

/// The sum of the 16 `Q8_K` values of group `g` (0..16) of a block.
fn q8_sum(block: &[u8], g: usize) -> i32 {
    let at = Q8K_SUMS + 2 * g;
    i32::from(i16::from_le_bytes([block[at], block[at + 1]]))
}

/// The reference `Q4_K × Q8_K` kernel.
pub fn scalar_q4_k(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4K.bytes * Q8K.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q4K.bytes)
            .zip(act.chunks_exact(Q8K.bytes))
        {
            let packed = &w[Q4K_SCALES..Q4K_VALUES];
            let (mut dot, mut mins) = (0i32, 0i32);
            for j in 0..8 {
                let (scale, min) = q4k_scale_min(packed, j);
                let chunk = &w[Q4K_VALUES + 32 * (j / 2)..Q4K_VALUES + 32 * (j / 2 + 1)];
                let mut group = 0i32;
                for (l, &byte) in chunk.iter().enumerate() {
                    let q = if j % 2 == 0 { byte & 0x0f } else { byte >> 4 };
                    group += i32::from(q) * q8(a, 32 * j + l);
                }
                dot += i32::from(scale) * group;
                mins += i32::from(min) * (q8_sum(a, 2 * j) + q8_sum(a, 2 * j + 1));
            }
            let d = q8k_d(a);
            sum += d * f16_at(w, 0) * dot as f32 - d * f16_at(w, 2) * mins as f32;
        }
        *o = sum;
    }
}

/// The 6-bit value `i` (0..256) of a `Q6_K` block, before the −32 offset.
pub(super) fn q6k_value(w: &[u8], i: usize) -> u8 {
    let (chunk, within) = (i / 128, i % 128);
    let (group, l) = (within / 32, within % 32);
    let low = &w[64 * chunk..64 * (chunk + 1)];
    let high = w[Q6K_HIGH + 32 * chunk + l];
    let nibble = match group {
        0 => low[l] & 0x0f,
        1 => low[l + 32] & 0x0f,
        2 => low[l] >> 4,
        _ => low[l + 32] >> 4,
    };
    nibble | (((high >> (2 * group)) & 3) << 4)
}

/// The reference `Q6_K × Q8_K` kernel.
pub fn scalar_q6_k(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q6K.bytes * Q8K.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q6K.bytes)
            .zip(act.chunks_exact(Q8K.bytes))
        {
            let mut dot = 0i32;
            for sixteen in 0..QK_K / 16 {
                // Scales go by 16 values in storage order: chunk, group of 32, half.
                let scale = i32::from(w[Q6K_SCALES + sixteen] as i8);
                let (chunk, rest) = (sixteen / 8, sixteen % 8);
                let first = 128 * chunk + 32 * (rest / 2) + 16 * (rest % 2);
                let group: i32 = (first..first + 16)
                    .map(|i| (i32::from(q6k_value(w, i)) - 32) * q8(a, i))
                    .sum();
                dot += scale * group;
            }
            sum += q8k_d(a) * f16_at(w, Q6K_D) * dot as f32;
        }
        *o = sum;
    }
}

/// The reference `Q5_K × Q8_K` kernel.
pub fn scalar_q5_k(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q5K.bytes * Q8K.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q5K.bytes)
            .zip(act.chunks_exact(Q8K.bytes))
        {
            let packed = &w[Q4K_SCALES..Q5K_HIGH];
            let high = &w[Q5K_HIGH..Q5K_VALUES];
            let (mut dot, mut mins) = (0i32, 0i32);
            for j in 0..8 {
                let (scale, min) = q4k_scale_min(packed, j);
                let chunk = &w[Q5K_VALUES + 32 * (j / 2)..Q5K_VALUES + 32 * (j / 2 + 1)];
                let mut group = 0i32;
                for (l, &byte) in chunk.iter().enumerate() {
                    let low = if j % 2 == 0 { byte & 0x0f } else { byte >> 4 };
                    let q = low | ((high[l] >> j) & 1) << 4;
                    group += i32::from(q) * q8(a, 32 * j + l);
                }
                dot += i32::from(scale) * group;
                mins += i32::from(min) * (q8_sum(a, 2 * j) + q8_sum(a, 2 * j + 1));
            }
            let d = q8k_d(a);
            sum += d * f16_at(w, 0) * dot as f32 - d * f16_at(w, 2) * mins as f32;
        }
        *o = sum;
    }
}
