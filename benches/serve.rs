//! What `seek serve` costs to serve: requests per second and latency on `/health` and
//! `/latest_answer` under concurrent keep-alive clients, the time from `/stop` to the block's
//! processes being gone, and the memory the server holds per idle connection.
//! Run with `cargo bench --bench serve`; numbers in docs/benchmarks.md.
//!
//! A small harness rather than criterion: each measure is a whole scenario (a load level, a
//! stop, 500 connections, under the server's cap of 512) reported as rates, percentiles, medians and maxima.
//!
//! - Load and `/stop` run the server in process (`Server::start` on 127.0.0.1:0, its own
//!   multi-thread runtime, like `seek serve`'s) over a scripted in-process model, so only the
//!   HTTP layer, the guard and the board are measured. The load generator runs on a second
//!   runtime and speaks HTTP/1.1 itself over tokio `TcpStream`s: one request at a time per
//!   connection (no pipelining), every response parsed for its status and `Content-Length`.
//!   Chosen over hyper's client because it costs the shared cores less per request, so more of
//!   them is left to the server being measured, and it sees exactly the bytes the server sent.
//! - Memory runs the real binary, so the resident size measured is the server process's alone.

#[path = "../tests/support/fake_model.rs"]
mod fake_model;
#[path = "../tests/support/procs.rs"]
mod procs;
#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seek::config::{Config, Dirs, Env, Overrides};
use seek::llm::{ChatModel, ChatRequest, ChatStream, Delta, Finish, FinishReason, LlmError};
use seek::serve::{Access, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The bearer token every request carries (the server requires one, as by default).
const TOKEN: &str = "bench-token-0123456789abcdef";
/// Concurrent keep-alive clients per load level.
const CLIENT_LEVELS: [usize; 3] = [1, 16, 64];
/// Requests per run of a load level, shared out among its clients, and runs per level (the
/// median run's rate is reported: the cores are shared, one run can be unlucky).
const REQUESTS_PER_LEVEL: usize = 40_000;
const RUNS_PER_LEVEL: usize = 3;
/// Unmeasured requests before each endpoint's levels (connections, allocator, caches).
const WARM_UP_REQUESTS: usize = 2_000;
/// `/stop` measurements.
const STOP_REPEATS: usize = 10;
/// Idle connections held open for the memory measure, and the steps it is read at.
const IDLE_CONNECTIONS: usize = 500;
const IDLE_STEPS: usize = 4;
/// How long any awaited condition (a block starting, processes going, a server answering)
/// may take before the bench fails instead of hanging.
const DEADLINE: Duration = Duration::from_secs(20);

fn main() {
    raise_fd_limit(2 * IDLE_CONNECTIONS as u64 + 256);
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("serve")
        .build()
        .unwrap_or_else(|e| panic!("server runtime: {e}"));
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("load")
        .build()
        .unwrap_or_else(|e| panic!("client runtime: {e}"));
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let model = Arc::new(ScriptedModel::default());
    let listener = server_runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let server = server_runtime.block_on(async {
        Server::start(
            config(work.path()),
            Arc::clone(&model) as Arc<dyn ChatModel>,
            None,
            listener,
            Access::new(Some(TOKEN.into()), vec!["http://localhost:3000".into()]),
        )
        .unwrap_or_else(|e| panic!("server: {e}"))
    });
    let addr = server.addr;

    client_runtime.block_on(async {
        load(addr, "/health").await;
        finish_one_query(addr, &model).await;
        load(addr, "/latest_answer").await;
        stop_latency(addr, &model).await;
    });
    server_runtime.block_on(server.shutdown());
    idle_connection_memory(&client_runtime);
}

/// The configuration the in-process server runs with: code runs in `work/work` without
/// asking (as `seek serve --yes`), as the coder (no routing call).
fn config(root: &std::path::Path) -> Arc<Config> {
    let work_dir = root.join("work");
    let overrides = Overrides {
        work_dir: Some(work_dir.clone()),
        approval: Some("auto".into()),
        agent: Some("coder".into()),
        ..Overrides::default()
    };
    let dirs = Dirs {
        default_config_file: None,
        data_dir: root.join("data"),
    };
    let mut config = Config::resolve(&overrides, &Env::default(), &dirs, &work_dir)
        .unwrap_or_else(|e| panic!("config: {e}"));
    config
        .ensure_work_dir()
        .unwrap_or_else(|e| panic!("work dir: {e}"));
    Arc::new(config)
}

/// Answers instantly with the replies queued by the bench, then "Done." when none is left.
#[derive(Default)]
struct ScriptedModel {
    replies: Mutex<VecDeque<String>>,
}

impl ScriptedModel {
    fn push(&self, reply: String) {
        self.replies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(reply);
    }
}

impl ChatModel for ScriptedModel {
    fn stream(&self, _request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let text = self
            .replies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| "Done.".into());
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let _ = tx.try_send(Ok(Delta::Answer(text)));
        let _ = tx.try_send(Ok(Delta::Done(Finish {
            reason: FinishReason::Stop,
            usage: None,
        })));
        ChatStream::new(rx, &cancel).0
    }

    fn list_models(&self) -> seek::BoxFuture<'_, Result<Vec<String>, LlmError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn describe(&self) -> String {
        "scripted".into()
    }

    fn with_model(&self, _model: &str) -> Arc<dyn ChatModel> {
        unimplemented!("the benchmark never switches models")
    }
}

