//! Consuming a 100,000-token stream: seek's client against `curl` reading the same bytes; and the
//! client's peak memory under hostile streams (a line that never ends, tokens that never end).
//! Run with `cargo bench --bench llm_stream` (both), `… -- throughput` or `… -- hostile`; numbers
//! in docs/benchmarks.md.
//!
//! The server is this binary re-executed in server mode, so its CPU time is not counted as
//! seek's. It answers every request with the same pre-built SSE body (one event per token),
//! either as fast as the socket takes it ("burst", which measures the client's own throughput)
//! or paced at `PACED_RATE` tokens per second, faster than any local model generates ("paced",
//! which shows whether the client keeps up with a live stream).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use seek::config::Wire;
use seek::llm::{
    ChatModel, ChatRequest, GenerationOptions, HttpChatModel, Message, Role, ServerUrl,
};
use tokio_util::sync::CancellationToken;

const TOKENS: usize = 100_000;
const RUNS: usize = 5;
/// Tokens per second in paced mode.
const PACED_RATE: usize = 20_000;
/// What the hostile server sends at most: far more than the client may keep.
const HOSTILE_BYTES: usize = 300 << 20;
/// `max_tokens` of the hostile requests (seek's default).
const HOSTILE_MAX_TOKENS: u64 = 4096;

/// The SSE events of the whole reply, one per token, then the end.
fn sse_events() -> Vec<Vec<u8>> {
    let mut events: Vec<Vec<u8>> = (0..TOKENS)
        .map(|i| {
            let token = format!("w{} ", i % 1000);
            let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": token}, "finish_reason": null}]});
            format!("data: {event}\n\n").into_bytes()
        })
        .collect();
    events.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_vec());
    events
}

fn serve() -> ! {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    println!("{port}");
    let _ = std::io::stdout().flush();
    let events = sse_events();
    let burst: Vec<u8> = events.concat();
    for stream in listener.incoming().flatten() {
        let mut stream = stream;
        let mut reader =
            BufReader::new(stream.try_clone().unwrap_or_else(|e| panic!("clone: {e}")));
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut request_body = vec![0; length];
        let _ = reader.read_exact(&mut request_body);
        let request_text = String::from_utf8_lossy(&request_body);
        let paced = request_text.contains("paced");
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        );
        if request_text.contains("hostile-line") {
            // One line that never ends.
            let _ = stream.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
            let block = vec![b'x'; 64 * 1024];
            for _ in 0..HOSTILE_BYTES / block.len() {
                if stream.write_all(&block).is_err() {
                    break;
                }
            }
        } else if request_text.contains("hostile-tokens") {
            // Distinct tokens (nothing for the repetition guard), never finishing.
            let mut sent = 0;
            let mut token = 0u64;
            while sent < HOSTILE_BYTES {
                let batch: String = (0..500)
                    .map(|i| {
                        let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": format!("t{} ", token + i)}, "finish_reason": null}]});
                        format!("data: {event}\n\n")
                    })
                    .collect();
                token += 500;
                sent += batch.len();
                if stream.write_all(batch.as_bytes()).is_err() {
                    break;
                }
            }
        } else if paced {
            // One write per millisecond tick, each carrying the tokens due by then.
            let started = Instant::now();
            let per_tick = PACED_RATE / 1000;
            for (tick, batch) in events.chunks(per_tick).enumerate() {
                let due = started + Duration::from_millis(tick as u64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                if stream.write_all(&batch.concat()).is_err() {
                    break;
                }
            }
        } else {
            for chunk in burst.chunks(16 * 1024) {
                if stream.write_all(chunk).is_err() {
                    break;
                }
            }
        }
    }
    std::process::exit(0)
}

/// The server child, killed however the benchmark ends.
struct ServerProcess(std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cpu_time() -> Duration {
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
        let user = u.user_time();
        let system = u.system_time();
        Duration::from_micros(
            (user.tv_sec() * 1_000_000
                + user.tv_usec()
                + system.tv_sec() * 1_000_000
                + system.tv_usec()) as u64,
        )
    })
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// One request of the hostile measurements in this (fresh) process: prints how it ended; the
/// parent reads the peak. The baseline is the ordinary burst reply (the server sends it for any
/// mode it does not know).
fn hostile_client(base: &str, mode: &str) -> ! {
    let max_tokens = if mode == "hostile-baseline" {
        200_000
    } else {
        HOSTILE_MAX_TOKENS
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let model = HttpChatModel::new(HttpChatModel::settings_for_tests(
        Wire::OpenAi,
        ServerUrl::normalise(base, Wire::OpenAi),
        Some("bench".into()),
        None,
        Duration::from_secs(30),
    ));
    let request = ChatRequest {
        messages: vec![Message::new(Role::User, mode)],
        options: GenerationOptions {
            max_tokens,
            temperature: None,
            top_p: None,
            seed: None,
            context_window: 8192,
        },
        json_schema: None,
        prefix_file: None,
    };
    let result = runtime.block_on(async {
        model
            .stream(request, CancellationToken::new())
            .collect()
            .await
    });
    match result {
        Ok(done) => println!("{} bytes, finished", done.answer.len()),
        Err((error, partial)) => println!(
            "{} bytes kept; {}",
            partial.answer.len(),
            error
                .to_string()
                .split(": stopped")
                .next()
                .unwrap_or_default()
        ),
    }
    std::process::exit(0)
}

/// Runs `mode` in a child process and returns its peak resident set (bytes), wall time and
/// what it printed.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped with wait4, which also hands over its peak memory"
)]
fn measure_hostile(exe: &std::path::Path, base: &str, mode: &str) -> (u64, Duration, String) {
    let started = Instant::now();
    let mut child = Command::new(exe)
        .env("SEEK_BENCH_HOSTILE", mode)
        .env("SEEK_BENCH_BASE", base)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("client: {e}"));
    let mut said = String::new();
    if let Some(out) = child.stdout.as_mut() {
        let _ = out.read_to_string(&mut said);
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap_or_else(|e| panic!("pid: {e}"));
    let mut status = 0;
    // SAFETY: `rusage` is plain data; zeroed is a valid value for `wait4` to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child and nothing else reaps it (its `Child` handle is dropped
    // without waiting); the pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4");
    let peak = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
    (peak, started.elapsed(), said.trim().to_owned())
}

