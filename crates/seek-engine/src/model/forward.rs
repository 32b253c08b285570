//! One chunk of positions through every layer, computed by the team of threads (see `team`):
//! the residual stream, norms, matrix products, rotary embedding and attention on plain `f32`
//! buffers, step by step, each step starting when the previous one's items are done.
//!
//! Owns the order of the steps, how each step's work is cut into items and where each item
//! writes. It must not know the file or the tokens as text: `model` loads the weights and hands
//! over the chunk. Every position's values are computed by the same operations whether the
//! chunk holds one position or many (matrix rows are independent in the kernels, attention is
//! per position and head), so a prompt computed at once or token by token gives identical
//! logits.

use std::ops::Range;

use super::Transformer;
use super::attention::{Cached, MAX_HEADS, Queries, attend_block};
use super::cache::KvCache;
use super::team::{Member, Shared, Team};
use crate::kernels::norm::{rms_norm_row, rms_scale, scale_row};
use crate::linear::Linear;

/// Steps that share out items, per layer, at most: norm and quantize (one step when every
/// layer of the step is ours), q/k/v, attention, quantize, output, norm and quantize, gate/up,
/// quantize, down.
const STEPS_PER_LAYER: usize = 11;
/// Weight rows per item of a matrix product, at most: with more input rows (prefill) an item
/// is bigger work, so fewer rows suffice to share it out.
const MAX_ROWS_PER_ITEM: usize = 64;
/// Query positions per attention item during prefill.
const POSITIONS_PER_ITEM: usize = 16;
/// From this many cached positions on, a decode step's attention items take a key/value
/// head's query heads together rather than one each.
const SHARED_READS_FROM: usize = 512;

/// A matrix product's input in the forms its layers need: `f32` rows, and per layer the rows
/// quantized for its kernel (`None` where an earlier layer of the step needs the same form),
/// or computed whole by candle.
struct Operand<'a> {
    input: &'a Shared<'a, f32>,
    quantized: &'a [Shared<'a, u8>],
    computed: &'a [Shared<'a, f32>],
}

/// Scratch room for the room-hungry buffers of one step's layers, sized for the largest.
struct Room {
    quantized: Vec<Vec<u8>>,
    computed: Vec<Vec<f32>>,
}

impl Room {
    /// For `rows` input rows of each of `linears` (per layer, the same number each).
    fn new<'l>(rows: usize, linears: impl Iterator<Item = &'l [&'l Linear]>) -> Self {
        let mut quantized: Vec<usize> = Vec::new();
        let mut computed: Vec<usize> = Vec::new();
        for step in linears {
            quantized.resize(quantized.len().max(step.len()), 0);
            computed.resize(computed.len().max(step.len()), 0);
            for (i, linear) in step.iter().enumerate() {
                match linear.blocks() {
                    Some(blocks) => {
                        quantized[i] = quantized[i].max(rows * blocks.activation_row_bytes())
                    }
                    None => {
                        let n = linear.dims().map_or(0, |(n, _)| n);
                        computed[i] = computed[i].max(rows * n);
                    }
                }
            }
        }
        Self {
            quantized: quantized.into_iter().map(|n| vec![0; n]).collect(),
            computed: computed.into_iter().map(|n| vec![0.0; n]).collect(),
        }
    }

    fn shared(&mut self) -> (Vec<Shared<'_, u8>>, Vec<Shared<'_, f32>>) {
        (
            self.quantized.iter_mut().map(|b| Shared::new(b)).collect(),
            self.computed.iter_mut().map(|b| Shared::new(b)).collect(),
        )
    }
}

/// Per-thread scratch.
struct Scratch {
    tile: Vec<f32>,
    other: Vec<f32>,
    scores: Vec<f32>,
    /// An attention item's queries side by side, and its results.
    queries: Vec<f32>,
    attended: Vec<f32>,
}