/// One keep-alive HTTP/1.1 connection that sends a request and reads its whole response before
/// the next (no pipelining).
struct Conn {
    stream: TcpStream,
    /// Bytes read and not yet consumed.
    buf: Vec<u8>,
}

/// A response: its status and body.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Conn {
    async fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .set_nodelay(true)
            .unwrap_or_else(|e| panic!("nodelay: {e}"));
        Self {
            stream,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Sends `request` (whole, as bytes) and reads its response.
    async fn exchange(&mut self, request: &[u8]) -> Answer {
        self.stream
            .write_all(request)
            .await
            .unwrap_or_else(|e| panic!("write: {e}"));
        self.read_answer().await
    }

    async fn read_answer(&mut self) -> Answer {
        loop {
            if let Some(head_end) = find(&self.buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
                let status = head
                    .get(9..12)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("not an HTTP status line: {head:?}"));
                let length = content_length(&head)
                    .unwrap_or_else(|| panic!("a response without Content-Length: {head:?}"));
                let end = head_end + 4 + length;
                while self.buf.len() < end {
                    self.fill().await;
                }
                let body = self.buf[head_end + 4..end].to_vec();
                self.buf.drain(..end);
                return Answer { status, body };
            }
            self.fill().await;
        }
    }

    async fn fill(&mut self) {
        let read = self
            .stream
            .read_buf(&mut self.buf)
            .await
            .unwrap_or_else(|e| panic!("read: {e}"));
        assert!(read > 0, "the server closed a keep-alive connection");
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
        .into_bytes()
}

