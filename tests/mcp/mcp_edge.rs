//! `seek::mcp::Hub` against tests/fixtures/mcp/edge_server.py (Python `mcp`, stdio): results
//! marked isError, JSON-RPC errors, timeouts, cancellation, large results, a server that crashes
//! mid-call, tool-list pagination, and servers that cannot start.

use crate::mcp_support;

use std::time::{Duration, Instant};

use mcp_support::*;
use seek::mcp::{CallOutput, Hub, McpError, Part, ServerState};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Waits (bounded) until the edge server's trace file has `event`.
async fn wait_for_trace(trace: &std::path::Path, event: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(trace).map_or(true, |t| !t.lines().any(|l| l == event)) {
        assert!(
            Instant::now() < deadline,
            "the server never traced `{event}`"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn text(output: &CallOutput) -> &str {
    match output.parts.as_slice() {
        [Part::Text(text)] => text,
        other => panic!("expected one text part, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_timeouts_and_large_results() {
    let work = tempfile::tempdir().expect("tempdir");
    let mut server = edge("edge", &[]);
    server.tool_timeout = Duration::from_secs(1);
    let hub = ready_hub(vec![server], &[], work.path()).await;
    assert_ready(&hub, "edge");

    let failed = call(&hub, "edge", "fail", json!({}))
        .await
        .expect("a result");
    assert!(failed.is_error);
    assert_eq!(text(&failed), "the tool failed on purpose");

    let refused = call(&hub, "edge", "refuse", json!({})).await;
    assert_eq!(
        refused,
        Err(McpError::Call {
            server: "edge".into(),
            message: "refused on purpose".into()
        })
    );

    let started = Instant::now();
    let slow = call(&hub, "edge", "slow", json!({"seconds": 20})).await;
    assert_eq!(
        slow,
        Err(McpError::Timeout {
            server: "edge".into(),
            tool: "slow".into(),
            secs: 1
        })
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The server is still there and answers the next call.
    let echoed = call(&hub, "edge", "echo", json!({"text": "still here"}))
        .await
        .expect("echo after a timeout");
    assert_eq!(text(&echoed), "still here");

    let big = call(&hub, "edge", "big", json!({"bytes": 2_000_000}))
        .await
        .expect("a 2 MB result");
    assert_eq!(text(&big).len(), 2_000_000);
    assert!(text(&big).bytes().all(|b| b == b'y'));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_slow_call_returns_at_once_and_tells_the_server() {
    let work = tempfile::tempdir().expect("tempdir");
    let trace = work.path().join("trace");
    let server = edge(
        "edge",
        &[("EDGE_TRACE_FILE", trace.to_str().expect("utf-8"))],
    );
    let hub = ready_hub(vec![server], &[], work.path()).await;

    let cancel = CancellationToken::new();
    let call_hub = std::sync::Arc::clone(&hub);
    let call_cancel = cancel.clone();
    let running = tokio::spawn(async move {
        call_hub
            .call("edge", "slow", args(json!({"seconds": 30})), &call_cancel)
            .await
    });
    // Cancel once the server is inside the tool.
    wait_for_trace(&trace, "started").await;
    let started = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), running)
        .await
        .expect("the cancelled call returns at once")
        .expect("the task");
    assert_eq!(result, Err(McpError::Cancelled));
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );

    // rmcp sent notifications/cancelled: the server's handler was cancelled.
    wait_for_trace(&trace, "cancelled").await;
    let echoed = call(&hub, "edge", "echo", json!({"text": "after"}))
        .await
        .expect("echo");
    assert_eq!(text(&echoed), "after");

    // A token already cancelled does not even start a call.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let refused = hub
        .call("edge", "echo", args(json!({"text": "x"})), &cancelled)
        .await;
    assert_eq!(refused, Err(McpError::Cancelled));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_call_is_reported_and_the_others_keep_working() {
    let work = tempfile::tempdir().expect("tempdir");
    let hub = ready_hub(
        vec![edge("crashy", &[]), edge("steady", &[])],
        &[],
        work.path(),
    )
    .await;
    assert_ready(&hub, "crashy");

    let error = call(&hub, "crashy", "crash", json!({}))
        .await
        .expect_err("the server died");
    let McpError::Call { server, message } = &error else {
        panic!("expected a Call error, got {error:?}");
    };
    assert_eq!(server, "crashy");
    assert!(message.contains("exited with status 3"), "{message}");
    assert!(message.contains("crashing on purpose"), "{message}");

    let state = status(&hub, "crashy").state;
    let ServerState::Exited(why) = &state else {
        panic!("expected Exited, got {state:?}");
    };
    assert!(
        why.starts_with("exited with status 3: edge_server: crashing on purpose"),
        "{why}"
    );
    assert!(status(&hub, "crashy").tools.is_empty());
    assert!(hub.tools().iter().all(|t| t.server == "steady"));

    let later = call(&hub, "crashy", "echo", json!({"text": "x"})).await;
    assert_eq!(
        later,
        Err(McpError::NotRunning {
            server: "crashy".into(),
            why: why.clone()
        })
    );
    let echoed = call(&hub, "steady", "echo", json!({"text": "fine"}))
        .await
        .expect("echo");
    assert_eq!(text(&echoed), "fine");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_with_no_call_running_is_noticed() {
    let work = tempfile::tempdir().expect("tempdir");
    let hub = ready_hub(vec![edge("edge", &[])], &[], work.path()).await;
    let output = call(&hub, "edge", "pid", json!({})).await.expect("pid");
    let pid: i32 = text(&output)
        .split(' ')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("pid");
    // SAFETY: kill(2) on the server this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let ServerState::Exited(why) = status(&hub, "edge").state {
            assert_eq!(why, "was killed by signal 9 (SIGKILL)");
            break;
        }
        assert!(Instant::now() < deadline, "the exit was never noticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_list_follows_pagination_and_a_looping_cursor_ends() {
    let work = tempfile::tempdir().expect("tempdir");
    let paged = edge(
        "paged",
        &[("EDGE_PAGE_SIZE", "3"), ("EDGE_EXTRA_TOOLS", "20")],
    );
    let looping = edge(
        "looping",
        &[("EDGE_MODE", "loop_cursor"), ("EDGE_PAGE_SIZE", "2")],
    );
    let hub = ready_hub(vec![paged, looping], &[], work.path()).await;

    let paged = status(&hub, "paged");
    // 8 named tools and 20 extras, 3 a page: 10 pages.
    assert_eq!(paged.tools.len(), 28, "{:?}", paged.tools);
    assert_eq!(paged.tools[0].name, "echo");
    assert_eq!(paged.tools[27].name, "extra_19");

    // The cursor always points back at the first page: listed once, then stopped.
    let looping = status(&hub, "looping");
    assert_eq!(looping.state, ServerState::Ready);
    let names: Vec<_> = looping.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "fail"]);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_fail_with_a_reason() {
    let work = tempfile::tempdir().expect("tempdir");
    let missing = stdio("missing", "seek-no-such-mcp-server", &[]);
    let exits = edge("exits", &[("EDGE_MODE", "exit")]);
    let mut garbage = edge("garbage", &[("EDGE_MODE", "garbage")]);
    garbage.startup_timeout = Duration::from_secs(3);
    let mut silent = edge("silent", &[("EDGE_MODE", "silent")]);
    silent.startup_timeout = Duration::from_secs(3);
    let mut nowhere = edge("nowhere", &[]);
    if let seek::config::McpTransport::Stdio { cwd, .. } = &mut nowhere.transport {
        *cwd = Some(work.path().join("no-such-dir"));
    }
    let mut disabled = stdio("off", "seek-no-such-mcp-server", &[]);
    disabled.enabled = false;
    let good = edge("good", &[]);

    let started = Instant::now();
    let hub = Hub::start(
        vec![missing, exits, garbage, silent, nowhere, disabled, good],
        std::sync::Arc::default(),
        work.path(),
    );
    // `start` returns at once; everything is still starting but the disabled one.
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(status(&hub, "off").state, ServerState::Disabled);
    tokio::time::timeout(Duration::from_secs(40), hub.ready())
        .await
        .expect("ready");
    // The silent and garbage servers fail at their 3 s startup timeout, not later.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );

    assert_eq!(
        state_message(&hub, "missing"),
        "`seek-no-such-mcp-server` was not found (is it installed and on PATH?)"
    );
    assert_eq!(
        state_message(&hub, "exits"),
        "exited with status 1: edge_server: cannot start: EDGE_MODE=exit asked me to fail"
    );
    let garbage = state_message(&hub, "garbage");
    assert!(
        garbage.starts_with("it did not answer initialize within 3 s"),
        "{garbage}"
    );
    assert!(
        garbage.contains("2 line(s) that are not JSON-RPC"),
        "{garbage}"
    );
    assert!(
        garbage.contains("\"Welcome to the edge server!\""),
        "{garbage}"
    );
    let silent = state_message(&hub, "silent");
    assert!(
        silent.starts_with("it did not answer initialize within 3 s"),
        "{silent}"
    );
    assert!(
        state_message(&hub, "nowhere").contains("no-such-dir"),
        "{}",
        state_message(&hub, "nowhere")
    );
    assert_eq!(status(&hub, "off").state, ServerState::Disabled);
    assert_ready(&hub, "good");
    assert!(hub.tools().iter().all(|t| t.server == "good"));
    assert_eq!(
        call(&hub, "off", "echo", json!({})).await,
        Err(McpError::NotRunning {
            server: "off".into(),
            why: "it is disabled (enabled = false)".into()
        })
    );
    assert_eq!(
        call(&hub, "nobody", "echo", json!({})).await,
        Err(McpError::UnknownServer("nobody".into()))
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_past_the_size_bound_ends_the_server_with_a_reason() {
    let work = tempfile::tempdir().expect("tempdir");
    let hub = ready_hub(
        vec![edge("huge", &[("EDGE_MODE", "huge_line")])],
        &[],
        work.path(),
    )
    .await;
    let started = Instant::now();
    let error = call(&hub, "huge", "echo", json!({"text": "x"}))
        .await
        .expect_err("too large");
    // Not a tool timeout (30 s): the stream ends as soon as the bound is passed.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let message = error.to_string();
    assert!(message.contains("`huge`"), "{message}");
    assert!(message.contains("larger than 16 MiB"), "{message}");
    assert!(state_message(&hub, "huge").contains("larger than 16 MiB"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_seeks_minus_the_withheld_plus_the_configured() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = edge("edge", &[("EDGE_GREETING", "hello")]);
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let mut moved = edge("moved", &[]);
    if let seek::config::McpTransport::Stdio { cwd, .. } = &mut moved.transport {
        *cwd = Some(elsewhere.path().to_owned());
    }
    let hub = ready_hub(vec![server, moved], &["HOME"], work.path()).await;
    assert!(
        std::env::var_os("HOME").is_some(),
        "the test needs HOME set"
    );

    let names = json!({"names": ["HOME", "EDGE_GREETING", "PATH"]});
    let seen = call(&hub, "edge", "env", names.clone()).await.expect("env");
    let seen = seen.structured.expect("structured");
    assert_eq!(seen["env"]["HOME"], Value::Null);
    assert_eq!(seen["env"]["EDGE_GREETING"], "hello");
    assert!(seen["env"]["PATH"].is_string());
    let cwd = std::fs::canonicalize(work.path()).expect("canonical");
    assert_eq!(seen["cwd"], cwd.to_str().expect("utf-8"));

    let seen = call(&hub, "moved", "env", names)
        .await
        .expect("env")
        .structured
        .expect("s");
    let elsewhere = std::fs::canonicalize(elsewhere.path()).expect("canonical");
    assert_eq!(seen["cwd"], elsewhere.to_str().expect("utf-8"));
    assert_eq!(seen["env"]["EDGE_GREETING"], Value::Null);
    hub.shutdown().await;
}
