//! The overhead seek's process runner adds to a trivial block, against spawning the same
//! interpreter directly. Run with `cargo bench --bench exec`; numbers in docs/benchmarks.md.
//!
//! `exec/added/*` interleaves a direct spawn and a seek run in every iteration and reports only
//! the difference, so drift in the interpreter's own start-up (tens of milliseconds for Python)
//! does not swamp the millisecond being measured.
//!
//! `socket-guard/*` measures the socket guard alone: what it adds to starting a process (filter,
//! listener hand-over, supervisor start and stop), and what one `connect` costs through the
//! supervisor against the same `connect` unfiltered (on a thread of this process, which the
//! supervisor serves like any block's).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use seek::exec::sandbox::{Sandbox, SandboxMode};
use seek::exec::socket_guard::{self, SocketPolicy, Support};
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
    confined.sandbox = Some(std::sync::Arc::new(Sandbox::new(
        SandboxMode::WorkspaceWrite,
        dir.path(),
        dir.path().join("tmp"),
        dir.path().join("cache"),
    )));
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

/// `true`, started with `no_new_privs` and, when `guarded`, under the socket guard; returns the
/// time from before the guard is prepared until the supervisor has stopped.
fn spawn_true(dir: &Path, guarded: bool) -> Duration {
    let started = Instant::now();
    let (child_half, parent_half) = if guarded {
        socket_guard::prepare(SocketPolicy::new([dir.to_owned()], &[]))
            .unwrap_or_else(|e| panic!("prepare: {e}"))
    } else {
        (None, None)
    };
    let mut command = Command::new("/bin/true");
    command.stdin(Stdio::null());
    // SAFETY: only prctl and the guard's own child half (raw system calls, no allocation) run
    // between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            match &child_half {
                Some(half) => half.apply_in_child(),
                None => Ok(()),
            }
        });
    }
    let mut child = command.spawn().unwrap_or_else(|e| panic!("spawn: {e}"));
    drop(command);
    let supervisor = parent_half.map(|half| half.start().unwrap_or_else(|e| panic!("start: {e}")));
    let status = child.wait().unwrap_or_else(|e| panic!("wait: {e}"));
    assert!(status.success());
    if let Some(supervisor) = supervisor {
        supervisor.stop();
    }
    started.elapsed()
}

/// Times `iters` connects (socket, connect, close) to `address` on a thread of its own, under the
/// socket guard's filter when `guarded` (this process supervising it).
fn time_connects(dir: &Path, address: Target, iters: u64, guarded: bool) -> Duration {
    let (child_half, parent_half) = if guarded {
        socket_guard::prepare(SocketPolicy::new([dir.to_owned()], &[]))
            .unwrap_or_else(|e| panic!("prepare: {e}"))
    } else {
        (None, None)
    };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let connecting = std::thread::spawn(move || {
        if let Some(half) = &child_half {
            // SAFETY: prctl with integer arguments, on this thread only; the filter installed
            // next belongs to this thread and ends with it.
            assert_eq!(
                unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
                0
            );
            half.apply_in_child()
                .unwrap_or_else(|e| panic!("the filter: {e}"));
        }
        let _ = ready_tx.send(());
        let _ = go_rx.recv();
        let started = Instant::now();
        for _ in 0..iters {
            match &address {
                Target::Unix(path) => drop(
                    std::os::unix::net::UnixStream::connect(path)
                        .unwrap_or_else(|e| panic!("unix connect: {e}")),
                ),
                Target::Tcp(address) => drop(
                    std::net::TcpStream::connect(address)
                        .unwrap_or_else(|e| panic!("tcp connect: {e}")),
                ),
            }
        }
        started.elapsed()
    });
    let _ = ready_rx.recv();
    let supervisor = parent_half.map(|half| half.start().unwrap_or_else(|e| panic!("start: {e}")));
    let _ = go_tx.send(());
    let elapsed = connecting
        .join()
        .unwrap_or_else(|_| panic!("the connecting thread panicked"));
    if let Some(supervisor) = supervisor {
        supervisor.stop();
    }
    elapsed
}

#[derive(Clone)]
enum Target {
    Unix(PathBuf),
    Tcp(std::net::SocketAddr),
}

/// Accepts and drops connections forever, so connects never wait for backlog room.
fn accept_forever<S: Send + 'static>(
    mut accept: impl FnMut() -> std::io::Result<S> + Send + 'static,
) {
    std::thread::spawn(move || while accept().is_ok() {});
}

fn bench_socket_guard(c: &mut Criterion) {
    if *socket_guard::support() != Support::Supervised {
        eprintln!(
            "socket-guard: not supervised here ({:?}); skipped",
            socket_guard::support()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let socket_path = dir.path().join("bench.sock");
    let unix = std::os::unix::net::UnixListener::bind(&socket_path)
        .unwrap_or_else(|e| panic!("bind: {e}"));
    accept_forever(move || unix.accept());
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let tcp_address = tcp.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
    accept_forever(move || tcp.accept());

    let mut group = c.benchmark_group("socket-guard");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("per-block added (spawn /bin/true)", |b| {
        b.iter_custom(|iters| {
            let (mut plain, mut guarded) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..iters {
                plain += spawn_true(dir.path(), false);
                guarded += spawn_true(dir.path(), true);
            }
            guarded
                .saturating_sub(plain)
                .max(Duration::from_nanos(iters))
        })
    });
    for (name, target) in [
        (
            "connect added (unix, work dir)",
            Target::Unix(socket_path.clone()),
        ),
        ("connect added (tcp, loopback)", Target::Tcp(tcp_address)),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let plain = time_connects(dir.path(), target.clone(), iters, false);
                let guarded = time_connects(dir.path(), target.clone(), iters, true);
                guarded
                    .saturating_sub(plain)
                    .max(Duration::from_nanos(iters))
            })
        });
        group.bench_function(name.replace("added", "unfiltered"), |b| {
            b.iter_custom(|iters| time_connects(dir.path(), target.clone(), iters, false))
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_socket_guard);
criterion_main!(benches);
