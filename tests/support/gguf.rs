//! A tiny GGUF writer for tests: metadata and F32 tensors laid out as the GGUF v3 format says,
//! and `tiny_llama`, the smallest file the built-in engine loads (one layer, a printable-ASCII
//! vocabulary), so a bad-input test can change one thing in a file that is otherwise good.
//!
//! It writes whatever it is told, lies included (`Meta::Raw` puts any bytes after a key, a
//! tensor's `offset` may point anywhere): it must not check anything, that is the reader's job.

#![allow(dead_code)]

/// One metadata value.
#[derive(Debug, Clone)]
pub enum Meta {
    U32(u32),
    U64(u64),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    StrArray(Vec<String>),
    I32Array(Vec<i32>),
    /// A value type id and the bytes that follow it, as they are (a length that lies, a type
    /// that does not exist).
    Raw {
        type_id: u32,
        bytes: Vec<u8>,
    },
}

/// GGUF's type ids.
pub mod types {
    pub const U8: u32 = 0;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
}

/// ggml's id of F32 tensor data.
pub const GGML_F32: u32 = 0;

/// One tensor: its dims in GGUF order (the fastest-varying first), its ggml type and data.
#[derive(Debug, Clone)]
pub struct TensorSpec {
    pub name: String,
    pub dims: Vec<u64>,
    pub dtype: u32,
    pub data: Vec<u8>,
    /// Where the data starts in the data section; `None`: after the previous tensor, aligned.
    pub offset: Option<u64>,
}

/// A GGUF file to write.
#[derive(Debug, Clone)]
pub struct Gguf {
    pub version: u32,
    pub metadata: Vec<(String, Meta)>,
    pub tensors: Vec<TensorSpec>,
    /// The data section's alignment (what `general.alignment` says when it is set).
    pub alignment: u64,
}

impl Gguf {
    pub fn new() -> Self {
        Self {
            version: 3,
            metadata: Vec::new(),
            tensors: Vec::new(),
            alignment: 32,
        }
    }

    /// Sets `key` (replacing it where it is, so the order stays the file's).
    pub fn set(&mut self, key: &str, value: Meta) -> &mut Self {
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.metadata.push((key.to_owned(), value)),
        }
        self
    }

    pub fn remove(&mut self, key: &str) -> &mut Self {
        self.metadata.retain(|(k, _)| k != key);
        self
    }

    /// An F32 tensor of `dims` (GGUF order) filled with `value`.
    pub fn tensor_f32(&mut self, name: &str, dims: &[u64], value: f32) -> &mut Self {
        let count: u64 = dims.iter().product();
        let data = (0..count).flat_map(|_| value.to_le_bytes()).collect();
        self.tensors.push(TensorSpec {
            name: name.to_owned(),
            dims: dims.to_vec(),
            dtype: GGML_F32,
            data,
            offset: None,
        });
        self
    }

    pub fn tensor_mut(&mut self, name: &str) -> &mut TensorSpec {
        self.tensors
            .iter_mut()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tensor {name} in the test file"))
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut out, key);
            put_value(&mut out, value);
        }
        let align = self.alignment.max(1);
        let mut next = 0u64;
        let mut placed = Vec::new();
        for t in &self.tensors {
            put_string(&mut out, &t.name);
            out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.dtype.to_le_bytes());
            let at = next.div_ceil(align) * align;
            next = at + t.data.len() as u64;
            out.extend_from_slice(&t.offset.unwrap_or(at).to_le_bytes());
            placed.push(at);
        }
        pad_to(&mut out, align);
        let data_start = out.len() as u64;
        for (t, at) in self.tensors.iter().zip(placed) {
            out.resize((data_start + at) as usize, 0);
            out.extend_from_slice(&t.data);
        }
        out
    }
}

impl Default for Gguf {
    fn default() -> Self {
        Self::new()
    }
}