fn post_json(addr: SocketAddr, path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One run of a load level: every request's latency (sorted) and the run's wall time.
struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// `clients` connections, each sending its share of `requests` to `path` one after the other;
/// every response must be a 200.
async fn run_level(addr: SocketAddr, path: &str, clients: usize, requests: usize) -> Run {
    let share = requests / clients;
    let mut connections = Vec::with_capacity(clients);
    for _ in 0..clients {
        connections.push(Conn::open(addr).await);
    }
    let request: Arc<[u8]> = get(addr, path).into();
    let started = Instant::now();
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut conn| {
            let request = Arc::clone(&request);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(share);
                for _ in 0..share {
                    let sent = Instant::now();
                    let answer = conn.exchange(&request).await;
                    latencies.push(sent.elapsed());
                    assert_eq!(answer.status, 200, "{}", answer.text());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(share * clients);
    for task in tasks {
        latencies.extend(task.await.unwrap_or_else(|e| panic!("client: {e}")));
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Run { latencies, elapsed }
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[(sorted.len() * percent / 100).min(sorted.len() - 1)]
}

async fn load(addr: SocketAddr, path: &str) {
    run_level(addr, path, 16, WARM_UP_REQUESTS).await;
    println!("{path}: keep-alive clients, one request at a time each, all answered 200");
    for clients in CLIENT_LEVELS {
        let mut runs = Vec::with_capacity(RUNS_PER_LEVEL);
        for _ in 0..RUNS_PER_LEVEL {
            runs.push(run_level(addr, path, clients, REQUESTS_PER_LEVEL).await);
        }
        runs.sort_by(|a, b| a.per_second().total_cmp(&b.per_second()));
        let rates: Vec<String> = runs
            .iter()
            .map(|r| format!("{:.0}", r.per_second()))
            .collect();
        let median = &runs[RUNS_PER_LEVEL / 2];
        println!(
            "  {clients:>3} clients  {:>8.0} req/s (runs: {})  median run's p50 {:>7.1} µs  p99 {:>7.1} µs",
            median.per_second(),
            rates.join(", "),
            micros(percentile(&median.latencies, 50)),
            micros(percentile(&median.latencies, 99))
        );
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One task with a block, so `/latest_answer` has a record with blocks to serialise.
async fn finish_one_query(addr: SocketAddr, model: &ScriptedModel) {
    let mut conn = Conn::open(addr).await;
    let before = conn.exchange(&get(addr, "/latest_answer")).await;
    assert_eq!(before.status, 404, "{}", before.text());
    model.push("Listing the files.\n```bash\nls -la; echo listed\n```\n".into());
    let answer = conn
        .exchange(&post_json(addr, "/query", r#"{"query": "list the files"}"#))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let latest = conn.exchange(&get(addr, "/latest_answer")).await;
    assert!(
        latest.status == 200 && latest.text().contains(r#""blocks":{"0""#),
        "the record has its block: {}",
        latest.text()
    );
    println!(
        "/latest_answer's record after one query with a block: {} bytes",
        latest.body.len()
    );
}

/// Waits (bounded) until `check` holds, polling every millisecond.
async fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `/stop` while a block runs `sleep`: the time until its response, and whether the block's
/// processes were gone by then (else the time until they were).
async fn stop_latency(addr: SocketAddr, model: &ScriptedModel) {
    let mut answered = Vec::with_capacity(STOP_REPEATS);
    let mut gone = Vec::with_capacity(STOP_REPEATS);
    let mut gone_at_answer = 0;
    for i in 0..STOP_REPEATS {
        let marker = format!("sleep 60.{}{i:03}", std::process::id());
        model.push(format!("Waiting.\n```bash\n{marker}\n```\n"));
        let task = tokio::spawn(async move {
            Conn::open(addr)
                .await
                .exchange(&post_json(addr, "/query", r#"{"query": "wait"}"#))
                .await
        });
        wait_until("the block's sleep to start", || {
            procs::processes_with(&marker, false)
                .iter()
                .any(|(_, cmdline)| cmdline.starts_with("sleep "))
        })
        .await;
        let mut conn = Conn::open(addr).await;
        let sent = Instant::now();
        let stopped = conn.exchange(&get(addr, "/stop")).await;
        let took = sent.elapsed();
        assert_eq!(stopped.status, 200, "{}", stopped.text());
        answered.push(took);
        if procs::processes_with(&marker, true).is_empty() {
            gone_at_answer += 1;
            gone.push(took);
        } else {
            wait_until("the block's processes to go", || {
                procs::processes_with(&marker, true).is_empty()
            })
            .await;
            gone.push(sent.elapsed());
        }
        let query = task.await.unwrap_or_else(|e| panic!("query: {e}"));
        assert!(
            query.status == 200 && query.text().contains(r#""status":"Stopped""#),
            "the query ends stopped: {}",
            query.text()
        );
    }
    answered.sort_unstable();
    gone.sort_unstable();
    println!(
        "/stop during a block (`sleep 60`), {STOP_REPEATS} runs: response median {:.1} ms, max {:.1} ms; processes gone median {:.1} ms, max {:.1} ms (gone when /stop answered: {gone_at_answer}/{STOP_REPEATS})",
        millis(answered[STOP_REPEATS / 2]),
        millis(answered[STOP_REPEATS - 1]),
        millis(gone[STOP_REPEATS / 2]),
        millis(gone[STOP_REPEATS - 1]),
    );
}

/// The real `seek serve`'s resident memory before and after `IDLE_CONNECTIONS` keep-alive
/// connections that each made one `/health` request and then stay idle.
fn idle_connection_memory(runtime: &tokio::runtime::Runtime) {
    let sandbox = support::Sandbox::new();
    // Never asked: the server answers only /health here.
    let model = fake_model::FakeModel::start(Vec::new());
    let mut child = sandbox
        .seek_at(
            &model.url(),
            &["--approval", "never", "serve", "--port", "0"],
        )
        .env("SEEK_API_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn seek serve: {e}"));
    let pid = child.id();
    // Kept open to the end: seek serve writes its token line after the first, and a closed
    // stdout would end it.
    let mut stdout = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
    let mut first = String::new();
    stdout
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("seek serve's first line: {e}"));
    let addr: SocketAddr = first
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("not the listening line: {first:?}"));

    runtime.block_on(async {
        // Warm (the runtime's workers, the router and the allocator have served requests), and
        // the real binary's rate and CPU time per request under the middle load level.
        run_level(addr, "/health", 16, WARM_UP_REQUESTS).await;
        let cpu_before = cpu_time(pid);
        let run = run_level(addr, "/health", 16, REQUESTS_PER_LEVEL).await;
        let cpu = cpu_time(pid).saturating_sub(cpu_before);
        println!(
            "real seek serve, /health, 16 clients: {:.0} req/s, p50 {:.1} µs, p99 {:.1} µs, server CPU {:.1} µs per request",
            run.per_second(),
            micros(percentile(&run.latencies, 50)),
            micros(percentile(&run.latencies, 99)),
            micros(cpu) / run.latencies.len() as f64
        );
        let baseline = rss_bytes(pid);
        let mut idle = Vec::with_capacity(IDLE_CONNECTIONS);
        let mut steps = vec![(0, baseline)];
        let health = get(addr, "/health");
        for step in 1..=IDLE_STEPS {
            while idle.len() < IDLE_CONNECTIONS * step / IDLE_STEPS {
                let mut conn = Conn::open(addr).await;
                let answer = conn.exchange(&health).await;
                assert_eq!(answer.status, 200, "{}", answer.text());
                idle.push(conn);
            }
            steps.push((idle.len(), rss_bytes(pid)));
        }
        // Still kept alive: the first and the last answer again.
        for index in [0, idle.len() - 1] {
            let answer = idle[index].exchange(&health).await;
            assert_eq!(answer.status, 200, "{}", answer.text());
        }
        let held = rss_bytes(pid);
        let count = idle.len();
        drop(idle);
        // Informative only: the server may not have read every close yet, and the allocator
        // keeps some of what it freed.
        let _ = Conn::open(addr).await.exchange(&health).await;
        let after_close = rss_bytes(pid);
        let (_, full) = steps[steps.len() - 1];
        println!(
            "idle keep-alive connections (real seek serve, VmRSS of its process): baseline {:.1} MiB, with {count} {:.1} MiB: {:.1} KiB per connection",
            mib(baseline),
            mib(full),
            (full.saturating_sub(baseline)) as f64 / count as f64 / 1024.0
        );
        let steps_text: Vec<String> = steps
            .iter()
            .map(|(n, rss)| format!("{n}: {:.1} MiB", mib(*rss)))
            .collect();
        println!(
            "  by step: {}; after two more requests {:.1} MiB; after all closed {:.1} MiB",
            steps_text.join(", "),
            mib(held),
            mib(after_close)
        );
    });
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
        nix::sys::signal::Signal::SIGTERM,
    );
    let status = child.wait().unwrap_or_else(|e| panic!("wait: {e}"));
    drop(stdout);
    assert!(status.success(), "seek serve ended with {status}");
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A process's user and system CPU time so far (`/proc/PID/stat`, in Linux's fixed 100 ticks a
/// second).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/stat: {e}"));
    // The fields after the command name (which may hold spaces): state is the first, utime
    // and stime the 12th and 13th.
    let after_name = &stat[stat.rfind(')').unwrap_or_else(|| panic!("stat: {stat}")) + 2..];
    let ticks: u64 = after_name
        .split(' ')
        .skip(11)
        .take(2)
        .map(|t| {
            t.parse::<u64>()
                .unwrap_or_else(|e| panic!("stat field {t:?}: {e}"))
        })
        .sum();
    Duration::from_millis(ticks * 10)
}

/// A process's resident set (`VmRSS`), in bytes.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// Raises the soft open-files limit to `wanted` (within the hard limit): the bench holds hundreds of
/// connections, and the server it starts inherits the limit for their other ends.
fn raise_fd_limit(wanted: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).unwrap_or_else(|e| panic!("getrlimit: {e}"));
    if soft < wanted {
        setrlimit(Resource::RLIMIT_NOFILE, wanted.min(hard), hard)
            .unwrap_or_else(|e| panic!("setrlimit: {e}"));
    }
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap_or_else(|e| panic!("getrlimit: {e}"));
    assert!(
        soft >= wanted,
        "open-files limit {soft} < {wanted}: lower IDLE_CONNECTIONS or raise the hard limit"
    );
}
