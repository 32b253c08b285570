//! Running blocks: execution, its memory and output bounds, isolation, the sandbox, sockets,
//! secrets, the work dir, and an attacker's first hour against them.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test exec sandbox::`, one test with
//! `cargo test --test exec -- --exact sandbox::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/measure.rs"]
mod measure;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/pty.rs"]
mod pty;
#[path = "../support/runtime.rs"]
mod runtime;
#[path = "../support/mod.rs"]
mod support;

mod attacker_first_hour;
mod bounds;
mod exec;
mod exec_memory;
mod isolation;
mod sandbox;
mod secrets;
mod sockets;
mod work_dir;
