//! Router benchmarks: the time to route one prompt (a greeting, a typical task, a long pasted
//! prompt) and the time to train the classifier from the shipped examples.
//! Run with `cargo bench --bench router`; numbers are recorded in docs/benchmarks.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use seek::agents::router;

const TRAINING_SET: &str = include_str!("../assets/router/train.tsv");

fn route(c: &mut Criterion) {
    router::warm_up().expect("the shipped training set parses");
    let typical = "search the web for the latest rust release, then write a script that checks it";
    // About 4 KiB: a pasted log; the router reads at most the first 4 KiB.
    let long = "the build failed with this output, please tell me why and fix it: ".repeat(64);
    let mut group = c.benchmark_group("router");
    group.bench_function("route short (hi)", |b| {
        b.iter(|| router::route(black_box("hi")))
    });
    group.bench_function("route typical (80 chars)", |b| {
        b.iter(|| router::route(black_box(typical)))
    });
    group.bench_function("route long (4 KiB)", |b| {
        b.iter(|| router::route(black_box(&long)))
    });
    group.finish();

    let mut training = c.benchmark_group("router training");
    training.sample_size(10);
    training.bench_function("train on train.tsv", |b| {
        b.iter(|| router::train_and_classify(black_box(TRAINING_SET), "hi"))
    });
    training.finish();
}

criterion_group!(benches, route);
criterion_main!(benches);
