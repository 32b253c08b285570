//! What the agent tells its front ends: one `Event` per thing that happened, in order.
//!
//! Plain serde data; it must not decide anything.

use serde::{Deserialize, Serialize};

use super::{
    AgentName, ApprovalId, Attachment, BlockRecord, ModelEntry, PageKind, PlanStep, RoundUsage,
    Route, SessionEntry, TurnUsage, WebField, WebHit, WebTrail,
};

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

/// How a round's reply ended. On the wire it is a string: `stop`, `length`, `repetition`,
/// `block`, or what the server said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum AnswerFinish {
    /// The model finished (also when the server did not say).
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The repetition guard cut a looping reply.
    Repetition,
    /// seek stopped the reply once its first code block was complete (small models).
    Block,
    /// Anything else the server said.
    Other(String),
}

impl AnswerFinish {
    pub fn as_str(&self) -> &str {
        match self {
            AnswerFinish::Stop => "stop",
            AnswerFinish::Length => "length",
            AnswerFinish::Repetition => "repetition",
            AnswerFinish::Block => "block",
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
            "block" => AnswerFinish::Block,
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

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    TurnStarted {
        turn: u64,
        prompt: String,
        agent: AgentName,
    },
    /// The router picked the task's agent (right after `TurnStarted`, whose `agent` is the one
    /// picked). Only when the task was given to `auto`: a named agent is not routed.
    Routed {
        #[serde(flatten)]
        route: Route,
    },
    /// The planner's plan, once it parsed: its steps, all pending. `notes` says what was
    /// corrected in the model's plan (ids renumbered, needs dropped, …).
    Plan {
        steps: Vec<PlanStep>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    /// A step of the plan starts; its sub-agent's events follow as `Step` events.
    StepStarted {
        id: String,
        agent: AgentName,
        task: String,
    },
    /// A step ended. `summary` is a line about its result (the agent's answer, or why it
    /// failed).
    StepFinished {
        id: String,
        success: bool,
        summary: String,
    },
    /// A step failed and the model rewrote the steps after it: `steps` is the whole plan now
    /// (the steps already run keep their status). `replans` counts them within the task.
    Replanned {
        steps: Vec<PlanStep>,
        replans: u32,
        reason: String,
    },
    /// An event of the sub-agent doing the plan's step `step`. In `--json` and the HTTP API it
    /// is the inner event with a `step` field (`crate::wire::event_json`).
    Step {
        step: String,
        event: Box<Event>,
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
    /// Whether seek treats the model as small, decided at the first task with a model (the
    /// server asked for its parameter count): `parameters` when a count decided, `reason` in a
    /// few words (`135M parameters, from llama-server /v1/models`). Not kept in session files.
    ModelSize {
        small: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parameters: Option<u64>,
        reason: String,
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
        approval: super::Approval,
    },
    /// A reply had more tool blocks than seek runs per reply: the first `limit` were parsed as
    /// blocks, the `count` after them were not run (their text stays in the answer as written,
    /// and the model is told).
    BlocksNotRun {
        round: u32,
        count: usize,
        limit: usize,
    },
    /// A reply held code blocks of tools this agent does not have (python written to the file
    /// agent): they stay in the answer as written and did not run. `tools` are their tags;
    /// `can_run` is an agent that has them all, to switch to (`/agent coder`, `--agent coder`).
    BlocksAgentCannotRun {
        round: u32,
        agent: AgentName,
        tools: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        can_run: Option<AgentName>,
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
    /// The configured MCP servers (`ListMcp`), and once after start-up when one failed.
    McpServers {
        servers: Vec<super::McpServerInfo>,
    },
    /// Files named with `@path` in the task's prompt were attached to it (after `TurnStarted`).
    Attached {
        files: Vec<Attachment>,
    },
    /// The web agent's page reader is ready: `engine` is `http` or `chromium`; `detail` says
    /// why it was picked (`auto`) and, for Chromium, its version; `elapsed_ms` is its start time.
    BrowserStarted {
        engine: String,
        detail: String,
        elapsed_ms: u64,
    },
    /// The web agent searched (step `step` of its loop). `error` when the search failed (then
    /// `results` is empty).
    WebSearch {
        step: u32,
        query: String,
        backend: String,
        results: Vec<WebHit>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        elapsed_ms: u64,
    },
    /// The web agent opened a page. `url` is the one asked for, `final_url` where redirects
    /// ended; `text` is what the model was given (cut to its budget: `cut`); `chars` the whole
    /// extracted text's length. `error` when the page could not be read (then `text` is empty).
    PageRead {
        step: u32,
        url: String,
        final_url: String,
        title: String,
        engine: String,
        kind: PageKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        text: String,
        chars: usize,
        cut: bool,
        links: usize,
        forms: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        elapsed_ms: u64,
    },
    /// The web agent filled a form on `url` and submitted it; the page it led to follows as a
    /// `PageRead`. `error` when no form matched or the submission failed.
    FormSubmitted {
        step: u32,
        url: String,
        fields: Vec<WebField>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The web agent took a note on `url` (`None`: on the search results).
    Note {
        step: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        text: String,
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
        /// The task's final answer (`agent::answer`): the last reply with `block:N`
        /// placeholders, without seek's own words echoed; never only placeholders (then the
        /// last executed block's result, said plainly).
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
        /// The planner's steps with their final status (`None` for other agents).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan: Option<Vec<PlanStep>>,
        /// The web agent's searches, visited URLs and notes (`None` for other agents).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        web: Option<WebTrail>,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::{ApprovalDecision, Command};

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
    }
}
