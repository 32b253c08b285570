//! The wire every layer shares: commands in, events out, and the records they carry. Plain serde
//! data, so the headless `--json` mode is the event stream serialised and tests assert on events.
//!
//! The bottom of the dependency graph: it imports nothing of seek's, so the agent runtime, the
//! sessions, the front ends and the HTTP API all read it without importing each other. It must
//! not decide anything.

mod command;
mod event;
mod exit;
mod json;
mod mcp;
mod names;
mod plan;
mod records;
mod web;

pub use command::{ApprovalDecision, ApprovalId, Command};
pub use event::{AnswerFinish, Event, Outcome, Status};
pub use exit::Exit;
pub use json::event_json;
pub use mcp::{McpServerInfo, McpState, McpToolInfo};
pub use names::{AgentName, Approval, Runs};
pub use plan::{PlanStep, Route, StepStatus};
pub use records::{
    Attachment, BlockRecord, ModelEntry, NotRun, RoundUsage, SessionEntry, TurnUsage,
};
pub use web::{Form, FormField, PageKind, WebField, WebHit, WebTrail};
