//! The planner: asks the model for a plan (AgenticSeek's task headings and a ```json block),
//! then hands each step to another agent, passing earlier results forward. This module holds
//! its declaration and the pure parts (parsing a plan, the prompts it sends); running a plan is
//! the agent runtime's (`crate::agent::plan`).

pub mod parse;
pub mod prompt;

use super::spec::{AgentSpec, Decision, Prompt, RoundReport, Routing};
use crate::wire::AgentName;

pub use parse::{ParsedPlan, PlanError, parse_plan, plan_schema};

/// Tries to get a plan that parses, the first included (AgenticSeek's `max_retries`).
pub const MAX_TRIES: u32 = 4;
/// Steps one plan may hold; more are an error fed back to the model.
pub const MAX_STEPS: usize = 12;
/// Times the steps after a failed one may be rewritten within one task.
pub const MAX_REPLANS: u32 = 2;

pub(crate) const SPEC: AgentSpec = AgentSpec {
    name: AgentName::Planner,
    aliases: AgentName::Planner.aliases(),
    description: "splits a bigger task into steps and hands each to the right agent",
    prompt: Prompt {
        file: "planner.md",
        text: include_str!("../../../../../prompts/planner.md"),
    },
    small_prompt: None,
    tools: &[],
    runs: AgentName::Planner.runs(),
    done_by_running: false,
    routing: Routing {
        because: "several steps",
        cues: "several steps",
    },
    policy,
};

/// The planner's own rounds are plan requests, not block rounds: its runner decides.
fn policy(_report: &RoundReport) -> Decision {
    Decision::Done
}
