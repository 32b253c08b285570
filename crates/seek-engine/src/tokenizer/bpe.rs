//! Byte-level BPE: GPT-2's byte-to-character map and merging the bytes of one word by the
//! file's merge ranks, the way llama.cpp does.
//!
//! Owns the merge table and the merge loop. It must not split text into words (the
//! pre-tokenizer does) nor know about special tokens.
//!
//! Symbols are numbered: a vocabulary string is its token id; a string the merges can build
//! that is not in the vocabulary gets a number past the vocabulary, so the merge loop works on
//! numbers only. llama.cpp compares strings; since a string has one number, the two agree.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};

/// GPT-2's map from a byte to the character that stands for it in the vocabulary: printable
/// Latin-1 bytes stand for themselves, the others for U+0100 onwards, in byte order.
pub(super) fn byte_to_char() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut unprintable_seen = 0u32;
    for (byte, slot) in map.iter_mut().enumerate() {
        let printable = matches!(byte, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
        let code = if printable {
            byte as u32
        } else {
            unprintable_seen += 1;
            255 + unprintable_seen
        };
        // Every code here is below 0x144, far from the surrogates: always a char.
        *slot = char::from_u32(code).unwrap_or('\u{FFFD}');
    }
    map
}

/// The inverse of [`byte_to_char`], for decoding tokens.
pub(super) fn char_to_byte() -> HashMap<char, u8> {
    byte_to_char()
        .iter()
        .enumerate()
        .map(|(byte, &c)| (c, byte as u8))
        .collect()
}

/// A hasher for the packed pair keys: one multiply, since the keys are not chosen by an
/// adversary (they come from the model file and the merge loop).
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type PairMap = HashMap<u64, Merge, BuildHasherDefault<PairHasher>>;

#[derive(Debug, Clone, Copy)]
struct Merge {
    rank: u32,
    result: u32,
}

fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

/// The merge table of one vocabulary.
pub(super) struct Bpe {
    vocab_size: u32,
    /// The symbol of each byte of a word.
    byte_symbol: [u32; 256],
    merges: PairMap,
    /// For each symbol past the vocabulary: the tokens llama.cpp falls back to when a word ends
    /// on it (its single-byte pieces that are tokens).
    fallback: Vec<Vec<u32>>,
}

impl Bpe {
    /// Builds the table from the vocabulary (`token_to_id`: each string's id) and the merges,
    /// each `"left right"`, its rank its position. Errors name the merge that is not two strings.
    pub(super) fn new(
        vocab_size: usize,
        token_to_id: &HashMap<String, u32>,
        merges: &[&str],
    ) -> Result<Self, String> {
        let vocab_size = u32::try_from(vocab_size)
            .map_err(|_| format!("{vocab_size} tokens are more than 32-bit ids can number"))?;
        let mut extra: HashMap<String, u32> = HashMap::new();
        let mut extra_texts: Vec<String> = Vec::new();
        let mut symbol_of = |text: &str| -> u32 {
            if let Some(&id) = token_to_id.get(text) {
                return id;
            }
            if let Some(&id) = extra.get(text) {
                return id;
            }
            // At most 256 + 3 per merge extra strings: far below the u32 range for any
            // vocabulary and merge list that fit in memory.
            let id = vocab_size.saturating_add(extra_texts.len() as u32);
            extra.insert(text.to_owned(), id);
            extra_texts.push(text.to_owned());
            id
        };
        let chars = byte_to_char();
        let mut byte_symbol = [0u32; 256];
        let mut buf = [0u8; 4];
        for (slot, c) in byte_symbol.iter_mut().zip(chars) {
            *slot = symbol_of(c.encode_utf8(&mut buf));
        }
        let mut table = PairMap::default();
        table.reserve(merges.len());
        for (rank, merge) in merges.iter().enumerate() {
            // llama.cpp splits at the first space after the first byte, so a left side may
            // itself be a space.
            let split = merge
                .bytes()
                .skip(1)
                .position(|b| b == b' ')
                .map(|at| at + 1)
                .ok_or_else(|| {
                    format!("merge {rank} ({merge:?}) is not two tokens separated by a space")
                })?;
            let (left, right) = (&merge[..split], &merge[split + 1..]);
            let (left_id, right_id) = (symbol_of(left), symbol_of(right));
            let result = symbol_of(&format!("{left}{right}"));
            let rank = u32::try_from(rank).map_err(|_| "too many merges".to_owned())?;
            // The first of two equal merges wins, as in llama.cpp.
            if let Entry::Vacant(slot) = table.entry(pair_key(left_id, right_id)) {
                slot.insert(Merge { rank, result });
            }
        }
        let fallback = extra_texts
            .iter()
            .map(|text| {
                // A single byte of the text that is a token by itself: only ASCII bytes can
                // be, since a token is valid UTF-8.
                text.bytes()
                    .filter(u8::is_ascii)
                    .filter_map(|b| token_to_id.get(std::str::from_utf8(&[b]).ok()?).copied())
                    .collect()
            })
            .collect();
        Ok(Self {
            vocab_size,
            byte_symbol,
            merges: table,
            fallback,
        })
    }

