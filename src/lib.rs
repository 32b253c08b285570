//! seek: a terminal agent shell. A model answers in prose with fenced code blocks; seek runs them.
//!
//! The binary's own layer: the command line (`cli`), the headless mode (`headless`) and the
//! subcommands and modes (`commands`, one file each). Every other part lives in a crate of its own, one floor
//! each (docs/architecture.md), re-exported here under the paths seek has always used, so tests
//! and benchmarks reach every part through `seek::`.

pub mod cli;
pub mod commands;
pub mod headless;

pub use seek_core::{
    BoxFuture, agent, agents, config, exec, files, llm, local, log, mcp, model_factory, secrets,
    session, tls, tools, web,
};
pub use seek_serve as serve;
pub use seek_tui as tui;
pub use seek_wire::{protocol, terminal_safe, tool_kind, wire};
