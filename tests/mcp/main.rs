//! MCP: servers over stdio and HTTP, their lifecycle and edge cases, structured output, MCP
//! blocks, the agent and the command line with MCP, and the attacks through MCP.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test mcp mcp_lifecycle::`, one test with
//! `cargo test --test mcp -- --exact mcp_lifecycle::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/mcp.rs"]
mod mcp_support;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/runtime.rs"]
mod runtime;
#[path = "../support/mod.rs"]
mod support;

mod attack_mcp;
mod attack_mcp_init;
mod attack_mcp_kill;
mod attack_mcp_names;
mod mcp_agent;
mod mcp_blocks;
mod mcp_cli;
mod mcp_edge;
mod mcp_lifecycle;
mod mcp_servers;
mod mcp_structured;
