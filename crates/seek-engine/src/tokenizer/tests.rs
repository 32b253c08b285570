//! Unit tests of the tokenizer on tiny vocabularies built in memory: merges, special tokens,
//! decoding, end of generation and malformed metadata.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value, VersionedMagic};

use super::*;

const SPECIALS: &[(&str, i32)] = &[
    ("<|endoftext|>", 3),
    ("<|im_start|>", 3),
    ("<|im_end|>", 3),
    ("<tool>", 4),
    ("<x>", 3),
    ("<x><y>", 3),
];

fn strings(items: &[&str]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|s| Value::String((*s).to_owned()))
            .collect(),
    )
}

/// The specials, then the 256 byte-level characters, then `words`.
fn metadata(words: &[&str], merges: &[&str]) -> HashMap<String, Value> {
    let chars = bpe::byte_to_char().map(String::from);
    let mut tokens: Vec<&str> = SPECIALS.iter().map(|(t, _)| *t).collect();
    tokens.extend(chars.iter().map(String::as_str));
    tokens.extend(words);
    let mut types: Vec<Value> = SPECIALS.iter().map(|(_, t)| Value::I32(*t)).collect();
    types.resize(tokens.len(), Value::I32(1));
    HashMap::from([
        (
            "tokenizer.ggml.model".to_owned(),
            Value::String("gpt2".into()),
        ),
        (
            "tokenizer.ggml.pre".to_owned(),
            Value::String("gpt-2".into()),
        ),
        ("tokenizer.ggml.tokens".to_owned(), strings(&tokens)),
        ("tokenizer.ggml.token_type".to_owned(), Value::Array(types)),
        ("tokenizer.ggml.merges".to_owned(), strings(merges)),
        ("tokenizer.ggml.bos_token_id".to_owned(), Value::U32(1)),
        ("tokenizer.ggml.eos_token_id".to_owned(), Value::U32(2)),
        ("tokenizer.ggml.add_bos_token".to_owned(), Value::Bool(true)),
    ])
}

fn content(metadata: HashMap<String, Value>) -> Content {
    Content {
        magic: VersionedMagic::GgufV3,
        metadata,
        tensor_infos: HashMap::new(),
        tensor_data_offset: 0,
    }
}

fn build(metadata: HashMap<String, Value>) -> Result<Tokenizer, EngineError> {
    Tokenizer::from_gguf(&content(metadata), Path::new("tiny.gguf"))
}

fn tokenizer(words: &[&str], merges: &[&str]) -> Tokenizer {
    build(metadata(words, merges)).expect("the tiny vocabulary loads")
}

fn texts(tok: &Tokenizer, ids: &[u32]) -> Vec<String> {
    ids.iter()
        .map(|&id| tok.texts[id as usize].clone())
        .collect()
}

fn error_of(metadata: HashMap<String, Value>) -> String {
    match build(metadata) {
        Ok(_) => panic!("the metadata should be refused"),
        Err(e) => {
            assert!(matches!(e, EngineError::Tokenizer { .. }), "{e:?}");
            e.to_string()
        }
    }
}

#[test]
fn merges_apply_lowest_rank_first() {
    let words = ["he", "ll", "hell", "hello", "el", "ell"];
    let tok = tokenizer(&words, &["h e", "l l", "he ll", "hell o", "e l", "el l"]);
    assert_eq!(texts(&tok, &tok.encode("hello", false, false)), ["hello"]);
    // "e l" outranks "l l" here, so "ell" is built from the left.
    let tok = tokenizer(&words, &["e l", "l l", "el l"]);
    assert_eq!(texts(&tok, &tok.encode("hell", false, false)), ["h", "ell"]);
    let tok = tokenizer(&words, &["l l", "e l", "h e"]);
    assert_eq!(texts(&tok, &tok.encode("hell", false, false)), ["he", "ll"]);
}

#[test]
fn equal_ranks_merge_leftmost_first() {
    let tok = tokenizer(&["ll"], &["l l"]);
    assert_eq!(texts(&tok, &tok.encode("lll", false, false)), ["ll", "l"]);
}

#[test]
fn words_never_merge_across_the_pre_tokenizer_split() {
    let tok = tokenizer(&["aĠ", "Ġb"], &["a Ġ", "Ġ b"]);
    assert_eq!(texts(&tok, &tok.encode("a b", false, false)), ["a", "Ġb"]);
}

