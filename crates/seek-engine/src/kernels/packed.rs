//! Weights repacked at load into tiles of 16 rows, for every type with a kernel of ours
//! (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0` here and in `legacy`; the k-quants in `k`), and
//! the AVX-512 VNNI kernels on them: one `vpdpbusd` multiplies four values of sixteen weight
//! rows with the same four activation values, so a row's sum stays in its own lane and is
//! never summed across lanes.
//!
//! Owns the packed layout of the 32-value types, the packing, the activation format their
//! kernels take ([`Q8_SUMS`]; the k-quants take llama.cpp's `Q8_K`), their reference kernels
//! on the file's own rows, reading a row back (a token embedding tied to the output), and the
//! loop over tiles. It must not choose which layers are packed (`linear` does) or split work
//! across threads (`linear` and the forward pass do).
//!
//! Why: on the file's layout a weight row's blocks are read one after another, and each pair
//! of blocks costs its unpacking, its f16 scales' conversion and a conversion of its sums to
//! f32, about as much again as the multiplication, for one row. In a tile the sixteen rows'
//! block `b` lie together: their scales are one load and one conversion, their values are
//! multiplied in eight (`Q8_0`) or four (the nibble types, their nibbles split) 64-byte
//! registers, and the sums are converted once per block for sixteen rows. This is the layout
//! candle and llama.cpp repack into; here it replaces the file's bytes (the same size for the
//! 32-value types and `Q6_K`, 2 % more for `Q4_K`/`Q5_K`'s unpacked scales), so the file's
//! bytes are not kept beside it.
//!
//! Layout of tile `t` (rows `16t .. 16t + 16`), block `b`, at `(t · blocks + b) ·
//! tile_bytes`: the sixteen rows' scales as f16 (then their minimums for `Q4_1`/`Q5_1`), then
//! groups of values, each group sixteen rows × four bytes. `Q8_0`: eight groups of four
//! values, each value plus 128 (unsigned). The others: four groups of eight values, byte `j`
//! of a row holding value `8g + j` in its low nibble and `8g + j + 4` in its high one; `Q5_0`
//! and `Q5_1` then a byte of fifth bits per row and group (bit `j` for value `8g + j`). The
//! signed values are `u − 128`, `q − 8` and `q − 16`; the offsets' share starts each sum,
//! from the activation block's stored `Σa`.

use std::ops::Range;

use rayon::prelude::*;

use super::kquants::{Q4K, Q5K, Q6K, Q8K};
use super::{Format, Q4_0, Q5_0, Q5_1, Q8_0, QK, f16_at};

mod k;
mod legacy;

/// Weight rows per tile.
pub const ROWS: usize = 16;

/// The most activation rows a kernel call takes (`Q6_K`'s; the others take 8).
const WIDE: usize = 16;

/// Activations for the packed kernels: per 32-value block its scale `d` as f32, the sum of
/// its values `Σq` as i32, `s = d·Σq` as llama.cpp's `Q8_1` rounds it (f16, as f32), then its
/// 32 values: llama.cpp's `Q8_0` and `Q8_1` at once (they quantize alike), for the packed
/// 32-value types (the k-quants take llama.cpp's `Q8_K`).
pub const Q8_SUMS: Format = Format {
    name: "Q8 with sums",
    values: QK,
    bytes: 12 + QK,
};

/// Where a [`Q8_SUMS`] block's values start.
pub(super) const SUMS_VALUES: usize = 12;

/// Whether this CPU runs the packed kernels.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return super::avx512::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Quantizes a row into [`Q8_SUMS`] (with AVX-512 where the CPU has it: the same bytes).
pub fn quantize_sums(row: &[f32], out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if super::quantize_avx512::available() {
        super::quantize_avx512::quantize_sums(row, out, quantize_sums_scalar);
        return;
    }
    quantize_sums_scalar(row, out);
}

