//! The full-screen interface in a real pseudo-terminal: screens, commands, input, output,
//! plans, sizes, its MCP and web views, and the built-in engine's download in it.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test tui tui_output::`, one test with
//! `cargo test --test tui -- --exact tui_output::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/file_server.rs"]
mod file_server;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/pty.rs"]
mod pty;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/web_site.rs"]
mod web_site;

mod local_tui;
mod tui;
mod tui_commands;
mod tui_input;
mod tui_mcp;
mod tui_output;
mod tui_plan;
mod tui_sizes;
mod tui_web;
