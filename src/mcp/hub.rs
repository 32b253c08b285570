//! The running MCP servers: started together, each on its own, so one that fails or dies leaves
//! the others working; every stdio server's process group ends with seek.
//!
//! It must not parse blocks or render results.

use std::ffi::OsString;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{CallOutput, McpError, ServerStatus, ToolInfo};
use crate::config::McpServer;

/// Every configured server, started.
pub struct Hub {
    servers: Vec<McpServer>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("servers", &self.servers.len())
            .finish()
    }
}

impl Hub {
    /// Starts every enabled server in the background (on the current tokio runtime) and
    /// returns at once. `env_remove` are the credential variables servers do not inherit.
    pub fn start(
        servers: Vec<McpServer>,
        env_remove: Arc<Vec<OsString>>,
        work_dir: &std::path::Path,
    ) -> Arc<Hub> {
        let _ = (env_remove, work_dir);
        Arc::new(Hub { servers })
    }

    /// Waits until every server is ready or has failed (each bounded by its startup timeout).
    pub async fn ready(&self) {}

    /// Every configured server, in the configuration's order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        Vec::new()
    }

    /// The tools of the ready servers, by server in the configuration's order.
    pub fn tools(&self) -> Vec<ToolInfo> {
        Vec::new()
    }

    /// Calls `server`'s `tool` with `arguments`, bounded by the server's tool timeout; `cancel`
    /// ends the wait at once (and tells the server the request was cancelled).
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, McpError> {
        let _ = (tool, arguments, cancel);
        Err(McpError::UnknownServer(server.to_owned()))
    }

    /// Ends every server: stdio servers' process groups are killed, HTTP sessions closed.
    pub async fn shutdown(&self) {}
}