    /// Merges the bytes of one word and appends its tokens to `out`.
    pub(super) fn encode_word(&self, word: &[u8], work: &mut MergeWork, out: &mut Vec<u32>) {
        work.symbols.clear();
        work.queue.clear();
        for (i, &b) in word.iter().enumerate() {
            work.symbols.push(Symbol {
                id: self.byte_symbol[usize::from(b)],
                prev: i as i64 - 1,
                next: if i + 1 == word.len() {
                    -1
                } else {
                    i as i64 + 1
                },
                alive: true,
            });
        }
        for i in 1..work.symbols.len() {
            self.push_pair(work, i - 1, i);
        }
        while let Some(std::cmp::Reverse(candidate)) = work.queue.pop() {
            let (left, right) = (candidate.left as usize, candidate.right as usize);
            let (l, r) = (work.symbols[left], work.symbols[right]);
            // Stale: one side has merged with something else since this pair was queued.
            if !l.alive || !r.alive || l.id != candidate.left_id || r.id != candidate.right_id {
                continue;
            }
            work.symbols[left].id = candidate.result;
            work.symbols[left].next = r.next;
            work.symbols[right].alive = false;
            if r.next >= 0 {
                work.symbols[r.next as usize].prev = left as i64;
            }
            if l.prev >= 0 {
                self.push_pair(work, l.prev as usize, left);
            }
            if r.next >= 0 {
                self.push_pair(work, left, r.next as usize);
            }
        }
        for symbol in work.symbols.iter().filter(|s| s.alive) {
            match symbol.id.checked_sub(self.vocab_size) {
                None => out.push(symbol.id),
                Some(extra) => {
                    let tokens = self.fallback.get(extra as usize);
                    out.extend_from_slice(tokens.map_or(&[][..], Vec::as_slice));
                }
            }
        }
    }

    fn push_pair(&self, work: &mut MergeWork, left: usize, right: usize) {
        let (left_id, right_id) = (work.symbols[left].id, work.symbols[right].id);
        if let Some(merge) = self.merges.get(&pair_key(left_id, right_id)) {
            work.queue.push(std::cmp::Reverse(Candidate {
                rank: merge.rank,
                left: left as u32,
                right: right as u32,
                left_id,
                right_id,
                result: merge.result,
            }));
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    prev: i64,
    next: i64,
    alive: bool,
}

/// A pair that may merge. Ordered as llama.cpp's queue: lowest rank first, then leftmost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    rank: u32,
    left: u32,
    right: u32,
    left_id: u32,
    right_id: u32,
    result: u32,
}

/// Buffers reused from one word to the next, so encoding allocates per text, not per word.
#[derive(Debug, Default)]
pub(super) struct MergeWork {
    symbols: Vec<Symbol>,
    queue: std::collections::BinaryHeap<std::cmp::Reverse<Candidate>>,
}
