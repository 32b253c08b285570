//! Running a plan: ask the model for one (`crate::agents::planner` parses it), run its steps in
//! order, each by its agent with the results it needs, and rewrite the rest when a step fails.
//!
//! The loop is here; asking for a plan is `ask`, running a step `step`, the bookkeeping `state`.
//! It must not draw anything; everything it does goes out as events (a step's sub-agent's as
//! `Event::Step`).

mod ask;
mod state;
mod step;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

use super::context::{TurnContext, announce};
use super::memory::Memory;
use super::prompts::PromptEnv;
use super::task::Task;
use crate::agents::planner::MAX_REPLANS;
use crate::agents::planner::prompt::{replan_prompt_with_results, step_result};
use crate::config::{AgentName, Config};
use crate::llm::Role;
use crate::wire::{Event, Outcome, StepStatus};
use ask::{AskError, ask_plan};
use state::{PlanState, SUMMARY_LIMIT, first_line};

/// The system prompts of the agents a plan's steps may use, built once per task.
#[derive(Debug, Clone, Default)]
pub struct Prompts {
    by_agent: HashMap<AgentName, String>,
}

impl Prompts {
    pub fn new(config: &Config, env: &PromptEnv) -> Self {
        let by_agent = crate::agents::REGISTRY
            .iter()
            .map(|spec| (spec.name, super::prompt_for(config, env, spec.name)))
            .collect();
        Self { by_agent }
    }

    /// The system prompt of `agent` (empty for an agent without one).
    pub fn of(&self, agent: AgentName) -> &str {
        self.by_agent.get(&agent).map_or("", String::as_str)
    }
}

/// Runs one task with the agent it names (the runtime's dispatcher, `agent::run`), handed to
/// the plan so that it need not import what imports it.
pub(super) type RunAgent = for<'a> fn(
    &'a TurnContext,
    &'a Prompts,
    &'a mut Memory,
    u64,
    Task,
    AgentName,
    CancellationToken,
) -> Pin<Box<dyn Future<Output = Event> + Send + 'a>>;

/// Who does a plan's steps: each agent's system prompt, and how a task is run with it.
#[derive(Clone, Copy)]
pub(super) struct StepAgents<'a> {
    pub prompts: &'a Prompts,
    pub run: RunAgent,
}

/// Runs one planner task; returns its `TurnFinished` event for the runtime to emit.
///
/// `memory` is the runtime's conversation, the planner's prompt its system prompt. It keeps the
/// goal and one assistant message: the plan and what each step did. The planner's retries and
/// replans happen in a copy of it that is not journaled; the steps' conversations are their
/// own.
pub(super) async fn run_plan(
    ctx: &TurnContext,
    steps: StepAgents<'_>,
    memory: &mut Memory,
    turn: u64,
    task: Task,
    cancel: CancellationToken,
) -> Event {
    let goal = Goal {
        text: task.prompt.clone(),
        user_words: task.user_words.clone(),
    };
    memory.begin_turn(announce(&ctx.events, turn, AgentName::Planner, task));
    let mut planner = unjournaled(memory);
    let mut state = PlanState::new(turn);
    let (outcome, message) = run(ctx, steps, &mut planner, &mut state, &goal, &cancel).await;
    let why = (outcome != Outcome::Done).then_some(message.as_deref().unwrap_or("it failed"));
    if outcome != Outcome::Done {
        state.skip_pending();
    }
    memory.push(Role::Assistant, state.memory_note(why));
    state.finish(outcome, message)
}

/// What the plan is for.
struct Goal {
    /// The task as given (the user's words and any context after them): the planner's text.
    text: String,
    /// The user's own words alone: the only text whose hosts a web step may trust.
    user_words: String,
}

/// How the plan's run ended, and why in words when it did not finish.
type Ending = (Outcome, Option<String>);

