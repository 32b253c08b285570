//! One line of a session file: a header, an agent event, or a change to the model's memory.
//!
//! Owns the on-disk shape (JSON Lines, `kind`-tagged) and which events are worth keeping. It must
//! not do I/O.

use serde::{Deserialize, Serialize};

use crate::llm::Role;
use crate::wire::AgentName;
use crate::wire::Event;

/// The format version written in every header.
pub const VERSION: u32 = 1;

// The `Event` variant is the big one and nearly every record is one: boxing it would add an
// allocation per line and save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The first line.
    Header {
        version: u32,
        id: String,
        created_ms: u64,
        /// The absolute work dir the session ran in; empty in files older than this field
        /// (which `-c` never picks).
        #[serde(default)]
        work_dir: String,
        /// `model @ provider url`, credentials masked.
        model: String,
        agent: AgentName,
    },
    Event {
        at_ms: u64,
        event: Event,
    },
    Memory {
        at_ms: u64,
        #[serde(flatten)]
        op: MemoryOp,
    },
}

/// A change to the conversation the model sees (the system prompt is rebuilt from the
/// configuration on resume, so it is not kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MemoryOp {
    BeginTurn { content: String },
    Push { role: Role, content: String },
    ForgetLastTurn,
    Clear,
}

/// Whether an event belongs in the session file. Streaming pieces (deltas, live output) are
/// left out: the completed answer, the block's full result and the turn's end carry them.
pub fn worth_keeping(event: &Event) -> bool {
    if let Event::Step { event, .. } = event {
        return worth_keeping(event);
    }
    !matches!(
        event,
        Event::ReasoningDelta { .. }
            | Event::AnswerDelta { .. }
            | Event::AnswerWasReasoning
            | Event::BlockOutput { .. }
            | Event::Status { .. }
            | Event::Retrying { .. }
            | Event::ModelPreparing { .. }
            | Event::Resumed { .. }
            | Event::SessionList { .. }
            | Event::SessionStarted { .. }
            | Event::ApprovalRequested { .. }
    )
}

impl Record {
    pub fn at_ms(&self) -> Option<u64> {
        match self {
            Record::Header { created_ms, .. } => Some(*created_ms),
            Record::Event { at_ms, .. } | Record::Memory { at_ms, .. } => Some(*at_ms),
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
