//! What every kind of task runs with: the runtime's context (configuration, model, event sink,
//! approvals, sandbox, MCP), how blocks run under it, and the announcement a task starts with.
//!
//! The block loop, the planner and the web agent all stand on this; it must not import any of
//! them, nor decide anything about a round.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::events::EventSink;
use super::task::Task;
use crate::config::{AgentName, Config};
use crate::llm::ChatModel;
use crate::tools::ToolContext;
use crate::wire::Event;

/// What a turn needs from the runtime.
#[derive(Clone)]
pub struct TurnContext {
    pub config: Arc<Config>,
    pub model: Arc<dyn ChatModel>,
    pub events: EventSink,
    /// The model's context window in tokens, once known (the server's word or the config's);
    /// a new model gets a new cell.
    pub context_window: Arc<tokio::sync::OnceCell<u64>>,
    /// The configuration with what the server said of the model (`size::sized`), once known;
    /// a new model gets a new cell.
    pub sized: Arc<tokio::sync::OnceCell<Arc<Config>>>,
    /// Whether blocks run without asking, and the user's answers when they do not.
    pub approvals: super::approval::ApprovalGate,
    /// The confinement of blocks (`None`: sandbox off).
    pub sandbox: Option<Arc<crate::exec::sandbox::Sandbox>>,
    /// Credential-like variables blocks must not inherit.
    pub env_remove: Arc<Vec<std::ffi::OsString>>,
    /// The configured MCP servers (`None`: none are configured).
    pub mcp: Option<Arc<crate::mcp::Hub>>,
}

/// How blocks run: the work dir, the sandbox, the limits, the withheld variables; the user's
/// own commands (`!cmd`) run under exactly the same.
pub(super) fn tool_context(ctx: &TurnContext, cancel: &CancellationToken) -> ToolContext {
    let config = &ctx.config;
    let mut tool_ctx = ToolContext::new(config.work_dir.value.clone());
    tool_ctx.output_limit = usize::try_from(config.output_limit_bytes.value).unwrap_or(usize::MAX);
    tool_ctx.cancel = cancel.clone();
    tool_ctx.sandbox = ctx.sandbox.clone();
    tool_ctx.env_remove = Arc::clone(&ctx.env_remove);
    tool_ctx.limits = config.safety.limits();
    tool_ctx.safe_mode = config.safety.safe_mode.value;
    tool_ctx.own_files = Arc::new(crate::tools::OwnFiles::new(config.own_files()));
    tool_ctx.refuse_no_code = config.adaptations().refuse_no_code;
    tool_ctx
}

/// Tells the front ends a task starts: `TurnStarted`, then the router's choice, the attached
/// files and the ones refused. Returns the message the model gets.
pub(super) fn announce(events: &EventSink, turn: u64, agent: AgentName, task: Task) -> String {
    events.emit(Event::TurnStarted {
        turn,
        prompt: task.prompt,
        agent,
    });
    if let Some(route) = task.route {
        events.emit(Event::Routed { route });
    }
    if !task.attached.is_empty() {
        events.emit(Event::Attached {
            files: task.attached,
        });
    }
    if !task.refused.is_empty() {
        events.emit(Event::Error {
            message: task.refused.join("; "),
        });
    }
    task.message
}
