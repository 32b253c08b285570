//! The k-quants (`Q4_K`, `Q5_K`, `Q6_K`) in tiles of 16 rows for `packed`: their layouts,
//! packing and reading back (the kernels are in `kernels`).
//!
//! Owns the k-quants' tile layouts. It must not choose layers or split work (see `packed`).
//!
//! A tile holds one 256-value block of sixteen rows. Values go in groups of eight, sixteen
//! rows × four bytes, as in `packed`'s 32-value types: byte `j` of a row holds value `8g + j`
//! in its low nibble and `8g + j + 4` in its high one. The higher bits go a quad of groups
//! (32 values) at a time, sixteen rows × four bytes per register, byte `j` of a row holding a
//! bit (`Q5_K`) or two (`Q6_K`) of each of the quad's groups: `Q5_K`'s bit `i` is the fifth bit
//! of value `8g + j` of the quad's group `i`, bit `4 + i` that of value `8g + j + 4`; `Q6_K`
//! has one register for the low nibbles' values and one for the high ones', bits `2i`,
//! `2i + 1` for group `i`. So a kernel moves a group's bits into place with one `gf2p8affine`
//! per register. The six-bit scales and minimums are unpacked to a byte per row and 32-value
//! group (`Q6_K`'s signed scales per 16 values are bytes already), the block scales stay
//! f16: a `Q4_K`/`Q5_K` tile is 2 % larger than the file's blocks, a `Q6_K` tile the same size.

#[cfg(target_arch = "x86_64")]
mod kernels;

#[cfg(target_arch = "x86_64")]
pub(super) use kernels::tile_products;

/// Whether this CPU runs the k-quants' kernels, besides `packed`'s AVX-512 VNNI (GFNI: every
/// AVX-512 CPU since Ice Lake and Zen 4 has it; elsewhere the k-quants keep the file's blocks).
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return kernels::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

use super::super::kquants::{
    Q4K_SCALES, Q4K_VALUES, Q5K_HIGH, Q5K_VALUES, Q6K_D, Q6K_HIGH, Q6K_SCALES, q4k_scale_min,
};
use super::super::{QK_K, f16_at};
use super::{Kind, ROWS};

/// Where a tile's parts start: (block minimum or none, scales, minimums, values, extra bits).
struct Layout {
    dmin: usize,
    scales: usize,
    mins: usize,
    values: usize,
    extra: usize,
    bytes: usize,
}

fn layout(kind: Kind) -> Layout {
    let values_bytes = ROWS * QK_K / 2;
    match kind {
        Kind::Q6K => Layout {
            dmin: 0,
            scales: 2 * ROWS,
            mins: 0,
            values: 2 * ROWS + 16 * ROWS,
            extra: 2 * ROWS + 16 * ROWS + values_bytes,
            bytes: 2 * ROWS + 16 * ROWS + values_bytes + ROWS * QK_K / 4,
        },
        _ => {
            let values = 4 * ROWS + 16 * ROWS;
            let extra = values + values_bytes;
            let fifth = if kind == Kind::Q5K {
                ROWS * QK_K / 8
            } else {
                0
            };
            Layout {
                dmin: 2 * ROWS,
                scales: 4 * ROWS,
                mins: 4 * ROWS + 8 * ROWS,
                values,
                extra,
                bytes: extra + fifth,
            }
        }
    }
}

/// Bytes of one tile (sixteen rows' block).
pub(super) fn tile_bytes(kind: Kind) -> usize {
    layout(kind).bytes
}

/// A block's 256 values, unsigned (`Q6_K`'s six bits, 0..64; the others' 0..32), in value
/// order. Whole runs of bytes at a time, not value by value: this is most of packing, which is
/// part of loading a model.
fn values(kind: Kind, block: &[u8]) -> [u8; QK_K] {
    let mut u = [0u8; QK_K];
    match kind {
        Kind::Q6K => {
            // Per 128 values: 64 bytes of nibbles (values l and l + 64 low and high in byte
            // l, l + 32 and l + 96 in byte l + 32) and 32 bytes of two-bit pairs.
            for chunk in 0..2 {
                let low = &block[64 * chunk..64 * (chunk + 1)];
                let high = &block[Q6K_HIGH + 32 * chunk..Q6K_HIGH + 32 * (chunk + 1)];
                let out = &mut u[128 * chunk..128 * (chunk + 1)];
                for l in 0..32 {
                    let top = |group: usize| ((high[l] >> (2 * group)) & 3) << 4;
                    out[l] = (low[l] & 0x0f) | top(0);
                    out[l + 32] = (low[l + 32] & 0x0f) | top(1);
                    out[l + 64] = (low[l] >> 4) | top(2);
                    out[l + 96] = (low[l + 32] >> 4) | top(3);
                }
            }
        }
        _ => {
            let at = if kind == Kind::Q5K {
                Q5K_VALUES
            } else {
                Q4K_VALUES
            };
            // Per 64 values: 32 bytes, values l and l + 32 low and high in byte l.
            for chunk in 0..4 {
                let bytes = &block[at + 32 * chunk..at + 32 * (chunk + 1)];
                for (l, byte) in bytes.iter().enumerate() {
                    u[64 * chunk + l] = byte & 0x0f;
                    u[64 * chunk + 32 + l] = byte >> 4;
                }
            }
            if kind == Kind::Q5K {
                // Bit g of byte l is the fifth bit of value 32g + l.
                let fifth = &block[Q5K_HIGH..Q5K_HIGH + 32];
                for (i, value) in u.iter_mut().enumerate() {
                    *value |= ((fifth[i % 32] >> (i / 32)) & 1) << 4;
                }
            }
        }
    }
    u
}