fn pad_to(out: &mut Vec<u8>, align: u64) {
    let len = out.len() as u64;
    out.resize((len.div_ceil(align) * align) as usize, 0);
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &Meta) {
    let typed = |out: &mut Vec<u8>, id: u32, bytes: &[u8]| {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(bytes);
    };
    match value {
        Meta::U32(v) => typed(out, types::U32, &v.to_le_bytes()),
        Meta::U64(v) => typed(out, types::U64, &v.to_le_bytes()),
        Meta::I32(v) => typed(out, types::I32, &v.to_le_bytes()),
        Meta::F32(v) => typed(out, types::F32, &v.to_le_bytes()),
        Meta::Bool(v) => typed(out, types::BOOL, &[u8::from(*v)]),
        Meta::Str(s) => {
            out.extend_from_slice(&types::STRING.to_le_bytes());
            put_string(out, s);
        }
        Meta::StrArray(items) => {
            out.extend_from_slice(&types::ARRAY.to_le_bytes());
            out.extend_from_slice(&types::STRING.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for s in items {
                put_string(out, s);
            }
        }
        Meta::I32Array(items) => {
            out.extend_from_slice(&types::ARRAY.to_le_bytes());
            out.extend_from_slice(&types::I32.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for v in items {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        Meta::Raw { type_id, bytes } => typed(out, *type_id, bytes),
    }
}

/// Width of `tiny_llama`'s embedding; two heads of four.
pub const TINY_WIDTH: u64 = 8;
/// `tiny_llama`'s context window: room for seek's system prompt, so a task reaches the engine.
pub const TINY_CONTEXT: u32 = 4096;
const TINY_FFN: u64 = 16;

/// The vocabulary of `tiny_llama`: printable ASCII, then `<|im_start|>` and `<|im_end|>`.
pub fn tiny_vocabulary() -> Vec<String> {
    let mut tokens: Vec<String> = (b'!'..=b'~').map(|b| (b as char).to_string()).collect();
    tokens.push("<|im_start|>".into());
    tokens.push("<|im_end|>".into());
    tokens
}

/// The smallest `llama` model the engine loads: one layer, two heads, F32 weights, a
/// byte-level BPE tokenizer with one merge, no chat template (ChatML is used).
pub fn tiny_llama() -> Gguf {
    let mut g = Gguf::new();
    let tokens = tiny_vocabulary();
    let vocab = tokens.len() as u64;
    let mut token_types = vec![1i32; tokens.len()];
    let end = token_types.len();
    token_types[end - 2..].fill(3);
    g.set("general.architecture", Meta::Str("llama".into()))
        .set("general.name", Meta::Str("tiny test model".into()))
        .set("llama.context_length", Meta::U32(TINY_CONTEXT))
        .set("llama.embedding_length", Meta::U32(TINY_WIDTH as u32))
        .set("llama.block_count", Meta::U32(1))
        .set("llama.feed_forward_length", Meta::U32(TINY_FFN as u32))
        .set("llama.attention.head_count", Meta::U32(2))
        .set("llama.attention.head_count_kv", Meta::U32(2))
        .set("llama.attention.layer_norm_rms_epsilon", Meta::F32(1e-5))
        .set("llama.rope.freq_base", Meta::F32(10_000.0))
        .set("tokenizer.ggml.model", Meta::Str("gpt2".into()))
        .set("tokenizer.ggml.pre", Meta::Str("smollm".into()))
        .set("tokenizer.ggml.tokens", Meta::StrArray(tokens))
        .set("tokenizer.ggml.token_type", Meta::I32Array(token_types))
        .set("tokenizer.ggml.merges", Meta::StrArray(vec!["a b".into()]))
        .set("tokenizer.ggml.eos_token_id", Meta::U32(vocab as u32 - 1))
        .set("tokenizer.ggml.bos_token_id", Meta::U32(vocab as u32 - 2));
    let w = TINY_WIDTH;
    g.tensor_f32("token_embd.weight", &[w, vocab], 0.01)
        .tensor_f32("output_norm.weight", &[w], 1.0)
        .tensor_f32("blk.0.attn_norm.weight", &[w], 1.0)
        .tensor_f32("blk.0.attn_q.weight", &[w, w], 0.01)
        .tensor_f32("blk.0.attn_k.weight", &[w, w], 0.01)
        .tensor_f32("blk.0.attn_v.weight", &[w, w], 0.01)
        .tensor_f32("blk.0.attn_output.weight", &[w, w], 0.01)
        .tensor_f32("blk.0.ffn_norm.weight", &[w], 1.0)
        .tensor_f32("blk.0.ffn_gate.weight", &[w, TINY_FFN], 0.01)
        .tensor_f32("blk.0.ffn_up.weight", &[w, TINY_FFN], 0.01)
        .tensor_f32("blk.0.ffn_down.weight", &[TINY_FFN, w], 0.01);
    g
}
