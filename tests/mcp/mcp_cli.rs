//! `[mcp_servers.NAME]`, `seek config` and `seek mcp` through the real binary: env values
//! hidden, a server whose command does not exist reported as failed by name (exit 1), the real
//! `mcp-server-time` (Python; `SEEK_TEST_MCP_PYTHON` names the interpreter) ready with its
//! tools in text and `--json`, Ctrl+C while servers start (exit 130, no server left), and the
//! hint when nothing is configured.

use crate::support;

use crate::procs;

use std::time::{Duration, Instant};

use support::{Sandbox, run_within, stderr, stdout};

/// Long enough for a cold Python server to start on a loaded machine.
const BOUND: Duration = Duration::from_secs(90);

fn python() -> String {
    std::env::var("SEEK_TEST_MCP_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn time_server(sb: &Sandbox) {
    sb.write_config(&format!(
        r#"
[mcp_servers.time]
command = "{}"
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
env = {{ TZ = "UTC", SECRET_SAUCE = "do-not-print-me" }}
startup_timeout_secs = 60
"#,
        python()
    ));
}

#[test]
fn seek_config_lists_servers_with_env_values_hidden() {
    let sb = Sandbox::new();
    time_server(&sb);
    let out = run_within(sb.seek().arg("config"), BOUND);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("[mcp_servers.time]"), "{text}");
    assert!(
        text.contains("env = { TZ = \"…\", SECRET_SAUCE = \"…\" }"),
        "{text}"
    );
    assert!(!text.contains("do-not-print-me"), "{text}");
    assert!(text.contains("startup_timeout_secs = 60"), "{text}");
    assert!(
        text.contains("[tools.mcp]\nagents = [\"coder\", \"file\"]"),
        "{text}"
    );
}

#[test]
fn a_bad_server_table_is_a_configuration_error_naming_the_line() {
    let sb = Sandbox::new();
    sb.write_config("[mcp_servers.\"a.b\"]\ncommand = \"x\"\n");
    let out = run_within(sb.seek().arg("mcp"), BOUND);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("config.toml:1: mcp_servers = \"a.b\""),
        "{err}"
    );
}

#[test]
fn no_servers_says_how_to_add_one() {
    let sb = Sandbox::new();
    let out = run_within(sb.seek().arg("mcp"), BOUND);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("no MCP servers are configured: add a [mcp_servers.NAME] table to"),
        "{text}"
    );
    assert!(text.contains("config/seek/config.toml"), "{text}");
    assert!(text.contains("docs/mcp.md"), "{text}");
    let out = run_within(sb.seek().args(["mcp", "--json"]), BOUND);
    assert_eq!(out.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(value, serde_json::json!({ "servers": [] }));
    assert!(
        stderr(&out).contains("no MCP servers"),
        "the hint on stderr"
    );
}

// Needs the real hub (branch mcp-hub): the stub reports no servers.
#[test]
fn a_server_that_cannot_start_fails_by_name_and_the_exit_is_1() {
    let sb = Sandbox::new();
    sb.write_config(
        r#"
[mcp_servers.ghost]
command = "seek-test-no-such-mcp-server"
args = ["--stdio"]

[mcp_servers.off]
command = "seek-test-also-missing"
enabled = false
"#,
    );
    let out = run_within(sb.seek().arg("mcp"), BOUND);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let ghost = text
        .lines()
        .position(|l| l.starts_with("ghost · failed · stdio: seek-test-no-such-mcp-server --stdio"))
        .unwrap_or_else(|| panic!("the failed server's line in:\n{text}"));
    let why = text.lines().nth(ghost + 1).unwrap_or_default();
    assert!(
        why.starts_with("  ") && why.contains("seek-test-no-such-mcp-server"),
        "the reason names the command: {text}"
    );
    assert!(
        text.contains("off · disabled · stdio: seek-test-also-missing"),
        "{text}"
    );
}

// Needs the real hub (branch mcp-hub), `check::signature` (branch mcp-block) and
// `mcp-server-time` (installed by `.ci/run`).
#[test]
fn the_time_server_is_ready_with_its_tools_in_text_and_json() {
    let sb = Sandbox::new();
    time_server(&sb);
    let out = run_within(sb.seek().arg("mcp"), BOUND);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    let head = text.lines().next().unwrap_or_default();
    assert!(
        head.starts_with("time · ready · stdio: ")
            && head.contains("-m mcp_server_time --local-timezone UTC")
            && head.contains(" tools · started in ")
            && head.contains(" ms · protocol "),
        "{text}"
    );
    let tool = text
        .lines()
        .find(|l| l.starts_with("  get_current_time("))
        .unwrap_or_else(|| panic!("get_current_time listed:\n{text}"));
    // The arguments are `crate::mcp::check::signature`'s (the block branch).
    assert!(
        tool.starts_with("  get_current_time(timezone"),
        "its argument: {tool}"
    );
    assert!(tool.contains(" — "), "its description: {tool}");
    assert!(!text.contains("do-not-print-me"));

    let out = run_within(sb.seek().args(["mcp", "--json"]), BOUND);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    let server = &value["servers"][0];
    assert_eq!(server["name"], "time");
    assert_eq!(server["state"], "ready");
    assert!(server.get("error").is_none(), "{server}");
    assert!(
        server["transport"]
            .as_str()
            .is_some_and(|t| t.starts_with("stdio: ")),
        "{server}"
    );
    let tools = server["tools"].as_array().expect("a list of tools");
    let current = tools
        .iter()
        .find(|t| t["name"] == "get_current_time")
        .unwrap_or_else(|| panic!("get_current_time in {server}"));
    assert!(
        current["arguments"]
            .as_str()
            .is_some_and(|a| a.contains("timezone")),
        "{current}"
    );
    assert!(
        current["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
}

/// Polls `check` until it holds or `bound` passes (the condition is outside this process: a
/// process appearing in or leaving `/proc`).
fn wait_until(bound: Duration, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + bound;
    while !check() {
        assert!(Instant::now() < deadline, "waited {bound:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// Needs the real hub (branch mcp-hub): the stub starts nothing.
#[test]
fn ctrl_c_while_servers_start_ends_them_and_exits_130() {
    let sb = Sandbox::new();
    // A server that never answers `initialize`; the odd duration marks its processes.
    let marker = format!("299.{}", std::process::id());
    sb.write_config(&format!(
        "[mcp_servers.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep {marker}; true\"]\nstartup_timeout_secs = 300\n"
    ));
    let child = sb
        .seek()
        .arg("mcp")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn seek mcp");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    wait_until(BOUND, "the server to start", || {
        procs::processes_with(&marker, false).len() >= 2
    });
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let out = ended
        .recv_timeout(BOUND)
        .expect("seek mcp ends on Ctrl+C")
        .expect("its output");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    wait_until(Duration::from_secs(10), "no server process left", || {
        procs::processes_with(&marker, false).is_empty()
    });
}
