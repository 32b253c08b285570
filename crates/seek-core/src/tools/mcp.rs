//! The `mcp` tool: a block names a server's tool and its arguments; the call's result is the
//! block's feedback (`[success]`, or `[failure]` when the result says `isError`).
//!
//! Everything the model can get wrong (an unreadable block, an unknown tool, a missing or
//! mistyped argument) is answered before anything is sent, with what would have been right.
//! It must not start servers (the runtime's `Hub` does) or decide about approval (the agent
//! asks before running any block).

use std::sync::Arc;
use std::time::Instant;

use super::{OutputSink, Tool, ToolClass, ToolContext, ToolOutcome, ToolSpec};
use crate::BoxFuture;
use crate::exec::Ending;
use crate::mcp::{Hub, McpError, ServerState, call, check, render};
use crate::protocol::{self, Block};
use crate::tool_kind::ToolKind;

/// How the model is reminded of the block's shape after a block that could not be read.
const SHAPE: &str = "Write the tool's name (`server.tool`) on the first line of the ```mcp block, then one `key: value` line per argument, or the arguments as one JSON object.";

/// The note before a result whose call carried arguments the schema does not list (it lets
/// them through, so they were sent): the model learns of a misspelled optional argument that
/// the server may have ignored.
fn undeclared_note(undeclared: &[String]) -> String {
    format!(
        "(note: {}; sent as given, as the tool's schema allows other arguments)",
        undeclared.join("; ")
    )
}

/// mcp's declaration: calls a tool of a configured MCP server. It is not built from the
/// configuration: it needs the running servers (`Toolbox::with_mcp`).
pub const TOOL: ToolSpec = ToolSpec {
    kind: ToolKind::Mcp,
    class: ToolClass::Mcp,
    line_comment: None,
    build: |_, _| None,
};

/// Calls the tools of the running MCP servers.
pub struct McpTool {
    hub: Arc<Hub>,
}

impl McpTool {
    pub fn new(hub: Arc<Hub>) -> Self {
        Self { hub }
    }

    async fn call(&self, block: &Block, ctx: &ToolContext) -> ToolOutcome {
        let mut request = match call::parse_call(&block.code) {
            Ok(request) => request,
            Err(err) => {
                return ToolOutcome::failed_without_process(format!(
                    "the mcp block could not be read: {err}\n{SHAPE}"
                ));
            }
        };
        // The servers may still be starting when the first block arrives; Stop ends the wait.
        tokio::select! {
            () = self.hub.ready() => {}
            () = ctx.cancel.cancelled() => {
                let mut outcome = ToolOutcome::failed_without_process(McpError::Cancelled.to_string());
                outcome.ending = Some(Ending::Stopped);
                return outcome;
            }
        }
        let tools = self.hub.tools();
        if tools.is_empty() {
            return ToolOutcome::failed_without_process(self.none_ready());
        }
        let tool = match call::resolve(&request, &tools) {
            Ok(tool) => tool.clone(),
            Err(why) => {
                return ToolOutcome::failed_without_process(
                    self.server_down(&request.name).unwrap_or(why),
                );
            }
        };
        let from_lines = request.from_lines;
        let undeclared = match check::check_arguments_noting(
            &tool.input_schema,
            &mut request.arguments,
            from_lines,
        ) {
            Ok(undeclared) => undeclared,
            Err(why) => {
                return ToolOutcome::failed_without_process(format!(
                    "{} was not called: {why}",
                    tool.qualified()
                ));
            }
        };
        let started = Instant::now();
        let called = self
            .hub
            .call(&tool.server, &tool.name, request.arguments, &ctx.cancel)
            .await;
        let mut outcome = match called {
            Ok(output) => {
                let mut text = render::render(&output, ctx.output_limit);
                if !undeclared.is_empty() {
                    text = format!("{}\n{text}", undeclared_note(&undeclared));
                }
                let success = !output.is_error;
                let mut outcome = ToolOutcome::failed_without_process(String::new());
                outcome.success = success;
                outcome.feedback = protocol::feedback(success, &text);
                outcome.output = text;
                outcome
            }
            Err(err) => {
                let ending = match &err {
                    McpError::Cancelled => Some(Ending::Stopped),
                    McpError::Timeout { secs, .. } => Some(Ending::TimedOut { after_secs: *secs }),
                    _ => None,
                };
                let mut outcome = ToolOutcome::failed_without_process(err.to_string());
                outcome.ending = ending;
                outcome
            }
        };
        outcome.duration = started.elapsed();
        outcome
    }

    /// When `name` is `server.tool` of a server that is not running, why it is not: a clearer
    /// answer than "no such tool".
    fn server_down(&self, name: &str) -> Option<String> {
        let statuses = self.hub.statuses();
        let status = statuses.iter().find(|status| {
            name.strip_prefix(status.name.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
        })?;
        let why = match &status.state {
            ServerState::Failed(why) | ServerState::Exited(why) => why.clone(),
            ServerState::Disabled => "it is disabled in the configuration".to_owned(),
            ServerState::Starting => "it is still starting".to_owned(),
            ServerState::Ready => return None,
        };
        Some(
            McpError::NotRunning {
                server: status.name.clone(),
                why,
            }
            .to_string()
                + ". Do the task without it.",
        )
    }

    /// Why no tool can be called: every server's state, in one message.
    fn none_ready(&self) -> String {
        let states: Vec<String> = self
            .hub
            .statuses()
            .iter()
            .map(|status| match &status.state {
                ServerState::Failed(why) | ServerState::Exited(why) => {
                    format!("`{}`: {why}", status.name)
                }
                ServerState::Ready => format!("`{}`: ready, but it has no tools", status.name),
                ServerState::Starting => format!("`{}`: still starting", status.name),
                ServerState::Disabled => format!("`{}`: disabled", status.name),
            })
            .collect();
        if states.is_empty() {
            "no MCP server is configured here: answer without the mcp tool".to_owned()
        } else {
            format!(
                "no MCP tool can be called: {}. Answer without the mcp tool.",
                states.join("; ")
            )
        }
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
        Box::pin(async move {
            let outcome = self.call(block, ctx).await;
            if !outcome.output.is_empty() {
                on_output(&outcome.output);
            }
            outcome
        })
    }
}
