//! seek: a terminal agent shell. A model answers in prose with fenced code blocks; seek runs them.
//!
//! The library holds every part so tests and benchmarks reach them; `main.rs` is a thin edge.

pub mod agent;
pub mod agents;
pub mod cli;
pub mod config;
pub mod exec;
pub mod files;
pub mod headless;
pub mod llm;
pub mod local;
pub mod log;
pub mod mcp;
pub mod mcp_command;
pub mod secrets;
pub mod serve;
pub mod session;
pub mod tls;
pub mod tools;
pub mod tui;
pub mod web;

/// A boxed future, so async methods can live behind trait objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

// The bottom floor (crates/seek-wire), under the paths seek has always used for it.
pub use seek_wire::{protocol, terminal_safe, tool_kind, wire};
