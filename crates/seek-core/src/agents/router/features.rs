//! The router's features: a prompt turned into a sorted set of hashed feature buckets —
//! lowercase word unigrams and bigrams, character 3–5-grams across the whole text (they carry
//! other languages and typos), and character 1–2-grams inside Chinese and Japanese runs (which
//! have no spaces between words). It also keeps the readable words, so a reason can name them.
//!
//! Pure and deterministic: FNV-1a hashing (never `std`'s seeded hasher), sorted output. It must
//! not know the labels or the model.

/// How many hash buckets the features fall into: enough that the few thousand distinct
/// features of the training set rarely collide, small enough that training stays fast.
pub(crate) const BUCKETS: usize = 1 << 17;

/// Only the start of a prompt is read (on a char boundary): a pasted log must not make routing
/// slow, and the first lines say what is asked.
pub(crate) const MAX_PROMPT_BYTES: usize = 4096;

/// The longest word a reason names, in chars: a reason is for a status line.
const MAX_REASON_WORD_CHARS: usize = 20;

/// What kind of feature a hash is for, so `run` the word and `run` the trigram differ.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Word = 1,
    WordPair = 2,
    CharGram = 3,
    IdeographGram = 4,
}

/// A readable feature a reason may name: a word, or a 1–2-char run of ideographs or kana.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub bucket: u32,
    pub text: String,
}

/// A prompt's features.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Features {
    /// Distinct buckets, sorted: each counts once (presence, not frequency).
    pub buckets: Vec<u32>,
    /// Each bucket's weight, `1/sqrt(len)`, so that long prompts do not score louder.
    pub scale: f32,
    /// The words and ideograph grams, in order of first appearance, without repeats.
    pub named: Vec<Named>,
}

/// The features of `prompt`.
pub fn extract(prompt: &str) -> Features {
    let text = lowercase_start(prompt);
    let words = words(&text);
    let mut buckets = Vec::with_capacity(text.len() * 4);
    let mut named: Vec<Named> = Vec::new();
    let mut name = |bucket: u32, text: &str| {
        if !named.iter().any(|n| n.text == text) {
            named.push(Named {
                bucket,
                text: text.to_owned(),
            });
        }
    };

    for word in &words {
        let bucket = hash(Kind::Word, [word.as_str()]);
        buckets.push(bucket);
        if word.chars().count() <= MAX_REASON_WORD_CHARS && !word.chars().any(is_ideograph) {
            name(bucket, word);
        }
        ideograph_grams(word, |gram| {
            let bucket = hash(Kind::IdeographGram, [gram]);
            buckets.push(bucket);
            name(bucket, gram);
        });
    }
    for pair in words.windows(2) {
        buckets.push(hash(
            Kind::WordPair,
            [pair[0].as_str(), " ", pair[1].as_str()],
        ));
    }
    char_grams(&words, &mut buckets);

    buckets.sort_unstable();
    buckets.dedup();
    let scale = if buckets.is_empty() {
        0.0
    } else {
        1.0 / (buckets.len() as f32).sqrt()
    };
    Features {
        buckets,
        scale,
        named,
    }
}

/// The first `MAX_PROMPT_BYTES` of `prompt`, lowercase, digits all `0` (so "15%" and "23%"
/// look alike).
fn lowercase_start(prompt: &str) -> String {
    let mut end = prompt.len().min(MAX_PROMPT_BYTES);
    while !prompt.is_char_boundary(end) {
        end -= 1;
    }
    prompt[..end]
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect()
}

/// Runs of letters and digits; everything else (spaces, punctuation, control characters)
/// separates them, so no feature ever holds a control character.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Character 3–5-grams over the words joined by single spaces, with a space before and after,
/// so word starts and ends are features too.
fn char_grams(words: &[String], buckets: &mut Vec<u32>) {
    let mut chars: Vec<char> = Vec::with_capacity(words.iter().map(String::len).sum::<usize>());
    chars.push(' ');
    for word in words {
        chars.extend(word.chars());
        chars.push(' ');
    }
    let mut utf8 = [0u8; 4];
    for start in 0..chars.len() {
        let mut state = Fnv::new(Kind::CharGram);
        for (len, c) in chars[start..].iter().take(5).enumerate() {
            state.write(c.encode_utf8(&mut utf8).as_bytes());
            if len + 1 >= 3 {
                buckets.push(state.bucket());
            }
        }
    }
}

