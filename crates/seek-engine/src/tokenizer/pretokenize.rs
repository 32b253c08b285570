//! The pre-tokenizer: splitting text into the words that byte-level BPE then merges, with the
//! regular expressions llama.cpp uses for each `tokenizer.ggml.pre` name.
//!
//! Owns the table of pre-tokenizer names, their patterns and flags, and llama.cpp's way of
//! applying several patterns in turn. It must not know about tokens or merges.
//!
//! llama.cpp applies a pre-tokenizer's patterns one after the other: each pattern splits every
//! piece the previous one produced into its matches and the text between them (both kept), and
//! a pattern sees each piece as a whole text of its own (so `(?!\S)` holds at a piece's end).
//! Unicode classes (`\p{L}`, `\p{N}`, `\s`) are the `regex` crate's; llama.cpp carries its own
//! tables, so the two can only disagree on code points assigned in a newer Unicode version than
//! one of them knows.

use std::ops::Range;

use fancy_regex::Regex;

/// GPT-2's pattern. llama.cpp recognises this exact string and runs a hand-written scanner for
/// it which also takes a lone whitespace character before a non-space as a word; the trailing
/// `|\s+` here does the same.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Llama 3's pattern, with the case-insensitive contractions spelled out as llama.cpp does.
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's pattern: Llama 3's with single digits.
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// What llama.cpp does for a pre-tokenizer name: its patterns and the flags that go with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PreTokenizerKind {
    /// The name llama.cpp's table maps the file's name to (for messages and tests).
    pub(super) family: &'static str,
    patterns: &'static [&'static str],
    /// A word that is a token as a whole is that token, merges or not (llama.cpp's
    /// `ignore_merges`).
    pub(super) ignore_merges: bool,
    /// Whether BOS is added when the file does not say (`tokenizer.ggml.add_bos_token`).
    pub(super) add_bos_by_default: bool,
}

const DEFAULT: PreTokenizerKind = PreTokenizerKind {
    family: "default",
    patterns: &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
    ignore_merges: false,
    add_bos_by_default: false,
};

