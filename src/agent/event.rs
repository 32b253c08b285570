//! The agent's wire: commands in, events out. Plain data (serde), so the headless `--json` mode
//! is the event stream serialised and tests assert on events.
//!
//! Owns the shapes only; it must not decide anything.

use serde::{Deserialize, Serialize};

use crate::config::AgentName;
use crate::llm::FinishReason;

/// Names one approval question (`ApprovalRequested`); its answer (`Approve`) carries it back.
/// Unique within a runtime, increasing from 1.
pub type ApprovalId = u64;

/// What a front end asks of the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Run a task. `agent` overrides the configured agent for this task.
    Submit {
        prompt: String,
        agent: Option<AgentName>,
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
    /// Run a shell command the user typed (`!cmd`), under the same sandbox as blocks. It is
    /// shown as a block of round 0 (`BlockStarted`/`BlockOutput`/`BlockFinished` with
    /// `round: 0`), and its command and output are added to the context of the next task.
    Shell { command: String },
    /// The answer to the `ApprovalRequested` event with the same `id`.
    Approve {
        id: ApprovalId,
        #[serde(flatten)]
        decision: super::approval::Decision,
    },
    /// Stop whatever runs and end the agent task.
    Shutdown,
}

/// What the agent is doing, for status lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    Thinking,
    Executing { tool: String },
    Correcting,
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model answered without a tool block, or the last round succeeded (coder rule).
    Done,
    /// The model asked a question (`REQUEST_CLARIFICATION`).
    NeedsClarification,
    /// `max_attempts` failed rounds.
    GaveUp,
    /// `max_rounds` rounds without finishing.
    RoundLimit,
    /// Stopped by the user.
    Stopped,
    /// The model server failed.
    ModelError,
}

impl Outcome {
    pub fn success(self) -> bool {
        self == Outcome::Done
    }
}

/// How a round's reply ended. On the wire it is a string: `stop`, `length`, `repetition`, or
/// what the server said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum AnswerFinish {
    /// The model finished (also when the server did not say).
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The repetition guard cut a looping reply.
    Repetition,
    /// Anything else the server said.
    Other(String),
}

impl AnswerFinish {
    pub fn as_str(&self) -> &str {
        match self {
            AnswerFinish::Stop => "stop",
            AnswerFinish::Length => "length",
            AnswerFinish::Repetition => "repetition",
            AnswerFinish::Other(other) => other,
        }
    }
}

impl From<String> for AnswerFinish {
    fn from(name: String) -> Self {
        match name.as_str() {
            "stop" => AnswerFinish::Stop,
            "length" => AnswerFinish::Length,
            "repetition" => AnswerFinish::Repetition,
            _ => AnswerFinish::Other(name),
        }
    }
}

impl From<AnswerFinish> for String {
    fn from(finish: AnswerFinish) -> Self {
        match finish {
            AnswerFinish::Other(other) => other,
            known => known.as_str().to_owned(),
        }
    }
}