#[test]
fn a_merge_whose_result_is_not_a_token_falls_back_to_single_bytes() {
    let tok = tokenizer(&[], &["a b"]);
    assert_eq!(texts(&tok, &tok.encode("ab", false, false)), ["a", "b"]);
}

#[test]
fn special_tokens_are_split_out_only_when_asked_and_user_defined_always() {
    let tok = tokenizer(&[], &[]);
    let text = "<|im_start|>u<tool><|im_end|>";
    assert_eq!(
        texts(&tok, &tok.encode(text, false, true)),
        ["<|im_start|>", "u", "<tool>", "<|im_end|>"]
    );
    let plain = tok.encode(text, false, false);
    assert!(!plain.contains(&1) && !plain.contains(&2), "{plain:?}");
    assert!(
        plain.contains(&3),
        "a user-defined token is split out: {plain:?}"
    );
    assert_eq!(texts(&tok, &plain).concat().len(), text.len());
}

#[test]
fn the_longest_special_token_wins() {
    let tok = tokenizer(&[], &[]);
    assert_eq!(
        texts(&tok, &tok.encode("<x><y><x>", false, true)),
        ["<x><y>", "<x>"]
    );
}

#[test]
fn bos_is_added_only_when_asked_and_the_file_says_so() {
    let tok = tokenizer(&[], &[]);
    assert_eq!(tok.encode("a", true, false).first(), Some(&1));
    assert_ne!(tok.encode("a", false, false).first(), Some(&1));
    assert_eq!(tok.encode("", true, false), [1]);
    let mut meta = metadata(&[], &[]);
    meta.insert("tokenizer.ggml.add_bos_token".into(), Value::Bool(false));
    let tok = build(meta).expect("loads");
    assert_ne!(tok.encode("a", true, false).first(), Some(&1));
}

#[test]
fn llama3_takes_a_whole_word_that_is_a_token_without_merges() {
    let mut meta = metadata(&["Ġhey"], &[]);
    meta.insert("tokenizer.ggml.pre".into(), Value::String("llama3".into()));
    let tok = build(meta).expect("loads");
    assert_eq!(texts(&tok, &tok.encode(" hey", false, false)), ["Ġhey"]);
    let tok = tokenizer(&["Ġhey"], &[]);
    assert_eq!(texts(&tok, &tok.encode(" hey", false, false)).len(), 4);
}

#[test]
fn token_bytes_decode_byte_level_text_and_hide_control_tokens() {
    let tok = tokenizer(&["ĠwÃ¶rld"], &[]);
    let id = |t: &str| tok.token_to_id[t];
    assert_eq!(tok.token_bytes(id("ĠwÃ¶rld")), " wörld".as_bytes());
    assert_eq!(tok.token_bytes(id("Ċ")), b"\n");
    assert_eq!(tok.token_bytes(id("<|im_end|>")), b"");
    assert_eq!(tok.token_bytes(id("<tool>")), b"<tool>");
    assert_eq!(tok.token_bytes(u32::MAX), b"");
}

#[test]
fn decoding_undoes_encoding_for_any_text() {
    let tok = tokenizer(&["Ġw"], &["Ġ w"]);
    let text = "naïve  café\t\n\n 12345 中文 🙂 \u{0}\u{7f}\u{a0}x = 1e-5\r\n";
    let bytes: Vec<u8> = tok
        .encode(text, false, false)
        .iter()
        .flat_map(|&id| tok.token_bytes(id).to_vec())
        .collect();
    assert_eq!(String::from_utf8(bytes).as_deref(), Ok(text));
}

#[test]
fn end_of_generation_holds_eos_and_the_texts_llama_cpp_knows() {
    let tok = tokenizer(&["<reponame>"], &[]);
    let reponame = tok.token_to_id["<reponame>"];
    assert_eq!(tok.end_of_generation(), [0, 2, reponame]);
    assert_eq!(tok.eos_token(), Some("<|im_end|>"));
    assert_eq!(tok.bos_token(), Some("<|im_start|>"));
}

#[test]
fn end_of_message_tokens_that_do_not_end_generation_are_left_out() {
    // gpt-oss: "<|end|>" closes a message, "<|return|>" and "<|call|>" end generation.
    let tok = tokenizer(&["<|return|>", "<|call|>", "<|end|>"], &[]);
    let end = tok.token_to_id["<|end|>"];
    assert!(!tok.end_of_generation().contains(&end));
    assert_eq!(tok.token_bytes(end), b"<|end|>");
    let tok = tokenizer(&["<|end|>"], &[]);
    assert!(
        tok.end_of_generation()
            .contains(&tok.token_to_id["<|end|>"])
    );
}

