//! Asking the model for a plan (a new one, or the steps after a failed one): streamed like a
//! turn's reply, held to the plan's JSON schema where the server can, parsed, and asked again
//! with AgenticSeek's retry text and what was wrong, at most `MAX_TRIES` replies in all.
//!
//! It must not run steps or decide what a failure means for the task (the loop does).

use tokio_util::sync::CancellationToken;

use super::state::PlanState;
use crate::agent::context::TurnContext;
use crate::agent::memory::Memory;
use crate::agent::reply::{ReplyError, stream_reply_with};
use crate::agent::usage;
use crate::agents::planner::prompt::RETRY;
use crate::agents::planner::{
    MAX_STEPS, MAX_TRIES, ParsedPlan, PlanError, parse_plan, plan_schema,
};
use crate::llm::Role;
use crate::wire::{Event, Status};

/// Why no plan came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum AskError {
    #[error("stopped by the user")]
    Stopped,
    /// The model server failed (already said as an `Error` event).
    #[error("{0}")]
    Model(String),
    /// `MAX_TRIES` replies and none held a usable plan: the last one's error.
    #[error("no plan could be read after {MAX_TRIES} replies: {0}")]
    Unreadable(String),
}

/// Asks for a plan whose steps are numbered from `first_id`, in the planner's conversation
/// `memory` (whose last message is the request). Each reply and each retry text stay in it.
/// Counts the calls and their tokens in `state`; keeps the first accepted reply there too.
pub(super) async fn ask_plan(
    ctx: &TurnContext,
    memory: &mut Memory,
    window: u64,
    cancel: &CancellationToken,
    state: &mut PlanState,
    first_id: usize,
) -> Result<ParsedPlan, AskError> {
    let mut last_error = PlanError::NoPlan;
    for attempt in 0..MAX_TRIES {
        state.planner_calls += 1;
        let round = state.planner_calls;
        ctx.events.emit(Event::Status {
            status: if attempt == 0 {
                Status::Thinking
            } else {
                Status::Correcting
            },
            round,
            attempt,
            max_attempts: MAX_TRIES,
        });
        let reply = match stream_reply_with(ctx, memory, window, cancel, Some(plan_schema())).await
        {
            Ok(reply) => reply,
            Err((ReplyError::Stopped, _)) => return Err(AskError::Stopped),
            Err((error, _)) => {
                let message = error.to_string();
                ctx.events.emit(Event::Error {
                    message: message.clone(),
                });
                return Err(AskError::Model(message));
            }
        };
        let round_usage = reply.usage(window);
        let reasoning = Some(reply.reasoning.trim().to_owned()).filter(|r| !r.is_empty());
        ctx.events.emit(Event::AnswerComplete {
            round,
            answer: reply.answer.clone(),
            reasoning,
            blocks: 0,
            finish: crate::llm::answer_finish(reply.finish.as_ref()),
        });
        ctx.events.emit(Event::Usage {
            round,
            usage: round_usage,
        });
        state.usage = Some(usage::add(state.usage, &round_usage));
        memory.push(Role::Assistant, reply.answer.clone());
        match parse_plan(&reply.answer, first_id).and_then(|plan| within_cap(plan, first_id)) {
            Ok(plan) => {
                state.plan_reply.get_or_insert(reply.answer);
                return Ok(plan);
            }
            Err(error) => {
                memory.push(Role::User, format!("{RETRY}{error}"));
                last_error = error;
            }
        }
    }
    Err(AskError::Unreadable(last_error.to_string()))
}

/// Refuses a plan that would take the task past `MAX_STEPS` steps in all (`first_id - 1` are
/// already run or running).
fn within_cap(plan: ParsedPlan, first_id: usize) -> Result<ParsedPlan, PlanError> {
    let total = first_id.saturating_sub(1).saturating_add(plan.steps.len());
    if total > MAX_STEPS {
        return Err(PlanError::Invalid(format!(
            "the plan has {total} steps in all; at most {MAX_STEPS} are allowed: merge steps"
        )));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_past_the_step_cap_is_refused_with_the_count() {
        // Built directly: the cap holds whatever the parser lets through.
        let plan = |n: usize| ParsedPlan {
            steps: (1..=n)
                .map(|i| crate::wire::PlanStep {
                    id: i.to_string(),
                    agent: crate::wire::AgentName::Coder,
                    task: format!("t{i}"),
                    need: Vec::new(),
                    title: None,
                    status: crate::wire::StepStatus::Pending,
                })
                .collect(),
            notes: Vec::new(),
        };
        assert!(within_cap(plan(MAX_STEPS), 1).is_ok());
        let error = within_cap(plan(MAX_STEPS + 1), 1).expect_err("one too many");
        assert!(error.to_string().contains("13 steps in all"), "{error}");
        // A replan after 10 steps may add 2, not 3.
        assert!(within_cap(plan(2), 11).is_ok());
        assert!(within_cap(plan(3), 11).is_err());
    }

    #[test]
    fn the_unreadable_message_names_the_tries_and_the_last_error() {
        let error = AskError::Unreadable(PlanError::Empty.to_string());
        assert_eq!(
            error.to_string(),
            format!(
                "no plan could be read after 4 replies: {}",
                PlanError::Empty
            )
        );
    }
}
