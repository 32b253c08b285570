//! `Q8_0` and `Q4_0` weights repacked at load into tiles of 16 rows, and their AVX-512 VNNI
//! kernels: one `vpdpbusd` multiplies four values of sixteen weight rows with the same four
//! activation values, so a row's sum stays in its own lane and is never summed across lanes.
//!
//! Owns the packed layout, the packing, the activation format the kernels take
//! ([`Q8_0_SUMS`]), its reference kernels on the file's own rows, and the kernels. It must not
//! choose which layers are packed (`linear` does) or split work across threads (`linear` and
//! the forward pass do, in whole tiles).
//!
//! Why: on the file's layout a weight row's blocks are read one after another, and each pair
//! of blocks costs its unpacking, its f16 scales' conversion and a conversion of its sums to
//! f32, about as much again as the multiplication, for one row. In a tile the sixteen rows'
//! block `b` lie together: their scales are one load and one conversion, their values are
//! multiplied in eight (`Q8_0`) or four (`Q4_0`, with its nibbles split) 64-byte registers,
//! and the sums are converted once per block for sixteen rows. This is the layout candle and
//! llama.cpp repack into; here it replaces the file's bytes (the same size: a tile holds
//! sixteen blocks' scales and values and nothing else), so no memory is added.
//!
//! Layout of tile `t` (rows `16t .. 16t + 16`), block `b`, at `(t · blocks + b) · TILE_BYTES`:
//! the sixteen rows' scales as f16, then groups of values, each group sixteen rows × four
//! bytes. `Q8_0`: eight groups of four values, each value plus 128 (unsigned). `Q4_0`: four
//! groups of eight values, byte `j` of a row holding value `8g + j` in its low nibble and
//! `8g + j + 4` in its high one. The signed values are `u − 128` and `q − 8`; the offsets'
//! share (`128·Σa`, `8·Σa`) starts each sum, from the activation block's stored `Σa`.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::ops::Range;

use super::{Format, Q4_0, Q8_0, QK, f16_at};

/// Weight rows per tile.
pub const ROWS: usize = 16;

/// Activations for the packed kernels: per 32-value block its scale `d` as f32, the sum of
/// its values `Σq` as i32, then its 32 values (llama.cpp's `Q8_0`, with the sum kept).
pub const Q8_0_SUMS: Format = Format {
    name: "Q8_0 with sums",
    values: QK,
    bytes: 8 + QK,
};

/// Whether this CPU runs the packed kernels.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return super::avx512::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Quantizes a row into [`Q8_0_SUMS`]: llama.cpp's `Q8_0` blocks, with each block's sum.
pub fn quantize_sums(row: &[f32], out: &mut [u8]) {
    let mut block = [0u8; 2 + QK];
    for (values, out) in row
        .chunks_exact(QK)
        .zip(out.chunks_exact_mut(Q8_0_SUMS.bytes))
    {
        super::quantize_q8_0(values, &mut block);
        let sum: i32 = block[2..].iter().map(|&q| i32::from(q as i8)).sum();
        out[..4].copy_from_slice(&f16_at(&block, 0).to_le_bytes());
        out[4..8].copy_from_slice(&sum.to_le_bytes());
        out[8..].copy_from_slice(&block[2..]);
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

/// Value `i` (0..32) of a `Q4_0` block's 16 packed bytes, 0..16.
fn q4_0_value(packed: &[u8], i: usize) -> u8 {
    if i < QK / 2 {
        packed[i] & 0x0f
    } else {
        packed[i - QK / 2] >> 4
    }
}

/// The reference `Q8_0 × Q8_0_SUMS` kernel on a row in the file's layout.
pub(super) fn scalar_q8_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q8_0.bytes * Q8_0_SUMS.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q8_0.bytes)
            .zip(act.chunks_exact(Q8_0_SUMS.bytes))
        {
            let dot: i32 = w[2..]
                .iter()
                .zip(&a[8..])
                .map(|(&x, &y)| i32::from(x as i8) * i32::from(y as i8))
                .sum();
            sum += f16_at(w, 0) * f32_at(a, 0) * dot as f32;
        }
        *o = sum;
    }
}

