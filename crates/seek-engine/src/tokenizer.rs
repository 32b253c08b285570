//! The built-in engine's tokenizer, built from a GGUF file's own metadata, encoding text to
//! exactly the ids llama.cpp produces for the same file.
//!
//! Owns reading the vocabulary, merges, token types and special ids from the metadata, splitting
//! special tokens out of the text, and encoding and decoding tokens. It must not know about chat
//! templates, the model or generation. Only byte-level BPE vocabularies
//! (`tokenizer.ggml.model = "gpt2"`: SmolLM2, Qwen2.5, Llama 3, …) are read; anything else is a
//! `EngineError::Tokenizer` naming what the file holds.
//!
//! How llama.cpp encodes, and so how this does:
//! 1. special tokens are split out first, longest text first: control and unknown tokens only
//!    when asked to (`parse_special`), user-defined tokens always;
//! 2. each piece of text between them is split into words by the pre-tokenizer the file names
//!    (`tokenizer.ggml.pre`, see `pretokenize`);
//! 3. each word's bytes are merged by the merge ranks (`bpe`).
//!
//! Left out, because no file this engine runs needs them: `tokenizer.ggml.add_eos_token` (a
//! chat prompt never ends with EOS), the strip-spaces-around-a-special-token attributes
//! llama.cpp sets for Phi-3 and some BERT models by model name, and SentencePiece-style BPE.

mod bpe;
mod metadata;
mod pretokenize;
mod special;

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;

use crate::EngineError;
use bpe::{Bpe, MergeWork};
use metadata::Metadata;
use pretokenize::{PreTokenizer, PreTokenizerKind};
use special::Kind;

/// A byte-level BPE tokenizer read from a GGUF file.
pub struct Tokenizer {
    path: PathBuf,
    /// The pre-tokenizer family in use (`default` for a name llama.cpp's table lacks).
    pre_family: &'static str,
    /// Each token's text as the vocabulary stores it (byte-level characters for normal tokens).
    texts: Vec<String>,
    kinds: Vec<Kind>,
    token_to_id: HashMap<String, u32>,
    /// Special tokens, longest text first (ties by id, for a deterministic order).
    specials: Vec<u32>,
    pre: PreTokenizer,
    ignore_merges: bool,
    bpe: Bpe,
    byte_chars: [char; 256],
    add_bos: bool,
    bos: Option<u32>,
    eos: Option<u32>,
    end_of_generation: Vec<u32>,
    /// The bytes of every token, back to back; token `i` is `pieces[ends[i-1]..ends[i]]`.
    pieces: Vec<u8>,
    piece_ends: Vec<usize>,
}

/// A piece of the text being encoded: text still to encode, or a special token found in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fragment {
    Text(Range<usize>),
    Token(u32),
}

impl Tokenizer {
    /// Reads the tokenizer from the file's metadata. `path` is only for error messages.
    pub fn from_gguf(content: &gguf_file::Content, path: &Path) -> Result<Self, EngineError> {
        Self::build(&content.metadata, path).map_err(|reason| EngineError::Tokenizer {
            path: path.to_owned(),
            reason,
        })
    }