impl From<Option<&FinishReason>> for AnswerFinish {
    fn from(reason: Option<&FinishReason>) -> Self {
        match reason {
            None | Some(FinishReason::Stop) => AnswerFinish::Stop,
            Some(FinishReason::Length) => AnswerFinish::Length,
            Some(FinishReason::Repetition(_)) => AnswerFinish::Repetition,
            Some(FinishReason::Other(other)) => AnswerFinish::Other(other.clone()),
        }
    }
}

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

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    TurnStarted {
        turn: u64,
        prompt: String,
        agent: AgentName,
    },
    Status {
        #[serde(flatten)]
        status: Status,
        round: u32,
        /// Failed rounds so far.
        attempt: u32,
        max_attempts: u32,
    },
    ReasoningDelta {
        text: String,
    },
    AnswerDelta {
        text: String,
    },
    /// What was streamed as answer in this round was reasoning (a late `</think>`).
    AnswerWasReasoning,
    /// The model request failed before its first token and is being retried.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The model is being made ready before the reply (the built-in engine downloading, checking
    /// or loading its file, or computing a long prompt). `stage`: `download`, `verify`, `load` or
    /// `prompt` (whose counts are tokens).
    ModelPreparing {
        stage: String,
        model: String,
        done_bytes: u64,
        total_bytes: Option<u64>,
        message: String,
    },
    /// A round's reply is complete: the answer with `block:N` placeholders, its reasoning, and
    /// the tool blocks found.
    AnswerComplete {
        round: u32,
        answer: String,
        reasoning: Option<String>,
        blocks: usize,
        finish: AnswerFinish,
    },
    BlockStarted {
        round: u32,
        index: usize,
        tool: String,
        code: String,
        save_path: Option<String>,
    },
    BlockOutput {
        round: u32,
        index: usize,
        text: String,
    },
    BlockFinished {
        #[serde(flatten)]
        record: BlockRecord,
    },
    /// Something went wrong that the user must know (model server errors, bad replies).
    Error {
        message: String,
    },
    /// The model changed (`SetModel`): `model @ provider base-url`.
    ModelChanged {
        description: String,
    },
    /// The conversation was forgotten (`Clear`, `NewSession`).
    Cleared,
    /// A block waits for the user's decision (approval = ask): answer with `Approve` and the
    /// same `id`.
    ApprovalRequested {
        id: ApprovalId,
        round: u32,
        index: usize,
        tool: String,
        code: String,
        save_path: Option<String>,
    },
    /// The approval policy changed (the user chose "always").
    ApprovalChanged {
        approval: crate::config::Approval,
    },
    /// A reply had more tool blocks than seek runs per reply: the first `limit` were parsed as
    /// blocks, the `count` after them were not run (their text stays in the answer as written,
    /// and the model is told).
    BlocksNotRun {
        round: u32,
        count: usize,
        limit: usize,
    },
    /// The saved sessions, the most recently active first, one line each, and the same as
    /// data for pickers.
    SessionList {
        lines: Vec<String>,
        #[serde(default)]
        sessions: Vec<SessionEntry>,
    },
    /// The models offered (`ListModels`); `error` when the server could not be asked.
    ModelList {
        current: String,
        models: Vec<ModelEntry>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Files named with `@path` in the task's prompt were attached to it (after `TurnStarted`).
    Attached {
        files: Vec<Attachment>,
    },
    /// A round's token counts (after its `AnswerComplete`).
    Usage {
        round: u32,
        #[serde(flatten)]
        usage: RoundUsage,
    },
    /// A session file was started for this conversation.
    SessionStarted {
        id: String,
        path: String,
    },
    /// A saved session was resumed. `replay` holds its transcript's events with their times (ms
    /// since the epoch), for front ends to show; it is not serialised.
    Resumed {
        id: String,
        turns: usize,
        warnings: Vec<String>,
        #[serde(skip)]
        replay: Vec<(u64, Event)>,
    },
    /// Older parts of the conversation were shortened or left out of a request so that it fits
    /// the model's context window.
    ContextTrimmed {
        /// Older execution outputs cut to their head and tail.
        shortened: usize,
        /// Oldest messages left out.
        dropped: usize,
        /// Estimated tokens of the request after trimming, and what the window allows.
        tokens: u64,
        budget: u64,
    },
    TurnFinished {
        turn: u64,
        outcome: Outcome,
        /// The last answer, with `block:N` placeholders.
        answer: String,
        reasoning: Option<String>,
        agent: AgentName,
        rounds: u32,
        blocks: Vec<BlockRecord>,
        /// Why the task ended, in words (the last error, the question asked, …).
        message: Option<String>,
        /// The task's tokens (`None` when no round reached the model).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TurnUsage>,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::ApprovalDecision;

    #[test]
    fn an_approval_and_its_answer_carry_the_same_id_on_the_wire() {
        let asked = Event::ApprovalRequested {
            id: 7,
            round: 1,
            index: 0,
            tool: "bash".into(),
            code: "ls\n".into(),
            save_path: None,
        };
        assert_eq!(
            serde_json::to_value(&asked).expect("serialise"),
            json!({"type": "approval_requested", "id": 7, "round": 1, "index": 0, "tool": "bash",
                   "code": "ls\n", "save_path": null})
        );
        let answer = Command::Approve {
            id: 7,
            decision: ApprovalDecision::Edit { code: "pwd".into() },
        };
        let wire = json!({"type": "approve", "id": 7, "decision": "edit", "code": "pwd"});
        assert_eq!(serde_json::to_value(&answer).expect("serialise"), wire);
        assert_eq!(serde_json::from_value::<Command>(wire).ok(), Some(answer));
        assert!(
            serde_json::from_value::<Command>(json!({"type": "approve", "decision": "run"}))
                .is_err(),
            "an answer without the question's id is refused"
        );
    }

    #[test]
    fn a_replys_finish_is_the_same_string_on_the_wire() {
        for (finish, name) in [
            (AnswerFinish::Stop, "stop"),
            (AnswerFinish::Length, "length"),
            (AnswerFinish::Repetition, "repetition"),
            (
                AnswerFinish::Other("content_filter".into()),
                "content_filter",
            ),
        ] {
            let complete = Event::AnswerComplete {
                round: 1,
                answer: String::new(),
                reasoning: None,
                blocks: 0,
                finish: finish.clone(),
            };
            let wire = serde_json::to_value(&complete).expect("serialise");
            assert_eq!(wire["finish"], name);
            assert_eq!(serde_json::from_value::<Event>(wire).ok(), Some(complete));
        }
        assert_eq!(AnswerFinish::from(None), AnswerFinish::Stop);
        let cut = FinishReason::Repetition(crate::llm::Repetition {
            unit_len: 4,
            span: 400,
        });
        assert_eq!(AnswerFinish::from(Some(&cut)), AnswerFinish::Repetition);
    }
}
