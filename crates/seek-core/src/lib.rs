//! seek's core: everything between the plain data below (seek-wire) and the front ends above
//! (seek-tui, seek-serve, the binary's headless mode and CLI).
//!
//! Owns the agent runtime (`agent`) and the agents (`agents`), the tools and how processes run
//! (`tools`, `exec`), the model providers (`llm`, `local` over seek-engine, `model_factory`
//! choosing between them), MCP (`mcp`), the web agent's search and readers (`web`), sessions,
//! configuration, secrets and the log. It must not draw, serve HTTP or parse the command line:
//! front ends consume its event stream. Its modules keep to the floors of `scripts/ladder`
//! (checked by `scripts/check-ladder`).

pub mod agent;
pub mod agents;
pub mod catalog;
pub mod config;
pub mod exec;
pub mod files;
pub mod llm;
pub mod local;
pub mod log;
pub mod mcp;
pub mod model_factory;
pub mod secrets;
pub mod session;
pub mod tls;
pub mod tools;
pub mod web;

// The floor below, under the paths the core has always used for it (`crate::wire`, …).
pub use seek_wire::{protocol, terminal_safe, tool_kind, wire};

/// A boxed future, so async methods can live behind trait objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