#[test]
fn llama3_adds_bos_unless_the_file_says_otherwise() {
    let mut meta = metadata(&[], &[]);
    meta.insert("tokenizer.ggml.pre".into(), Value::String("llama3".into()));
    meta.remove("tokenizer.ggml.add_bos_token");
    assert!(build(meta.clone()).expect("loads").adds_bos());
    meta.insert("tokenizer.ggml.pre".into(), Value::String("qwen2".into()));
    assert!(!build(meta).expect("loads").adds_bos());
}

#[test]
fn an_unknown_pre_tokenizer_is_llama_cpp_default() {
    let mut meta = metadata(&[], &[]);
    meta.insert(
        "tokenizer.ggml.pre".into(),
        Value::String("brand-new".into()),
    );
    let tok = build(meta).expect("an unknown pre-tokenizer still loads");
    assert_eq!(tok.encode("1234", false, false).len(), 4);
}

#[test]
fn a_sentencepiece_vocabulary_is_refused_by_name() {
    let mut meta = metadata(&[], &[]);
    meta.insert("tokenizer.ggml.model".into(), Value::String("llama".into()));
    let message = error_of(meta);
    assert!(
        message.contains("\"llama\"") && message.contains("SentencePiece"),
        "{message}"
    );
    assert!(message.contains("tiny.gguf"), "{message}");
}

#[test]
fn malformed_metadata_is_a_clear_error() {
    let cases: Vec<(&str, Option<Value>, &str)> = vec![
        (
            "tokenizer.ggml.model",
            None,
            "tokenizer.ggml.model is missing",
        ),
        (
            "tokenizer.ggml.merges",
            None,
            "tokenizer.ggml.merges is missing",
        ),
        (
            "tokenizer.ggml.tokens",
            None,
            "tokenizer.ggml.tokens is missing",
        ),
        ("tokenizer.ggml.tokens", Some(Value::U32(3)), "not an array"),
        ("tokenizer.ggml.tokens", Some(strings(&[])), "is empty"),
        (
            "tokenizer.ggml.tokens",
            Some(Value::Array(vec![Value::U8(1)])),
            "tokenizer.ggml.tokens[0] is U8(1), not a string",
        ),
        (
            "tokenizer.ggml.tokens",
            Some(strings(&["a", "a"])),
            "tokens 0 and 1 are both \"a\"",
        ),
        (
            "tokenizer.ggml.merges",
            Some(strings(&["ab"])),
            "merge 0 (\"ab\")",
        ),
        (
            "tokenizer.ggml.token_type",
            Some(Value::Array(vec![Value::I32(1)])),
            "token_type has 1 entries",
        ),
        (
            "tokenizer.ggml.token_type",
            Some(Value::Array(vec![Value::F32(1.0)])),
            "not a 32-bit integer",
        ),
        (
            "tokenizer.ggml.eos_token_id",
            Some(Value::U32(999_999)),
            "outside the vocabulary",
        ),
        (
            "tokenizer.ggml.bos_token_id",
            Some(Value::I32(-1)),
            "outside the vocabulary",
        ),
        (
            "tokenizer.ggml.eos_token_id",
            Some(Value::String("2".into())),
            "not a token id",
        ),
        (
            "tokenizer.ggml.add_bos_token",
            Some(Value::U8(1)),
            "not a boolean",
        ),
        ("tokenizer.ggml.pre", Some(Value::U8(1)), "not a string"),
    ];
    for (key, value, expected) in cases {
        let mut meta = metadata(&[], &[]);
        match value {
            Some(value) => meta.insert(key.to_owned(), value),
            None => meta.remove(key),
        };
        let message = error_of(meta);
        assert!(message.contains(expected), "{key}: {message}");
    }
}

#[test]
fn split_specials_keeps_the_text_around_each_token() {
    let tok = tokenizer(&[], &[]);
    let text = "a<x>b<x>";
    assert_eq!(
        tok.split_specials(text, true),
        [
            Fragment::Text(0..1),
            Fragment::Token(4),
            Fragment::Text(4..5),
            Fragment::Token(4)
        ]
    );
}

#[test]
fn the_tokenizer_can_move_to_the_engine_thread_and_prints_briefly() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Tokenizer>();
    let printed = format!("{:?}", tokenizer(&[], &[]));
    assert!(
        printed.contains("vocab_size: 262") && printed.len() < 400,
        "{printed}"
    );
}
