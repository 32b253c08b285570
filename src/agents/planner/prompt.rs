//! The texts the planner sends: the retry when no plan parsed, a step's prompt for its agent
//! (AgenticSeek's shape), and the request to rewrite the steps after a failed one.
//!
//! Pure; it must not do I/O.

use crate::wire::PlanStep;

/// AgenticSeek's text when no plan parsed (the reason is appended).
pub const RETRY: &str = "Failed to parse the tasks. Please write down your task followed by a json plan within ```json. Do not ask for clarification.\n";

/// The prompt a step's agent gets: the results of the steps it needs (id, result), then its
/// task. AgenticSeek's shape.
pub fn step_prompt(task: &str, needed: &[(String, String)]) -> String {
    let mut infos = String::new();
    for (id, result) in needed {
        infos.push_str(&format!("\t- According to agent {id}:\n{result}\n\n"));
    }
    if infos.is_empty() {
        infos.push_str("No needed informations.\n");
    }
    format!("You are given informations from your AI friends work:\n{infos}Your task is:\n{task}")
}

/// The request to rewrite the steps after `failed`, which produced `result`.
pub fn replan_prompt(goal: &str, plan: &[PlanStep], failed: &PlanStep, result: &str) -> String {
    let remaining: Vec<String> = plan
        .iter()
        .filter(|s| s.id.parse::<usize>().unwrap_or(0) > failed.id.parse::<usize>().unwrap_or(0))
        .map(|s| format!("- {} ({}): {}", s.id, s.agent, s.task))
        .collect();
    format!(
        "Your goal is: {goal}\nStep {} ({}) failed: {}\nIts result:\n{result}\n\
         The steps left were:\n{}\nWrite the plan of the steps that remain, as a ```json block \
         in the same format, to recover from the failure and reach the goal.",
        failed.id,
        failed.agent,
        failed.task,
        remaining.join("\n")
    )
}