/// [`quantize_sums`] value by value, the reference.
pub(super) fn quantize_sums_scalar(row: &[f32], out: &mut [u8]) {
    let mut block = [0u8; 4 + QK];
    for (values, out) in row
        .chunks_exact(QK)
        .zip(out.chunks_exact_mut(Q8_SUMS.bytes))
    {
        super::quantize_q8_1(values, &mut block);
        let sum: i32 = block[4..].iter().map(|&q| i32::from(q as i8)).sum();
        out[..4].copy_from_slice(&f16_at(&block, 0).to_le_bytes());
        out[4..8].copy_from_slice(&sum.to_le_bytes());
        out[8..12].copy_from_slice(&f16_at(&block, 2).to_le_bytes());
        out[SUMS_VALUES..].copy_from_slice(&block[4..]);
    }
}

/// The f32 at `bytes[at..at + 4]`.
fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The i32 at `bytes[at..at + 4]`.
fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Value `i` (0..32) of 16 bytes of nibbles (value `j` low in byte `j`, `j + 16` high), 0..16.
fn nibble(packed: &[u8], i: usize) -> u8 {
    if i < QK / 2 {
        packed[i] & 0x0f
    } else {
        packed[i - QK / 2] >> 4
    }
}

/// A packed weight type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
}

impl Kind {
    fn of(dtype: candle_core::quantized::GgmlDType) -> Option<Self> {
        use candle_core::quantized::GgmlDType as T;
        Some(match dtype {
            T::Q4_0 => Kind::Q4_0,
            T::Q4_1 => Kind::Q4_1,
            T::Q5_0 => Kind::Q5_0,
            T::Q5_1 => Kind::Q5_1,
            T::Q8_0 => Kind::Q8_0,
            T::Q4K => Kind::Q4K,
            T::Q5K => Kind::Q5K,
            T::Q6K => Kind::Q6K,
            _ => return None,
        })
    }

    fn format(self) -> Format {
        match self {
            Kind::Q4_0 => Q4_0,
            Kind::Q4_1 => super::Q4_1,
            Kind::Q5_0 => Q5_0,
            Kind::Q5_1 => Q5_1,
            Kind::Q8_0 => Q8_0,
            Kind::Q4K => Q4K,
            Kind::Q5K => Q5K,
            Kind::Q6K => Q6K,
        }
    }

    /// Whether this is a k-quant (256-value blocks, `Q8_K` activations; see `k`).
    fn is_k(self) -> bool {
        matches!(self, Kind::Q4K | Kind::Q5K | Kind::Q6K)
    }

    /// Bytes of a tile: sixteen rows' blocks `b`.
    fn tile_bytes(self) -> usize {
        if self.is_k() {
            k::tile_bytes(self)
        } else {
            ROWS * self.format().bytes
        }
    }

    /// The activations' format.
    fn activation(self) -> Format {
        if self.is_k() { Q8K } else { Q8_SUMS }
    }

    /// Whether values are `d·q + m` (else `d·(u − offset)`).
    fn has_min(self) -> bool {
        matches!(self, Kind::Q4_1 | Kind::Q5_1)
    }

    /// What is subtracted from the unsigned values: `x = u − offset` (0 with a minimum).
    fn offset(self) -> i32 {
        match self {
            Kind::Q4_0 => 8,
            Kind::Q5_0 => 16,
            Kind::Q8_0 => 128,
            Kind::Q4_1 | Kind::Q5_1 | Kind::Q4K | Kind::Q5K | Kind::Q6K => 0,
        }
    }

    /// A block's 32 values as unsigned bytes `u` (`Q8_0`'s plus 128).
    fn unsigned_values(self, block: &[u8]) -> [u8; QK] {
        match self {
            Kind::Q4_0 => std::array::from_fn(|i| nibble(&block[2..], i)),
            Kind::Q4_1 => std::array::from_fn(|i| nibble(&block[4..], i)),
            Kind::Q5_0 => super::legacy::q5_values(block, 2),
            Kind::Q5_1 => super::legacy::q5_values(block, 4),
            Kind::Q8_0 => std::array::from_fn(|i| block[2 + i] ^ 0x80),
            // Not a 32-value type: `k` reads those.
            Kind::Q4K | Kind::Q5K | Kind::Q6K => [0; QK],
        }
    }