    fn build(map: &HashMap<String, gguf_file::Value>, path: &Path) -> Result<Self, String> {
        let meta = Metadata::new(map);
        let model = meta
            .optional_string("tokenizer.ggml.model")?
            .ok_or("the key tokenizer.ggml.model is missing")?;
        if model != "gpt2" {
            return Err(unsupported_model(model));
        }
        let raw_tokens = meta.string_array("tokenizer.ggml.tokens")?;
        if raw_tokens.is_empty() {
            return Err("tokenizer.ggml.tokens is empty".to_owned());
        }
        if u32::try_from(raw_tokens.len()).is_err() {
            return Err(format!("{} tokens are too many", raw_tokens.len()));
        }
        // An empty token would match everywhere; llama.cpp renames it the same way.
        let texts: Vec<String> = raw_tokens
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if t.is_empty() {
                    format!("[EMPTY_{i}]")
                } else {
                    (*t).to_owned()
                }
            })
            .collect();
        let mut token_to_id = HashMap::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            if let Some(first) = token_to_id.insert(text.clone(), i as u32) {
                return Err(format!("tokens {first} and {i} are both {text:?}"));
            }
        }
        let mut kinds = match meta.optional_i32_array("tokenizer.ggml.token_type")? {
            None => vec![Kind::Normal; texts.len()],
            Some(types) if types.len() < texts.len() => {
                return Err(format!(
                    "tokenizer.ggml.token_type has {} entries for {} tokens",
                    types.len(),
                    texts.len()
                ));
            }
            Some(types) => types[..texts.len()]
                .iter()
                .map(|&t| Kind::from_gguf(t))
                .collect(),
        };
        let merges = meta.string_array("tokenizer.ggml.merges")?;
        let pre_name = meta.optional_string("tokenizer.ggml.pre")?;
        let kind = PreTokenizerKind::for_name(pre_name);
        let pre = PreTokenizer::new(kind)?;
        let bpe = Bpe::new(texts.len(), &token_to_id, &merges)?;
        let ids = special::resolve(&meta, &texts, &mut kinds)?;
        let add_bos = meta
            .optional_bool("tokenizer.ggml.add_bos_token")?
            .unwrap_or(kind.add_bos_by_default);

        let mut specials: Vec<u32> = (0..texts.len() as u32)
            .filter(|&id| kinds[id as usize].is_special())
            .collect();
        specials.sort_by_key(|&id| std::cmp::Reverse(texts[id as usize].len()));

        let byte_chars = bpe::byte_to_char();
        let char_bytes = bpe::char_to_byte();
        let mut pieces = Vec::new();
        let mut piece_ends = Vec::with_capacity(texts.len());
        for (text, &kind) in texts.iter().zip(&kinds) {
            append_piece(text, kind, &char_bytes, &mut pieces);
            piece_ends.push(pieces.len());
        }
        Ok(Self {
            path: path.to_owned(),
            pre_family: kind.family,
            texts,
            kinds,
            token_to_id,
            specials,
            pre,
            ignore_merges: kind.ignore_merges,
            bpe,
            byte_chars,
            add_bos,
            bos: ids.bos,
            eos: ids.eos,
            end_of_generation: ids.end_of_generation,
            pieces,
            piece_ends,
        })
    }

    /// Text to ids. `parse_special`: special and control tokens written in the text (e.g.
    /// "<|im_start|>") become their ids, as llama.cpp's `parse_special = true`; without it they
    /// are encoded as plain text (user-defined tokens are split out either way, as llama.cpp
    /// does). Adds BOS only if `add_bos` and the file says so
    /// (`tokenizer.ggml.add_bos_token`, or llama.cpp's default for the pre-tokenizer).
    pub fn encode(&self, text: &str, add_bos: bool, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        if add_bos && self.add_bos {
            out.extend(self.bos);
        }
        let mut work = MergeWork::default();
        let mut word_text = String::new();
        for fragment in self.split_specials(text, parse_special) {
            match fragment {
                Fragment::Token(id) => out.push(id),
                Fragment::Text(range) => {
                    let piece = &text[range];
                    for word in self.pre.split(piece) {
                        let word = &piece[word];
                        if self.ignore_merges {
                            word_text.clear();
                            word_text.extend(word.bytes().map(|b| self.byte_chars[usize::from(b)]));
                            if let Some(&id) = self.token_to_id.get(&word_text) {
                                out.push(id);
                                continue;
                            }
                        }
                        self.bpe.encode_word(word.as_bytes(), &mut work, &mut out);
                    }
                }
            }
        }
        out
    }

    /// Splits the special tokens out of `text`, one token at a time, longest first: each finds
    /// all its occurrences in the text the longer ones left (llama.cpp's order, which decides
    /// between overlapping special tokens).
    fn split_specials(&self, text: &str, parse_special: bool) -> Vec<Fragment> {
        if text.is_empty() {
            return Vec::new();
        }
        let mut fragments = vec![Fragment::Text(0..text.len())];
        for &id in &self.specials {
            if !parse_special && self.kinds[id as usize].needs_parse_special() {
                continue;
            }
            let needle = self.texts[id as usize].as_str();
            let found_somewhere = fragments.iter().any(|f| match f {
                Fragment::Text(r) => text[r.clone()].contains(needle),
                Fragment::Token(_) => false,
            });
            if !found_somewhere {
                continue;
            }
            let mut next = Vec::with_capacity(fragments.len() + 2);
            for fragment in fragments {
                let Fragment::Text(range) = fragment else {
                    next.push(fragment);
                    continue;
                };
                let mut start = range.start;
                for (at, _) in text[range.clone()].match_indices(needle) {
                    let at = range.start + at;
                    if at > start {
                        next.push(Fragment::Text(start..at));
                    }
                    next.push(Fragment::Token(id));
                    start = at + needle.len();
                }
                if start < range.end {
                    next.push(Fragment::Text(start..range.end));
                }
            }
            fragments = next;
        }
        fragments
    }

    /// The bytes one token stands for. Normal tokens are their byte-level characters decoded to
    /// raw bytes (one token may hold part of a UTF-8 character; the caller assembles). Control
    /// and unknown tokens (e.g. "<|im_end|>") give nothing, as llama-server's replies do: they
    /// are the template's structure, not text, and showing them would leak markup into answers
    /// (generation stops at the end-of-generation ones anyway). User-defined tokens give their
    /// text. An id outside the vocabulary gives nothing.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        let id = id as usize;
        let Some(&end) = self.piece_ends.get(id) else {
            return &[];
        };
        let start = if id == 0 { 0 } else { self.piece_ends[id - 1] };
        &self.pieces[start..end]
    }

    /// Ids that end generation: EOS, end-of-turn, and every token llama.cpp treats as
    /// end-of-generation for this vocabulary (e.g. "<|im_end|>", "<|endoftext|>"). Sorted.
    pub fn end_of_generation(&self) -> &[u32] {
        &self.end_of_generation
    }

    pub fn vocab_size(&self) -> usize {
        self.texts.len()
    }

    /// Whether `encode(.., add_bos = true, ..)` starts with BOS: the file's
    /// `tokenizer.ggml.add_bos_token`, or llama.cpp's default for its pre-tokenizer.
    pub fn adds_bos(&self) -> bool {
        self.add_bos && self.bos.is_some()
    }

    /// The BOS token's text, for chat templates.
    pub fn bos_token(&self) -> Option<&str> {
        self.bos.map(|id| self.texts[id as usize].as_str())
    }

    /// The EOS token's text, for chat templates.
    pub fn eos_token(&self) -> Option<&str> {
        self.eos.map(|id| self.texts[id as usize].as_str())
    }

    /// The file this tokenizer was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A summary: the vocabulary itself is far too long to print.
impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.texts.len())
            .field("pre_tokenizer", &self.pre_family)
            .field("bos", &self.bos_token())
            .field("eos", &self.eos_token())
            .field("adds_bos", &self.adds_bos())
            .field("end_of_generation", &self.end_of_generation)
            .finish_non_exhaustive()
    }
}

/// The reason a non-BPE tokenizer cannot be used.
fn unsupported_model(model: &str) -> String {
    let what = match model {
        "llama" => " (a SentencePiece vocabulary)",
        "bert" => " (a WordPiece vocabulary)",
        "t5" => " (a Unigram vocabulary)",
        "rwkv" => " (an RWKV vocabulary)",
        "no_vocab" | "none" => " (no vocabulary at all)",
        _ => "",
    };
    format!(
        "its tokenizer.ggml.model is {model:?}{what}; the built-in engine reads only byte-level BPE \
         vocabularies (\"gpt2\", as in SmolLM2, Qwen2.5 and Llama 3): use a model server \
         (--provider ollama, llama.cpp, …) for this model"
    )
}

/// Appends the bytes token text `text` of kind `kind` stands for.
fn append_piece(text: &str, kind: Kind, char_bytes: &HashMap<char, u8>, out: &mut Vec<u8>) {
    match kind {
        Kind::Normal => decode_byte_level(text, char_bytes, out),
        Kind::UserDefined => out.extend_from_slice(text.as_bytes()),
        Kind::Byte => match parse_byte_token(text) {
            Some(b) => out.push(b),
            None => decode_byte_level(text, char_bytes, out),
        },
        Kind::Control | Kind::Unknown | Kind::Unused | Kind::Undefined => {}
    }
}

/// Byte-level characters back to bytes. A character outside GPT-2's map (only in a damaged or
/// unusual vocabulary) is kept as its own UTF-8, where llama.cpp would print a marker.
fn decode_byte_level(text: &str, char_bytes: &HashMap<char, u8>, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    for c in text.chars() {
        match char_bytes.get(&c) {
            Some(&b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
}

/// `<0xAB>` → 0xAB.
fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests;
