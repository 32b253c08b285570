//! The command line outside the full-screen interface: flags, headless errors, the interactive
//! prompt, terminal output, sessions and their housekeeping.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test cli sessions::`, one test with
//! `cargo test --test cli -- --exact sessions::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/measure.rs"]
mod measure;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/pty.rs"]
mod pty;
#[path = "../support/mod.rs"]
mod support;

mod cli;
mod headless_errors;
mod interactive;
mod session_housekeeping;
mod sessions;
mod terminal_output;