    /// Where a tile's parts start: minimums, values, fifth bits (after the scales at 0).
    fn layout(self) -> (usize, usize, usize) {
        let mins = 2 * ROWS;
        let values = if self.has_min() {
            mins + 2 * ROWS
        } else {
            mins
        };
        let nibbles = values + ROWS * QK / 2;
        (mins, values, nibbles)
    }
}

/// The reference kernel of a packed type's arithmetic on a row in the file's layout with
/// [`Q8_SUMS`] activations: `Σ_b d_w·d_a·Σ x·q`, plus `m·s` for the types with a minimum.
fn reference(kind: Kind, weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let format = kind.format();
    let row_bytes = weight_row.len() / format.bytes * Q8_SUMS.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(format.bytes)
            .zip(act.chunks_exact(Q8_SUMS.bytes))
        {
            let values = kind.unsigned_values(w);
            let dot: i32 = values
                .iter()
                .zip(&a[SUMS_VALUES..])
                .map(|(&u, &q)| (i32::from(u) - kind.offset()) * i32::from(q as i8))
                .sum();
            let mut term = f16_at(w, 0) * f32_at(a, 0) * dot as f32;
            if kind.has_min() {
                term += f16_at(w, 2) * f32_at(a, 8);
            }
            sum += term;
        }
        *o = sum;
    }
}

pub(super) fn reference_q4_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    reference(Kind::Q4_0, weight_row, acts, out)
}
pub(super) fn reference_q4_1(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    reference(Kind::Q4_1, weight_row, acts, out)
}
pub(super) fn reference_q5_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    reference(Kind::Q5_0, weight_row, acts, out)
}
pub(super) fn reference_q5_1(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    reference(Kind::Q5_1, weight_row, acts, out)
}
pub(super) fn reference_q8_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    reference(Kind::Q8_0, weight_row, acts, out)
}

/// A weight matrix `(n, k)` in tiles of [`ROWS`] rows.
pub struct Packed {
    kind: Kind,
    n: usize,
    k: usize,
    tiles: Vec<u8>,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({:?}, {}×{})", self.kind, self.n, self.k)
    }
}

impl Packed {
    /// `bytes`, a `(n, k)` matrix of GGML type `dtype` in the file's layout, packed; `None`
    /// when the type is not packed, the CPU lacks the kernels, `k` is not a whole number of
    /// blocks, or `bytes` is not the matrix's size. A last tile of fewer than [`ROWS`] rows is
    /// filled with rows of zeros, whose products are never written out.
    pub fn new(
        dtype: candle_core::quantized::GgmlDType,
        bytes: &[u8],
        n: usize,
        k: usize,
    ) -> Option<Self> {
        let kind = Kind::of(dtype)?;
        if !available() || (kind.is_k() && !k::available()) {
            return None;
        }
        Self::tiles_only(dtype, bytes, n, k)
    }

    /// [`Packed::new`] whether or not this CPU runs the kernels: the tiles alone, which
    /// [`Packed::dequantize_row`] reads on any CPU (for tests).
    pub(super) fn tiles_only(
        dtype: candle_core::quantized::GgmlDType,
        bytes: &[u8],
        n: usize,
        k: usize,
    ) -> Option<Self> {
        let kind = Kind::of(dtype)?;
        let format = kind.format();
        if n == 0
            || k == 0
            || !k.is_multiple_of(format.values)
            || bytes.len() != n * (k / format.values) * format.bytes
        {
            return None;
        }
        Some(Self::pack(kind, bytes, n, k))
    }