/// `Q6_K`'s scale index (0..16) of value `i`, in the block's storage order.
fn q6k_scale_index(i: usize) -> usize {
    let (chunk, within) = (i / 128, i % 128);
    8 * chunk + 2 * (within / 32) + (within % 32) / 16
}

/// Packs the sixteen rows' blocks `rows` into `tile`.
pub(super) fn pack(kind: Kind, rows: &[&[u8]], tile: &mut [u8]) {
    let at = layout(kind);
    for (r, block) in rows.iter().enumerate() {
        if kind == Kind::Q6K {
            tile[2 * r..2 * r + 2].copy_from_slice(&block[Q6K_D..Q6K_D + 2]);
            for t in 0..16 {
                // The scale of values 16t .. 16t + 16 (in value order).
                tile[at.scales + 16 * t + r] = block[Q6K_SCALES + q6k_scale_index(16 * t)];
            }
        } else {
            tile[2 * r..2 * r + 2].copy_from_slice(&block[..2]);
            tile[at.dmin + 2 * r..at.dmin + 2 * r + 2].copy_from_slice(&block[2..4]);
            for s in 0..8 {
                let (scale, min) = q4k_scale_min(&block[Q4K_SCALES..], s);
                tile[at.scales + 16 * s + r] = scale;
                tile[at.mins + 16 * s + r] = min;
            }
        }
        let u = values(kind, block);
        for g in 0..QK_K / 8 {
            let mut fifth = 0u8;
            for j in 0..4 {
                let (first, second) = (u[8 * g + j], u[8 * g + j + 4]);
                tile[at.values + (g * ROWS + r) * 4 + j] = (first & 0x0f) | (second & 0x0f) << 4;
                fifth |= ((first >> 4) & 1) << j | ((second >> 4) & 1) << (j + 4);
                if kind == Kind::Q6K {
                    let (quad, within) = (g / 4, g % 4);
                    let base = at.extra + 128 * quad + r * 4 + j;
                    tile[base] |= (first >> 4) << (2 * within);
                    tile[base + 64] |= (second >> 4) << (2 * within);
                }
            }
            if kind == Kind::Q5K {
                // Bit `g % 4` for the low nibble's value, `4 + g % 4` for the high one's.
                let (quad, within) = (g / 4, g % 4);
                for j in 0..4 {
                    let bits = (fifth >> j & 1) << within | (fifth >> (j + 4) & 1) << (within + 4);
                    tile[at.extra + 64 * quad + r * 4 + j] |= bits;
                }
            }
        }
    }
}

/// Row `lane`'s 256 values of a tile into `out`, as the file's block would give them.
pub(super) fn dequantize(kind: Kind, tile: &[u8], lane: usize, out: &mut [f32]) {
    let at = layout(kind);
    let d = f16_at(tile, 2 * lane);
    for (i, value) in out.iter_mut().enumerate().take(QK_K) {
        let (g, j) = (i / 8, i % 8);
        let byte = tile[at.values + (g * ROWS + lane) * 4 + j % 4];
        let low = if j < 4 { byte & 0x0f } else { byte >> 4 };
        *value = match kind {
            Kind::Q6K => {
                let (quad, within) = (g / 4, g % 4);
                let bits = tile[at.extra + 128 * quad + 64 * (j / 4) + lane * 4 + j % 4];
                let q = low | ((bits >> (2 * within)) & 3) << 4;
                let scale = tile[at.scales + 16 * (i / 16) + lane] as i8;
                d * f32::from(scale) * (f32::from(q) - 32.0)
            }
            _ => {
                let fifth = if kind == Kind::Q5K {
                    let byte = tile[at.extra + 64 * (g / 4) + lane * 4 + j % 4];
                    (byte >> (g % 4 + 4 * (j / 4))) & 1
                } else {
                    0
                };
                let q = low | fifth << 4;
                let s = i / 32;
                let (scale, min) = (
                    tile[at.scales + 16 * s + lane],
                    tile[at.mins + 16 * s + lane],
                );
                let dmin = f16_at(tile, at.dmin + 2 * lane);
                d * f32::from(scale) * f32::from(q) - dmin * f32::from(min)
            }
        };
    }
}
