//! MCP end to end with the fake model and real servers: a block calls a tool and the next
//! request carries its result; both argument forms; an unknown tool and a bad argument get
//! feedback that shows what is right; Stop during a slow call ends it at once; a server that
//! cannot start is reported and the others keep working; no server process survives seek.
//!
//! The servers are the ones `.ci/run` installs: `mcp-server-time` (Python, stdio) and
//! `@modelcontextprotocol/server-everything` (npm, stdio). `SEEK_TEST_MCP_PYTHON` and
//! `SEEK_TEST_MCP_EVERYTHING` name them when they are not on PATH.

use crate::fake_model;
use crate::procs;
use crate::runtime;
use crate::support;

use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use seek::agent::{Command, Event, Outcome};
use support::{Sandbox, run_within, stderr, stdout};

const BOUND: Duration = Duration::from_secs(120);

fn python() -> String {
    std::env::var("SEEK_TEST_MCP_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn everything() -> String {
    std::env::var("SEEK_TEST_MCP_EVERYTHING").unwrap_or_else(|_| "mcp-server-everything".into())
}

/// TOML for the time server (as a `[mcp_servers.time]` table).
fn time_server() -> String {
    format!(
        "[mcp_servers.time]\ncommand = {:?}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\nstartup_timeout_secs = 60\n",
        python()
    )
}

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn finished_blocks(lines: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "block_finished")
        .collect()
}

