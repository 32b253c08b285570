#!/usr/bin/env python3
"""Writes the small random-weight GGUF files the built-in engine is compared with llama.cpp on.

Owns the shapes and the seeded weights of two test networks, one per architecture the engine
runs, each with a real tokenizer copied from one of llama.cpp's vocabulary-only files:

  qwen2: attention biases, NEOX rotary, grouped-query attention 2:1, the qwen2 pre-tokenizer,
         the output projection tied to the embedding (as Qwen2.5's small models);
  llama: grouped-query attention 4:1, Llama 3.1's rope_freqs, a separate output projection,
         the llama-bpe (Llama 3) tokenizer.

The weights are F32, drawn from numpy's generator with a fixed seed, so a file is the same byte
for byte on every run; scripts/engine-files quantizes it with llama-quantize. The networks are
nonsense, but llama.cpp and seek must compute the same nonsense. It must not download or
quantize anything (scripts/engine-files does) and needs numpy and llama.cpp's gguf-py.

    engine_files.py ARCH VOCAB_GGUF OUT_GGUF      (ARCH: qwen2 or llama)
"""

import sys

import numpy as np

import gguf

EMBEDDING = 256  # a multiple of 256, so that every matrix can be stored in K-quants
LAYERS = 4
HEADS = 8  # head size 32
FEED_FORWARD = 512
CONTEXT = 4096
SEED = {"qwen2": 20261206, "llama": 20261207}
KV_HEADS = {"qwen2": 4, "llama": 2}
ROPE_BASE = {"qwen2": 1_000_000.0, "llama": 500_000.0}
# The embedding's scale sets how peaked the output distribution is: the final state is
# normalised to length sqrt(EMBEDDING) = 16, so a logit's spread is about 16 times this, a few
# nats, like a trained model's rather than a near-uniform one's.
EMBEDDING_SCALE = 0.25


def copy_tokenizer(vocab_path, writer):
    """Every tokenizer.* key of llama.cpp's vocabulary file, with its types."""
    reader = gguf.GGUFReader(vocab_path)
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        main = field.types[0]
        if main == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, field.contents(), main, sub_type=field.types[-1])
        else:
            writer.add_key_value(key, field.contents(), main)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    return len(tokens.data)


def matrix(rng, rows, cols):
    """A weight whose product keeps the input's scale (entries of variance 1/cols)."""
    return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)


def near_one(rng, n):
    """A norm's weight: around 1, not exactly, so that a norm applied wrongly shows."""
    return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)


def main(arch, vocab_path, out_path):
    if arch not in SEED:
        raise SystemExit(f"engine_files.py: unknown architecture {arch!r} (qwen2 or llama)")
    rng = np.random.default_rng(SEED[arch])
    head_dim = EMBEDDING // HEADS
    kv_heads = KV_HEADS[arch]
    writer = gguf.GGUFWriter(out_path, arch)
    writer.add_string("general.name", f"seek test {arch} (random weights)")
    writer.add_uint32(f"{arch}.block_count", LAYERS)
    writer.add_uint32(f"{arch}.context_length", CONTEXT)
    writer.add_uint32(f"{arch}.embedding_length", EMBEDDING)
    writer.add_uint32(f"{arch}.feed_forward_length", FEED_FORWARD)
    writer.add_uint32(f"{arch}.attention.head_count", HEADS)
    writer.add_uint32(f"{arch}.attention.head_count_kv", kv_heads)
    writer.add_float32(f"{arch}.rope.freq_base", ROPE_BASE[arch])
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_uint32(f"{arch}.rope.dimension_count", head_dim)
    writer.add_uint32("general.file_type", 0)  # all F32
    vocab = copy_tokenizer(vocab_path, writer)
    if arch == "llama":
        writer.add_uint32("llama.vocab_size", vocab)

    embedding = (EMBEDDING_SCALE * rng.standard_normal((vocab, EMBEDDING))).astype(np.float32)
    writer.add_tensor("token_embd.weight", embedding)
    writer.add_tensor("output_norm.weight", near_one(rng, EMBEDDING))
    if arch == "llama":
        output = (EMBEDDING_SCALE * rng.standard_normal((vocab, EMBEDDING))).astype(np.float32)
        writer.add_tensor("output.weight", output)
        # Llama 3.1's shape of factors: high frequencies kept, low ones slowed up to 8×.
        factors = np.geomspace(1.0, 8.0, head_dim // 2).astype(np.float32)
        writer.add_tensor("rope_freqs.weight", factors)
    for i in range(LAYERS):
        name = f"blk.{i}."
        writer.add_tensor(name + "attn_norm.weight", near_one(rng, EMBEDDING))
        writer.add_tensor(name + "attn_q.weight", matrix(rng, EMBEDDING, EMBEDDING))
        writer.add_tensor(name + "attn_k.weight", matrix(rng, kv_heads * head_dim, EMBEDDING))
        writer.add_tensor(name + "attn_v.weight", matrix(rng, kv_heads * head_dim, EMBEDDING))
        if arch == "qwen2":
            for part, width in (("q", EMBEDDING), ("k", kv_heads * head_dim), ("v", kv_heads * head_dim)):
                bias = (0.5 * rng.standard_normal(width)).astype(np.float32)
                writer.add_tensor(name + f"attn_{part}.bias", bias)
        writer.add_tensor(name + "attn_output.weight", matrix(rng, EMBEDDING, EMBEDDING))
        writer.add_tensor(name + "ffn_norm.weight", near_one(rng, EMBEDDING))
        writer.add_tensor(name + "ffn_gate.weight", matrix(rng, FEED_FORWARD, EMBEDDING))
        writer.add_tensor(name + "ffn_up.weight", matrix(rng, FEED_FORWARD, EMBEDDING))
        writer.add_tensor(name + "ffn_down.weight", matrix(rng, EMBEDDING, FEED_FORWARD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
