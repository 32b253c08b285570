//! MCP: seek as a client of Model Context Protocol servers, called through ```mcp blocks.
//!
//! Owns the servers' lifetimes (`Hub`: start, list tools, call, shut down), reading a block as a
//! call (`call`), checking its arguments against the tool's input schema (`check`), turning a
//! result into feedback (`render`) and the tool list a system prompt carries (`prompt`). It
//! must not know about the agent loop, the terminal or the approval policy: the `mcp` tool in
//! `crate::tools` runs one block through it when the agent asks.
//!
//! Servers are not sandboxed (they are programs the user configured, like the model server);
//! they start with the credential-stripped environment plus their configured `env`.

pub mod call;
pub mod check;
mod hub;
pub mod prompt;
pub mod render;

use std::sync::Arc;

use serde_json::{Map, Value};

pub use hub::Hub;

/// One tool a server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's name as the server spells it.
    pub name: String,
    /// Its description, as the server gave it (may be empty, may be long).
    pub description: String,
    /// Its `inputSchema` (a JSON schema object; `{"type":"object"}` when the server gave none).
    pub input_schema: Arc<Map<String, Value>>,
}

impl ToolInfo {
    /// `server.tool`, the name a block writes.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.server, self.name)
    }
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Started, not yet initialized and listed.
    Starting,
    /// Initialized; its tools are listed.
    Ready,
    /// It could not be started, initialized or listed (the message names what and why).
    Failed(String),
    /// It was running and has gone (the message says how: exit status, closed stream).
    Exited(String),
    /// `enabled = false`.
    Disabled,
}

/// A server as `seek mcp` and `/mcp` show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    /// `McpServer::describe_transport`.
    pub transport: String,
    pub state: ServerState,
    /// Empty unless ready.
    pub tools: Vec<ToolInfo>,
    /// The protocol version agreed on at initialization.
    pub protocol_version: Option<String>,
    /// The server's own name and version, as it reported them.
    pub server_info: Option<String>,
    /// From start to tools listed, in milliseconds.
    pub startup_ms: Option<u64>,
}

/// One piece of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    /// Base64 data is not kept: its decoded size is.
    Image {
        mime_type: String,
        bytes: usize,
    },
    Audio {
        mime_type: String,
        bytes: usize,
    },
    /// A link to a resource the server has.
    ResourceLink {
        uri: String,
        name: Option<String>,
        mime_type: Option<String>,
    },
    /// An embedded resource: its text when it has one, else the size of its blob.
    Resource {
        uri: String,
        mime_type: Option<String>,
        text: Option<String>,
        blob_bytes: Option<usize>,
    },
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutput {
    /// The result's `isError`: the tool ran and failed.
    pub is_error: bool,
    pub parts: Vec<Part>,
    /// `structuredContent`, when the tool gave it.
    pub structured: Option<Value>,
}

/// Why a call could not be made or did not return a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("no MCP server is named `{0}`")]
    UnknownServer(String),
    #[error("the MCP server `{server}` is not running: {why}")]
    NotRunning { server: String, why: String },
    #[error("`{server}.{tool}` did not answer within {secs} s (the server's tool_timeout_secs)")]
    Timeout {
        server: String,
        tool: String,
        secs: u64,
    },
    #[error("the call was stopped")]
    Cancelled,
    /// The server answered with a JSON-RPC error, or the connection broke mid-call.
    #[error("the MCP server `{server}` failed the call: {message}")]
    Call { server: String, message: String },
}

impl ServerStatus {
    /// The server as the wire carries it to front ends.
    pub fn to_wire(&self) -> crate::wire::McpServerInfo {
        use crate::wire::{McpServerInfo, McpState, McpToolInfo};
        let (state, error) = match &self.state {
            ServerState::Starting => (McpState::Starting, None),
            ServerState::Ready => (McpState::Ready, None),
            ServerState::Failed(why) => (McpState::Failed, Some(why.clone())),
            ServerState::Exited(why) => (McpState::Exited, Some(why.clone())),
            ServerState::Disabled => (McpState::Disabled, None),
        };
        McpServerInfo {
            name: self.name.clone(),
            transport: self.transport.clone(),
            state,
            error,
            tools: self
                .tools
                .iter()
                .map(|tool| McpToolInfo {
                    name: tool.name.clone(),
                    description: first_line(&tool.description),
                    arguments: check::signature(&tool.input_schema),
                })
                .collect(),
        }
    }
}

/// The first non-empty line of `text`, trimmed.
pub fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .to_owned()
}