/// The system prompt of a logged chat request.
fn system_prompt(request: &fake_model::Logged) -> String {
    request.json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_block_calls_a_tool_and_the_next_request_carries_its_result() {
    let sb = Sandbox::new();
    sb.write_config(&time_server());
    let server = FakeModel::start(vec![
        Reply::text("Let me look.\n```mcp\ntime.get_current_time\ntimezone: UTC\n```\n"),
        Reply::text("It is the time the tool said."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--json", "-p", "what time is it in UTC?"]),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let blocks = finished_blocks(&lines);
    assert_eq!(blocks.len(), 1, "{lines:?}");
    assert_eq!(blocks[0]["tool_type"], "mcp");
    assert_eq!(blocks[0]["success"], true, "{}", blocks[0]);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let prompt = system_prompt(&requests[0]);
    assert!(
        prompt.contains("time.get_current_time") && prompt.contains("```mcp"),
        "the system prompt teaches the tool: {prompt}"
    );
    let feedback = requests[1].last_user_message();
    assert!(feedback.starts_with("[success]"), "{feedback}");
    assert!(
        feedback.contains("\"timezone\"") && feedback.contains("UTC"),
        "the tool's result reaches the model: {feedback}"
    );
}

#[test]
fn json_arguments_and_a_bare_tool_name_work() {
    let sb = Sandbox::new();
    sb.write_config(&time_server());
    let server = FakeModel::start(vec![
        Reply::text(
            "```mcp\nconvert_time\n{\"source_timezone\": \"UTC\", \"time\": \"12:00\", \"target_timezone\": \"Asia/Tokyo\"}\n```\n",
        ),
        Reply::text("Noon in UTC is 21:00 in Tokyo."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--json", "-p", "noon UTC in Tokyo?"]),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(feedback.starts_with("[success]"), "{feedback}");
    assert!(feedback.contains("21:00"), "{feedback}");
}

#[test]
fn an_unknown_tool_and_a_bad_argument_get_feedback_showing_what_is_right() {
    let sb = Sandbox::new();
    sb.write_config(&time_server());
    let server = FakeModel::start(vec![
        Reply::text("```mcp\ntime.get_weather\ncity: Paris\n```\n"),
        Reply::text("```mcp\ntime.convert_time\nsource_timezone: UTC\n```\n"),
        Reply::text("I could not do it."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--json", "-p", "convert a time"]),
        BOUND,
    );
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&out));
    let unknown = requests[1].last_user_message();
    assert!(unknown.starts_with("[failure]"), "{unknown}");
    assert!(
        unknown.contains("get_weather") && unknown.contains("time.get_current_time"),
        "names what was asked and what exists: {unknown}"
    );
    let bad = requests[2].last_user_message();
    assert!(bad.starts_with("[failure]"), "{bad}");
    assert!(
        bad.contains("target_timezone") && bad.contains("time"),
        "names the missing arguments: {bad}"
    );
    assert!(
        bad.contains("source_timezone: string"),
        "shows the expected ones: {bad}"
    );
    let lines = json_lines(&out);
    let blocks = finished_blocks(&lines);
    assert!(blocks.iter().all(|b| b["success"] == false), "{blocks:?}");
}

#[test]
fn a_server_that_cannot_start_is_named_and_the_others_work() {
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "{}\n[mcp_servers.broken]\ncommand = \"seek-test-no-such-mcp-server\"\n",
        time_server()
    ));
    let server = FakeModel::start(vec![
        Reply::text("```mcp\nbroken.anything\n```\n"),
        Reply::text("```mcp\ntime.get_current_time\ntimezone: UTC\n```\n"),
        Reply::text("Done."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["-p", "what time is it?"]),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let down = server.chat_requests()[1].last_user_message();
    assert!(
        down.starts_with("[failure]")
            && down.contains("the MCP server `broken` is not running")
            && down.contains("seek-test-no-such-mcp-server"),
        "a call to the failed server says why it cannot be made: {down}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("MCP server `broken` failed to start")
            && err.contains("seek-test-no-such-mcp-server"),
        "{err}"
    );
    let feedback = server.chat_requests()[2].last_user_message();
    assert!(feedback.starts_with("[success]"), "{feedback}");
    let prompt = system_prompt(&server.chat_requests()[0]);
    assert!(
        !prompt.contains("broken."),
        "a failed server offers no tools: {prompt}"
    );
}

#[test]
fn no_server_process_survives_seek() {
    let sb = Sandbox::new();
    let marker = format!("seek-mcp-survivor-{}", std::process::id());
    // `sh` stays the group's leader with the server as its child, the shape `npx` has.
    let script = format!(
        "{} -c 'import sys; sys.argv = sys.argv[:1]; from mcp_server_time import main; main()' {marker}; true",
        python()
    );
    sb.write_config(&format!(
        "[mcp_servers.time]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nstartup_timeout_secs = 60\n"
    ));
    let server = FakeModel::start(vec![
        Reply::text("```mcp\ntime.get_current_time\ntimezone: UTC\n```\n"),
        Reply::text("Done."),
    ]);
    let out = run_within(&mut sb.seek_at(&server.url(), &["-p", "time?"]), BOUND);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(
        feedback.starts_with("[success]"),
        "the server ran: {feedback}"
    );
    // Killed processes vanish asynchronously: wait for it, bounded.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive = procs::processes_with(&marker, false);
        if alive.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still running: {alive:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_slow_call_ends_it_at_once() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text(
        "```mcp\neverything.trigger-long-running-operation\nduration: 600\nsteps: 2\n```\n",
    )]);
    let config = runtime::config(&server.url(), work.path(), data.path(), None);
    let mut config = (*config).clone();
    config.mcp.servers.push(seek::config::McpServer {
        name: "everything".into(),
        transport: seek::config::McpTransport::Stdio {
            command: everything(),
            args: vec!["stdio".into()],
            cwd: None,
        },
        env: Vec::new(),
        startup_timeout: Duration::from_secs(60),
        tool_timeout: Duration::from_secs(3600),
        enabled: true,
    });
    let mut handle = runtime::spawn(std::sync::Arc::new(config));
    runtime::submit(&handle, "run the long operation");
    runtime::until(
        &mut handle,
        |e| matches!(e, Event::BlockStarted { tool, .. } if tool == "mcp"),
    )
    .await;
    runtime::send(&handle, Command::Stop);
    let events = runtime::until(&mut handle, |e| matches!(e, Event::TurnFinished { .. })).await;
    let Some(Event::TurnFinished {
        outcome, blocks, ..
    }) = events.last()
    else {
        panic!("no TurnFinished: {events:?}");
    };
    assert_eq!(*outcome, Outcome::Stopped);
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    assert!(blocks[0].stopped && !blocks[0].success, "{:?}", blocks[0]);
    // The server is still there for the next task.
    server.push(Reply::text(
        "```mcp\neverything.echo\nmessage: still here\n```\n",
    ));
    server.push(Reply::text("It echoed."));
    runtime::submit(&handle, "echo something");
    let events = runtime::until(&mut handle, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::BlockFinished { record } if record.success && record.output.contains("still here"))),
        "{events:?}"
    );
    runtime::send(&handle, Command::Shutdown);
    let _ = handle.task.await;
}

#[test]
fn an_mcp_block_obeys_the_approval_policy() {
    let sb = Sandbox::new();
    let trace = sb.path("work").join("..").join("edge-trace");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/edge_server.py");
    sb.write_config(&format!(
        "[mcp_servers.edge]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ EDGE_TRACE_FILE = {:?} }}\nstartup_timeout_secs = 60\n",
        python(),
        script.display().to_string(),
        trace.display().to_string()
    ));
    let server = FakeModel::start(vec![Reply::text("```mcp\nedge.slow\nseconds: 0\n```\n")]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--approval", "never", "--json", "-p", "sleep"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let blocks = finished_blocks(&lines);
    assert_eq!(blocks.len(), 1, "{lines:?}");
    assert_eq!(blocks[0]["not_run"], "shown_only", "{}", blocks[0]);
    assert!(
        !std::fs::read_to_string(&trace)
            .unwrap_or_default()
            .contains("started"),
        "the server was never called"
    );
    // The same block under `auto` reaches the server: the check above can fail.
    server.push(Reply::text("```mcp\nedge.slow\nseconds: 0\n```\n"));
    server.push(Reply::text("Slept."));
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--approval", "auto", "--json", "-p", "sleep"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&trace)
            .unwrap_or_default()
            .contains("started")
    );
}