fn hostile(exe: &std::path::Path, base: &str) {
    println!(
        "hostile streams: peak RSS of a fresh client process (max_tokens {HOSTILE_MAX_TOKENS})"
    );
    for (mode, what) in [
        (
            "hostile-baseline",
            "a normal 100,000-token reply (max_tokens 200,000)",
        ),
        ("hostile-line", "one 300 MB line without a line ending"),
        (
            "hostile-tokens",
            "distinct tokens without end (up to 300 MB)",
        ),
    ] {
        let (peak, took, said) = measure_hostile(exe, base, mode);
        println!(
            "  {what}: peak {:.1} MiB in {:.0} ms; {said}",
            peak as f64 / f64::from(1u32 << 20),
            took.as_secs_f64() * 1e3
        );
    }
}

fn main() {
    if std::env::var_os("SEEK_BENCH_SERVE").is_some() {
        serve();
    }
    if let (Some(mode), Some(base)) = (
        std::env::var_os("SEEK_BENCH_HOSTILE"),
        std::env::var_os("SEEK_BENCH_BASE"),
    ) {
        hostile_client(&base.to_string_lossy(), &mode.to_string_lossy());
    }
    let args: Vec<String> = std::env::args().collect();
    let only = |part: &str| {
        let named = ["throughput", "hostile"];
        !args.iter().any(|a| named.contains(&a.as_str())) || args.iter().any(|a| a == part)
    };
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current exe: {e}"));
    let mut server = ServerProcess(
        Command::new(&exe)
            .env("SEEK_BENCH_SERVE", "1")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("server: {e}")),
    );
    let mut port_line = String::new();
    if let Some(out) = server.0.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut port_line);
    }
    let base = format!("http://127.0.0.1:{}", port_line.trim());
    let endpoint = format!("{base}/v1/chat/completions");
    if only("hostile") {
        hostile(&exe, &base);
    }
    if !only("throughput") {
        return;
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let model = HttpChatModel::new(HttpChatModel::settings_for_tests(
        Wire::OpenAi,
        ServerUrl::normalise(&base, Wire::OpenAi),
        Some("bench".into()),
        None,
        Duration::from_secs(30),
    ));
    for (mode, runs) in [("burst", RUNS), ("paced", 3)] {
        // The request body tells the server which mode to use.
        let curl_body = format!("{{\"mode\":\"{mode}\"}}");
        let mut curl_times = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let status = Command::new("curl")
                .args([
                    "-sN",
                    "-o",
                    "/dev/null",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                    &curl_body,
                    &endpoint,
                ])
                .status();
            assert!(status.is_ok_and(|s| s.success()), "curl runs");
            curl_times.push(started.elapsed());
        }
        let request = ChatRequest {
            messages: vec![Message::new(Role::User, mode)],
            options: GenerationOptions {
                max_tokens: 200_000,
                temperature: None,
                top_p: None,
                seed: None,
                context_window: 8192,
            },
            json_schema: None,
            prefix_file: None,
        };
        let (mut seek_times, mut cpu_times) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let cpu_before = cpu_time();
            let started = Instant::now();
            let done = runtime
                .block_on(async {
                    model
                        .stream(request.clone(), CancellationToken::new())
                        .collect()
                        .await
                })
                .unwrap_or_else(|(e, _)| panic!("stream: {e}"));
            seek_times.push(started.elapsed());
            cpu_times.push(cpu_time().saturating_sub(cpu_before));
            assert_eq!(done.answer.split_whitespace().count(), TOKENS);
        }
        let curl = median(curl_times);
        let seek = median(seek_times);
        let cpu = median(cpu_times);
        println!("{mode}: stream of {TOKENS} tokens (median of {runs} runs)");
        println!(
            "  curl wall time:      {:>8.1} ms",
            curl.as_secs_f64() * 1e3
        );
        println!(
            "  seek wall time:      {:>8.1} ms  ({:.2}x curl)",
            seek.as_secs_f64() * 1e3,
            seek.as_secs_f64() / curl.as_secs_f64()
        );
        println!(
            "  seek CPU time:       {:>8.1} ms  ({:.2} µs per token)",
            cpu.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e6 / TOKENS as f64
        );
    }
    drop(server);
}
