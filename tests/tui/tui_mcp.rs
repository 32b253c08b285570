//! `/mcp` in the terminal UI end to end: the real binary in a pseudo-terminal against the fake
//! model server, read through a vt100 screen. A server whose command does not exist is
//! announced at start-up in one line and shown as failed in the `/mcp` overlay; with none
//! configured, the overlay says how to add one. Waits are on the screen, never sleeps.

use crate::support;

use crate::fake_model;
use crate::pty;

use fake_model::FakeModel;
use pty::{Tui, keys};
use support::Sandbox;

const ESC: &[u8] = b"\x1b";

fn start(sb: &Sandbox, server: &FakeModel) -> Tui {
    std::fs::create_dir_all(sb.path("work")).expect("the work dir");
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tui = Tui::start(sb, &args, 100, 30);
    tui.wait_for_text("ask seek to do something");
    tui
}

fn quit(mut tui: Tui) {
    tui.send(keys::CTRL_D);
    let (code, _) = tui.wait_exit();
    assert_eq!(code, 0);
}

#[test]
fn mcp_without_servers_says_how_to_add_one_and_esc_closes() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start(&sb, &server);
    tui.type_text("/mc");
    tui.wait_for_text("the MCP servers, their state and tools");
    tui.send(keys::ENTER);
    tui.wait_for("the overlay with the hint", |s| {
        s.contains("MCP servers · lines") && s.contains("no MCP servers are configured")
    });
    tui.send(ESC);
    tui.wait_for("the overlay closed", |s| !s.contains("MCP servers · lines"));
    quit(tui);
}

// Needs the real hub (branch mcp-hub) and the runtime's start-up report (the lead's wiring):
// until then the runtime lists no servers.
#[test]
fn a_server_that_cannot_start_is_announced_and_shown_failed_in_mcp() {
    let sb = Sandbox::new();
    sb.write_config(
        "[mcp_servers.ghost]\ncommand = \"seek-test-no-such-mcp-server\"\nargs = [\"--stdio\"]\n",
    );
    let server = FakeModel::start(Vec::new());
    let mut tui = start(&sb, &server);
    tui.wait_for("the start-up notice", |s| {
        s.contains("MCP server `ghost` failed") && s.contains("/mcp for details")
    });
    tui.type_text("/mcp");
    tui.send(keys::ENTER);
    let screen = tui.wait_for("ghost listed as failed", |s| {
        s.contains("MCP servers · lines") && s.contains("ghost  failed  stdio: seek-test-no-such")
    });
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("ghost  failed"))
        .expect("the server's line");
    let why = lines.get(at + 1).copied().unwrap_or_default();
    assert!(
        why.starts_with("   ") && !why.trim().is_empty(),
        "the reason is shown under it:\n{screen}"
    );
    tui.send(ESC);
    tui.wait_for("the overlay closed", |s| !s.contains("MCP servers · lines"));
    quit(tui);
}
