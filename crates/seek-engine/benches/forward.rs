//! The engine's forward pass alone on a real GGUF file, comparable with llama.cpp's
//! `llama-bench -m FILE -t THREADS -p 500 -n 64`: prefill of 500 tokens from an empty cache
//! (`pp500`), decode of 64 tokens one at a time from an empty cache (`tg64`), and, as seek
//! uses it after a long prompt, 64 tokens decoded after the 500.
//!
//! It also prints how long the model took to load (the file read, the weights packed).
//!
//! `SEEK_BENCH_GGUF=file.gguf [SEEK_BENCH_THREADS=2] [SEEK_BENCH_RUNS=5]
//! cargo bench -p seek-engine --bench forward`. Each number is the best of the runs (the
//! machine is shared; the best run is the least disturbed). Token ids are pseudo-random, as
//! llama-bench's are: the speed does not depend on them. `SEEK_BENCH_ONLY=decode` (or
//! `prefill`) measures only that part, for profiling one of them. `SEEK_BENCH_PREFILL=2000
//! SEEK_BENCH_CHUNK=64` reads a longer prompt in chunks, as the engine reads a conversation
//! (`pp2000` is then a cold read of 2,000 tokens, attention at depth included).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use seek_engine::gguf::GgufFile;
use seek_engine::model::{Transformer, argmax};

/// llama-bench's `-p 500`, unless `SEEK_BENCH_PREFILL` says otherwise.
const PREFILL: usize = 500;
const DECODE: usize = 64;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Deterministic token ids below `vocab`.
fn tokens(count: usize, vocab: usize) -> Vec<u32> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % vocab as u64) as u32
        })
        .collect()
}

/// Decodes `count` tokens greedily after what `cache` holds; returns the time taken.
fn decode(
    model: &Transformer,
    cache: &mut seek_engine::model::KvCache,
    first: u32,
    count: usize,
) -> Duration {
    let started = Instant::now();
    let mut token = first;
    for _ in 0..count {
        let logits = model.forward(&[token], cache).expect("a decode step");
        token = argmax(&logits);
    }
    started.elapsed()
}

fn per_second(tokens: usize, time: Duration) -> f64 {
    tokens as f64 / time.as_secs_f64()
}

fn main() {
    let Some(path) = std::env::var_os("SEEK_BENCH_GGUF").map(PathBuf::from) else {
        println!("SEEK_BENCH_GGUF is not set: nothing to measure");
        return;
    };
    let threads = env_usize("SEEK_BENCH_THREADS", 2);
    let runs = env_usize("SEEK_BENCH_RUNS", 5).max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let loading = Instant::now();
    let file = GgufFile::open(&path).expect("the file opens");
    let model = pool
        .install(|| Transformer::load(&file))
        .expect("the model loads");
    let loaded = loading.elapsed();
    let prefill_len = env_usize("SEEK_BENCH_PREFILL", PREFILL).max(1);
    let chunk = env_usize("SEEK_BENCH_CHUNK", prefill_len).max(1);
    let prompt = tokens(prefill_len, model.vocab_size());
    let only = std::env::var("SEEK_BENCH_ONLY").unwrap_or_default();
    let (mut prefill, mut tg, mut after) = (Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..runs {
        pool.install(|| {
            if only != "prefill" {
                let mut cache = model.new_cache();
                tg = tg.min(decode(&model, &mut cache, prompt[0], DECODE));
            }
            if only == "decode" {
                return;
            }
            let mut cache = model.new_cache();
            let started = Instant::now();
            let mut logits = Vec::new();
            for part in prompt.chunks(chunk) {
                logits = model.forward(part, &mut cache).expect("the prefill");
            }
            prefill = prefill.min(started.elapsed());
            after = after.min(decode(&model, &mut cache, argmax(&logits), DECODE));
        });
    }
    println!(
        "file {} threads {threads} runs {runs} load {}",
        path.display(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
    println!("model load {} ms", loaded.as_millis());
    let chunked = if chunk < prefill_len {
        format!(" (chunks of {chunk})")
    } else {
        String::new()
    };
    println!(
        "pp{prefill_len}{chunked} {:.1} tok/s",
        per_second(prefill_len, prefill)
    );
    println!("tg{DECODE} {:.1} tok/s", per_second(DECODE, tg));
    println!(
        "tg{DECODE}@{prefill_len} {:.1} tok/s",
        per_second(DECODE, after)
    );
}
