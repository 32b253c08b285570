//! The forward pass on small random networks: a prompt computed at once, token by token, on
//! any number of threads, or continued from a saved cache gives identical logits.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::*;

/// Deterministic values in [-scale, scale).
fn values(count: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn quantized(rows: usize, cols: usize, seed: u64, dtype: GgmlDType) -> QTensor {
    let dense = Tensor::from_vec(values(rows * cols, seed, 0.3), (rows, cols), &Device::Cpu)
        .expect("a tensor");
    QTensor::quantize(&dense, dtype).expect("quantized")
}

/// A network of 2 layers, width 64, 4 query heads over 2 key/value heads of 16, vocabulary 50.
fn tiny(rope: Rope, bias: bool) -> Transformer {
    tiny_with(rope, bias, GgmlDType::Q4_1)
}

/// [`tiny`] with the value projections of type `values_type`.
fn tiny_with(rope: Rope, bias: bool, values_type: GgmlDType) -> Transformer {
    let shape = Shape {
        architecture: "test".into(),
        layers: 2,
        embedding: 64,
        heads: 4,
        kv_heads: 2,
        head_dim: 16,
        context_length: 300,
        rms_eps: 1e-5,
        rope,
        rope_base: 10_000.0,
    };
    let (width, kv, ffn) = (64, 32, 96);
    let linear = |n, k, seed| Linear::new(quantized(n, k, seed, GgmlDType::Q4_1)).expect("a layer");
    let layers = (0..shape.layers as u64)
        .map(|i| Layer {
            attn_norm: values(width, 100 + i, 1.0)
                .iter()
                .map(|v| 1.0 + v)
                .collect(),
            wq: linear(width, width, 10 * i + 1),
            wk: linear(kv, width, 10 * i + 2),
            wv: Linear::new(quantized(kv, width, 10 * i + 3, values_type)).expect("a layer"),
            bias: bias.then(|| {
                [
                    values(width, i + 7, 0.1),
                    values(kv, i + 8, 0.1),
                    values(kv, i + 9, 0.1),
                ]
            }),
            wo: linear(width, width, 10 * i + 4),
            ffn_norm: values(width, 200 + i, 1.0)
                .iter()
                .map(|v| 1.0 + v)
                .collect(),
            gate: linear(ffn, width, 10 * i + 5),
            up: linear(ffn, width, 10 * i + 6),
            down: linear(width, ffn, 10 * i + 7),
        })
        .collect();
    // A vocabulary of whole tiles: where the CPU has the packed kernels, the tied output
    // projection is packed and the embedding read from it, as `Transformer::load` does.
    let vocab = 64;
    let embedding = Arc::new(quantized(vocab, width, 99, GgmlDType::Q8_0));
    let output = Linear::from_arc(Arc::clone(&embedding)).expect("the output");
    let embedding = if output.is_packed() {
        Embedding::Output
    } else {
        Embedding::Tensor(embedding)
    };
    Transformer {
        rope_tables: rope_tables(&shape, None),
        vectors: Vectors::for_this_cpu(),
        ffn_width: ffn,
        output,
        embedding,
        vocab,
        layers,
        norm: vec![1.0; width],
        shape,
        path: "tiny.gguf".into(),
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool")
}

const PROMPT: [u32; 19] = [
    1, 5, 9, 2, 44, 3, 3, 17, 49, 0, 8, 30, 31, 12, 6, 7, 21, 40, 11,
];

#[test]
fn at_once_token_by_token_and_on_any_threads_the_logits_are_identical() {
    for (rope, bias) in [(Rope::Interleaved, false), (Rope::Halves, true)] {
        let model = tiny(rope, bias);
        let at_once = pool(2).install(|| {
            let mut cache = model.new_cache();
            model.forward(&PROMPT, &mut cache).expect("the prompt")
        });
        assert_eq!(at_once.len(), 64);
        assert!(at_once.iter().all(|v| v.is_finite()));
        for threads in [1, 3] {
            let one_by_one = pool(threads).install(|| {
                let mut cache = model.new_cache();
                let mut last = Vec::new();
                for token in PROMPT {
                    last = model.forward(&[token], &mut cache).expect("a token");
                }
                last
            });
            assert_eq!(one_by_one, at_once, "{rope:?}, {threads} threads");
        }
    }
}

#[test]
fn a_truncated_or_restored_cache_continues_as_the_original() {
    let model = tiny(Rope::Halves, true);
    pool(2).install(|| {
        let mut cache = model.new_cache();
        model.forward(&PROMPT[..12], &mut cache).expect("the start");
        let saved = cache.to_bytes();
        let expected = model.forward(&PROMPT[12..], &mut cache).expect("the rest");
        // Forget the rest and compute it again.
        cache.truncate(12);
        assert_eq!(
            model.forward(&PROMPT[12..], &mut cache).expect("again"),
            expected
        );
        // From the saved bytes, and from a clone.
        let mut restored = KvCache::from_bytes(&saved, (2, 2, 16)).expect("the saved cache");
        let copy = restored.clone();
        assert_eq!(
            model
                .forward(&PROMPT[12..], &mut restored)
                .expect("restored"),
            expected
        );
        let mut copy = copy;
        assert_eq!(
            model.forward(&PROMPT[12..], &mut copy).expect("copied"),
            expected
        );
        assert_eq!(copy.len(), PROMPT.len());
    });
}

#[test]
fn a_cache_of_another_model_or_past_the_window_is_an_error() {
    let model = tiny(Rope::Interleaved, false);
    let mut other = KvCache::with_shape(2, 1, 16);
    model
        .forward(&PROMPT[..1], &mut KvCache::new(2))
        .expect("a new cache adopts the shape");
    other.reserve(1, 10);
    other.set_len(1);
    assert!(matches!(
        model.forward(&PROMPT[..1], &mut other),
        Err(EngineError::Compute { .. })
    ));
    let long = vec![1u32; 301];
    assert!(matches!(
        model.forward(&long, &mut model.new_cache()),
        Err(EngineError::ContextExceeded { .. })
    ));
    assert!(model.forward(&[], &mut model.new_cache()).is_err());
}

#[test]
fn a_prompt_longer_than_a_chunk_equals_its_tokens_one_by_one() {
    let model = tiny(Rope::Interleaved, false);
    let prompt: Vec<u32> = (0..PREFILL_CHUNK as u32 + 20).map(|i| i * 7 % 50).collect();
    pool(2).install(|| {
        let at_once = model
            .forward(&prompt, &mut model.new_cache())
            .expect("the prompt");
        let mut cache = model.new_cache();
        model
            .forward(&prompt[..prompt.len() - 1], &mut cache)
            .expect("all but one");
        let last = model
            .forward(&prompt[prompt.len() - 1..], &mut cache)
            .expect("the last");
        assert_eq!(at_once, last);
    });
}

#[test]
fn a_layer_candle_computes_gives_the_same_logits_up_to_rounding() {
    // f32 weights have no kernel of ours: candle computes the values' projection whole.
    let model = tiny_with(Rope::Interleaved, false, GgmlDType::F32);
    assert!(model.layers[0].wv.blocks().is_none());
    let reference = tiny(Rope::Interleaved, false);
    pool(2).install(|| {
        let at_once = model
            .forward(&PROMPT, &mut model.new_cache())
            .expect("the prompt");
        let mut cache = model.new_cache();
        let mut last = Vec::new();
        for token in PROMPT {
            last = model.forward(&[token], &mut cache).expect("a token");
        }
        let quantized = reference
            .forward(&PROMPT, &mut reference.new_cache())
            .expect("Q4_1");
        for ((a, b), q) in at_once.iter().zip(&last).zip(&quantized) {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
            // The same network with quantized values differs, but not by much.
            assert!((a - q).abs() < 0.5, "{a} vs {q}");
        }
    });
}

#[test]
fn a_packed_tied_embedding_reads_the_files_rows() {
    let mut model = tiny(Rope::Interleaved, false);
    if !model.output.is_packed() {
        eprintln!("packed kernels skipped (this CPU lacks AVX-512 VNNI)");
        return;
    }
    let from_output = model.embed(&PROMPT).expect("the rows");
    model.embedding = Embedding::Tensor(Arc::new(quantized(64, 64, 99, GgmlDType::Q8_0)));
    assert_eq!(from_output, model.embed(&PROMPT).expect("the rows"));
    model.embedding = Embedding::Output;
    assert!(model.embed(&[64]).is_err(), "a token past the vocabulary");
}