impl Transformer {
    /// Computes `tokens` after the cache's positions, and returns the residual stream's last
    /// row (before the final norm). The cache has room (see `KvCache::reserve`).
    pub(super) fn forward_chunk(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
    ) -> candle_core::Result<Vec<f32>> {
        let s = &self.shape;
        let seq = tokens.len();
        let start = cache.len();
        let (width, q_width, kv_width) = (s.embedding, s.heads * s.head_dim, cache.width());
        let mut x = self.embed(tokens)?;
        let mut h = vec![0f32; seq * width];
        let mut q = vec![0f32; seq * q_width];
        let mut attended = vec![0f32; seq * q_width];
        let mut hidden = vec![0f32; seq * self.ffn_width];
        let attention_in: Vec<[&Linear; 3]> =
            self.layers.iter().map(|l| [&l.wq, &l.wk, &l.wv]).collect();
        let output_in: Vec<[&Linear; 1]> = self.layers.iter().map(|l| [&l.wo]).collect();
        let ffn_in: Vec<[&Linear; 2]> = self.layers.iter().map(|l| [&l.gate, &l.up]).collect();
        let down_in: Vec<[&Linear; 1]> = self.layers.iter().map(|l| [&l.down]).collect();
        let mut rooms = [
            Room::new(seq, attention_in.iter().map(|l| l.as_slice())),
            Room::new(seq, output_in.iter().map(|l| l.as_slice())),
            Room::new(seq, ffn_in.iter().map(|l| l.as_slice())),
            Room::new(seq, down_in.iter().map(|l| l.as_slice())),
        ];
        let [r0, r1, r2, r3] = &mut rooms;
        let (q0, c0) = r0.shared();
        let (q1, c1) = r1.shared();
        let (q2, c2) = r2.shared();
        let (q3, c3) = r3.shared();
        let (x_s, h_s) = (Shared::new(&mut x), Shared::new(&mut h));
        let (q_s, attended_s, hidden_s) = (
            Shared::new(&mut q),
            Shared::new(&mut attended),
            Shared::new(&mut hidden),
        );
        let layer_caches: Vec<(Shared<'_, f32>, Shared<'_, f32>)> = cache
            .layers_mut()
            .map(|(k, v)| (Shared::new(k), Shared::new(v)))
            .collect();
        let failure = std::sync::Mutex::new(None);
        let eps = s.rms_eps as f32;
        Team::run(self.layers.len() * STEPS_PER_LAYER, |m| {
            let mut scratch = Scratch {
                tile: Vec::new(),
                other: Vec::new(),
                scores: Vec::new(),
                queries: Vec::new(),
                attended: Vec::new(),
            };
            let fail = |e: candle_core::Error| {
                let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
            };
            for (i, (layer, (keys, values))) in self.layers.iter().zip(&layer_caches).enumerate() {
                let attention_operand = Operand {
                    input: &h_s,
                    quantized: &q0,
                    computed: &c0,
                };
                let norm = Norm {
                    residual: &x_s,
                    weight: &layer.attn_norm,
                    eps,
                };
                if let Err(e) = prepare(m, &attention_in[i], &attention_operand, seq, Some(norm)) {
                    fail(e);
                }
                m.wait();
                // Q, K and V, with their biases and rotated, into the query rows and the cache.
                let rows_per_item = s.head_dim;
                let chunks: Vec<usize> = attention_in[i]
                    .iter()
                    .map(|l| l.dims().map_or(0, |(n, _)| n).div_ceil(rows_per_item))
                    .collect();
                for item in m.items(chunks.iter().sum()) {
                    let (which, chunk) = locate(&chunks, item);
                    let n = attention_in[i][which].dims().map_or(0, |(n, _)| n);
                    let rows = chunk * rows_per_item..((chunk + 1) * rows_per_item).min(n);
                    tile(
                        &attention_in[i],
                        which,
                        &attention_operand,
                        rows.clone(),
                        seq,
                        &mut scratch.tile,
                    );
                    let bias = layer.bias.as_ref().map(|b| &b[which]);
                    let (target, stride) = match which {
                        0 => (&q_s, q_width),
                        1 => (keys, kv_width),
                        _ => (values, kv_width),
                    };
                    let first = if which == 0 { 0 } else { start };
                    for p in 0..seq {
                        let at = (first + p) * stride;
                        // SAFETY: this item alone writes these columns of the step's rows.
                        let out = unsafe { target.slice_mut(at + rows.start..at + rows.end) };
                        for (r, o) in out.iter_mut().enumerate() {
                            *o =
                                scratch.tile[r * seq + p] + bias.map_or(0.0, |b| b[rows.start + r]);
                        }
                        if which < 2 {
                            let (cos, sin) = self.rope_tables.at(start + p);
                            for head in out.chunks_exact_mut(s.head_dim) {
                                s.rope.apply(head, cos, sin);
                            }
                        }
                    }
                }
                m.wait();
                // Attention. An item is a block of positions and the query heads that read
                // the same key/value head (at most MAX_HEADS, in parts as even as they divide), so that each key
                // and value is read once for all of them (`attend_block`): a 2,048-token read
                // of SmolLM2 in chunks of 64 went from 480 to 740 tokens/s.
                let group = s.group();
                // Near the cache's start a decode step's few items balance better one head
                // each (SmolLM2's three groups of three lost 4 % decoding on two threads);
                // deeper, reading each key and value once matters more (89 → 106 tokens/s
                // at 2,000 positions).
                let parts = if seq == 1 && start < SHARED_READS_FROM {
                    group
                } else {
                    group.div_ceil(MAX_HEADS)
                };
                let per_part = group.div_ceil(parts);
                let items_per_block = s.kv_heads * parts;
                // Enough blocks that each thread has items: a follow-up's few tokens in one
                // block gave SmolLM2's two threads three items.
                let blocks = seq
                    .div_ceil(POSITIONS_PER_ITEM)
                    .max((2 * m.threads()).div_ceil(items_per_block))
                    .min(seq);
                let per_block = seq.div_ceil(blocks);
                // SAFETY: the keys and values are only read in this step.
                let cached = unsafe { (keys.slice(0..keys.len()), values.slice(0..values.len())) };
                for item in m.items(blocks * items_per_block) {
                    // The last positions first: they attend over the most, and a thread that
                    // takes the last costly item while the other has none left makes both wait.
                    let block = blocks - 1 - item / items_per_block;
                    let (kv_head, part) = (
                        item % items_per_block / parts,
                        item % items_per_block % parts,
                    );
                    let first = kv_head * group + part * per_part;
                    let heads = per_part.min((kv_head + 1) * group - first);
                    let cache_view = Cached {
                        keys: cached.0,
                        values: cached.1,
                        stride: kv_width,
                        offset: kv_head * s.head_dim,
                    };
                    let positions = block * per_block..((block + 1) * per_block).min(seq);
                    if positions.is_empty() {
                        continue;
                    }
                    let len = heads * s.head_dim;
                    // The block's queries side by side (its rows are q_width apart).
                    scratch.queries.clear();
                    for p in positions.clone() {
                        let at = p * q_width + first * s.head_dim;
                        // SAFETY: the query rows are only read in this step.
                        scratch
                            .queries
                            .extend_from_slice(unsafe { q_s.slice(at..at + len) });
                    }
                    scratch.attended.clear();
                    scratch.attended.resize(scratch.queries.len(), 0.0);
                    let queries = Queries {
                        values: &scratch.queries,
                        dim: s.head_dim,
                        positions: positions.len(),
                        first_position: start + positions.start,
                    };
                    attend_block(
                        &self.vectors,
                        &queries,
                        &cache_view,
                        &mut scratch.scores,
                        &mut scratch.attended,
                    );
                    for (p, result) in positions.zip(scratch.attended.chunks_exact(len)) {
                        let at = p * q_width + first * s.head_dim;
                        // SAFETY: this item alone writes these heads of these positions.
                        unsafe { attended_s.slice_mut(at..at + len) }.copy_from_slice(result);
                    }
                }
                m.wait();
                let output_operand = Operand {
                    input: &attended_s,
                    quantized: &q1,
                    computed: &c1,
                };
                if let Err(e) = prepare(m, &output_in[i], &output_operand, seq, None) {
                    fail(e);
                }
                m.wait();
                add_product(m, &layer.wo, &output_operand, &x_s, seq, &mut scratch.tile);
                m.wait();
                let ffn_operand = Operand {
                    input: &h_s,
                    quantized: &q2,
                    computed: &c2,
                };
                let norm = Norm {
                    residual: &x_s,
                    weight: &layer.ffn_norm,
                    eps,
                };
                if let Err(e) = prepare(m, &ffn_in[i], &ffn_operand, seq, Some(norm)) {
                    fail(e);
                }
                m.wait();
                // Gate and up together: silu(gate) · up for the same rows.
                let rows_per_item = rows_per_item_for(self.ffn_width, seq, m.threads());
                for item in m.items(self.ffn_width.div_ceil(rows_per_item)) {
                    let rows =
                        item * rows_per_item..((item + 1) * rows_per_item).min(self.ffn_width);
                    tile(
                        &ffn_in[i],
                        0,
                        &ffn_operand,
                        rows.clone(),
                        seq,
                        &mut scratch.tile,
                    );
                    tile(
                        &ffn_in[i],
                        1,
                        &ffn_operand,
                        rows.clone(),
                        seq,
                        &mut scratch.other,
                    );
                    self.vectors.silu(&mut scratch.tile[..rows.len() * seq]);
                    for p in 0..seq {
                        let at = p * self.ffn_width;
                        // SAFETY: this item alone writes these columns.
                        let out = unsafe { hidden_s.slice_mut(at + rows.start..at + rows.end) };
                        for (r, o) in out.iter_mut().enumerate() {
                            *o = scratch.tile[r * seq + p] * scratch.other[r * seq + p];
                        }
                    }
                }
                m.wait();
                let down_operand = Operand {
                    input: &hidden_s,
                    quantized: &q3,
                    computed: &c3,
                };
                if let Err(e) = prepare(m, &down_in[i], &down_operand, seq, None) {
                    fail(e);
                }
                m.wait();
                add_product(m, &layer.down, &down_operand, &x_s, seq, &mut scratch.tile);
                m.wait();
            }
        });
        drop(layer_caches);
        if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        cache.set_len(start + seq);
        Ok(x[(seq - 1) * width..].to_vec())
    }
}

