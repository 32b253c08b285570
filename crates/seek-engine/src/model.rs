//! The transformer: a decoder-only model of the `llama` family (`llama`, `qwen2`) computed with
//! candle from a GGUF file's quantized tensors.
//!
//! Owns the weights, the forward pass and the KV cache's layout. It must not know about
//! tokens as text, sampling or conversations (`engine` does): it turns token ids at a position
//! into the next token's logits.
//!
//! Two choices matter for speed on a CPU. Grouped-query attention is computed by folding the
//! query heads of a group into one matrix, so the cached keys and values are never copied per
//! head; and the cache is a growing buffer that `truncate` shortens in place, so a conversation
//! whose start is unchanged is never recomputed.

use std::sync::Arc;

use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Tensor};

use crate::EngineError;
use crate::gguf::GgufFile;
use crate::kernels::norm::rms_norm;
use crate::linear::Linear;

/// The architectures this engine runs, as GGUF names them.
pub const SUPPORTED: &[&str] = &["llama", "qwen2"];

/// Positions computed at once when a prompt is long: bounds the attention matrix's size.
const PREFILL_CHUNK: usize = 256;

/// The most `context_length × head size` a file may declare: the rotary tables are computed
/// for the whole window at load, two `f32` tables of half this many values each (512 MiB at
/// this bound, reached by a million-token window of 128-wide heads). A file declaring more
/// is refused rather than left to exhaust memory.
const MAX_ROTARY_VALUES: usize = 1 << 27;

/// How the rotary embedding pairs a head's dimensions (llama.cpp's rope types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rope {
    /// Adjacent pairs (llama.cpp's NORM, used with `llama` files, whose Q/K were permuted).
    Interleaved,
    /// The two halves of the head (NEOX, used by `qwen2`).
    Halves,
}

/// The shape of the network, read from the file's metadata.
#[derive(Debug, Clone)]
pub struct Shape {
    pub architecture: String,
    pub layers: usize,
    pub embedding: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub context_length: usize,
    rms_eps: f64,
    rope: Rope,
    rope_base: f32,
}

struct Layer {
    attn_norm: Tensor,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    bias: Option<[Tensor; 3]>,
    wo: Linear,
    ffn_norm: Tensor,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// A loaded model.
pub struct Transformer {
    shape: Shape,
    embedding: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: Tensor,
    output: Linear,
    cos: Tensor,
    sin: Tensor,
    path: std::path::PathBuf,
}

/// One layer's cached keys and values: `(1, kv_heads, capacity, head_dim)`, of which the first
/// `len` positions are valid.
struct LayerCache {
    keys: Tensor,
    values: Tensor,
}

/// The keys and values of every position computed so far.
pub struct KvCache {
    layers: Vec<Option<LayerCache>>,
    capacity: usize,
    len: usize,
}

impl std::fmt::Debug for KvCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KvCache({} of {} positions)", self.len, self.capacity)
    }
}

