//! A SIGKILLed seek leaves the grandchildren of a stdio server running: the parent-death
//! signal reaches only the server's leader, not the rest of its process group (a launcher such
//! as `npx`/`uvx`/`sh -c` whose real server is its child, or any helper a server started).

#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::{Duration, Instant};

use mcp_support::*;

/// The child half: a hub with one server started through a launcher (`sh -c`, as `npx` does),
/// whose real server is a child of the launcher and a helper `sleep` runs beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_killed_parent_helper() {
    let Some(pidfile) = std::env::var_os("SEEK_ATTACK_MCP_PIDFILE") else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let python = python();
    let script = edge_script();
    let script = script.to_str().expect("utf-8");
    let server = stdio(
        "launched",
        "sh",
        &[
            "-c",
            &format!(
                "echo $$ > '{}'; sleep 600 & '{python}' '{script}'; wait",
                pidfile.to_str().expect("utf-8")
            ),
        ],
    );
    let hub = ready_hub(vec![server], &[], work.path()).await;
    assert_ready(&hub, "launched");
    println!("READY");
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(hub);
}

#[test]
fn attack_a_killed_seek_leaves_no_process_of_a_launched_server() {
    use std::io::BufRead;
    let _ = python();
    let work = tempfile::tempdir().expect("tempdir");
    let pidfile = work.path().join("server.pid");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "attack_killed_parent_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SEEK_ATTACK_MCP_PIDFILE", &pidfile)
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
    let group: i32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid");
    assert!(live_group_members(group).len() >= 3, "sh, sleep, python");
    child.kill().expect("SIGKILL the helper");
    child.wait().expect("reap the helper");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = live_group_members(group);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = live_group_members(group);
    }
    // Clean up whatever the bug left behind before failing.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(
        left.is_empty(),
        "processes of the server's group outlived the killed seek: {left:?}"
    );
}

mod support;
#[path = "support/fake_model.rs"]
mod fake_model;

/// SIGTERM (`timeout`, CI cancelling a job, systemd, `kill`) to headless `seek -p` or `seek mcp`
/// is not handled: seek dies by the signal's default action, so only the parent-death signal
/// reaches the servers — their leaders — and whatever a server started keeps running. (The TUI
/// handles SIGTERM; `seek mcp` handles only Ctrl+C.)
#[test]
fn attack_sigterm_to_headless_seek_or_seek_mcp_ends_every_server_process() {
    use fake_model::{FakeModel, Reply};
    let model = FakeModel::start(vec![Reply::text("done")]);
    for mode in ["-p", "mcp"] {
        let sb = support::Sandbox::new();
        let pidfile = sb.path("server.pid");
        // A server that never answers initialize (seek waits for it), with a helper beside it.
        sb.write_config(&format!(
            "[mcp_servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ > '{}'; sleep 600 & cat\"]\nstartup_timeout_secs = 60\n",
            pidfile.display()
        ));
        let mut cmd = if mode == "mcp" {
            let mut c = sb.seek();
            c.arg("mcp");
            c
        } else {
            sb.seek_at(&model.url(), &["-p", "hello"])
        };
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn seek");
        let deadline = Instant::now() + Duration::from_secs(30);
        let group: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            assert!(Instant::now() < deadline, "{mode}: the server never started");
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(500));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("SIGTERM seek");
        child.wait().expect("reap seek");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut left = live_group_members(group);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            left = live_group_members(group);
        }
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(group),
            nix::sys::signal::Signal::SIGKILL,
        );
        assert!(
            left.is_empty(),
            "{mode}: processes of the server's group outlived a SIGTERMed seek: {left:?}"
        );
    }
}
