//! The MCP servers as front ends show them (`McpServers`, the answer to `ListMcp`).
//!
//! Plain serde data; it must not decide anything.

use serde::{Deserialize, Serialize};

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    pub name: String,
    /// `stdio: python3 -m mcp_server_time` or `http: http://…` (credentials never shown).
    pub transport: String,
    pub state: McpState,
    /// Why it failed or exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its tools, when ready.
    #[serde(default)]
    pub tools: Vec<McpToolInfo>,
}

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpState {
    Starting,
    Ready,
    Failed,
    Exited,
    Disabled,
}

/// One tool of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolInfo {
    pub name: String,
    /// Its first line, trimmed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its arguments on one line (`timezone: string, dst?: boolean`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arguments: String,
}
