//! The built-in engine: the tokenizer, the engine on the real model, bad model files, the
//! download and its attacks (`seek pull`), and the whole run end to end.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test local local_tokenizer::`, one test with
//! `cargo test --test local -- --exact local_tokenizer::<name>`.

#[path = "../support/file_server.rs"]
mod file_server;
#[path = "../support/gguf.rs"]
mod gguf;
#[path = "../support/pty.rs"]
mod pty;
#[path = "../support/mod.rs"]
mod support;

mod local_bad_input;
mod local_download_attacks;
mod local_e2e;
mod local_engine;
mod local_prefixes;
mod local_tokenizer;
mod local_warm;
mod pull;