impl PreTokenizerKind {
    /// llama.cpp's choice for `tokenizer.ggml.pre`. A missing name is llama.cpp's default; so
    /// is a name this table does not know, where llama.cpp refuses the file: a tokenizer that
    /// splits words a little differently still encodes every text, which is more useful than
    /// no model at all.
    pub(super) fn for_name(name: Option<&str>) -> Self {
        let family = |family, patterns, ignore_merges, add_bos_by_default| PreTokenizerKind {
            family,
            patterns,
            ignore_merges,
            add_bos_by_default,
        };
        match name.unwrap_or("default") {
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral"
            | "midm-2.0" | "lfm2" | "jina-v5-nano" => family("llama3", &[LLAMA3], true, true),
            "dbrx" | "smaug-bpe" => family("llama3", &[LLAMA3], false, false),
            "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" | "stablelm2"
            | "hunyuan" | "solar-open" => family("qwen2", &[QWEN2], false, false),
            "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es"
            | "jina-v2-de" | "a.x-4.0" | "mellum" | "modern-bert" | "exaone4" | "mpt" | "olmo"
            | "jais" | "trillion" | "granite-docling" => family("gpt2", &[GPT2], false, false),
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone"
            | "minerva-7b" | "mellum2" => family("smollm", &[r"\p{N}", GPT2], false, false),
            "falcon" => family(
                "falcon",
                &[r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
                false,
                false,
            ),
            _ => DEFAULT,
        }
    }
}

/// A compiled pre-tokenizer.
#[derive(Debug)]
pub(super) struct PreTokenizer {
    patterns: Vec<Regex>,
}

impl PreTokenizer {
    pub(super) fn new(kind: PreTokenizerKind) -> Result<Self, String> {
        let patterns = kind
            .patterns
            .iter()
            .map(|pattern| {
                Regex::new(pattern).map_err(|e| format!("the pattern {pattern:?} is invalid: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// The words of `text`, as byte ranges into it, in order, covering all of it.
    pub(super) fn split(&self, text: &str) -> Vec<Range<usize>> {
        let mut pieces = vec![Range {
            start: 0,
            end: text.len(),
        }];
        for pattern in &self.patterns {
            let mut next = Vec::with_capacity(pieces.len() * 2);
            for piece in pieces {
                split_piece(pattern, text, piece, &mut next);
            }
            pieces = next;
        }
        pieces.retain(|piece| !piece.is_empty());
        pieces
    }
}

/// Pushes the matches of `pattern` in `text[piece]` and the gaps between them.
fn split_piece(pattern: &Regex, text: &str, piece: Range<usize>, out: &mut Vec<Range<usize>>) {
    let base = piece.start;
    let mut done = 0;
    for found in pattern.find_iter(&text[piece.clone()]) {
        let Ok(found) = found else {
            // Only the backtracking limit can fail here (a pathological piece, far beyond
            // anything these patterns meet in text); the rest stays one word, which BPE
            // still encodes, if not the way llama.cpp would.
            break;
        };
        if found.start() == found.end() {
            continue;
        }
        if found.start() > done {
            out.push(base + done..base + found.start());
        }
        out.push(base + found.start()..base + found.end());
        done = found.end();
    }
    if done < piece.len() {
        out.push(base + done..piece.end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(name: &str, text: &str) -> Vec<String> {
        let kind = PreTokenizerKind::for_name(Some(name));
        let pre = PreTokenizer::new(kind).expect("the built-in patterns compile");
        pre.split(text)
            .into_iter()
            .map(|r| text[r].to_owned())
            .collect()
    }

    #[test]
    fn every_family_compiles() {
        for name in [
            "default", "llama3", "dbrx", "qwen2", "gpt-2", "smollm", "falcon",
        ] {
            PreTokenizer::new(PreTokenizerKind::for_name(Some(name))).expect(name);
        }
    }

    #[test]
    fn gpt2_keeps_one_space_with_the_next_word() {
        assert_eq!(
            words("gpt-2", "Hello  world's 42\n\n\tx  "),
            ["Hello", " ", " world", "'s", " 42", "\n\n", "\t", "x", "  "]
        );
    }

    #[test]
    fn smollm_isolates_every_digit_before_the_gpt2_pattern() {
        assert_eq!(
            words("smollm", " 12345x"),
            [" ", "1", "2", "3", "4", "5", "x"]
        );
        assert_eq!(words("smollm", "a  1"), ["a", "  ", "1"]);
    }

    #[test]
    fn llama3_groups_digits_by_three_and_newlines_with_their_spaces() {
        assert_eq!(
            words("llama3", "12345678 ok\n \n  x"),
            ["123", "456", "78", " ok", "\n \n", " ", " x"]
        );
        assert_eq!(words("llama3", "I'M"), ["I", "'M"]);
    }

    #[test]
    fn qwen2_takes_single_digits_and_a_leading_symbol_with_letters() {
        assert_eq!(
            words("qwen2", "x=123 (é中文)"),
            ["x", "=", "1", "2", "3", " (", "é中文", ")"]
        );
    }

    #[test]
    fn an_unknown_or_missing_name_is_the_default() {
        assert_eq!(PreTokenizerKind::for_name(Some("no-such-pre")), DEFAULT);
        assert_eq!(PreTokenizerKind::for_name(None), DEFAULT);
        assert_eq!(
            words("no-such-pre", "a+b 1234"),
            ["a", "+", "b", " ", "123", "4"]
        );
    }

    #[test]
    fn a_long_whitespace_run_is_split_without_giving_up() {
        let text = " ".repeat(200_000) + "x\n" + &"\t \n".repeat(50_000);
        for name in ["llama3", "smollm"] {
            let words = words(name, &text);
            assert_eq!(words[0].len(), 199_999, "{name}");
            assert_eq!(words[1], " x", "{name}");
            assert_eq!(words.concat(), text, "{name}");
        }
    }

    #[test]
    fn the_words_cover_the_text() {
        let text = "  fn main() {\n\tprintln!(\"héllo 🌍\");\n}\n\n\n";
        for name in ["default", "llama3", "qwen2", "gpt-2", "smollm"] {
            assert_eq!(words(name, text).concat(), text, "{name}");
        }
    }
}
