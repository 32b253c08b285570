//! `[mcp_servers.NAME]` tables and `[tools.mcp]`: the MCP servers seek starts and which agents
//! may call them.
//!
//! Owns the shape users know from Codex and Claude Code (`command`/`args`/`env` for a stdio
//! server, `url` for streamable HTTP, the two timeouts) and its validation. It must not start
//! anything: `crate::mcp` does.

use std::time::Duration;

use crate::wire::AgentName;

/// How long a server may take to start and list its tools, unless configured.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 10;
/// How long one tool call may take, unless configured.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;

/// The agents that get the `mcp` tool when `[tools.mcp] agents` is not set. The planner's steps
/// run these agents, so they get it too.
pub const DEFAULT_MCP_AGENTS: [AgentName; 2] = [AgentName::Coder, AgentName::File];

/// Every configured MCP server, and who may call them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpSettings {
    /// In the file's order.
    pub servers: Vec<McpServer>,
    /// The agents whose prompt lists the servers' tools and whose blocks may call them.
    pub agents: Vec<AgentName>,
}

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The table's name: letters, digits, `_` and `-` (no `.`: `server.tool` splits on it).
    pub name: String,
    pub transport: McpTransport,
    /// Variables set for a stdio server on top of the credential-stripped environment, in
    /// the file's order.
    pub env: Vec<(String, String)>,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// `enabled = false` keeps a server configured but not started.
    pub enabled: bool,
}

/// How seek talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Where the server runs (default: the work dir).
        cwd: Option<std::path::PathBuf>,
    },
    /// The streamable HTTP transport.
    Http {
        url: String,
        /// The variable holding a bearer token sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
    },
}

impl McpServer {
    /// One line saying how the server is reached: `stdio: python3 -m mcp_server_time` or
    /// `http: http://127.0.0.1:8931/mcp`.
    pub fn describe_transport(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => {
                let mut line = format!("stdio: {command}");
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            McpTransport::Http { url, .. } => format!("http: {url}"),
        }
    }
}
