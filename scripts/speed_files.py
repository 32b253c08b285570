#!/usr/bin/env python3
"""Writes a qwen2 GGUF file of Qwen2.5-1.5B's shape with seeded random weights, for measuring
the built-in engine's speed against llama.cpp's at a real model's width (scripts/bench-engine).

Owns that shape: 28 layers, width 1536, 12 query heads and 2 key/value heads of 128, a
feed-forward width of 8960, attention biases, NEOX rotary and the embedding tied to the output,
with the real qwen2 tokenizer copied from llama.cpp's vocabulary file. The weights are F16 (3 GB
written; scripts/bench-engine quantizes it to each type with llama-quantize --pure). Speed does
not depend on the values, only on the shapes and types. It must not quantize or download.

    speed_files.py VOCAB_GGUF OUT_GGUF
"""

import sys

import numpy as np

import gguf

from engine_files import copy_tokenizer

LAYERS = 28
EMBEDDING = 1536
HEADS = 12
KV_HEADS = 2
FEED_FORWARD = 8960
CONTEXT = 32768
SEED = 15


def main(vocab_path, out_path):
    rng = np.random.default_rng(SEED)
    head_dim = EMBEDDING // HEADS
    kv = KV_HEADS * head_dim
    writer = gguf.GGUFWriter(out_path, "qwen2")
    writer.add_string("general.name", "seek speed test qwen2 1.5B shape (random weights)")
    writer.add_uint32("qwen2.block_count", LAYERS)
    writer.add_uint32("qwen2.context_length", CONTEXT)
    writer.add_uint32("qwen2.embedding_length", EMBEDDING)
    writer.add_uint32("qwen2.feed_forward_length", FEED_FORWARD)
    writer.add_uint32("qwen2.attention.head_count", HEADS)
    writer.add_uint32("qwen2.attention.head_count_kv", KV_HEADS)
    writer.add_float32("qwen2.rope.freq_base", 1_000_000.0)
    writer.add_float32("qwen2.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_uint32("general.file_type", 1)  # mostly F16
    vocab = copy_tokenizer(vocab_path, writer)

    def matrix(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float16)

    def ones(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    writer.add_tensor("token_embd.weight", (0.05 * rng.standard_normal((vocab, EMBEDDING), dtype=np.float32)).astype(np.float16))
    writer.add_tensor("output_norm.weight", ones(EMBEDDING))
    for i in range(LAYERS):
        name = f"blk.{i}."
        writer.add_tensor(name + "attn_norm.weight", ones(EMBEDDING))
        writer.add_tensor(name + "attn_q.weight", matrix(EMBEDDING, EMBEDDING))
        writer.add_tensor(name + "attn_k.weight", matrix(kv, EMBEDDING))
        writer.add_tensor(name + "attn_v.weight", matrix(kv, EMBEDDING))
        for part, width in (("q", EMBEDDING), ("k", kv), ("v", kv)):
            writer.add_tensor(name + f"attn_{part}.bias", (0.1 * rng.standard_normal(width)).astype(np.float32))
        writer.add_tensor(name + "attn_output.weight", matrix(EMBEDDING, EMBEDDING))
        writer.add_tensor(name + "ffn_norm.weight", ones(EMBEDDING))
        writer.add_tensor(name + "ffn_gate.weight", matrix(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(name + "ffn_up.weight", matrix(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(name + "ffn_down.weight", matrix(EMBEDDING, FEED_FORWARD))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