/// Which of several layers' chunks `item` is, and its chunk number within that layer.
fn locate(chunks: &[usize], mut item: usize) -> (usize, usize) {
    for (which, count) in chunks.iter().enumerate() {
        if item < *count {
            return (which, item);
        }
        item -= count;
    }
    (chunks.len(), 0)
}

/// Weight rows per item of an `n`-row product with `inputs` input rows: small enough that
/// each thread has several items, a multiple of 16, at most [`MAX_ROWS_PER_ITEM`].
fn rows_per_item_for(n: usize, inputs: usize, threads: usize) -> usize {
    let per_thread = n.div_ceil(threads * if inputs > 1 { 2 } else { 4 });
    per_thread
        .div_ceil(16)
        .max(1)
        .saturating_mul(16)
        .min(MAX_ROWS_PER_ITEM)
}

/// `to = norm(from)` row by row.
fn norm_rows(
    m: &Member<'_>,
    from: &Shared<'_, f32>,
    to: &Shared<'_, f32>,
    weight: &[f32],
    eps: f32,
    width: usize,
) {
    for row in m.items(from.len() / width) {
        let range = row * width..(row + 1) * width;
        // SAFETY: `from` is only read in this step; this item alone writes this row of `to`.
        let (x, out) = unsafe { (from.slice(range.clone()), to.slice_mut(range)) };
        rms_norm_row(x, weight, eps, out);
    }
}

