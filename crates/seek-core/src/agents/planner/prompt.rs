//! The texts the planner sends and keeps: the retry when no plan parsed, a step's prompt for its
//! agent (AgenticSeek's shape), a step's result as later steps get it (bounded), and the request
//! to rewrite the steps after a failed one.
//!
//! Pure; it must not do I/O.

use crate::wire::{BlockRecord, PlanStep, StepStatus};

/// AgenticSeek's text when no plan parsed (the reason is appended).
pub(crate) const RETRY: &str = "Failed to parse the tasks. Please write down your task followed by a json plan within ```json. Do not ask for clarification.\n";

/// The most bytes of a step's result kept for the steps that need it: a few results fit a small
/// model's context next to its own prompt.
pub(crate) const STEP_RESULT_BYTES: usize = 4096;
/// A block's part of a result never shrinks below this; blocks past it are left out, oldest
/// first (the last blocks hold the step's final state).
const MIN_BLOCK_BYTES: usize = 256;
/// Characters of a done step's result quoted in a replan request.
const RESULT_LINE_CHARS: usize = 160;

/// AgenticSeek's verdicts, the last line of a step's result.
const SUCCEEDED: &str = "Agent succeeded with task.";
const FAILED: &str = "Agent failed with task (Error detected).";

/// The prompt a step's agent gets: the results of the steps it needs (id, result), then its
/// task. AgenticSeek's shape.
pub(crate) fn step_prompt(task: &str, needed: &[(String, String)]) -> String {
    let mut infos = String::new();
    for (id, result) in needed {
        infos.push_str(&format!("\t- According to agent {id}:\n{result}\n\n"));
    }
    if infos.is_empty() {
        infos.push_str("No needed informations.\n");
    }
    format!("You are given informations from your AI friends work:\n{infos}Your task is:\n{task}")
}

/// A step's whole result, at most `STEP_RESULT_BYTES`: the agent's answer, each block's tool and
/// feedback (head and tail kept when long), then AgenticSeek's verdict line.
pub(crate) fn step_result(answer: &str, blocks: &[BlockRecord], success: bool) -> String {
    let verdict = if success { SUCCEEDED } else { FAILED };
    let budget = STEP_RESULT_BYTES - verdict.len() - 1;
    let answer = answer.trim();
    let block_texts: Vec<String> = blocks.iter().map(block_text).collect();

    let mut out = String::new();
    if block_texts.is_empty() {
        out.push_str(&head_and_tail(answer, budget));
    } else {
        let answer_part = head_and_tail(answer, budget / 2);
        let mut left = budget - answer_part.len();
        out.push_str(&answer_part);
        // Each block's text is preceded by a blank line (2 bytes).
        let fit = (left / MIN_BLOCK_BYTES).max(1).min(block_texts.len());
        let skipped = block_texts.len() - fit;
        if skipped > 0 {
            let note = format!("\n\n({skipped} earlier blocks left out)");
            if note.len() < left {
                out.push_str(&note);
                left -= note.len();
            }
        }
        let each = left / fit;
        for text in &block_texts[skipped..] {
            out.push_str("\n\n");
            out.push_str(&head_and_tail(text, each.saturating_sub(2)));
        }
    }
    let mut out = out.trim_start().to_owned();
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(verdict);
    out
}

/// `[python] [success] …`: the block's tool and what the model was told about it.
fn block_text(block: &BlockRecord) -> String {
    let tool: String = block.tool_type.chars().take(24).collect();
    let told = if block.feedback.trim().is_empty() {
        block.output.trim()
    } else {
        block.feedback.trim()
    };
    format!("[{tool}] {told}")
}

/// `text` when it fits in `max` bytes, else its head and tail around a note of what was left out,
/// all within `max` bytes (cut at character boundaries).
fn head_and_tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let marker = format!("\n[… {} bytes left out …]\n", text.len());
    if max < marker.len() + 16 {
        return text[..text.floor_char_boundary(max)].to_owned();
    }
    let room = max - marker.len();
    let head_end = text.floor_char_boundary(room * 2 / 3);
    let tail_start = text.ceil_char_boundary(text.len() - (room - head_end));
    format!("{}{marker}{}", &text[..head_end], &text[tail_start..])
}

/// The request to rewrite the steps after `failed`, which produced `result`; the done steps are
/// listed with their tasks only. `replan_prompt_with_results` also quotes their results.
#[cfg(test)] // kept for the tests that pin its behaviour
pub(crate) fn replan_prompt(
    goal: &str,
    plan: &[PlanStep],
    failed: &PlanStep,
    result: &str,
) -> String {
    replan_prompt_with_results(goal, plan, failed, result, &[])
}

/// The request to rewrite only the steps after `failed` (which produced `result`): the steps up
/// to it are listed with their status (and the first line of their result, from `results` by
/// id), the steps that were left are shown as the old plan, and the new steps are to be numbered
/// on from the failed one.
pub(crate) fn replan_prompt_with_results(
    goal: &str,
    plan: &[PlanStep],
    failed: &PlanStep,
    result: &str,
    results: &[(String, String)],
) -> String {
    let failed_at = plan.iter().position(|s| s.id == failed.id);
    let (run, left) = match failed_at {
        Some(at) => plan.split_at(at + 1),
        None => (plan, &[][..]),
    };
    let mut done = String::new();
    for step in run.iter().filter(|s| s.id != failed.id) {
        let status = match step.status {
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
            _ => "not run",
        };
        done.push_str(&format!(
            "- {} ({}, {status}): {}\n",
            step.id, step.agent, step.task
        ));
        if let Some((_, text)) = results.iter().find(|(id, _)| *id == step.id) {
            done.push_str(&format!("  result: {}\n", first_line(text)));
        }
    }
    if done.is_empty() {
        done.push_str("(none)\n");
    }
    let old: Vec<String> = left
        .iter()
        .map(|s| format!("- {} ({}): {}", s.id, s.agent, s.task))
        .collect();
    let old = if old.is_empty() {
        "(none: it was the last step)".to_owned()
    } else {
        old.join("\n")
    };
    let next_id = failed
        .id
        .parse::<usize>()
        .map_or(plan.len() + 1, |id| id + 1);
    format!(
        "Your goal is: {goal}\n\
         The steps run so far:\n{done}\
         Step {id} ({agent}) failed: {task}\n\
         Its result:\n{result}\n\n\
         The steps that were planned after it:\n{old}\n\n\
         Rewrite only the steps that remain, to recover from the failure and reach the goal. \
         Keep the steps already run: do not repeat them. Number the new steps from \"{next_id}\" \
         on; their \"need\" may name the steps above by id. Answer with task headings and a \
         ```json block in the same format as before, at most as many steps as needed.",
        id = failed.id,
        agent = failed.agent,
        task = failed.task,
    )
}

/// The first non-empty line of `text`, bounded.
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut short: String = line.chars().take(RESULT_LINE_CHARS).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
