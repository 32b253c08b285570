//! What one planner task has gathered while it runs: the steps and their status, each step's
//! stored result, every block record, the rounds and tokens spent, and the replans so far; and
//! how it all becomes the task's `TurnFinished` and the planner's memory note.
//!
//! Pure bookkeeping: it must not emit events, talk to the model or run anything.

use std::collections::HashMap;

use crate::config::AgentName;
use crate::wire::{BlockRecord, Event, Outcome, PlanStep, StepStatus, TurnUsage};

/// A step's `StepFinished` summary, at most (chars).
pub(super) const SUMMARY_LIMIT: usize = 200;
/// The plan reply kept in the planner's memory, at most (bytes).
const PLAN_REPLY_LIMIT: usize = 4000;
/// A step's line in the planner's memory note, at most (chars).
const NOTE_LINE_LIMIT: usize = 300;

/// One planner task's progress.
#[derive(Debug, Default)]
pub(super) struct PlanState {
    pub turn: u64,
    /// The plan as it stands: steps run, the running one, the pending ones.
    pub steps: Vec<PlanStep>,
    /// Each run step's result (answer and block outputs, bounded), by id.
    pub results: HashMap<String, String>,
    /// Every step's blocks, in order.
    pub records: Vec<BlockRecord>,
    /// The planner's own model calls so far.
    pub planner_calls: u32,
    /// The steps' rounds so far.
    pub step_rounds: u32,
    pub usage: Option<TurnUsage>,
    pub replans: u32,
    /// The last step's answer and reasoning.
    pub last_answer: String,
    pub last_reasoning: Option<String>,
    /// The reply whose plan was accepted first (kept in the planner's memory).
    pub plan_reply: Option<String>,
}

impl PlanState {
    pub fn new(turn: u64) -> Self {
        Self {
            turn,
            ..Self::default()
        }
    }

    /// Adds a step's (or a planner call's) tokens to the task's.
    pub(crate) fn add_usage(&mut self, more: Option<TurnUsage>) {
        if let Some(more) = more {
            self.usage = Some(super::super::usage::add_task(self.usage, &more));
        }
    }

    /// The results of the steps `step` needs that have one, as (id, result), in its order.
    pub fn needed(&self, step: &PlanStep) -> Vec<(String, String)> {
        step.need
            .iter()
            .filter_map(|id| self.results.get(id).map(|r| (id.clone(), r.clone())))
            .collect()
    }

    /// Every step not yet run will not be: the task was stopped or gave up.
    pub(crate) fn skip_pending(&mut self) {
        for step in &mut self.steps {
            if matches!(step.status, StepStatus::Pending | StepStatus::Running) {
                step.status = StepStatus::Skipped;
            }
        }
    }

    /// The task's end. The answer is the last step's when the plan finished, else a line per
    /// step saying how far it got.
    pub fn finish(mut self, outcome: Outcome, message: Option<String>) -> Event {
        if outcome != Outcome::Done {
            self.skip_pending();
        }
        let answer = if outcome == Outcome::Done && !self.last_answer.trim().is_empty() {
            std::mem::take(&mut self.last_answer)
        } else {
            self.steps_summary()
        };
        Event::TurnFinished {
            turn: self.turn,
            outcome,
            answer,
            reasoning: if outcome == Outcome::Done {
                self.last_reasoning
            } else {
                None
            },
            agent: AgentName::Planner,
            rounds: self.planner_calls.saturating_add(self.step_rounds),
            blocks: self.records,
            message,
            usage: self.usage,
            plan: (!self.steps.is_empty()).then_some(self.steps),
            web: None,
        }
    }

    /// A line per step: its id, agent, status and task (or nothing when no plan was made).
    pub(crate) fn steps_summary(&self) -> String {
        self.steps
            .iter()
            .map(|s| {
                format!(
                    "- step {} ({}) {}: {}\n",
                    s.id,
                    s.agent,
                    status_word(s.status),
                    first_line(&s.task, SUMMARY_LIMIT)
                )
            })
            .collect()
    }

    /// The assistant message the planner's memory keeps for the task: the plan it made and what
    /// each step did, bounded, so that a follow-up task knows what was done. `why` says how the
    /// task ended when it did not finish.
    pub(crate) fn memory_note(&self, why: Option<&str>) -> String {
        let mut note = match &self.plan_reply {
            Some(reply) => bounded(reply.trim(), PLAN_REPLY_LIMIT),
            None => "No plan was made.".to_owned(),
        };
        if !self.steps.is_empty() {
            note.push_str("\n\nWhat the steps did:\n");
            for step in &self.steps {
                let result = self
                    .results
                    .get(&step.id)
                    .map(|r| format!(": {}", one_line(r, NOTE_LINE_LIMIT)))
                    .unwrap_or_default();
                note.push_str(&format!(
                    "- step {} ({}) {}{result}\n",
                    step.id,
                    step.agent,
                    status_word(step.status)
                ));
            }
        }
        if let Some(why) = why {
            note.push_str(&format!("\n[the plan did not finish: {why}]"));
        }
        note
    }
}

