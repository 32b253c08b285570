//! The records events carry: a block's result, why a block did not run, token counts, and the
//! entries of pickers (sessions, models, attachments).
//!
//! Plain serde data; it must not decide anything.

use serde::{Deserialize, Serialize};

/// One executed (or not run) block, in AgenticSeek's result shape plus what seek knows more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockRecord {
    pub round: u32,
    pub index: usize,
    pub tool_type: String,
    pub block: String,
    pub save_path: Option<String>,
    pub feedback: String,
    pub success: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stopped: bool,
    /// The block was not run because an earlier block of the same reply failed (or it was only
    /// shown, under approval = never).
    pub skipped: bool,
    /// Milliseconds, with microsecond precision.
    pub duration_ms: f64,
    pub output: String,
    /// Why the block did not run, or did not run to its end, when that is not its exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<NotRun>,
}

/// Why a block did not run (or, `Interrupted`, did not finish).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotRun {
    /// An earlier block of the same reply failed.
    EarlierFailure,
    /// The task was stopped before the block's turn.
    Stopped,
    /// The user said no (approval = ask).
    Declined,
    /// Blocks are shown, not run (approval = never).
    ShownOnly,
    /// Refused before running: the block waits for interactive input or starts a full-screen
    /// or prompting program (python `input()`, `vim`, `less`, a bare REPL, …).
    Interactive,
    /// Refused before running by safe mode's blocklist.
    SafeMode,
    /// Not run because the reply was cut (the repetition guard, or `max_tokens`).
    ReplyCut,
    /// seek itself stopped while the block ran (found on resuming a session).
    Interrupted,
    /// Not run again: the same code already failed earlier in the task (the model was told
    /// that, with the error, instead).
    Repeated,
}

/// Tokens of one round's request and reply (the server's counts, or seek's estimate when the
/// server gives none), and how long the reply streamed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundUsage {
    /// Tokens of the request: how much of the context window the conversation fills.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Milliseconds from the reply's first token to its last (not the wait before it).
    pub streaming_ms: f64,
    /// The model's context window in tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The counts are seek's estimate (the server reported none).
    #[serde(default)]
    pub estimated: bool,
}

/// A task's tokens, summed over its rounds (`--json`'s `done` carries it as `usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnUsage {
    /// Summed over the rounds' requests.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The last request's prompt tokens: how full the context window is now.
    pub context_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Summed over the rounds: generation speed is `completion_tokens / streaming_ms`.
    pub streaming_ms: f64,
    #[serde(default)]
    pub estimated: bool,
}

/// One saved session, for pickers (`SessionList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEntry {
    pub id: String,
    pub last_activity_ms: u64,
    pub agent: String,
    pub turns: Option<u64>,
    pub first_prompt: String,
    /// The directory the session worked in (`None` for sessions older than this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
}

/// One model a picker offers (`ModelList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelEntry {
    pub name: String,
    /// A short description (the catalog's size and state, for the built-in engine).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// A file attached to a prompt with `@path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// As the user wrote it.
    pub path: String,
    /// Bytes of the file put into the prompt.
    pub bytes: u64,
    /// Only the file's start was attached (it was larger than the bound).
    pub truncated: bool,
}