    fn pack(kind: Kind, bytes: &[u8], n: usize, k: usize) -> Self {
        let format = kind.format();
        let blocks = k / format.values;
        let tile_bytes = kind.tile_bytes();
        let (mins_at, values_at, high_at) = kind.layout();
        let mut tiles = vec![0u8; n.div_ceil(ROWS) * blocks * tile_bytes];
        huge_pages(&mut tiles);
        let block_of = |row: usize, b: usize| {
            let at = (row * blocks + b) * format.bytes;
            &bytes[at..at + format.bytes]
        };
        // Each row of tiles on its own: packing is part of loading the model, so it is shared
        // out over the current rayon pool (the engine's threads).
        let tile_rows = tiles.par_chunks_mut(blocks * tile_bytes).enumerate();
        tile_rows.for_each(|(t, tile_row)| {
            // The rows of this tile the matrix has (the rest stay zeros).
            let rows = ROWS.min(n - t * ROWS);
            for b in 0..blocks {
                let tile = &mut tile_row[b * tile_bytes..(b + 1) * tile_bytes];
                if kind.is_k() {
                    let mut blocks: [&[u8]; ROWS] = [&[]; ROWS];
                    for (r, block) in blocks.iter_mut().take(rows).enumerate() {
                        *block = block_of(t * ROWS + r, b);
                    }
                    k::pack(kind, &blocks[..rows], tile);
                    continue;
                }
                for r in 0..rows {
                    let block = block_of(t * ROWS + r, b);
                    tile[2 * r..2 * r + 2].copy_from_slice(&block[..2]);
                    if kind.has_min() {
                        tile[mins_at + 2 * r..mins_at + 2 * r + 2].copy_from_slice(&block[2..4]);
                    }
                    let u = kind.unsigned_values(block);
                    if kind == Kind::Q8_0 {
                        for g in 0..QK / 4 {
                            for j in 0..4 {
                                tile[values_at + (g * ROWS + r) * 4 + j] = u[4 * g + j];
                            }
                        }
                        continue;
                    }
                    for g in 0..QK / 8 {
                        let mut high = 0u8;
                        for j in 0..4 {
                            let (first, second) = (u[8 * g + j], u[8 * g + j + 4]);
                            tile[values_at + (g * ROWS + r) * 4 + j] =
                                (first & 0x0f) | (second & 0x0f) << 4;
                            high |= (first >> 4) << j | (second >> 4) << (j + 4);
                        }
                        if matches!(kind, Kind::Q5_0 | Kind::Q5_1) {
                            tile[high_at + g * ROWS + r] = high;
                        }
                    }
                }
            }
        });
        Self { kind, n, k, tiles }
    }

