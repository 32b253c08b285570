//! The `mcp` tool: a block names a server's tool and its arguments; the call's result is the
//! block's feedback.
//!
//! It must not start servers (the runtime's `Hub` does) or decide about approval (the agent
//! asks before running any block).

use std::sync::Arc;

use super::{OutputSink, Tool, ToolContext, ToolOutcome};
use crate::BoxFuture;
use crate::mcp::Hub;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;

/// Calls the tools of the running MCP servers.
pub struct McpTool {
    hub: Arc<Hub>,
}

impl McpTool {
    pub fn new(hub: Arc<Hub>) -> Self {
        Self { hub }
    }
}

impl Tool for McpTool {
    fn kind(&self) -> ToolKind {
        ToolKind::Mcp
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        let _ = (&self.hub, block, ctx, on_output);
        Box::pin(async { ToolOutcome::failed_without_process("not implemented".into()) })
    }
}
