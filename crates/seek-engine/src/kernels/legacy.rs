//! The 32-value formats `Q4_0`, `Q5_0` and `Q5_1` (the "legacy" quantizations next to `Q4_1`
//! and `Q8_0` in `kernels`), and their scalar reference kernels.
//!
//! Owns these layouts as llama.cpp stores them and the portable arithmetic that defines their
//! dot products; it must not choose kernels (`kernels` does) nor hold SIMD code.

use super::{Format, Q8_0, Q8_1, QK, f16_at};

/// `Q4_0`: f16 scale `d`, 16 bytes of 4-bit values (value `j` in the low nibble of byte `j`,
/// value `j + 16` in its high nibble); `x = d·(q − 8)`.
pub const Q4_0: Format = Format {
    name: "Q4_0",
    values: QK,
    bytes: 2 + QK / 2,
};
/// `Q5_0`: f16 scale `d`, a little-endian u32 whose bit `j` is the fifth bit of value `j`, then
/// 16 bytes of low 4 bits as in `Q4_0`; `x = d·(q − 16)`.
pub const Q5_0: Format = Format {
    name: "Q5_0",
    values: QK,
    bytes: 2 + 4 + QK / 2,
};
/// `Q5_1`: f16 scale `d`, f16 minimum `m`, the fifth bits and low bits as in `Q5_0`;
/// `x = d·q + m`.
pub const Q5_1: Format = Format {
    name: "Q5_1",
    values: QK,
    bytes: 4 + 4 + QK / 2,
};

/// The 32 values (0..32) of a 5-bit block whose high bits start at `at` (the 16 bytes of low
/// bits follow them).
pub(super) fn q5_values(block: &[u8], at: usize) -> [u8; QK] {
    let high = u32::from_le_bytes([block[at], block[at + 1], block[at + 2], block[at + 3]]);
    let low = &block[at + 4..at + 4 + QK / 2];
    std::array::from_fn(|j| {
        let nibble = if j < QK / 2 {
            low[j] & 0x0f
        } else {
            low[j - QK / 2] >> 4
        };
        nibble | (((high >> j) & 1) as u8) << 4
    })
}

/// The 32 values (0..16) of a 4-bit block whose 16 bytes start at `at`.
fn q4_values(block: &[u8], at: usize) -> [u8; QK] {
    let low = &block[at..at + QK / 2];
    std::array::from_fn(|j| {
        if j < QK / 2 {
            low[j] & 0x0f
        } else {
            low[j - QK / 2] >> 4
        }
    })
}

/// Σ (q − offset)·a over a block: the integer part of every legacy dot product.
fn block_dot(values: &[u8; QK], offset: i32, q8: &[u8]) -> i32 {
    values
        .iter()
        .zip(q8)
        .map(|(&v, &a)| (i32::from(v) - offset) * i32::from(a as i8))
        .sum()
}

/// The reference `Q4_0 × Q8_0` kernel.
pub fn scalar_q4_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4_0.bytes * Q8_0.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q4_0.bytes)
            .zip(act.chunks_exact(Q8_0.bytes))
        {
            let dot = block_dot(&q4_values(w, 2), 8, &a[2..]);
            sum += f16_at(w, 0) * f16_at(a, 0) * dot as f32;
        }
        *o = sum;
    }
}

/// The reference `Q5_0 × Q8_0` kernel.
pub fn scalar_q5_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q5_0.bytes * Q8_0.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q5_0.bytes)
            .zip(act.chunks_exact(Q8_0.bytes))
        {
            let dot = block_dot(&q5_values(w, 2), 16, &a[2..]);
            sum += f16_at(w, 0) * f16_at(a, 0) * dot as f32;
        }
        *o = sum;
    }
}

/// The reference `Q5_1 × Q8_1` kernel.
pub fn scalar_q5_1(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q5_1.bytes * Q8_1.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q5_1.bytes)
            .zip(act.chunks_exact(Q8_1.bytes))
        {
            let dot = block_dot(&q5_values(w, 4), 0, &a[4..]);
            sum += f16_at(w, 0) * f16_at(a, 0) * dot as f32 + f16_at(w, 2) * f16_at(a, 2);
        }
        *o = sum;
    }
}
