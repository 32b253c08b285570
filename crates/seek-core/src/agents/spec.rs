//! What an agent is, as data: its name and aliases, a one-line description, its prompt, its
//! tools, how it runs, and its loop policy (what happens after a round).
//!
//! Pure: it must not run anything or know the terminal.

use crate::tool_kind::ToolKind;
use crate::wire::AgentName;

/// The sentinel a model writes to ask the user a question (AgenticSeek's).
pub const CLARIFICATION: &str = "REQUEST_CLARIFICATION";

/// One agent.
#[derive(Debug)]
pub struct AgentSpec {
    pub name: AgentName,
    /// Other names accepted for it in settings, flags and `/agent` (AgenticSeek's roles among
    /// them), lowercase: its wire entry's (`AgentName::aliases`).
    pub aliases: &'static [&'static str],
    /// One line for `/agent`, `--help` and the docs.
    pub description: &'static str,
    /// Its system prompt template: the file name (in `prompts/`, and of an override in the
    /// config dir's `prompts/`) and the text built into seek.
    pub prompt: Prompt,
    /// The compact variant taught to small models (`Config::small_model`), when it has one.
    pub small_prompt: Option<Prompt>,
    /// The tools it owns, in the order they are taught.
    pub tools: &'static [ToolKind],
    /// Its wire entry's (`AgentName::runs`).
    pub runs: Runs,
    /// Its task is done by a block that works (the coder's): a task of it that ran blocks none
    /// of which succeeded gave up, whatever the model said last, and a small model is helped to
    /// write and run one (worked examples, an opened fence, a token budget, a nudge:
    /// `agent::profile`).
    pub done_by_running: bool,
    /// Why the router picks it, as `auto` shows it.
    pub routing: Routing,
    /// After a round whose reply was whole: done, ask again, or ask the user.
    pub policy: fn(&RoundReport) -> Decision,
}

/// How the router's choice of an agent is explained to the user.
#[derive(Debug, Clone, Copy)]
pub struct Routing {
    /// What a prompt routed to it asks for, in plain words: "asks about files".
    pub because: &'static str,
    /// What the prompt's words that pushed towards it are called: "words", or the planner's
    /// "several steps" (its cues are words like "then").
    pub cues: &'static str,
}

/// A prompt template (`{work_dir}`, `{os}`, `{tools}` are filled in).
#[derive(Debug, Clone, Copy)]
pub struct Prompt {
    pub file: &'static str,
    pub text: &'static str,
}

/// How an agent does a task: a fact of its wire entry (seek-wire's `agent_names!`), which the
/// configuration reads too.
pub use crate::wire::Runs;

/// What one round produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// The reply had tool blocks for this agent.
    pub had_blocks: bool,
    /// Every block ran and succeeded (false when one failed or was not closed).
    pub all_succeeded: bool,
    /// The tool of the last block that ran.
    pub last_tool: Option<ToolKind>,
    /// The reply asked for clarification.
    pub clarification: bool,
    /// The reply was cut for repeating itself.
    pub repetition: bool,
}

/// What happens next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Done,
    /// Ask the model again; `failed` counts the round against `max_attempts`.
    AskAgain {
        failed: bool,
    },
    Clarify,
}

/// The rules every agent that runs blocks shares before its own: a repeating reply is a failed
/// round, a question without blocks goes to the user, no block is the final answer, and a
/// failed block asks the model to correct itself. `None`: the agent's own rule decides.
pub fn common_rules(report: &RoundReport) -> Option<Decision> {
    if report.repetition {
        return Some(Decision::AskAgain { failed: true });
    }
    if report.clarification && !report.had_blocks {
        return Some(Decision::Clarify);
    }
    if !report.had_blocks {
        return Some(Decision::Done);
    }
    if !report.all_succeeded {
        return Some(Decision::AskAgain { failed: true });
    }
    None
}

/// A round's report for the policies' tests.
#[cfg(test)]
pub(super) fn round(
    had_blocks: bool,
    all_succeeded: bool,
    last_tool: Option<ToolKind>,
) -> RoundReport {
    RoundReport {
        had_blocks,
        all_succeeded,
        last_tool,
        ..RoundReport::default()
    }
}
