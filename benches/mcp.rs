//! What MCP costs through seek's hub, against the Python SDK's own client on the same servers.
//! Run with `cargo bench --bench mcp`; numbers in docs/benchmarks.md.
//!
//! - start-up: spawn → initialized → tools listed (`ServerStatus::startup_ms`), for
//!   mcp-server-time and tests/fixtures/mcp/edge_server.py, against the same span measured by
//!   tests/fixtures/mcp/python_client_bench.py (`mcp.ClientSession` over stdio);
//! - per call: a trivial `echo`, one call after the other, through `Hub::call`, against the
//!   Python client's `call_tool` on the same server (the edge server, and the npm
//!   server-everything, whose own handling is faster, so the client's share shows more).
//!
//! A small harness rather than criterion: each side is timed by its own process, so the two are
//! compared as medians of whole runs. Needs the servers the tests need (`SEEK_TEST_MCP_PYTHON`,
//! `SEEK_TEST_MCP_EVERYTHING`).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use seek::config::{McpServer, McpTransport};
use seek::mcp::{Hub, ServerState};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const STARTS: usize = 7;
const CALLS: usize = 300;
const PYTHON_RUNS: usize = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let python = real_python();
    let everything = std::env::var("SEEK_TEST_MCP_EVERYTHING")
        .unwrap_or_else(|_| "mcp-server-everything".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edge = root.join("tests/fixtures/mcp/edge_server.py");
    let client = root.join("tests/fixtures/mcp/python_client_bench.py");
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let edge_arg = edge.to_string_lossy().into_owned();

    // Each server with a trivial call: the Python client makes one after listing, untimed.
    let servers: [(&str, String, Vec<String>, &str, Value); 3] = [
        (
            "time",
            python.clone(),
            vec!["-m".into(), "mcp_server_time".into()],
            "get_current_time",
            json!({"timezone": "UTC"}),
        ),
        (
            "edge",
            python.clone(),
            vec![edge_arg],
            "echo",
            json!({"text": "hi"}),
        ),
        (
            "everything",
            everything,
            vec!["stdio".into()],
            "echo",
            json!({"message": "hi"}),
        ),
    ];
    println!("MCP start-up (spawn → tools listed), median of runs, ms:");
    for (name, command, args, tool, arguments) in &servers {
        let seek_ms = median(
            (0..STARTS).map(|_| runtime.block_on(seek_startup(name, command, args, work.path()))),
        );
        let python_ms = median(
            (0..PYTHON_RUNS)
                .map(|_| python_client(&python, &client, 0, (tool, arguments), command, args).0),
        );
        println!("  {name:<11} seek {seek_ms:>7.1}   python client {python_ms:>7.1}");
    }

    println!("MCP per call (echo, {CALLS} calls one after the other), median of runs, µs:");
    for (name, command, args, tool, arguments) in &servers[1..] {
        let seek_us =
            median((0..PYTHON_RUNS).map(|_| {
                runtime.block_on(seek_per_call(name, command, args, arguments, work.path()))
            }));
        let python_us =
            median((0..PYTHON_RUNS).map(|_| {
                python_client(&python, &client, CALLS, (tool, arguments), command, args).1
            }));
        println!(
            "  {name:<11} seek {seek_us:>7.0}   python client {python_us:>7.0}   seek/python {:.2}",
            seek_us / python_us
        );
    }
}

/// The interpreter itself, not a version-manager shim that adds its own start-up.
fn real_python() -> String {
    let python = std::env::var("SEEK_TEST_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .args([
            "-c",
            "import sys, mcp, mcp_server_time; print(sys.executable)",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(out.status.success(), "{python} lacks mcp / mcp_server_time");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn server(name: &str, command: &str, args: &[String]) -> McpServer {
    McpServer {
        name: name.to_owned(),
        transport: McpTransport::Stdio {
            command: command.to_owned(),
            args: args.to_vec(),
            cwd: None,
        },
        env: Vec::new(),
        startup_timeout: Duration::from_secs(60),
        tool_timeout: Duration::from_secs(60),
        enabled: true,
    }
}

async fn ready(name: &str, command: &str, args: &[String], work: &Path) -> Arc<Hub> {
    let env_remove: Arc<Vec<OsString>> = Arc::default();
    let hub = Hub::start(vec![server(name, command, args)], env_remove, work);
    hub.ready().await;
    let status = &hub.statuses()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    hub
}

async fn seek_startup(name: &str, command: &str, args: &[String], work: &Path) -> f64 {
    let hub = ready(name, command, args, work).await;
    let ms = hub.statuses()[0].startup_ms.unwrap_or_default() as f64;
    hub.shutdown().await;
    ms
}

async fn seek_per_call(
    name: &str,
    command: &str,
    args: &[String],
    arguments: &Value,
    work: &Path,
) -> f64 {
    let hub = ready(name, command, args, work).await;
    let cancel = CancellationToken::new();
    let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
    let call = || hub.call(name, "echo", arguments.clone(), &cancel);
    // One call outside the timing, as the Python client's run does.
    assert!(call().await.is_ok_and(|out| !out.is_error));
    let started = Instant::now();
    for _ in 0..CALLS {
        assert!(call().await.is_ok_and(|out| !out.is_error));
    }
    let us = started.elapsed().as_secs_f64() * 1e6 / CALLS as f64;
    hub.shutdown().await;
    us
}

/// (start-up ms, per-call µs) from one run of the Python client: it lists the tools, calls
/// `tool` once untimed, then `calls` times timed.
fn python_client(
    python: &str,
    client: &Path,
    calls: usize,
    (tool, arguments): (&str, &Value),
    command: &str,
    args: &[String],
) -> (f64, f64) {
    let mut command_line = Command::new(python);
    command_line
        .arg(client)
        .arg(calls.to_string())
        .arg(tool)
        .arg(arguments.to_string())
        .arg("--")
        .arg(command)
        .args(args)
        .stderr(std::process::Stdio::null());
    parse_client_output(&mut command_line)
}

fn parse_client_output(command: &mut Command) -> (f64, f64) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("python client: {e}"));
    assert!(out.status.success(), "python client failed: {out:?}");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("python client output: {e}: {out:?}"));
    (
        report["startup_ms"].as_f64().unwrap_or(f64::NAN),
        report["per_call_us"].as_f64().unwrap_or(f64::NAN),
    )
}

fn median(samples: impl Iterator<Item = f64>) -> f64 {
    let mut samples: Vec<f64> = samples.collect();
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}
