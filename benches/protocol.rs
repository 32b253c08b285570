//! Protocol benchmarks: parsing a large reply, and splitting reasoning streamed in tiny pieces.
//! Run with `cargo bench --bench protocol`; numbers are recorded in docs/benchmarks.md.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use seek::protocol::{ThinkSplitter, ToolTags, parse};

fn tags() -> ToolTags {
    ToolTags::new(["bash", "python", "c", "go", "java", "file_finder"])
}

/// About `size` bytes of reply holding `blocks` tool blocks, with prose, indented list-item
/// blocks and non-tool fences in between.
fn reply(size: usize, blocks: usize) -> String {
    let per_unit = size / blocks;
    let mut out = String::with_capacity(size + 1024);
    for i in 0..blocks {
        let start = out.len();
        out.push_str("Here is what I will do next, step by step.\n\n");
        if i % 3 == 0 {
            out.push_str("1. ```python:step.py\n");
        } else {
            out.push_str("```bash\n");
        }
        let body = if i % 3 == 0 {
            "   print('```') # keep going\n"
        } else {
            "echo \"line of output\" | wc -c\n"
        };
        while out.len() - start < per_unit - 64 {
            out.push_str(body);
        }
        out.push_str(if i % 3 == 0 { "   ```\n" } else { "```\n" });
        out.push_str("```text\nnot a tool\n```\n");
    }
    out
}

fn bench(c: &mut Criterion) {
    let tags = tags();
    let big = reply(10 * 1024 * 1024, 1000);
    let mut group = c.benchmark_group("protocol");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(big.len() as u64));
    group.bench_function("parse_10MB_1000_blocks", |b| {
        b.iter(|| {
            let parsed = parse(black_box(&big), &tags);
            assert_eq!(parsed.blocks.len(), 1000);
            parsed
        })
    });

    let thinking = format!(
        "<think>{}</think>{}",
        "reasoning ".repeat(50_000),
        "answer ".repeat(70_000)
    );
    group.throughput(Throughput::Bytes(thinking.len() as u64));
    group.bench_function("think_split_1MB_in_4_byte_pieces", |b| {
        b.iter(|| {
            let mut splitter = ThinkSplitter::default();
            for piece in thinking.as_bytes().chunks(4) {
                let piece = std::str::from_utf8(piece).unwrap_or_default();
                black_box(splitter.push(piece));
            }
            splitter.finish()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
