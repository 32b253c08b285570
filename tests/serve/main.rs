//! `seek serve`: its API (insta snapshots in `tests/serve/snapshots/`), connections, exit,
//! lifecycle and restarts, the in-process server, screenshots, AgenticSeek's real front end
//! and its requests, and the attacks on all of it.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test serve serve_api::`, one test with
//! `cargo test --test serve -- --exact serve_api::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/frontend.rs"]
mod frontend;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/runtime.rs"]
mod runtime;
#[path = "../support/serve.rs"]
mod serve;
#[path = "../support/serve_attack.rs"]
mod serve_attack;
#[path = "../support/serve_process.rs"]
mod serve_process;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/web_site.rs"]
mod web_site;

mod attack_serve;
mod attack_serve_abuse;
mod attack_serve_connections;
mod attack_serve_races;
mod serve_api;
mod serve_connections;
mod serve_exit;
mod serve_frontend;
mod serve_frontend_requests;
mod serve_inprocess;
mod serve_lifecycle;
mod serve_restarts;
mod serve_screenshot;
