//! SIGTERM (`timeout`, a cancelled CI job, systemd, `kill`) to headless `seek -p` or `seek mcp`
//! ends every process of every MCP server, a server's own children included: seek handles the
//! signal and ends the servers' process groups before it exits.

use crate::mcp_support;

use std::time::{Duration, Instant};

use mcp_support::*;

use crate::fake_model;
use crate::support;

/// SIGTERM to `seek -p` or `seek mcp` while a server with a helper child runs: nothing of the
/// server's group is left.
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
            assert!(
                Instant::now() < deadline,
                "{mode}: the server never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // The helper `sleep` runs beside the server: wait for the group to hold it.
        while live_group_members(group).len() < 2 {
            assert!(
                Instant::now() < deadline,
                "{mode}: the helper never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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
