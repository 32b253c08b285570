//! Prints the token ids of a greedy decode on a real GGUF file, for checking that a change to
//! the forward pass leaves the output unchanged: run it before and after and compare.
//!
//! `cargo run --release -p seek-engine --example greedy -- FILE [TOKENS] [THREADS]`. The prompt
//! is computed at once; the same prompt computed token by token must give the same first token
//! (printed as a check).

use std::path::PathBuf;

use seek_engine::gguf::GgufFile;
use seek_engine::model::{Transformer, argmax};
use seek_engine::tokenizer::Tokenizer;

const PROMPT: &str = "<|im_start|>user\nWrite a Python function that adds two numbers.<|im_end|>\n<|im_start|>assistant\n";

fn main() {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().expect("usage: greedy FILE [TOKENS] [THREADS]"));
    let count: usize = args
        .next()
        .map_or(64, |v| v.parse().expect("a token count"));
    let threads: usize = args
        .next()
        .map_or(2, |v| v.parse().expect("a thread count"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let file = GgufFile::open(&path).expect("the file opens");
    let tokenizer = Tokenizer::from_gguf(file.content(), &path).expect("a tokenizer");
    let model = pool
        .install(|| Transformer::load(&file))
        .expect("the model loads");
    let prompt = tokenizer.encode(PROMPT, tokenizer.adds_bos(), true);
    pool.install(|| {
        let mut cache = model.new_cache();
        let logits = model.forward(&prompt, &mut cache).expect("the prompt");
        let mut one_by_one = model.new_cache();
        let mut last = Vec::new();
        for t in &prompt {
            last = model.forward(&[*t], &mut one_by_one).expect("a prompt token");
        }
        let max_difference = logits
            .iter()
            .zip(&last)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        println!(
            "prompt {} tokens; at once vs one by one: first token {} vs {}, max logit difference {max_difference}",
            prompt.len(),
            argmax(&logits),
            argmax(&last)
        );
        let mut token = argmax(&logits);
        let mut ids = vec![token];
        for _ in 1..count {
            token = argmax(&model.forward(&[token], &mut cache).expect("a decode step"));
            ids.push(token);
        }
        println!("{ids:?}");
        let text: Vec<u8> = ids
            .iter()
            .flat_map(|t| tokenizer.token_bytes(*t).to_vec())
            .collect();
        println!("{}", String::from_utf8_lossy(&text));
    });
}