/// The reference `Q4_0 × Q8_0_SUMS` kernel on a row in the file's layout.
pub(super) fn scalar_q4_0(weight_row: &[u8], acts: &[u8], out: &mut [f32]) {
    let row_bytes = weight_row.len() / Q4_0.bytes * Q8_0_SUMS.bytes;
    for (o, act) in out.iter_mut().zip(acts.chunks_exact(row_bytes)) {
        let mut sum = 0f32;
        for (w, a) in weight_row
            .chunks_exact(Q4_0.bytes)
            .zip(act.chunks_exact(Q8_0_SUMS.bytes))
        {
            let dot: i32 = (0..QK)
                .map(|i| (i32::from(q4_0_value(&w[2..], i)) - 8) * i32::from(a[8 + i] as i8))
                .sum();
            sum += f16_at(w, 0) * f32_at(a, 0) * dot as f32;
        }
        *o = sum;
    }
}

/// A packed weight type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Q8_0,
    Q4_0,
}

impl Kind {
    fn format(self) -> Format {
        match self {
            Kind::Q8_0 => Q8_0,
            Kind::Q4_0 => Q4_0,
        }
    }
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
    /// when the type is not packed, the CPU lacks the kernels, `n` is not a whole number of
    /// tiles or `k` of blocks, or `bytes` is not the matrix's size.
    pub fn new(
        dtype: candle_core::quantized::GgmlDType,
        bytes: &[u8],
        n: usize,
        k: usize,
    ) -> Option<Self> {
        use candle_core::quantized::GgmlDType as T;
        let kind = match dtype {
            T::Q8_0 => Kind::Q8_0,
            T::Q4_0 => Kind::Q4_0,
            _ => return None,
        };
        let format = kind.format();
        if !available()
            || n == 0
            || k == 0
            || !n.is_multiple_of(ROWS)
            || !k.is_multiple_of(QK)
            || bytes.len() != n * (k / QK) * format.bytes
        {
            return None;
        }
        Some(Self::pack(kind, bytes, n, k))
    }