/// Asks for the plan, runs its steps, replans after a failed one.
async fn run(
    ctx: &TurnContext,
    steps: StepAgents<'_>,
    planner: &mut Memory,
    state: &mut PlanState,
    goal: &Goal,
    cancel: &CancellationToken,
) -> Ending {
    // The server is asked for the window once per model; Stop is heard while it is asked.
    let window = tokio::select! {
        () = cancel.cancelled() => return stopped(),
        window = super::window::known(ctx) => window,
    };
    let plan = match ask_plan(ctx, planner, window, cancel, state, 1).await {
        Ok(plan) => plan,
        Err(error) => return ask_failed(error, None),
    };
    state.steps = plan.steps;
    ctx.events.emit(Event::Plan {
        steps: state.steps.clone(),
        notes: plan.notes,
    });

    let mut index = 0;
    while index < state.steps.len() {
        if cancel.is_cancelled() {
            return stopped();
        }
        state.steps[index].status = StepStatus::Running;
        let step = state.steps[index].clone();
        ctx.events.emit(Event::StepStarted {
            id: step.id.clone(),
            agent: step.agent,
            task: step.task.clone(),
        });
        let needed = state.needed(&step);
        let run = step::run_step(
            ctx,
            steps,
            state.turn,
            &step,
            &needed,
            &goal.user_words,
            cancel.clone(),
        )
        .await;
        let success = run.outcome == Outcome::Done;
        let failure = (!success).then(|| {
            run.message
                .clone()
                .unwrap_or_else(|| format!("the step ended: {:?}", run.outcome))
        });
        // The failure's words go with the answer: an unavailable agent's step has no answer.
        let told = match &failure {
            Some(failure) => format!("{}\n\n[the step failed: {failure}]", run.answer.trim()),
            None => run.answer.clone(),
        };
        let result = step_result(told.trim(), &run.records, success);
        let summary = match &failure {
            Some(failure) => first_line(failure, SUMMARY_LIMIT),
            None if run.answer.trim().is_empty() => first_line(&result, SUMMARY_LIMIT),
            None => first_line(&run.answer, SUMMARY_LIMIT),
        };
        state.results.insert(step.id.clone(), result.clone());
        state.records.extend(run.records);
        state.step_rounds = state.step_rounds.saturating_add(run.rounds);
        state.add_usage(run.usage);
        state.last_answer = run.answer;
        state.last_reasoning = run.reasoning;
        state.steps[index].status = if success {
            StepStatus::Done
        } else {
            StepStatus::Failed
        };
        ctx.events.emit(Event::StepFinished {
            id: step.id.clone(),
            success,
            summary: summary.clone(),
        });
        if run.outcome == Outcome::Stopped || cancel.is_cancelled() {
            return stopped();
        }
        // A server that failed would fail the replan too: the task ends as the step did. A
        // reply that came but could not be used (past max_tokens) is the step's failure, and
        // the plan is rewritten.
        if run.outcome == Outcome::ModelError && state.last_answer.trim().is_empty() {
            return (Outcome::ModelError, failure);
        }
        if !success {
            let failed = format!("step {} ({}) failed: {summary}", step.id, step.agent);
            if state.replans >= MAX_REPLANS {
                return (
                    Outcome::GaveUp,
                    Some(format!(
                        "{failed}; the plan was rewritten {MAX_REPLANS} times already (at most {MAX_REPLANS})"
                    )),
                );
            }
            let done: Vec<(String, String)> = state.steps[..index]
                .iter()
                .filter_map(|s| state.results.get(&s.id).map(|r| (s.id.clone(), r.clone())))
                .collect();
            planner.push(
                Role::User,
                replan_prompt_with_results(&goal.text, &state.steps, &step, &result, &done),
            );
            let next_id = index + 2;
            let rest = match ask_plan(ctx, planner, window, cancel, state, next_id).await {
                Ok(rest) => rest,
                Err(error) => return ask_failed(error, Some(&failed)),
            };
            state.replans += 1;
            state.steps.truncate(index + 1);
            state.steps.extend(rest.steps);
            ctx.events.emit(Event::Replanned {
                steps: state.steps.clone(),
                replans: state.replans,
                reason: failed,
            });
        }
        index += 1;
    }
    (Outcome::Done, None)
}

fn stopped() -> Ending {
    (Outcome::Stopped, Some(AskError::Stopped.to_string()))
}

/// The task's end when no (new) plan came; `failed` names the step that asked for a replan.
fn ask_failed(error: AskError, failed: Option<&str>) -> Ending {
    let outcome = match error {
        AskError::Stopped => return stopped(),
        AskError::Model(_) => Outcome::ModelError,
        AskError::Unreadable(_) => Outcome::GaveUp,
    };
    let message = match failed {
        Some(failed) => format!("{failed}; rewriting the plan failed: {error}"),
        None => error.to_string(),
    };
    (outcome, Some(message))
}

/// A copy of `memory` that records nothing in the session: the planner's requests, retries and
/// replans, of which the session keeps only the end (`memory_note`).
fn unjournaled(memory: &Memory) -> Memory {
    let messages = memory.messages();
    let system = messages
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    // `restore` puts the messages after the system prompt and indexes from them.
    Memory::restore(
        system,
        messages.get(1..).unwrap_or_default().to_vec(),
        memory
            .turn_starts()
            .iter()
            .map(|i| i.saturating_sub(1))
            .collect(),
    )
}
