//! Running the web agent: search, choose a link, read the page, take notes, follow links, fill
//! forms, go back, and conclude from the notes — AgenticSeek's browser loop, with a step cap
//! (`[web] max_steps`), no page read twice, notes carried into every (stateless) step, CAPTCHA and
//! error pages called what they are, Stop heard at every step, and every search, page, form and
//! note sent out as events (and so kept in the session).
//!
//! Each step is a fresh conversation (the web agent's system prompt and one user message): page
//! text only ever goes in that user message, framed as content. The session's memory gets the
//! request and the final answer. It must not draw anything, or parse HTML (`crate::web` does).

mod browse;
mod text;

use tokio_util::sync::CancellationToken;

use super::context::{TurnContext, announce};
use super::memory::Memory;
use super::task::Task;
use crate::llm::Role;
use crate::wire::{AgentName, Event, Outcome};

use browse::{Browse, Ended};

/// Runs one task with the web agent; returns its `TurnFinished` event.
pub(super) async fn run_web(
    ctx: &TurnContext,
    memory: &mut Memory,
    turn: u64,
    task: Task,
    cancel: CancellationToken,
) -> Event {
    let prompt = task.user_words.clone();
    let message = announce(&ctx.events, turn, AgentName::Web, task);
    memory.begin_turn(message.clone());
    let system = memory
        .messages()
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let mut browse = Browse::new(ctx, &cancel, system, message, &prompt);
    let ended = browse.run().await;
    browse.close().await;
    let (outcome, message) = match ended {
        Ended::Done => (Outcome::Done, None),
        Ended::StepCap(message) => (Outcome::RoundLimit, Some(message)),
        Ended::Stopped => (Outcome::Stopped, Some("stopped by the user".to_owned())),
        Ended::ModelError(message) => (Outcome::ModelError, Some(message)),
        Ended::Failed(message) => {
            ctx.events.emit(Event::Error {
                message: message.clone(),
            });
            (Outcome::GaveUp, Some(message))
        }
    };
    let finished = browse.finish(turn, outcome, message);
    if let Event::TurnFinished { answer, .. } = &finished
        && !answer.trim().is_empty()
    {
        memory.push(Role::Assistant, answer.clone());
    }
    finished
}
