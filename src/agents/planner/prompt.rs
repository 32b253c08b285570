//! The texts the planner sends: the retry when no plan parsed, a step's prompt for its agent
//! (AgenticSeek's shape), and the request to rewrite the steps after a failed one.
//!
//! Pure; it must not do I/O.

use crate::wire::PlanStep;

/// AgenticSeek's text when no plan parsed (the reason is appended).
pub const RETRY: &str = "Failed to parse the tasks. Please write down your task followed by a json plan within ```json. Do not ask for clarification.\n";

/// The prompt a step's agent gets: the results of the steps it needs, then its task.
pub fn step_prompt(task: &str, needed: &[(String, String)]) -> String {
    let _ = needed;
    task.to_owned()
}

/// The request to rewrite the steps after `failed`, which produced `result`.
pub fn replan_prompt(goal: &str, plan: &[PlanStep], failed: &PlanStep, result: &str) -> String {
    let _ = (goal, plan, failed, result);
    String::new()
}
