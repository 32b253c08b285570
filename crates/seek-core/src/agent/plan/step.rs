//! Running one step of a plan: its agent does the step's task as a turn of its own, in a fresh
//! memory (never the session's), given the results of the steps it needs; everything it emits
//! goes out as the step's (`Event::Step`).
//!
//! It must not decide what the step's outcome means for the plan (the loop does).

use tokio_util::sync::CancellationToken;

use super::StepAgents;
use crate::agent::context::TurnContext;
use crate::agent::memory::Memory;
use crate::agent::task::Task;
use crate::agents::planner::prompt::step_prompt;
use crate::wire::{BlockRecord, Event, Outcome, PlanStep, TurnUsage};

/// What a step's turn came to.
#[derive(Debug, Clone)]
pub(super) struct StepRun {
    pub outcome: Outcome,
    /// The agent's last answer, with `block:N` placeholders.
    pub answer: String,
    pub reasoning: Option<String>,
    /// Why it ended, when it did not finish (the turn's message).
    pub message: Option<String>,
    pub rounds: u32,
    pub records: Vec<BlockRecord>,
    pub usage: Option<TurnUsage>,
}

/// Runs `step` by its agent with the `needed` results (id, result), under `cancel` (the task's
/// own token: Stop reaches the step's reply and blocks at once). `user_words` are the plan's
/// user's own words (never its context, the planner's text or earlier results): the step's web
/// agent trusts their hosts and nothing else.
pub(super) async fn run_step(
    ctx: &TurnContext,
    agents: StepAgents<'_>,
    turn: u64,
    step: &PlanStep,
    needed: &[(String, String)],
    user_words: &str,
    cancel: CancellationToken,
) -> StepRun {
    let step_ctx = TurnContext {
        events: ctx.events.for_step(&step.id),
        ..ctx.clone()
    };
    // Each step starts clean: its agent sees its own prompt and the step, nothing else.
    let mut memory = Memory::new(agents.prompts.of(step.agent));
    let task = Task {
        user_words: user_words.to_owned(),
        ..Task::plain(step_prompt(&step.task, needed))
    };
    let finished = (agents.run)(
        &step_ctx,
        agents.prompts,
        &mut memory,
        turn,
        task,
        step.agent,
        cancel,
    )
    .await;
    let Event::TurnFinished {
        outcome,
        answer,
        reasoning,
        rounds,
        blocks,
        message,
        usage,
        agent,
        turn,
        plan,
        web,
    } = finished
    else {
        // a task returns nothing else; a different event would be a bug, reported as a failed
        // step rather than a panic.
        return StepRun {
            outcome: Outcome::GaveUp,
            answer: String::new(),
            reasoning: None,
            message: Some("internal error: the step's turn ended without its end".into()),
            rounds: 0,
            records: Vec::new(),
            usage: None,
        };
    };
    // The sub-agent's end goes out as the step's too; without its blocks, which went out one by
    // one already and come whole in the plan's end.
    step_ctx.events.emit(Event::TurnFinished {
        turn,
        outcome,
        answer: answer.clone(),
        reasoning: reasoning.clone(),
        agent,
        rounds,
        blocks: Vec::new(),
        message: message.clone(),
        usage,
        plan,
        web,
    });
    StepRun {
        outcome,
        answer,
        reasoning,
        message,
        rounds,
        records: blocks,
        usage,
    }
}
