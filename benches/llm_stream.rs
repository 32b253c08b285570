//! Consuming a 100,000-token stream: seek's client against `curl` reading the same bytes.
//! Run with `cargo bench --bench llm_stream`; numbers in docs/benchmarks.md.
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
        let paced = String::from_utf8_lossy(&request_body).contains("paced");
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        );
        if paced {
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

fn main() {
    if std::env::var_os("SEEK_BENCH_SERVE").is_some() {
        serve();
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current exe: {e}"));
    let mut server = ServerProcess(
        Command::new(exe)
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