    fn pack(kind: Kind, bytes: &[u8], n: usize, k: usize) -> Self {
        let format = kind.format();
        let blocks = k / QK;
        let tile_bytes = ROWS * format.bytes;
        let mut tiles = vec![0u8; bytes.len()];
        for t in 0..n / ROWS {
            for b in 0..blocks {
                let tile = &mut tiles[(t * blocks + b) * tile_bytes..][..tile_bytes];
                for r in 0..ROWS {
                    let at = ((t * ROWS + r) * blocks + b) * format.bytes;
                    let block = &bytes[at..at + format.bytes];
                    tile[2 * r..2 * r + 2].copy_from_slice(&block[..2]);
                    let values = &mut tile[2 * ROWS..];
                    match kind {
                        Kind::Q8_0 => {
                            for g in 0..QK / 4 {
                                for j in 0..4 {
                                    values[(g * ROWS + r) * 4 + j] = block[2 + 4 * g + j] ^ 0x80;
                                }
                            }
                        }
                        Kind::Q4_0 => {
                            let packed = &block[2..];
                            for g in 0..QK / 8 {
                                for j in 0..4 {
                                    values[(g * ROWS + r) * 4 + j] = q4_0_value(packed, 8 * g + j)
                                        | q4_0_value(packed, 8 * g + j + 4) << 4;
                                }
                            }
                        }
                    }
                }
            }
        }
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
        let blocks = self.k / QK;
        let tile_bytes = ROWS * format.bytes;
        let (t, lane) = (r / ROWS, r % ROWS);
        for (b, values) in out.chunks_exact_mut(QK).enumerate() {
            let tile = &self.tiles[(t * blocks + b) * tile_bytes..][..tile_bytes];
            let d = f16_at(tile, 2 * lane);
            let packed = &tile[2 * ROWS..];
            for (i, value) in values.iter_mut().enumerate() {
                let x = match self.kind {
                    Kind::Q8_0 => {
                        i32::from((packed[((i / 4) * ROWS + lane) * 4 + i % 4] ^ 0x80) as i8)
                    }
                    Kind::Q4_0 => {
                        let byte = packed[((i / 8) * ROWS + lane) * 4 + i % 4];
                        let q = if i % 8 < 4 { byte & 0x0f } else { byte >> 4 };
                        i32::from(q) - 8
                    }
                };
                *value = d * x as f32;
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
        let (weight, reference): (Format, super::RowDots) = match self.kind {
            Kind::Q8_0 => (Q8_0, scalar_q8_0),
            Kind::Q4_0 => (Q4_0, scalar_q4_0),
        };
        super::Kernel {
            weight,
            activation: Q8_0_SUMS,
            quantize: quantize_sums,
            reference,
            tiles: None,
            simd: true,
            isa: "avx512vnni packed",
        }
    }

    /// The dot products of weight rows `rows` with every activation row in `acts`
    /// ([`Q8_0_SUMS`] rows of `k` values): `out[i · R + r]` = weight row `rows.start + i` ·
    /// activation row `r`, for `R` activation rows. Each result is the same whatever `R` and
    /// `rows` are; a range that is not whole tiles costs the whole tiles it touches. Panics if
    /// the lengths disagree (a bug in the caller).
    pub fn multiply(&self, rows: Range<usize>, acts: &[u8], out: &mut [f32]) {
        assert!(
            rows.start <= rows.end && rows.end <= self.n,
            "rows of the matrix"
        );
        let blocks = self.k / QK;
        let act_bytes = blocks * Q8_0_SUMS.bytes;
        let inputs = acts.len() / act_bytes;
        assert_eq!(acts.len(), inputs * act_bytes, "whole activation rows");
        assert_eq!(
            out.len(),
            rows.len() * inputs,
            "one output per pair of rows"
        );
        let tile_bytes = ROWS * self.kind.format().bytes;
        let act_row = |r: usize| &acts[r * act_bytes..(r + 1) * act_bytes];
        // A group of activation rows stays in cache while the tiles pass over it.
        const GROUP: usize = 32;
        for group in (0..inputs).step_by(GROUP) {
            let group_end = (group + GROUP).min(inputs);
            for t in rows.start / ROWS..rows.end.div_ceil(ROWS) {
                let tile = &self.tiles[t * blocks * tile_bytes..(t + 1) * blocks * tile_bytes];
                let mut a = group;
                while a < group_end {
                    let take = if group_end - a >= 8 { 8 } else { 1 };
                    let mut sums = [[0f32; ROWS]; 8];
                    let mut chunk: [&[u8]; 8] = [&[]; 8];
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

/// `take` (1 or 8) activation rows of `acts` × one tile, into `sums[m][r]`.
#[cfg(target_arch = "x86_64")]
fn tile_products(
    kind: Kind,
    blocks: usize,
    tile: &[u8],
    acts: &[&[u8]; 8],
    take: usize,
    sums: &mut [[f32; ROWS]; 8],
) {
    // SAFETY: a `Packed` exists only where `available()` found every feature the kernels are
    // compiled for; they check their slices' lengths themselves.
    unsafe {
        match (kind, take) {
            (Kind::Q8_0, 8) => q8_0_tile::<8>(blocks, tile, acts, sums),
            (Kind::Q8_0, _) => q8_0_tile::<1>(blocks, tile, acts, sums),
            (Kind::Q4_0, 8) => q4_0_tile::<8>(blocks, tile, acts, sums),
            (Kind::Q4_0, _) => q4_0_tile::<1>(blocks, tile, acts, sums),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn tile_products(_: Kind, _: usize, _: &[u8], _: &[&[u8]; 8], _: usize, _: &mut [[f32; ROWS]; 8]) {
    // Invariant: `Packed::new` makes none where `available()` is false, as it is here.
    unreachable!("packed weights without the x86 kernels")
}

/// 64 bytes from the start of `bytes` (at least 64 long).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn load64(bytes: &[u8]) -> __m512i {
    assert!(bytes.len() >= 64, "64 bytes to load");
    // SAFETY: the assert guarantees 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

#[cfg(target_arch = "x86_64")]
/// The sixteen f16 scales at the start of `bytes`, as f32.
#[inline]
#[target_feature(enable = "avx512f,avx2")]
fn scales(bytes: &[u8]) -> __m512 {
    assert!(bytes.len() >= 32, "sixteen scales");
    // SAFETY: the assert guarantees 32 readable bytes; `loadu` has no alignment requirement.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) })
}

#[cfg(target_arch = "x86_64")]
/// The four bytes at `bytes[at..at + 4]` in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast4(bytes: &[u8], at: usize) -> __m512i {
    _mm512_set1_epi32(i32_at(bytes, at))
}

#[cfg(target_arch = "x86_64")]
/// The sums of an activation block's share in one tile: `start` holds the offset's share; the
/// products go to two chains so that consecutive multiply-adds need not wait for each other.
/// Then `acc += (sum as f32) · d_w · d_a` for the sixteen rows.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
fn finish(start: __m512i, other: __m512i, weight_scales: __m512, act: &[u8], acc: &mut __m512) {
    let sum = _mm512_add_epi32(start, other);
    let scale = _mm512_mul_ps(weight_scales, _mm512_set1_ps(f32_at(act, 0)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, *acc);
}

#[cfg(target_arch = "x86_64")]
/// One `Q8_0` tile (`blocks` blocks) × `M` activation rows; `out[m][r]` is row `r` · act `m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
fn q8_0_tile<const M: usize>(
    blocks: usize,
    tile: &[u8],
    acts: &[&[u8]; 8],
    out: &mut [[f32; ROWS]; 8],
) {
    let tile_bytes = ROWS * Q8_0.bytes;
    assert!(tile.len() >= blocks * tile_bytes, "a tile");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8_0_SUMS.bytes, "an activation row");
    }
    let mut acc = [_mm512_setzero_ps(); M];
    for b in 0..blocks {
        let block = &tile[b * tile_bytes..(b + 1) * tile_bytes];
        let weight_scales = scales(block);
        let values: [__m512i; 8] = std::array::from_fn(|g| load64(&block[2 * ROWS + 64 * g..]));
        for m in 0..M {
            let act = &acts[m][b * Q8_0_SUMS.bytes..(b + 1) * Q8_0_SUMS.bytes];
            let mut even = _mm512_set1_epi32(-128 * i32_at(act, 4));
            let mut odd = _mm512_setzero_si512();
            for g in (0..8).step_by(2) {
                even = _mm512_dpbusd_epi32(even, values[g], broadcast4(act, 8 + 4 * g));
                odd = _mm512_dpbusd_epi32(odd, values[g + 1], broadcast4(act, 12 + 4 * g));
            }
            finish(even, odd, weight_scales, act, &mut acc[m]);
        }
    }
    for m in 0..M {
        // SAFETY: `out[m]` is 16 f32, 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_ps(out[m].as_mut_ptr(), acc[m]) };
    }
}

#[cfg(target_arch = "x86_64")]
/// One `Q4_0` tile (`blocks` blocks) × `M` activation rows; `out[m][r]` is row `r` · act `m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma,f16c")]
fn q4_0_tile<const M: usize>(
    blocks: usize,
    tile: &[u8],
    acts: &[&[u8]; 8],
    out: &mut [[f32; ROWS]; 8],
) {
    let tile_bytes = ROWS * Q4_0.bytes;
    assert!(tile.len() >= blocks * tile_bytes, "a tile");
    for act in acts.iter().take(M) {
        assert!(act.len() >= blocks * Q8_0_SUMS.bytes, "an activation row");
    }
    let nibble = _mm512_set1_epi8(0x0f);
    let mut acc = [_mm512_setzero_ps(); M];
    for b in 0..blocks {
        let block = &tile[b * tile_bytes..(b + 1) * tile_bytes];
        let weight_scales = scales(block);
        let packed: [__m512i; 4] = std::array::from_fn(|g| load64(&block[2 * ROWS + 64 * g..]));
        let low: [__m512i; 4] = std::array::from_fn(|g| _mm512_and_si512(packed[g], nibble));
        let high: [__m512i; 4] =
            std::array::from_fn(|g| _mm512_and_si512(_mm512_srli_epi16(packed[g], 4), nibble));
        for m in 0..M {
            let act = &acts[m][b * Q8_0_SUMS.bytes..(b + 1) * Q8_0_SUMS.bytes];
            let mut even = _mm512_set1_epi32(-8 * i32_at(act, 4));
            let mut odd = _mm512_setzero_si512();
            for g in 0..4 {
                even = _mm512_dpbusd_epi32(even, low[g], broadcast4(act, 8 + 8 * g));
                odd = _mm512_dpbusd_epi32(odd, high[g], broadcast4(act, 12 + 8 * g));
            }
            finish(even, odd, weight_scales, act, &mut acc[m]);
        }
    }
    for m in 0..M {
        // SAFETY: `out[m]` is 16 f32, 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_ps(out[m].as_mut_ptr(), acc[m]) };
    }
}
