//! The agent runtime: a task that takes commands and emits events, independent of any UI.
//!
//! Owns the conversation memory between tasks and the one running task (with its cancellation
//! token). The TUI and the headless mode are two consumers of the same events. It must not draw
//! anything or read the keyboard.

mod event;
mod execute;
mod memory;
mod policy;
mod prompts;
mod turn;

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use event::{BlockRecord, Command, Event, Outcome, Status};
pub use execute::EventSink;
pub use memory::Memory;
pub use policy::{CLARIFICATION, Decision, RoundReport, decide};
pub use prompts::{agent_tools, available_tools, on_path, resolve_agent, system_prompt};
pub use turn::{TurnContext, run_turn};

use crate::config::{AgentName, Config};
use crate::llm::ChatModel;

/// The front end's side of a running agent.
pub struct AgentHandle {
    pub commands: mpsc::UnboundedSender<Command>,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub task: JoinHandle<()>,
}

/// Starts the agent runtime on the current tokio runtime.
pub fn spawn(config: Arc<Config>, model: Arc<dyn ChatModel>) -> AgentHandle {
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let ctx = TurnContext {
        config,
        model,
        events: EventSink(event_tx),
    };
    let task = tokio::spawn(run(ctx, command_rx));
    AgentHandle {
        commands: command_tx,
        events: event_rx,
        task,
    }
}

struct Running {
    task: JoinHandle<(Memory, Event)>,
    cancel: CancellationToken,
}

async fn run(mut ctx: TurnContext, mut commands: mpsc::UnboundedReceiver<Command>) {
    let mut agent = ctx.config.agent.value;
    let mut memory = Some(new_memory(&ctx.config, agent));
    let mut running: Option<Running> = None;
    let mut turn = 0u64;
    let mut last_prompt: Option<(String, AgentName)> = None;
    loop {
        tokio::select! {
            command = commands.recv() => {
                match command {
                    None | Some(Command::Shutdown) => {
                        if let Some(r) = running.take() {
                            r.cancel.cancel();
                            let _ = r.task.await;
                        }
                        return;
                    }
                    Some(Command::Stop) => {
                        if let Some(r) = &running {
                            r.cancel.cancel();
                        }
                    }
                    Some(Command::Submit { prompt, agent: requested }) => {
                        if running.is_some() {
                            ctx.events.emit(Event::Error { message: "a task is running: stop it first (Esc)".into() });
                            continue;
                        }
                        let chosen = requested.unwrap_or(agent);
                        let Some(mut mem) = memory.take() else { continue };
                        if chosen != agent {
                            agent = chosen;
                            mem.set_system_prompt(prompt_for(&ctx.config, agent));
                        }
                        turn += 1;
                        last_prompt = Some((prompt.clone(), agent));
                        running = Some(start(&ctx, mem, turn, prompt, agent));
                    }
                    Some(Command::SetModel { model }) => {
                        let model = model.trim();
                        if model.is_empty() {
                            ctx.events.emit(Event::Error { message: "which model? /model NAME (seek models lists them)".into() });
                            continue;
                        }
                        // A running task keeps the model it started with; the next one uses this.
                        ctx.model = ctx.model.with_model(model);
                        ctx.events.emit(Event::ModelChanged { description: ctx.model.describe() });
                    }
                    Some(Command::Clear) => {
                        if running.is_some() {
                            ctx.events.emit(Event::Error { message: "a task is running: stop it before clearing (Esc)".into() });
                            continue;
                        }
                        memory = Some(new_memory(&ctx.config, agent));
                        last_prompt = None;
                        ctx.events.emit(Event::Cleared);
                    }
                    Some(Command::Retry) => {
                        if running.is_some() {
                            ctx.events.emit(Event::Error { message: "a task is running: stop it before retrying".into() });
                            continue;
                        }
                        let Some(mut mem) = memory.take() else { continue };
                        match (mem.forget_last_turn(), &last_prompt) {
                            (Some(_), Some((prompt, prompt_agent))) => {
                                turn += 1;
                                running = Some(start(&ctx, mem, turn, prompt.clone(), *prompt_agent));
                            }
                            _ => {
                                memory = Some(mem);
                                ctx.events.emit(Event::Error { message: "there is no task to retry".into() });
                            }
                        }
                    }
                }
            }
            finished = async { running.as_mut().map(|r| &mut r.task).expect("guarded by the select condition").await }, if running.is_some() => {
                running = None;
                let event = match finished {
                    Ok((mem, event)) => {
                        memory = Some(mem);
                        event
                    }
                    // The turn panicked (a bug): say so and keep going with a fresh memory.
                    Err(error) => {
                        memory = Some(new_memory(&ctx.config, agent));
                        let message = format!("internal error, the task was abandoned: {error}");
                        ctx.events.emit(Event::Error { message: message.clone() });
                        Event::TurnFinished {
                            turn,
                            outcome: Outcome::GaveUp,
                            answer: String::new(),
                            reasoning: None,
                            agent,
                            rounds: 0,
                            blocks: Vec::new(),
                            message: Some(message),
                        }
                    }
                };
                ctx.events.emit(event);
            }
        }
    }
}

fn start(
    ctx: &TurnContext,
    mut memory: Memory,
    turn: u64,
    prompt: String,
    agent: AgentName,
) -> Running {
    let cancel = CancellationToken::new();
    let turn_cancel = cancel.clone();
    let ctx = ctx.clone();
    let task = tokio::spawn(async move {
        let event = run_turn(&ctx, &mut memory, turn, prompt, agent, turn_cancel).await;
        (memory, event)
    });
    Running { task, cancel }
}

fn prompt_for(config: &Config, agent: AgentName) -> String {
    let agent = resolve_agent(agent);
    let tools = available_tools(agent, config);
    system_prompt(agent, config, &tools)
}

fn new_memory(config: &Config, agent: AgentName) -> Memory {
    Memory::new(prompt_for(config, agent))
}
