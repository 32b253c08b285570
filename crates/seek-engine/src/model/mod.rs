//! The transformer: a decoder-only model of the `llama` family (`llama`, `qwen2`) computed
//! from a GGUF file's quantized tensors.
//!
//! Owns the weights, the shape read from the file and the forward pass's entry. It must not
//! know about tokens as text, sampling or conversations (`engine` does): it turns token ids at a
//! position into the next token's logits.
//!
//! The forward pass (`forward`) runs on plain `f32` buffers with the threads of the current
//! rayon pool working through it together (`team`), the matrix products on our kernels
//! (`linear`); attention reads the cache (`cache`) in place, and grouped-query attention reads
//! each key/value head once per query head, never a copy. The cache grows by doubling and
//! `truncate` shortens it in place, so a conversation whose start is unchanged is never
//! recomputed.

mod attention;
pub mod cache;
mod forward;
mod team;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use candle_core::Device;
use candle_core::quantized::QTensor;

pub use cache::KvCache;

use crate::EngineError;
use crate::gguf::GgufFile;
use crate::kernels::norm::rms_norm_row;
use crate::linear::Linear;
use attention::{Rope, RopeTables, Vectors};

/// The architectures this engine runs, as GGUF names them.
pub const SUPPORTED: &[&str] = &["llama", "qwen2"];

/// Positions computed at once when a prompt is long: bounds the attention matrix's size.
const PREFILL_CHUNK: usize = 256;

/// The most `context_length × head size` a file may declare: the rotary tables are computed
/// for the whole window at load, two `f32` tables of half this many values each (512 MiB at
/// this bound, reached by a million-token window of 128-wide heads). A file declaring more
/// is refused rather than left to exhaust memory.
const MAX_ROTARY_VALUES: usize = 1 << 27;

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
    attn_norm: Vec<f32>,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    bias: Option<[Vec<f32>; 3]>,
    wo: Linear,
    ffn_norm: Vec<f32>,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// Where the token embedding's rows are read.
enum Embedding {
    /// Its own tensor, in the file's blocks.
    Tensor(Arc<QTensor>),
    /// The output projection's rows: the two are one tensor, which the output layer holds
    /// repacked (so that the file's bytes need not be kept beside the packed copy).
    Output,
}

/// A loaded model.
pub struct Transformer {
    shape: Shape,
    embedding: Embedding,
    vocab: usize,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    output: Linear,
    /// The feed-forward width (the gate's rows).
    ffn_width: usize,
    rope_tables: RopeTables,
    vectors: Vectors,
    path: std::path::PathBuf,
}

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
        let dense = |name: &str| -> Result<Vec<f32>, EngineError> {
            file.tensor(name)?
                .dequantize(&Device::Cpu)
                .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
                .map_err(&err)
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
        let (output, embedding) = if file.has_tensor("output.weight") {
            (matmul("output.weight")?, Embedding::Tensor(embedding))
        } else {
            let output = Linear::from_arc(Arc::clone(&embedding)).map_err(&err)?;
            if output.is_packed() {
                // The last reference to the file's bytes: freed before the layers are read.
                drop(embedding);
                (output, Embedding::Output)
            } else {
                (output, Embedding::Tensor(embedding))
            }
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
        // The tensor table was checked against the shape (`check_tensors`); a layer whose
        // tensors still disagree (the gate's width is read here) is refused by name.
        let ffn_width = layers
            .first()
            .map_or(Ok((0, 0)), |l| l.gate.dims())
            .map_err(&err)?
            .0;
        let freq_factors = if file.has_tensor("rope_freqs.weight") {
            Some(dense("rope_freqs.weight")?)
        } else {
            None
        };
        Ok(Self {
            norm: dense("output_norm.weight")?,
            rope_tables: rope_tables(&shape, freq_factors.as_deref()),
            vectors: Vectors::for_this_cpu(),
            ffn_width,
            shape,
            embedding,
            vocab,
            layers,
            output,
            path: file.path().to_owned(),
        })
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab
    }

    /// The embedding rows of `tokens`, end to end; an error for a token past the vocabulary.
    fn embed(&self, tokens: &[u32]) -> candle_core::Result<Vec<f32>> {
        match &self.embedding {
            Embedding::Tensor(tensor) => {
                let ids = candle_core::Tensor::new(tokens, &Device::Cpu)?;
                tensor.embedding(&ids)?.flatten_all()?.to_vec1::<f32>()
            }
            Embedding::Output => {
                let width = self.shape.embedding;
                let mut x = vec![0f32; tokens.len() * width];
                for (token, row) in tokens.iter().zip(x.chunks_exact_mut(width)) {
                    self.output.dequantize_row(*token as usize, row)?;
                }
                Ok(x)
            }
        }
    }

    pub fn new_cache(&self) -> KvCache {
        KvCache::with_shape(self.shape.layers, self.shape.kv_heads, self.shape.head_dim)
    }

    /// What a cache of this model holds per position: layers, key/value heads, head size
    /// (what [`KvCache::from_bytes`] checks saved bytes against).
    pub fn cache_dims(&self) -> (usize, usize, usize) {
        (self.shape.layers, self.shape.kv_heads, self.shape.head_dim)
    }

    /// Computes `tokens` at the cache's end and returns the logits that follow the last one.
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, EngineError> {
        let err = compute(&self.path);
        let fail = |reason: String| EngineError::Compute {
            path: self.path.clone(),
            reason,
        };
        if tokens.is_empty() {
            return Err(fail("no tokens to compute (a bug in the caller)".into()));
        }
        let end = cache.len() + tokens.len();
        if end > self.shape.context_length {
            return Err(EngineError::ContextExceeded {
                path: self.path.clone(),
                tokens: end,
                window: self.shape.context_length,
            });
        }
        let s = &self.shape;
        cache
            .adopt_shape(s.layers, s.kv_heads, s.head_dim)
            .map_err(fail)?;
        cache.reserve(end, s.context_length);
        let mut last = Vec::new();
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            last = self.forward_chunk(chunk, cache).map_err(&err)?;
        }
        let mut normed = vec![0f32; last.len()];
        rms_norm_row(&last, &self.norm, s.rms_eps as f32, &mut normed);
        self.output.forward_rows(&normed).map_err(&err)
    }
}

/// The rotary embedding's cosines and sines for every position of the context.
fn rope_tables(shape: &Shape, factors: Option<&[f32]>) -> RopeTables {
    let half = shape.head_dim / 2;
    let mut inverse: Vec<f32> = (0..half)
        .map(|i| 1.0 / shape.rope_base.powf((2 * i) as f32 / shape.head_dim as f32))
        .collect();
    if let Some(factors) = factors {
        for (f, factor) in inverse.iter_mut().zip(factors) {
            *f /= factor;
        }
    }
    RopeTables::new(&inverse, shape.context_length)
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