    /// Row `r`'s values into `out` (`k` long), as the file's block would give them: how a
    /// token embedding shared with the output projection is read. `false` for a row past the
    /// matrix or an `out` of another length.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) -> bool {
        if r >= self.n || out.len() != self.k {
            return false;
        }
        let format = self.kind.format();
        let blocks = self.k / format.values;
        let tile_bytes = self.kind.tile_bytes();
        let (mins_at, values_at, high_at) = self.kind.layout();
        let (t, lane) = (r / ROWS, r % ROWS);
        for (b, values) in out.chunks_exact_mut(format.values).enumerate() {
            let tile = &self.tiles[(t * blocks + b) * tile_bytes..][..tile_bytes];
            if self.kind.is_k() {
                k::dequantize(self.kind, tile, lane, values);
                continue;
            }
            let d = f16_at(tile, 2 * lane);
            let m = if self.kind.has_min() {
                f16_at(tile, mins_at + 2 * lane)
            } else {
                0.0
            };
            for (i, value) in values.iter_mut().enumerate() {
                let u = if self.kind == Kind::Q8_0 {
                    tile[values_at + ((i / 4) * ROWS + lane) * 4 + i % 4]
                } else {
                    let (g, j) = (i / 8, i % 8);
                    let byte = tile[values_at + (g * ROWS + lane) * 4 + j % 4];
                    let low = if j < 4 { byte & 0x0f } else { byte >> 4 };
                    let fifth = if matches!(self.kind, Kind::Q5_0 | Kind::Q5_1) {
                        (tile[high_at + g * ROWS + lane] >> j) & 1
                    } else {
                        0
                    };
                    low | fifth << 4
                };
                let x = i32::from(u) - self.kind.offset();
                *value = d * x as f32 + m;
            }
        }
        true
    }

    /// `(n, k)`: outputs × inputs.
    pub fn dims(&self) -> (usize, usize) {
        (self.n, self.k)
    }

    /// The kernel on the file's layout that computes what this one does, with the activation
    /// format and quantizer this one takes: the reference for tests, and what tells the
    /// forward pass how to quantize for this layer.
    pub fn kernel(&self) -> super::Kernel {
        let (reference, quantize): (super::RowDots, super::Quantize) = match self.kind {
            Kind::Q4_0 => (reference_q4_0, quantize_sums),
            Kind::Q4_1 => (reference_q4_1, quantize_sums),
            Kind::Q5_0 => (reference_q5_0, quantize_sums),
            Kind::Q5_1 => (reference_q5_1, quantize_sums),
            Kind::Q8_0 => (reference_q8_0, quantize_sums),
            // The k-quants take llama.cpp's own `Q8_K`: their scalar kernels are the reference.
            Kind::Q4K => (super::kquants::scalar_q4_k, super::kquants::quantize_q8_k),
            Kind::Q5K => (super::kquants::scalar_q5_k, super::kquants::quantize_q8_k),
            Kind::Q6K => (super::kquants::scalar_q6_k, super::kquants::quantize_q8_k),
        };
        let weight = self.kind.format();
        super::Kernel {
            weight,
            activation: self.kind.activation(),
            quantize,
            reference,
            tiles: None,
            simd: true,
            isa: "avx512vnni packed",
        }
    }

    /// The dot products of weight rows `rows` with every activation row in `acts` (rows of
    /// `k` values in [`Packed::kernel`]'s activation format): `out[i · R + r]` = weight row `rows.start + i` ·
    /// activation row `r`, for `R` activation rows. Each result is the same whatever `R` and
    /// `rows` are; a range that is not whole tiles costs the whole tiles it touches. Panics if
    /// the lengths disagree (a bug in the caller).
    pub fn multiply(&self, rows: Range<usize>, acts: &[u8], out: &mut [f32]) {
        assert!(
            rows.start <= rows.end && rows.end <= self.n,
            "rows of the matrix"
        );
        let blocks = self.k / self.kind.format().values;
        let act_bytes = blocks * self.kind.activation().bytes;
        let inputs = acts.len() / act_bytes;
        assert_eq!(acts.len(), inputs * act_bytes, "whole activation rows");
        assert_eq!(
            out.len(),
            rows.len() * inputs,
            "one output per pair of rows"
        );
        let tile_bytes = self.kind.tile_bytes();
        // Activation rows per tile call: as many as the kernel keeps sums for in registers;
        // `Q6_K`'s sixteen share each group's unpacking, which costs it most (5 % faster
        // than eight on one thread; `Q4_K`, `Q5_K` were not faster).
        let wide = if self.kind == Kind::Q6K { WIDE } else { 8 };
        let act_row = |r: usize| &acts[r * act_bytes..(r + 1) * act_bytes];
        // A group of activation rows stays in cache while the tiles pass over it.
        const GROUP: usize = 32;
        for group in (0..inputs).step_by(GROUP) {
            let group_end = (group + GROUP).min(inputs);
            for t in rows.start / ROWS..rows.end.div_ceil(ROWS) {
                let tile = &self.tiles[t * blocks * tile_bytes..(t + 1) * blocks * tile_bytes];
                let mut a = group;
                while a < group_end {
                    let take = match group_end - a {
                        left if left >= wide => wide,
                        left if left >= 8 => 8,
                        _ => 1,
                    };
                    let mut sums = [[0f32; ROWS]; WIDE];
                    let mut chunk: [&[u8]; WIDE] = [&[]; WIDE];
                    for (i, slot) in chunk.iter_mut().take(take).enumerate() {
                        *slot = act_row(a + i);
                    }
                    tile_products(self.kind, blocks, tile, &chunk, take, &mut sums);
                    for (m, lanes) in sums.iter().take(take).enumerate() {
                        for (r, value) in lanes.iter().enumerate() {
                            let row = t * ROWS + r;
                            if rows.contains(&row) {
                                out[(row - rows.start) * inputs + a + m] = *value;
                            }
                        }
                    }
                    a += take;
                }
            }
        }
    }
}