/// The RMS norm that makes a step's input from the residual stream.
struct Norm<'a> {
    residual: &'a Shared<'a, f32>,
    weight: &'a [f32],
    eps: f32,
}

/// Quantizes the operand's rows for each of `linears` that needs its own form, and has candle
/// compute those it computes (one item each). With `norm`, the operand's rows are first
/// made as the norm of the residual rows: in the same items, part by part, when every layer is
/// ours (the quantized blocks need only their own part of the row), else in a step before.
fn prepare(
    m: &Member<'_>,
    linears: &[&Linear],
    operand: &Operand<'_>,
    rows: usize,
    norm: Option<Norm<'_>>,
) -> candle_core::Result<()> {
    let mut result = Ok(());
    let blocks: Vec<_> = linears.iter().map(|l| l.blocks()).collect();
    let candle = blocks.iter().any(Option::is_none);
    if let (Some(norm), true) = (&norm, candle) {
        let width = norm.weight.len();
        norm_rows(
            m,
            norm.residual,
            operand.input,
            norm.weight,
            norm.eps,
            width,
        );
        m.wait();
    }
    let mut jobs = Vec::new();
    let mut whole = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match b {
            Some(b)
                if !blocks[..i]
                    .iter()
                    .flatten()
                    .any(|e| e.kernel.activation == b.kernel.activation) =>
            {
                jobs.push((i, *b))
            }
            Some(_) => {}
            None => whole.push(i),
        }
    }
    let k = jobs.first().map_or(0, |(_, b)| b.k);
    // Rows are split in parts when there are fewer rows than threads (decode), at block
    // boundaries of every format quantized.
    let unit = jobs
        .iter()
        .map(|(_, b)| b.kernel.activation.values)
        .max()
        .unwrap_or(1);
    let parts = if rows < m.threads() { m.threads() } else { 1 };
    let per_part = k.div_ceil(unit).div_ceil(parts) * unit;
    let norm = norm.filter(|_| !candle);
    let quantizing = if jobs.is_empty() { 0 } else { rows * parts };
    // The layers candle computes whole come first, one item each.
    for item in m.items(whole.len() + quantizing) {
        if let Some(which) = whole.get(item) {
            if let Err(e) = compute_whole(linears[*which], operand, *which, rows) {
                result = Err(e);
            }
            continue;
        }
        let item = item - whole.len();
        let (row, part) = (item / parts, item % parts);
        let columns = (part * per_part).min(k)..((part + 1) * per_part).min(k);
        if columns.is_empty() {
            continue;
        }
        let at = row * k;
        if let Some(norm) = &norm {
            // SAFETY: the residual rows are only read in this step; this item alone writes
            // these columns of the operand's row.
            let (x, out) = unsafe {
                (
                    norm.residual.slice(at..at + k),
                    operand
                        .input
                        .slice_mut(at + columns.start..at + columns.end),
                )
            };
            let scale = rms_scale(x, norm.eps);
            scale_row(
                &x[columns.clone()],
                &norm.weight[columns.clone()],
                scale,
                out,
            );
        }
        // SAFETY: this item wrote these columns (or nobody writes the input in this step).
        let x = unsafe { operand.input.slice(at + columns.start..at + columns.end) };
        for (which, b) in &jobs {
            let (block_values, block_bytes) =
                (b.kernel.activation.values, b.kernel.activation.bytes);
            let row_bytes = b.activation_row_bytes();
            let bytes = row * row_bytes + columns.start / block_values * block_bytes
                ..row * row_bytes + columns.end / block_values * block_bytes;
            // SAFETY: this item alone writes these blocks.
            let out = unsafe { operand.quantized[*which].slice_mut(bytes) };
            b.kernel.quantize(x, out);
        }
    }
    result
}

