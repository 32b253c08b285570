//! Which loop does a task: the one place an agent's `Runs` is dispatched — the block loop
//! (`turn`), the planner (`plan`) or the web agent (`web`) — for the runtime's tasks and for a
//! plan's steps alike.
//!
//! It must not do any of the work itself.

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::context::TurnContext;
use super::memory::Memory;
use super::plan::{self, Prompts, StepAgents};
use super::prompts::resolve_agent;
use super::task::Task;
use crate::agents::Runs;
use crate::config::AgentName;
use crate::wire::Event;

/// Runs one task with `agent` (`auto` is the coder until routed); returns its `TurnFinished`
/// event for the runtime to emit. `prompts` are the agents' system prompts a plan's steps use.
pub(super) async fn run_task(
    ctx: &TurnContext,
    prompts: &Prompts,
    memory: &mut Memory,
    turn: u64,
    task: Task,
    agent: AgentName,
    cancel: CancellationToken,
) -> Event {
    let agent = resolve_agent(agent);
    // seek.log's lines from inside the task say which task they belong to.
    let span = tracing::info_span!("task", turn, agent = agent.as_str());
    let work = async move {
        match crate::agents::spec(agent).runs {
            Runs::Blocks => super::turn::run_turn(ctx, memory, turn, task, agent, cancel).await,
            Runs::Web => super::web::run_web(ctx, memory, turn, task, cancel).await,
            Runs::Plan => {
                let steps = StepAgents {
                    prompts,
                    run: run_step,
                };
                plan::run_plan(ctx, steps, memory, turn, task, cancel).await
            }
        }
    };
    work.instrument(span).await
}

/// `run_task` for a plan's step, boxed: the plan runs its steps through it without importing
/// this module (which imports the plan).
fn run_step<'a>(
    ctx: &'a TurnContext,
    prompts: &'a Prompts,
    memory: &'a mut Memory,
    turn: u64,
    task: Task,
    agent: AgentName,
    cancel: CancellationToken,
) -> Pin<Box<dyn Future<Output = Event> + Send + 'a>> {
    Box::pin(run_task(ctx, prompts, memory, turn, task, agent, cancel))
}
