//! What holding a block in costs: making and removing its control groups, and a Python block
//! that imports several standard-library modules with and without the sandbox (with
//! `PYTHONDONTWRITEBYTECODE=1`, as containers often set). Run with `cargo bench --bench
//! isolation`; numbers in docs/benchmarks.md.

use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use seek::exec::cgroup::{BlockGroup, Limits};
use seek::exec::sandbox::{Sandbox, SandboxMode};
use seek::exec::{RunRequest, run};
use tokio_util::sync::CancellationToken;

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let cancel = CancellationToken::new();
    let mut group = c.benchmark_group("isolation");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));

    let limits = Limits {
        max_processes: Some(1024),
        max_memory: Some(4 << 30),
    };
    group.bench_function("cgroup create+remove", |b| {
        b.iter(|| drop(BlockGroup::create(limits)))
    });

    // The real interpreter, not a version-manager shim that would add its own start-up.
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|e| panic!("python3: {e}"));
    let script = "import json, argparse, email.parser, http.client, decimal, asyncio";
    let plain = RunRequest::new(python.as_str(), dir.path())
        .args(["-c", script])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let mut confined = plain.clone();
    confined.sandbox = Some(std::sync::Arc::new(Sandbox::new(
        SandboxMode::WorkspaceWrite,
        dir.path(),
        dir.path().join("tmp"),
        dir.path().join("cache"),
    )));
    confined.limits = limits;
    for (name, request) in [
        ("python imports/off", &plain),
        ("python imports/sandbox", &confined),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let result = runtime.block_on(run(request, &cancel, |_| {}));
                assert!(result.is_ok_and(|r| r.success()));
            })
        });
    }
    // The ratio, interleaved so drift in Python's start-up hits both sides alike.
    let (mut off, mut on) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..20 {
        let started = Instant::now();
        let _ = runtime.block_on(run(&plain, &cancel, |_| {}));
        off += started.elapsed();
        let started = Instant::now();
        let _ = runtime.block_on(run(&confined, &cancel, |_| {}));
        on += started.elapsed();
    }
    println!(
        "python imports, 20 interleaved runs: off {:.1} ms, sandbox {:.1} ms, ratio {:.2}",
        off.as_secs_f64() * 50.0,
        on.as_secs_f64() * 50.0,
        on.as_secs_f64() / off.as_secs_f64()
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