/// Candle's product of the whole operand with `linear`, into the operand's `computed` room.
fn compute_whole(
    linear: &Linear,
    operand: &Operand<'_>,
    which: usize,
    rows: usize,
) -> candle_core::Result<()> {
    let (n, k) = linear.dims()?;
    // SAFETY: one item of the step runs this for `which`; the input is only read in this step
    // and this layer's room is written by nobody else.
    let (x, out) = unsafe {
        (
            operand.input.slice(0..rows * k),
            operand.computed[which].slice_mut(0..rows * n),
        )
    };
    out.copy_from_slice(&linear.forward_rows(x)?);
    Ok(())
}

/// Weight rows `rows` of layer `which` of the step's `linears` times every input row, into
/// `out` weight row by weight row (`out[r · inputs + p]`).
fn tile(
    linears: &[&Linear],
    which: usize,
    operand: &Operand<'_>,
    rows: Range<usize>,
    inputs: usize,
    out: &mut Vec<f32>,
) {
    out.clear();
    out.resize(rows.len() * inputs, 0.0);
    let linear = linears[which];
    match linear.blocks() {
        Some(b) => {
            // The rows were quantized for the first layer of the step with this format.
            let source = linears
                .iter()
                .position(|l| {
                    l.blocks()
                        .is_some_and(|o| o.kernel.activation == b.kernel.activation)
                })
                .unwrap_or(which);
            let bytes = inputs * b.activation_row_bytes();
            // SAFETY: the quantized rows are only read in this step.
            let acts = unsafe { operand.quantized[source].slice(0..bytes) };
            b.multiply_rows(rows, acts, out);
        }
        None => {
            let n = linear.dims().map_or(0, |(n, _)| n);
            // SAFETY: the computed rows are only read in this step.
            let all = unsafe { operand.computed[which].slice(0..inputs * n) };
            for (r, row) in rows.enumerate() {
                for p in 0..inputs {
                    out[r * inputs + p] = all[p * n + row];
                }
            }
        }
    }
}

/// `x += input · Wᵀ`, shared out by weight rows.
fn add_product(
    m: &Member<'_>,
    linear: &Linear,
    operand: &Operand<'_>,
    x: &Shared<'_, f32>,
    inputs: usize,
    scratch: &mut Vec<f32>,
) {
    let n = linear.dims().map_or(0, |(n, _)| n);
    let rows_per_item = rows_per_item_for(n, inputs, m.threads());
    for item in m.items(n.div_ceil(rows_per_item)) {
        let rows = item * rows_per_item..((item + 1) * rows_per_item).min(n);
        tile(&[linear], 0, operand, rows.clone(), inputs, scratch);
        for p in 0..inputs {
            // SAFETY: this item alone writes these columns of the residual rows.
            let out = unsafe { x.slice_mut(p * n + rows.start..p * n + rows.end) };
            for (r, o) in out.iter_mut().enumerate() {
                *o += scratch[r * inputs + p];
            }
        }
    }
}