fn status_word(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Pending => "pending",
        StepStatus::Running => "running",
        StepStatus::Done => "done",
        StepStatus::Failed => "failed",
        StepStatus::Skipped => "skipped",
    }
}

/// The first non-empty line of `text`, at most `limit` chars (an ellipsis marks a cut).
pub(super) fn first_line(text: &str, limit: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    cut_chars(line.unwrap_or(""), limit)
}

/// `text` on one line (lines joined with ` | `), at most `limit` chars.
fn one_line(text: &str, limit: usize) -> String {
    let joined: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    cut_chars(&joined.join(" | "), limit)
}

fn cut_chars(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text`, or its head and tail with a note of what was left out when it is over `limit`
/// bytes (cut at char boundaries).
pub(super) fn bounded(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let half = limit / 2;
    let head_end = text.floor_char_boundary(half);
    let tail_start = text.ceil_char_boundary(text.len() - half);
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            id: id.into(),
            agent: AgentName::Coder,
            task: format!("task {id}\nmore"),
            need: Vec::new(),
            title: None,
            status,
        }
    }

    #[test]
    fn a_summary_is_the_first_line_cut_to_its_limit() {
        assert_eq!(first_line("\n  first  \nsecond", 200), "first");
        let long = "x".repeat(500);
        let cut = first_line(&long, SUMMARY_LIMIT);
        assert_eq!(cut.chars().count(), SUMMARY_LIMIT);
        assert!(cut.ends_with('…'));
        assert_eq!(first_line("", 10), "");
    }

    #[test]
    fn a_task_that_did_not_finish_skips_what_was_left_and_sums_its_rounds() {
        let mut state = PlanState::new(3);
        state.steps = vec![
            step("1", StepStatus::Done),
            step("2", StepStatus::Running),
            step("3", StepStatus::Pending),
        ];
        state.planner_calls = 1;
        state.step_rounds = 2;
        state.last_answer = "partial".into();
        let Event::TurnFinished {
            outcome,
            answer,
            rounds,
            plan: Some(plan),
            agent,
            ..
        } = state.finish(Outcome::Stopped, Some("stopped by the user".into()))
        else {
            panic!("a finish with a plan");
        };
        assert_eq!(outcome, Outcome::Stopped);
        assert_eq!(agent, AgentName::Planner);
        assert_eq!(rounds, 3);
        let statuses: Vec<StepStatus> = plan.iter().map(|s| s.status).collect();
        assert_eq!(
            statuses,
            [StepStatus::Done, StepStatus::Skipped, StepStatus::Skipped]
        );
        assert!(answer.contains("- step 1 (coder) done: task 1"), "{answer}");
    }

    #[test]
    fn usage_is_summed_and_the_context_is_the_latest() {
        let mut state = PlanState::new(1);
        let one = TurnUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            context_tokens: 10,
            context_window: Some(100),
            streaming_ms: 1.0,
            estimated: false,
        };
        state.add_usage(Some(one));
        state.add_usage(None);
        state.add_usage(Some(TurnUsage {
            context_tokens: 30,
            estimated: true,
            ..one
        }));
        let total = state.usage.expect("summed");
        assert_eq!((total.prompt_tokens, total.completion_tokens), (20, 10));
        assert_eq!(total.context_tokens, 30);
        assert!(total.estimated);
    }

    #[test]
    fn the_memory_note_names_the_plan_and_each_steps_result() {
        let mut state = PlanState::new(1);
        state.plan_reply = Some("## Task 1\n```json\n{}\n```".into());
        state.steps = vec![step("1", StepStatus::Done), step("2", StepStatus::Skipped)];
        state
            .results
            .insert("1".into(), "line one\nline two".into());
        let note = state.memory_note(Some("stopped by the user"));
        assert!(note.starts_with("## Task 1"), "{note}");
        assert!(
            note.contains("- step 1 (coder) done: line one | line two"),
            "{note}"
        );
        assert!(note.contains("- step 2 (coder) skipped\n"), "{note}");
        assert!(note.ends_with("[the plan did not finish: stopped by the user]"));
    }
}