/// Calls `emit` with every single ideograph or kana and every adjacent pair of them in `word`.
fn ideograph_grams(word: &str, mut emit: impl FnMut(&str)) {
    let mut previous: Option<(usize, char)> = None;
    for (at, c) in word.char_indices() {
        if !is_ideograph(c) {
            previous = None;
            continue;
        }
        let end = at + c.len_utf8();
        emit(&word[at..end]);
        if let Some((start, _)) = previous {
            emit(&word[start..end]);
        }
        previous = Some((at, c));
    }
}

/// Chinese, Japanese and Korean characters: scripts without spaces between words.
fn is_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF // hiragana, katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xAC00..=0xD7AF // hangul syllables
        | 0xF900..=0xFAFF) // CJK compatibility ideographs
}

fn hash<'a>(kind: Kind, parts: impl IntoIterator<Item = &'a str>) -> u32 {
    let mut state = Fnv::new(kind);
    for part in parts {
        state.write(part.as_bytes());
    }
    state.bucket()
}

/// 64-bit FNV-1a: fixed constants, so the same text lands in the same bucket on every run and
/// every machine.
struct Fnv(u64);

impl Fnv {
    fn new(kind: Kind) -> Self {
        let mut state = Fnv(0xcbf2_9ce4_8422_2325);
        state.write(&[kind as u8]);
        state
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn bucket(&self) -> u32 {
        // BUCKETS is a power of two far below u32::MAX, so the cast keeps every bit used.
        (self.0 % BUCKETS as u64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(features: &Features) -> Vec<&str> {
        features.named.iter().map(|n| n.text.as_str()).collect()
    }

    #[test]
    fn words_are_lowercase_and_separated_by_anything_not_a_letter() {
        let features = extract("Search the WEB, then\x1b[31mrun\ttests!");
        assert_eq!(
            texts(&features),
            ["search", "the", "web", "then", "00mrun", "tests"]
        );
        assert!(features.buckets.windows(2).all(|w| w[0] < w[1]));
        assert!(features.buckets.iter().all(|&b| (b as usize) < BUCKETS));
    }

    #[test]
    fn same_text_same_features_and_case_does_not_matter() {
        assert_eq!(extract("Rename the Files"), extract("rename the files"));
        assert_ne!(
            extract("rename files").buckets,
            extract("remove files").buckets
        );
    }

    #[test]
    fn digits_are_one_digit() {
        assert_eq!(
            extract("compute 15%").buckets,
            extract("compute 23%").buckets
        );
    }

    #[test]
    fn ideographs_give_single_and_paired_grams() {
        let features = extract("搜索新闻");
        assert_eq!(
            texts(&features),
            ["搜", "索", "搜索", "新", "索新", "闻", "新闻"]
        );
    }

    #[test]
    fn empty_and_punctuation_only_prompts_have_no_features() {
        for prompt in ["", "   ", "?!…", "\u{1b}\u{7}"] {
            let features = extract(prompt);
            assert!(features.named.is_empty(), "{prompt:?}");
            // Only the lone-space padding, which is shorter than a trigram.
            assert!(features.buckets.is_empty(), "{prompt:?}");
            assert_eq!(features.scale, 0.0);
        }
    }

    #[test]
    fn a_huge_prompt_is_read_only_up_to_the_limit_even_inside_a_char() {
        let prompt = "é".repeat(MAX_PROMPT_BYTES); // 2 bytes each: the limit falls on a boundary
        let odd = format!("a{prompt}"); // now it falls inside one
        assert_eq!(
            extract(&prompt).buckets,
            extract(&prompt[..MAX_PROMPT_BYTES]).buckets
        );
        let _ = extract(&odd);
    }

    #[test]
    fn long_words_are_not_named() {
        let long = "x".repeat(MAX_REASON_WORD_CHARS + 1);
        assert!(texts(&extract(&long)).is_empty());
    }
}