impl KvCache {
    pub fn new(layers: usize) -> Self {
        Self {
            layers: (0..layers).map(|_| None).collect(),
            capacity: 0,
            len: 0,
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every position from `len` on (their slots are overwritten later).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Bytes held by the buffers.
    pub fn bytes(&self) -> usize {
        self.layers
            .iter()
            .flatten()
            .map(|c| 2 * c.keys.elem_count() * 4)
            .sum()
    }

    /// A cache of its own (nothing shared) holding the first `len` positions of this one.
    pub fn fork(&self, len: usize) -> Result<KvCache, KvCacheRefused> {
        let len = len.min(self.len);
        match self.dims() {
            Some(dims) if len > 0 => KvCache::from_bytes(&self.to_bytes_up_to(len)?, dims),
            _ => Ok(KvCache::new(self.layers.len())),
        }
    }

    /// Layers, key/value heads and head size, once a position has been computed.
    fn dims(&self) -> Option<(usize, usize, usize)> {
        let first = self.layers.first()?.as_ref()?;
        let dims = first.keys.dims();
        Some((self.layers.len(), *dims.get(1)?, *dims.get(3)?))
    }

    /// The valid positions as bytes ([`KV_MAGIC`], then layers, key/value heads, head size and
    /// positions as little-endian `u32`, then each layer's keys and values as little-endian
    /// `f32`, head by head): what [`KvCache::from_bytes`] reads back.
    pub fn to_bytes(&self) -> Result<Vec<u8>, KvCacheRefused> {
        self.to_bytes_up_to(self.len)
    }

    fn to_bytes_up_to(&self, len: usize) -> Result<Vec<u8>, KvCacheRefused> {
        let refused = |e: candle_core::Error| KvCacheRefused(e.to_string());
        let (layers, kv_heads, head_dim) = self.dims().unwrap_or((self.layers.len(), 0, 0));
        let len = if kv_heads == 0 { 0 } else { len };
        let mut out = Vec::with_capacity(KV_HEADER + layers * 2 * kv_heads * len * head_dim * 4);
        out.extend_from_slice(KV_MAGIC);
        for n in [layers, kv_heads, head_dim, len] {
            let n = u32::try_from(n).map_err(|_| KvCacheRefused(format!("{n} is too large")))?;
            out.extend_from_slice(&n.to_le_bytes());
        }
        if len == 0 {
            return Ok(out);
        }
        for slot in &self.layers {
            let slot = slot
                .as_ref()
                .ok_or_else(|| KvCacheRefused("a layer was never computed".into()))?;
            for tensor in [&slot.keys, &slot.values] {
                let valid = tensor.narrow(2, 0, len).map_err(refused)?;
                let values = valid
                    .contiguous()
                    .and_then(|t| t.flatten_all())
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(refused)?;
                for v in values {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        Ok(out)
    }

    /// Reads what [`KvCache::to_bytes`] wrote for a model of `(layers, kv_heads, head_dim)`;
    /// refuses other dimensions, a wrong length or a damaged header without reading further.
    pub fn from_bytes(
        bytes: &[u8],
        (layers, kv_heads, head_dim): (usize, usize, usize),
    ) -> Result<KvCache, KvCacheRefused> {
        let header = bytes
            .get(..KV_HEADER)
            .filter(|h| h.starts_with(KV_MAGIC))
            .ok_or_else(|| KvCacheRefused("it does not start with a cache header".into()))?;
        let field = |i: usize| {
            let at = KV_MAGIC.len() + 4 * i;
            u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
                as usize
        };
        let (found, len) = ((field(0), field(1), field(2)), field(3));
        if len == 0 {
            return Ok(KvCache::new(layers));
        }
        if found != (layers, kv_heads, head_dim) {
            return Err(KvCacheRefused(format!(
                "it is for a model of {found:?} (layers, key/value heads, head size), this one is {:?}",
                (layers, kv_heads, head_dim)
            )));
        }
        let per_tensor = kv_heads
            .checked_mul(len)
            .and_then(|n| n.checked_mul(head_dim))
            .ok_or_else(|| KvCacheRefused("its sizes overflow".into()))?;
        let expected = per_tensor
            .checked_mul(layers * 2 * 4)
            .and_then(|n| n.checked_add(KV_HEADER));
        if expected != Some(bytes.len()) {
            return Err(KvCacheRefused(format!(
                "it has {} bytes, its header says {}",
                bytes.len(),
                expected.map_or_else(|| "more than can exist".into(), |n| n.to_string())
            )));
        }
        let refused = |e: candle_core::Error| KvCacheRefused(e.to_string());
        let mut tensors = bytes[KV_HEADER..]
            .chunks_exact(per_tensor * 4)
            .map(|chunk| {
                let values: Vec<f32> = chunk
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                Tensor::from_vec(values, (1, kv_heads, len, head_dim), &Device::Cpu)
            });
        let mut cache = KvCache::new(layers);
        for slot in &mut cache.layers {
            let (Some(keys), Some(values)) = (tensors.next(), tensors.next()) else {
                return Err(KvCacheRefused("a layer is missing".into()));
            };
            *slot = Some(LayerCache {
                keys: keys.map_err(refused)?,
                values: values.map_err(refused)?,
            });
        }
        cache.capacity = len;
        cache.len = len;
        Ok(cache)
    }
}

/// The first bytes of a saved key/value cache (its format's version is the digit).
pub const KV_MAGIC: &[u8] = b"seekKV1\0";
const KV_HEADER: usize = 8 + 4 * 4;

/// Why saved key/value bytes cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("a saved key/value cache cannot be used: {0}")]
pub struct KvCacheRefused(pub String);

impl Shape {
    fn read(file: &GgufFile) -> Result<Self, EngineError> {
        let architecture = file.architecture()?;
        let rope = match architecture.as_str() {
            "llama" => Rope::Interleaved,
            "qwen2" => Rope::Halves,
            other => {
                return Err(EngineError::UnsupportedArchitecture {
                    path: file.path().to_owned(),
                    found: other.to_owned(),
                    supported: SUPPORTED.join(", "),
                });
            }
        };
        let key = |name: &str| format!("{architecture}.{name}");
        let embedding = file.usize(&key("embedding_length"))?;
        let heads = file.usize(&key("attention.head_count"))?;
        let kv_heads = if file.has(&key("attention.head_count_kv")) {
            file.usize(&key("attention.head_count_kv"))?
        } else {
            heads
        };
        let head_dim = if file.has(&key("attention.key_length")) {
            file.usize(&key("attention.key_length"))?
        } else {
            embedding / heads.max(1)
        };
        let shape = Self {
            layers: file.usize(&key("block_count"))?,
            embedding,
            heads,
            kv_heads,
            head_dim,
            context_length: file.usize(&key("context_length"))?,
            rms_eps: f64::from(file.f32_or(&key("attention.layer_norm_rms_epsilon"), 1e-5)?),
            rope,
            rope_base: file.f32_or(&key("rope.freq_base"), 10_000.0)?,
            architecture,
        };
        shape.check(file)?;
        shape.check_tensors(file)?;
        Ok(shape)
    }

    fn check(&self, file: &GgufFile) -> Result<(), EngineError> {
        let bad = |what: String| EngineError::Incomplete {
            path: file.path().to_owned(),
            what,
        };
        if self.heads == 0 || self.kv_heads == 0 || !self.heads.is_multiple_of(self.kv_heads) {
            return Err(bad(format!(
                "a head count ({}) that is a multiple of the key/value head count ({})",
                self.heads, self.kv_heads
            )));
        }
        if self.head_dim == 0
            || !self.head_dim.is_multiple_of(2)
            || self.heads.checked_mul(self.head_dim) != Some(self.embedding)
        {
            return Err(bad(format!(
                "heads ({}) × head size ({}) equal to the embedding size ({}), with an even head size",
                self.heads, self.head_dim, self.embedding
            )));
        }
        if self.layers == 0 || self.context_length == 0 {
            return Err(bad("at least one layer and a context length".into()));
        }
        // Each layer has several tensors: a block count beyond the tensor count is a lie, and
        // would size the layer list before the first missing tensor is noticed.
        if self.layers > file.tensor_count() {
            return Err(bad(format!(
                "tensors for its {} layers (block_count; the file has {} tensors in all)",
                self.layers,
                file.tensor_count()
            )));
        }
        if self
            .context_length
            .checked_mul(self.head_dim)
            .is_none_or(|n| n > MAX_ROTARY_VALUES)
        {
            return Err(bad(format!(
                "a context window the engine can hold: it declares {} tokens with heads of {} (at most {MAX_ROTARY_VALUES} for the two multiplied); use a model server for it",
                self.context_length, self.head_dim
            )));
        }
        let usable = |v: f64| v.is_finite() && v > 0.0;
        if !usable(self.rms_eps) || !usable(f64::from(self.rope_base)) {
            return Err(bad(format!(
                "a positive norm epsilon and rope base (they are {} and {})",
                self.rms_eps, self.rope_base
            )));
        }
        Ok(())
    }

    /// Every weight the network uses has the shape this one needs, checked on the tensor
    /// table before anything is read: a file whose tensors disagree with its metadata is
    /// refused naming the tensor, not found out as a shape error in the first reply. A
    /// missing tensor is left to the loader, which names it too.
    fn check_tensors(&self, file: &GgufFile) -> Result<(), EngineError> {
        let wrong = |name: &str, dims: &[usize], wanted: String| EngineError::Incomplete {
            path: file.path().to_owned(),
            what: format!("the tensor {name} of shape {wanted} (it is {dims:?})"),
        };
        let expect = |name: &str, wanted: &[usize]| match file.tensor_dims(name) {
            Some(dims) if dims != wanted => Err(wrong(name, dims, format!("{wanted:?}"))),
            _ => Ok(()),
        };
        let (width, q, kv) = (
            self.embedding,
            self.heads * self.head_dim,
            self.kv_heads * self.head_dim,
        );
        expect("output_norm.weight", &[width])?;
        if let Some(rows) = file
            .tensor_dims("token_embd.weight")
            .and_then(|d| d.first())
        {
            expect("output.weight", &[*rows, width])?;
        }
        expect("rope_freqs.weight", &[self.head_dim / 2])?;
        for i in 0..self.layers {
            let name = |part: &str| format!("blk.{i}.{part}");
            expect(&name("attn_norm.weight"), &[width])?;
            expect(&name("ffn_norm.weight"), &[width])?;
            expect(&name("attn_q.weight"), &[q, width])?;
            expect(&name("attn_k.weight"), &[kv, width])?;
            expect(&name("attn_v.weight"), &[kv, width])?;
            expect(&name("attn_output.weight"), &[width, q])?;
            expect(&name("attn_q.bias"), &[q])?;
            expect(&name("attn_k.bias"), &[kv])?;
            expect(&name("attn_v.bias"), &[kv])?;
            // The feed-forward width is the gate's; the other two must agree with it.
            if let Some(&[ffn, _]) = file.tensor_dims(&name("ffn_gate.weight")) {
                expect(&name("ffn_gate.weight"), &[ffn, width])?;
                expect(&name("ffn_up.weight"), &[ffn, width])?;
                expect(&name("ffn_down.weight"), &[width, ffn])?;
            } else if let Some(dims) = file.tensor_dims(&name("ffn_gate.weight")) {
                let wanted = format!("[feed-forward width, {width}]");
                return Err(wrong(&name("ffn_gate.weight"), dims, wanted));
            }
        }
        Ok(())
    }

    fn group(&self) -> usize {
        self.heads / self.kv_heads
    }
}

fn compute(path: &std::path::Path) -> impl Fn(candle_core::Error) -> EngineError + '_ {
    move |e| EngineError::Compute {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

impl Transformer {
    /// Loads the network from `file`.
    pub fn load(file: &GgufFile) -> Result<Self, EngineError> {
        let shape = Shape::read(file)?;
        let err = compute(file.path());
        let matmul = |name: &str| -> Result<Linear, EngineError> {
            Linear::new(file.tensor(name)?).map_err(&err)
        };
        let dense = |name: &str| -> Result<Tensor, EngineError> {
            file.tensor(name)?.dequantize(&Device::Cpu).map_err(&err)
        };
        let embedding = Arc::new(file.tensor("token_embd.weight")?);
        let (vocab, width) = embedding.shape().dims2().map_err(&err)?;
        if width != shape.embedding || vocab == 0 {
            return Err(EngineError::Incomplete {
                path: file.path().to_owned(),
                what: format!(
                    "a token embedding of width {} (it is {vocab} × {width})",
                    shape.embedding
                ),
            });
        }
        // Small models share the embedding with the output projection.
        let output = if file.has_tensor("output.weight") {
            matmul("output.weight")?
        } else {
            Linear::from_arc(Arc::clone(&embedding)).map_err(&err)?
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let name = |part: &str| format!("blk.{i}.{part}");
            let bias = if file.has_tensor(&name("attn_q.bias")) {
                Some([
                    dense(&name("attn_q.bias"))?,
                    dense(&name("attn_k.bias"))?,
                    dense(&name("attn_v.bias"))?,
                ])
            } else {
                None
            };
            layers.push(Layer {
                attn_norm: dense(&name("attn_norm.weight"))?,
                wq: matmul(&name("attn_q.weight"))?,
                wk: matmul(&name("attn_k.weight"))?,
                wv: matmul(&name("attn_v.weight"))?,
                bias,
                wo: matmul(&name("attn_output.weight"))?,
                ffn_norm: dense(&name("ffn_norm.weight"))?,
                gate: matmul(&name("ffn_gate.weight"))?,
                up: matmul(&name("ffn_up.weight"))?,
                down: matmul(&name("ffn_down.weight"))?,
            });
        }
        let freq_factors = if file.has_tensor("rope_freqs.weight") {
            Some(dense("rope_freqs.weight")?)
        } else {
            None
        };
        let (cos, sin) = rope_tables(&shape, freq_factors.as_ref()).map_err(&err)?;
        Ok(Self {
            norm: dense("output_norm.weight")?,
            shape,
            embedding,
            layers,
            output,
            cos,
            sin,
            path: file.path().to_owned(),
        })
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    pub fn vocab_size(&self) -> usize {
        self.embedding.shape().dims().first().copied().unwrap_or(0)
    }

    pub fn new_cache(&self) -> KvCache {
        KvCache::new(self.shape.layers)
    }

    /// What a cache of this model holds per position: layers, key/value heads, head size
    /// (what [`KvCache::from_bytes`] checks saved bytes against).
    pub fn cache_dims(&self) -> (usize, usize, usize) {
        (self.shape.layers, self.shape.kv_heads, self.shape.head_dim)
    }

    /// Computes `tokens` at the cache's end and returns the logits that follow the last one.
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, EngineError> {
        let err = compute(&self.path);
        if tokens.is_empty() {
            return Err(EngineError::Compute {
                path: self.path.clone(),
                reason: "no tokens to compute (a bug in the caller)".into(),
            });
        }
        let end = cache.len + tokens.len();
        if end > self.shape.context_length {
            return Err(EngineError::ContextExceeded {
                path: self.path.clone(),
                tokens: end,
                window: self.shape.context_length,
            });
        }
        let mut last = None;
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            last = Some(self.forward_chunk(chunk, cache).map_err(&err)?);
        }
        let logits = last.ok_or_else(|| EngineError::Compute {
            path: self.path.clone(),
            reason: "no chunk computed".into(),
        })?;
        logits.to_vec1::<f32>().map_err(&err)
    }

    fn forward_chunk(&self, tokens: &[u32], cache: &mut KvCache) -> candle_core::Result<Tensor> {
        let seq = tokens.len();
        let start = cache.len;
        grow(cache, &self.shape, start + seq)?;
        let ids = Tensor::new(tokens, &Device::Cpu)?;
        let mut x = self.embedding.embedding(&ids)?.unsqueeze(0)?;
        let mask = causal_mask(seq, start, self.shape.group())?;
        let cos = self.cos.narrow(0, start, seq)?;
        let sin = self.sin.narrow(0, start, seq)?;
        for (layer, slot) in self.layers.iter().zip(cache.layers.iter_mut()) {
            let slot = slot
                .as_mut()
                .ok_or_else(|| candle_core::Error::Msg("the cache was not grown".into()))?;
            let h = rms_norm(&x, &layer.attn_norm, self.shape.rms_eps as f32)?;
            let attended = self.attention(layer, &h, slot, start, mask.as_ref(), (&cos, &sin))?;
            x = (x + attended)?;
            let h = rms_norm(&x, &layer.ffn_norm, self.shape.rms_eps as f32)?;
            let gated =
                (candle_nn::ops::silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
            x = (x + layer.down.forward(&gated)?)?;
        }
        cache.len = start + seq;
        let last = x.narrow(1, seq - 1, 1)?;
        let last = rms_norm(&last, &self.norm, self.shape.rms_eps as f32)?;
        self.output.forward(&last)?.flatten_all()
    }

    fn attention(
        &self,
        layer: &Layer,
        h: &Tensor,
        slot: &mut LayerCache,
        start: usize,
        mask: Option<&Tensor>,
        (cos, sin): (&Tensor, &Tensor),
    ) -> candle_core::Result<Tensor> {
        let s = &self.shape;
        let seq = h.dim(1)?;
        let mut q = layer.wq.forward(h)?;
        let mut k = layer.wk.forward(h)?;
        let mut v = layer.wv.forward(h)?;
        if let Some([bq, bk, bv]) = &layer.bias {
            q = q.broadcast_add(bq)?;
            k = k.broadcast_add(bk)?;
            v = v.broadcast_add(bv)?;
        }
        let heads = |t: Tensor, n: usize| {
            t.reshape((1, seq, n, s.head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = self.rotate(&heads(q, s.heads)?, cos, sin)?;
        let k = self.rotate(&heads(k, s.kv_heads)?, cos, sin)?;
        let v = heads(v, s.kv_heads)?;
        slot.keys.slice_set(&k, 2, start)?;
        slot.values.slice_set(&v, 2, start)?;
        let keys = slot.keys.narrow(2, 0, start + seq)?;
        let values = slot.values.narrow(2, 0, start + seq)?;
        // The query heads that share a key/value head become rows of one matrix.
        let q = q.reshape((1, s.kv_heads, s.group() * seq, s.head_dim))?;
        let scores = (q.matmul(&keys.t()?)? * (1.0 / (s.head_dim as f64).sqrt()))?;
        let scores = match mask {
            Some(mask) => scores.broadcast_add(mask)?,
            None => scores,
        };
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let out = weights.matmul(&values)?;
        let out = out
            .reshape((1, s.heads, seq, s.head_dim))?
            .transpose(1, 2)?
            .reshape((1, seq, s.embedding))?;
        layer.wo.forward(&out)
    }

    fn rotate(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
        match self.shape.rope {
            Rope::Interleaved => candle_nn::rotary_emb::rope_i(x, cos, sin),
            Rope::Halves => candle_nn::rotary_emb::rope(x, cos, sin),
        }
    }
}

/// Makes room for `needed` positions, doubling so that a long conversation costs a few copies.
fn grow(cache: &mut KvCache, shape: &Shape, needed: usize) -> candle_core::Result<()> {
    if needed <= cache.capacity && cache.layers.iter().all(Option::is_some) {
        return Ok(());
    }
    let capacity = needed
        .max(cache.capacity * 2)
        .max(256)
        .min(shape.context_length.max(needed));
    for slot in &mut cache.layers {
        let fresh = || {
            Tensor::zeros(
                (1, shape.kv_heads, capacity, shape.head_dim),
                DType::F32,
                &Device::Cpu,
            )
        };
        let (keys, values) = (fresh()?, fresh()?);
        if let Some(old) = slot.as_ref()
            && cache.len > 0
        {
            keys.slice_set(&old.keys.narrow(2, 0, cache.len)?.contiguous()?, 2, 0)?;
            values.slice_set(&old.values.narrow(2, 0, cache.len)?.contiguous()?, 2, 0)?;
        }
        *slot = Some(LayerCache { keys, values });
    }
    cache.capacity = capacity;
    Ok(())
}

/// The additive mask for `seq` new positions after `start` cached ones, repeated for the
/// `group` query heads folded into each row block; `None` for one position (it sees all).
fn causal_mask(seq: usize, start: usize, group: usize) -> candle_core::Result<Option<Tensor>> {
    if seq == 1 {
        return Ok(None);
    }
    let total = start + seq;
    let mut rows = Vec::with_capacity(group * seq * total);
    for _ in 0..group {
        for i in 0..seq {
            rows.extend((0..total).map(|j| {
                if j > start + i {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            }));
        }
    }
    Tensor::from_vec(rows, (group * seq, total), &Device::Cpu).map(Some)
}

/// The rotary embedding's cosines and sines for every position of the context.
fn rope_tables(shape: &Shape, factors: Option<&Tensor>) -> candle_core::Result<(Tensor, Tensor)> {
    let half = shape.head_dim / 2;
    let mut inverse: Vec<f32> = (0..half)
        .map(|i| 1.0 / shape.rope_base.powf((2 * i) as f32 / shape.head_dim as f32))
        .collect();
    if let Some(factors) = factors {
        let factors = factors.flatten_all()?.to_vec1::<f32>()?;
        for (f, factor) in inverse.iter_mut().zip(factors) {
            *f /= factor;
        }
    }
    let positions = shape.context_length;
    let inverse = Tensor::from_vec(inverse, (1, half), &Device::Cpu)?;
    let t = Tensor::arange(0u32, positions as u32, &Device::Cpu)?
        .to_dtype(DType::F32)?
        .reshape((positions, 1))?;
    let angles = t.broadcast_mul(&inverse)?;
    Ok((angles.cos()?, angles.sin()?))
}

/// The largest logit's index (greedy decoding), without sorting.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, v) in logits.iter().enumerate() {
        if *v > logits[best] || logits[best].is_nan() {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache of `layers` layers holding `len` positions of distinct values.
    fn filled(layers: usize, kv_heads: usize, head_dim: usize, len: usize) -> KvCache {
        let mut cache = KvCache::new(layers);
        let count = kv_heads * len * head_dim;
        for (i, slot) in cache.layers.iter_mut().enumerate() {
            let make = |offset: usize| {
                let values = (0..count).map(|v| (v + offset) as f32 * 0.5).collect();
                Tensor::from_vec(values, (1, kv_heads, len, head_dim), &Device::Cpu).unwrap()
            };
            *slot = Some(LayerCache {
                keys: make(i * 1000),
                values: make(i * 1000 + 500),
            });
        }
        cache.capacity = len;
        cache.len = len;
        cache
    }

    fn positions(cache: &KvCache) -> Vec<Vec<f32>> {
        cache
            .layers
            .iter()
            .flatten()
            .flat_map(|slot| [&slot.keys, &slot.values])
            .map(|t| {
                t.narrow(2, 0, cache.len)
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn a_cache_survives_its_bytes() {
        let cache = filled(3, 2, 4, 5);
        let bytes = cache.to_bytes().unwrap();
        assert_eq!(bytes.len(), KV_HEADER + 3 * 2 * 2 * 5 * 4 * 4);
        let back = KvCache::from_bytes(&bytes, (3, 2, 4)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(positions(&back), positions(&cache));
    }

    #[test]
    fn a_fork_holds_the_prefix_and_shares_nothing() {
        let cache = filled(2, 1, 2, 6);
        let fork = cache.fork(4).unwrap();
        assert_eq!(fork.len(), 4);
        let mut shortened = cache.fork(6).unwrap();
        shortened.truncate(4);
        assert_eq!(positions(&fork), positions(&shortened));
        // Writing into the fork leaves the original as it was.
        let before = positions(&cache);
        let one = Tensor::ones((1, 1, 1, 2), DType::F32, &Device::Cpu).unwrap();
        fork.layers[0]
            .as_ref()
            .unwrap()
            .keys
            .slice_set(&one, 2, 0)
            .unwrap();
        assert_eq!(positions(&cache), before);
        assert_eq!(cache.fork(0).unwrap().len(), 0);
    }

    #[test]
    fn damaged_or_foreign_bytes_are_refused() {
        let bytes = filled(2, 2, 4, 3).to_bytes().unwrap();
        let wrong_model = KvCache::from_bytes(&bytes, (2, 2, 8)).unwrap_err();
        assert!(
            wrong_model.to_string().contains("for a model of"),
            "{wrong_model}"
        );
        for cut in [0, 5, KV_HEADER, bytes.len() - 1] {
            assert!(
                KvCache::from_bytes(&bytes[..cut], (2, 2, 4)).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(KvCache::from_bytes(&longer, (2, 2, 4)).is_err());
        let mut huge = bytes.clone();
        huge[KV_MAGIC.len() + 12..KV_HEADER].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(KvCache::from_bytes(&huge, (2, 2, 4)).is_err());
        let mut magic = bytes;
        magic[0] = b'x';
        assert!(KvCache::from_bytes(&magic, (2, 2, 4)).is_err());
    }

    #[test]
    fn an_empty_cache_round_trips_to_empty() {
        let empty = KvCache::new(4);
        let bytes = empty.to_bytes().unwrap();
        assert_eq!(KvCache::from_bytes(&bytes, (4, 2, 8)).unwrap().len(), 0);
    }
}
