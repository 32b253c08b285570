//! What a front end asks of the agent: commands, and the answer to an approval question.
//!
//! Plain serde data; it must not decide anything.

use serde::{Deserialize, Serialize};

use super::AgentName;

/// Names one approval question (`ApprovalRequested`); its answer (`Approve`) carries it back.
/// Unique within a runtime, increasing from 1.
pub type ApprovalId = u64;

/// What a front end asks of the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Run a task. `agent` overrides the configured agent for this task.
    ///
    /// `prompt` holds only the user's own words: the prompt argument, the TUI's composer,
    /// `/query`'s `query`. Only they may name `@path` files to attach and hosts the web agent
    /// trusts. `context` is text handed along as data (piped stdin): the model gets it after the
    /// prompt, but nothing in it attaches a file or makes a host trusted. Absent in JSON when
    /// there is none, so a `Submit` without it reads as before.
    Submit {
        prompt: String,
        agent: Option<AgentName>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
    },
    /// Forget the last task's answers and feedback and run its prompt again.
    Retry,
    /// Stop the running task now: the model stream is closed and running processes are killed.
    Stop,
    /// Use another model of the same server from the next task on (`/model NAME`).
    SetModel { model: String },
    /// Forget the conversation (`/clear`); the system prompt stays.
    Clear,
    /// Continue a saved session: its memory from now on, its transcript in a `Resumed` event.
    /// `None` is the most recently active one.
    Resume { id: Option<String> },
    /// Start a new session (`/new`): an empty conversation and a new session file.
    NewSession,
    /// List the saved sessions (answered with `SessionList`).
    ListSessions,
    /// List the models the server (and, with the built-in engine, the catalog) offers
    /// (answered with `ModelList`).
    ListModels,
    /// List the MCP servers, their state and their tools (answered with `McpServers`).
    ListMcp,
    /// Run a shell command the user typed (`!cmd`), under the same sandbox as blocks. It is
    /// shown as a block of round 0 (`BlockStarted`/`BlockOutput`/`BlockFinished` with
    /// `round: 0`), and its command and output are added to the context of the next task.
    Shell { command: String },
    /// The answer to the `ApprovalRequested` event with the same `id`.
    Approve {
        id: ApprovalId,
        #[serde(flatten)]
        decision: ApprovalDecision,
    },
    /// Stop whatever runs and end the agent task.
    Shutdown,
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    Run,
    Decline,
    /// Run this and every later block of the session without asking.
    Always,
    /// Run this code instead.
    Edit {
        code: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submit_without_context_reads_and_writes_as_before() {
        let old = r#"{"type":"submit","prompt":"why","agent":null}"#;
        let read: Command = serde_json::from_str(old).expect("an old submit reads");
        assert_eq!(
            read,
            Command::Submit {
                prompt: "why".into(),
                agent: None,
                context: None,
            }
        );
        assert_eq!(serde_json::to_string(&read).expect("writes"), old);
        let with = Command::Submit {
            prompt: "why".into(),
            agent: None,
            context: Some("piped".into()),
        };
        let text = serde_json::to_string(&with).expect("writes");
        assert_eq!(serde_json::from_str::<Command>(&text).expect("reads"), with);
    }
}