/// Asks Linux to back `tiles` with 2 MiB pages where it can, before they are first written (a
/// large zeroed allocation is usually a fresh, untouched mapping): a decode step streams every
/// weight once, and with 4 KiB pages each 4 KiB cost a TLB miss (about 200,000 a token for a
/// 1.5B model). A hint only: where it is refused or unsupported nothing changes.
fn huge_pages(tiles: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = tiles.as_mut_ptr() as usize;
        let (first, end) = (start.next_multiple_of(HUGE), start + tiles.len());
        if end > first + HUGE {
            let len = (end - first) / HUGE * HUGE;
            // SAFETY: [first, first + len) lies within `tiles`, which this call borrows
            // mutably; MADV_HUGEPAGE changes how the pages are backed, never their contents.
            unsafe { libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tiles;
}

/// How far ahead of a block the kernels of one activation row (decode) ask for weights: a
/// decode step streams every weight once from memory, and two cores' hardware prefetchers
/// alone left it at 14–19 GB/s. Measured on the 1.5B-shaped files (two threads, tokens/s,
/// means of 2–6 alternated runs of the forward bench, none → 2 KiB → 4 KiB ahead): Q5_0
/// 15.0 → 18.7 → 21.0, Q5_K 13.1 → 17.0 → 18.5, Q6_K 13.2 → 16.0 → 17.0, Q4_0 (2 → 4 KiB)
/// 24.4 → 27.3, Q4_K 22.5 → 24.8 → 23.0 (its only loss to 2 KiB, within the runs' spread);
/// SmolLM2's decode, from the last-level cache, lost nothing.
#[cfg(target_arch = "x86_64")]
const PREFETCH_BYTES: usize = 4096;

/// Asks for the cache lines [`PREFETCH_BYTES`] past `block`'s into the second-level cache.
#[cfg(target_arch = "x86_64")]
#[inline]
fn prefetch_ahead(block: &[u8]) {
    use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
    let ahead = block.as_ptr().wrapping_add(PREFETCH_BYTES);
    for line in (0..block.len()).step_by(64) {
        // SAFETY: a prefetch reads nothing the program sees and never faults, whatever the
        // address (past the weights' end it is only wasted).
        unsafe { _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(line).cast()) };
    }
}

/// `take` (1, 8, or 16 for `Q6_K`) activation rows of `acts` × one tile, into `sums[m][r]`.
#[cfg(target_arch = "x86_64")]
fn tile_products(
    kind: Kind,
    blocks: usize,
    tile: &[u8],
    acts: &[&[u8]; WIDE],
    take: usize,
    sums: &mut [[f32; ROWS]; WIDE],
) {
    // SAFETY: a `Packed` exists only where `available()` found every feature the kernels are
    // compiled for; they check their slices' lengths themselves.
    if kind.is_k() {
        k::tile_products(kind, blocks, tile, acts, take, sums);
        return;
    }
    unsafe {
        match (kind, take) {
            (Kind::Q8_0, 8) => legacy::q8_0_tile::<8>(blocks, tile, acts, sums),
            (Kind::Q8_0, _) => legacy::q8_0_tile::<1>(blocks, tile, acts, sums),
            (Kind::Q4_0, 8) => legacy::nibble_tile::<8, 8, false, false>(blocks, tile, acts, sums),
            (Kind::Q4_0, _) => legacy::nibble_tile::<1, 8, false, false>(blocks, tile, acts, sums),
            (Kind::Q4_1, 8) => legacy::nibble_tile::<8, 0, true, false>(blocks, tile, acts, sums),
            (Kind::Q4_1, _) => legacy::nibble_tile::<1, 0, true, false>(blocks, tile, acts, sums),
            (Kind::Q5_0, 8) => legacy::nibble_tile::<8, 16, false, true>(blocks, tile, acts, sums),
            (Kind::Q5_0, _) => legacy::nibble_tile::<1, 16, false, true>(blocks, tile, acts, sums),
            (Kind::Q5_1, 8) => legacy::nibble_tile::<8, 0, true, true>(blocks, tile, acts, sums),
            (Kind::Q5_1, _) => legacy::nibble_tile::<1, 0, true, true>(blocks, tile, acts, sums),
            (Kind::Q4K | Kind::Q5K | Kind::Q6K, _) => {}
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn tile_products(
    _: Kind,
    _: usize,
    _: &[u8],
    _: &[&[u8]; WIDE],
    _: usize,
    _: &mut [[f32; ROWS]; WIDE],
) {
    // Invariant: `Packed::new` makes none where `available()` is false, as it is here.
    unreachable!("packed weights without the x86 kernels")
}
