//! No MCP server process outlives seek: after `Hub::shutdown`, after dropping a hub without it,
//! and when seek itself is killed. Checked in `/proc` for every process of each server's group,
//! grandchildren included (servers started through `sh -c`, one ignoring SIGTERM).

use crate::mcp_support;
use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_support::*;
use seek::config::McpServer;
use seek::mcp::ServerState;

/// Servers whose leader writes its pid (= its process group) to `dir/NAME.pid`:
/// - `plain`: the edge server itself;
/// - `shell`: `sh` running mcp-server-time as a child (a grandchild of seek);
/// - `stubborn`: `sh` ignoring SIGTERM, with a `sleep` in the background (ignoring it too) and
///   the edge server in the foreground.
fn servers(dir: &Path) -> Vec<McpServer> {
    let python = python();
    let script = edge_script();
    let script = script.to_str().expect("utf-8");
    let pidfile = |name: &str| {
        dir.join(format!("{name}.pid"))
            .to_str()
            .expect("utf-8")
            .to_owned()
    };
    let plain = edge("plain", &[("EDGE_PIDFILE", &pidfile("plain"))]);
    let shell = stdio(
        "shell",
        "sh",
        &[
            "-c",
            &format!(
                "echo $$ > '{}'; '{python}' -m mcp_server_time; exit $?",
                pidfile("shell")
            ),
        ],
    );
    let stubborn = stdio(
        "stubborn",
        "sh",
        &[
            "-c",
            &format!(
                "trap '' TERM; echo $$ > '{}'; sleep 600 & '{python}' '{script}'; wait",
                pidfile("stubborn")
            ),
        ],
    );
    vec![plain, shell, stubborn]
}

async fn groups(dir: &Path) -> Vec<(String, i32)> {
    let mut groups = Vec::new();
    for name in ["plain", "shell", "stubborn"] {
        groups.push((
            name.to_owned(),
            read_pid(&dir.join(format!("{name}.pid"))).await,
        ));
    }
    groups
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_every_process_of_every_server() {
    let work = tempfile::tempdir().expect("tempdir");
    let hub = ready_hub(servers(work.path()), &[], work.path()).await;
    for name in ["plain", "shell", "stubborn"] {
        assert_ready(&hub, name);
    }
    let groups = groups(work.path()).await;
    for (name, pgid) in &groups {
        let members = live_group_members(*pgid);
        assert!(
            members.contains(pgid),
            "{name}: the leader {pgid} runs: {members:?}"
        );
        assert!(members.len() >= 2 || name == "plain", "{name}: {members:?}");
    }

    let started = Instant::now();
    hub.shutdown().await;
    let took = started.elapsed();
    // SIGTERM, at most the 2 s grace, then SIGKILL: bounded, whatever the servers do.
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    for (name, pgid) in &groups {
        assert_eq!(
            live_group_members(*pgid),
            Vec::<i32>::new(),
            "{name} left processes"
        );
    }
    for status in hub.statuses() {
        assert_eq!(
            status.state,
            ServerState::Exited("stopped by seek".into()),
            "{status:?}"
        );
    }
    assert!(hub.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_hub_kills_every_group() {
    let work = tempfile::tempdir().expect("tempdir");
    let hub = ready_hub(servers(work.path()), &[], work.path()).await;
    let groups = groups(work.path()).await;
    drop(hub);
    for (name, pgid) in &groups {
        // SIGKILL was sent synchronously by the drop; the kernel takes a moment to reap.
        let left = wait_group_gone(*pgid, Duration::from_secs(5)).await;
        assert_eq!(left, Vec::<i32>::new(), "{name} left processes");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_starting_is_ended_by_shutdown() {
    let work = tempfile::tempdir().expect("tempdir");
    let pidfile = work.path().join("silent.pid");
    let mut silent = edge(
        "silent",
        &[
            ("EDGE_MODE", "silent"),
            ("EDGE_PIDFILE", pidfile.to_str().expect("utf-8")),
        ],
    );
    silent.startup_timeout = Duration::from_secs(60);
    let hub = seek::mcp::Hub::start(vec![silent], std::sync::Arc::default(), work.path());
    let pgid = read_pid(&pidfile).await;
    assert_eq!(status(&hub, "silent").state, ServerState::Starting);
    tokio::time::timeout(Duration::from_secs(5), hub.shutdown())
        .await
        .expect("shutdown does not wait for the startup timeout");
    assert_eq!(
        wait_group_gone(pgid, Duration::from_secs(2)).await,
        Vec::<i32>::new()
    );
    assert!(matches!(
        status(&hub, "silent").state,
        ServerState::Failed(_)
    ));
    // `ready` does not hang on a hub that was shut down while starting.
    tokio::time::timeout(Duration::from_secs(1), hub.ready())
        .await
        .expect("ready");
}

/// The child half of `a_killed_seek_leaves_no_server`: starts a hub, says where its server is,
/// and waits to be killed. Does nothing unless run by that test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_parent_helper() {
    let Some(pidfile) = std::env::var_os("SEEK_TEST_MCP_PIDFILE") else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    // It outlives its stdin closing: only the parent-death signal can end it.
    let server = edge(
        "edge",
        &[
            ("EDGE_PIDFILE", pidfile.to_str().expect("utf-8")),
            ("EDGE_LINGER", "1"),
        ],
    );
    let hub = ready_hub(vec![server], &[], work.path()).await;
    assert_ready(&hub, "edge");
    std::fs::write(work.path().join("ready"), "").expect("write");
    println!("READY");
    // The parent kills this process; the bound only keeps a lost helper from running forever.
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(hub);
}

#[test]
fn a_killed_seek_leaves_no_server() {
    use std::io::BufRead;
    let _ = python();
    let work = tempfile::tempdir().expect("tempdir");
    let pidfile = work.path().join("server.pid");
    let helper = support::test_name!("killed_parent_helper");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", &helper, "--nocapture", "--test-threads=1"])
        .env("SEEK_TEST_MCP_PIDFILE", &pidfile)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the helper");
    let stdout = child.stdout.take().expect("stdout");
    let ready = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("READY"));
    assert!(ready, "the helper never got its server ready");
    let server: i32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid");
    assert!(live_group_members(server).contains(&server));
    child.kill().expect("SIGKILL the helper");
    child.wait().expect("reap the helper");
    let deadline = Instant::now() + Duration::from_secs(5);
    while live_group_members(server).contains(&server) {
        assert!(
            Instant::now() < deadline,
            "the server outlived the killed process"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
