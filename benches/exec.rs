//! The overhead seek's process runner adds to a trivial block, against spawning the same
//! interpreter directly. Run with `cargo bench --bench exec`; numbers in docs/benchmarks.md.
//!
//! `exec/added/*` interleaves a direct spawn and a seek run in every iteration and reports only
//! the difference, so drift in the interpreter's own start-up (tens of milliseconds for Python)
//! does not swamp the millisecond being measured.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use seek::exec::sandbox::{Sandbox, SandboxMode};
use seek::exec::{RunRequest, run};
use tokio_util::sync::CancellationToken;

fn direct(program: &str, args: &[&str], dir: &Path) {
    let ok = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "{program} runs");
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let cancel = CancellationToken::new();
    // The real interpreter, not a version-manager shim that would add its own start-up.
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|e| panic!("python3: {e}"));
    let mut group = c.benchmark_group("exec");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(15));

    for (name, program, args) in [
        ("bash -c true", "bash", vec!["-c", "true"]),
        ("python3 -c pass", python.as_str(), vec!["-c", "pass"]),
    ] {
        let request = RunRequest::new(program, dir.path()).args(args.clone());
        group.bench_function(format!("seek/{name}"), |b| {
            b.iter(|| {
                let result = runtime.block_on(run(&request, &cancel, |_| {}));
                assert!(result.is_ok_and(|r| r.success()));
            })
        });
        group.bench_function(format!("added/{name}"), |b| {
            b.iter_custom(|iters| {
                let (mut direct_total, mut seek_total) = (Duration::ZERO, Duration::ZERO);
                for _ in 0..iters {
                    let started = Instant::now();
                    direct(program, &args, dir.path());
                    direct_total += started.elapsed();
                    let started = Instant::now();
                    let result = runtime.block_on(run(&request, &cancel, |_| {}));
                    seek_total += started.elapsed();
                    assert!(result.is_ok_and(|r| r.success()));
                }
                // Noise can make a sample negative; criterion needs a positive time, and rounding
                // such samples up only overstates seek's overhead.
                seek_total
                    .saturating_sub(direct_total)
                    .max(Duration::from_nanos(iters))
            })
        });
    }
    // What the sandbox adds: the same bash block run by seek with and without it, interleaved.
    let mut plain = RunRequest::new("bash", dir.path()).args(["-c", "true"]);
    plain.sandbox = None;
    let mut confined = plain.clone();
    confined.sandbox = Some(std::sync::Arc::new(Sandbox {
        mode: SandboxMode::WorkspaceWrite,
        work_dir: dir.path().to_owned(),
        temp_dir: dir.path().join("tmp"),
        cache_dir: dir.path().join("cache"),
        allow_sockets: Vec::new(),
    }));
    group.bench_function("sandbox-added/bash -c true", |b| {
        b.iter_custom(|iters| {
            let (mut plain_total, mut confined_total) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..iters {
                let started = Instant::now();
                let result = runtime.block_on(run(&plain, &cancel, |_| {}));
                plain_total += started.elapsed();
                assert!(result.is_ok_and(|r| r.success()));
                let started = Instant::now();
                let result = runtime.block_on(run(&confined, &cancel, |_| {}));
                confined_total += started.elapsed();
                assert!(result.is_ok_and(|r| r.success()));
            }
            confined_total
                .saturating_sub(plain_total)
                .max(Duration::from_nanos(iters))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
