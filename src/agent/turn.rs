//! One task, from the user's prompt to the end: stream a reply, run its blocks, feed the results
//! back, and let the policy decide, within the caps, until done.
//!
//! It must not draw anything; everything it does goes out as events.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::budget;
use super::event::{BlockRecord, Event, Outcome, Status};
use super::execute::{EventSink, execute_reply, repetition_feedback};
use super::memory::Memory;
use super::policy::{CLARIFICATION, Decision, RoundReport, decide};
use super::prompts::{agent_tools, resolve_agent};
use crate::config::{AgentName, Config};
use crate::llm::{ChatModel, ChatRequest, Delta, FinishReason, GenerationOptions, Role};
use crate::protocol;
use crate::tools::{ToolContext, Toolbox};

/// What a turn needs from the runtime.
#[derive(Clone)]
pub struct TurnContext {
    pub config: Arc<Config>,
    pub model: Arc<dyn ChatModel>,
    pub events: EventSink,
    /// The model's context window in tokens, once known (the server's word or the config's).
    pub context_window: Option<u64>,
    /// Whether blocks run without asking, and the user's answers when they do not.
    pub approvals: super::approval::ApprovalGate,
    /// The confinement of blocks (`None`: sandbox off).
    pub sandbox: Option<Arc<crate::exec::sandbox::Sandbox>>,
    /// Credential-like variables blocks must not inherit.
    pub env_remove: Arc<Vec<std::ffi::OsString>>,
}

/// One round's reply.
struct Reply {
    answer: String,
    reasoning: String,
    finish: Option<FinishReason>,
}

enum ReplyError {
    Stopped,
    Model(String),
}

/// Runs one task; returns its `TurnFinished` event for the runtime to emit.
pub async fn run_turn(
    ctx: &TurnContext,
    memory: &mut Memory,
    turn: u64,
    prompt: String,
    agent: AgentName,
    cancel: CancellationToken,
) -> Event {
    let config = &ctx.config;
    let events = &ctx.events;
    let agent = resolve_agent(agent);
    let tags = agent_tools(agent);
    let toolbox = Toolbox::builtin(config).only(tags);
    // Every tool the agent owns is parsed, installed or not: a missing one fails with a message
    // naming what to install instead of its block passing silently as markdown.
    let parse_tags = toolbox.tags();
    let mut tool_ctx = ToolContext::new(config.work_dir.value.clone());
    tool_ctx.output_limit = usize::try_from(config.output_limit_bytes.value).unwrap_or(usize::MAX);
    tool_ctx.cancel = cancel.clone();
    tool_ctx.sandbox = ctx.sandbox.clone();
    tool_ctx.env_remove = Arc::clone(&ctx.env_remove);
    tool_ctx.limits = config.safety.limits();
    tool_ctx.safe_mode = config.safety.safe_mode.value;
    tool_ctx.own_files = Arc::new(crate::tools::OwnFiles::new(config.own_files()));
    let max_attempts = config.max_attempts.value;
    let max_rounds = config.max_rounds.value;

    events.emit(Event::TurnStarted {
        turn,
        prompt: prompt.clone(),
        agent,
    });
    memory.begin_turn(prompt);

    let mut failures = 0u32;
    let mut rounds = 0u32;
    let mut records: Vec<BlockRecord> = Vec::new();
    let mut last_answer = String::new();
    let mut last_reasoning = None;
    let mut last_error: Option<String> = None;

    // The runtime emits this event once it holds the memory again, so a front end that reacts
    // to it with a new command never finds the agent still busy.
    let finish = |outcome: Outcome,
                  answer: String,
                  reasoning: Option<String>,
                  rounds,
                  blocks,
                  message: Option<String>| {
        Event::TurnFinished {
            turn,
            outcome,
            answer,
            reasoning,
            agent,
            rounds,
            blocks,
            message,
        }
    };

    loop {
        if rounds >= max_rounds {
            let message = format!(
                "stopped after {rounds} rounds without finishing (max_rounds = {max_rounds}); ask again to continue"
            );
            return finish(
                Outcome::RoundLimit,
                last_answer,
                last_reasoning,
                rounds,
                records,
                Some(message),
            );
        }
        rounds += 1;
        let status = if failures > 0 {
            Status::Correcting
        } else {
            Status::Thinking
        };
        events.emit(Event::Status {
            status,
            round: rounds,
            attempt: failures,
            max_attempts,
        });

        let reply = match stream_reply(ctx, memory, &cancel).await {
            Ok(reply) => reply,
            Err((error, partial)) => {
                if !partial.answer.is_empty() {
                    memory.push(
                        Role::Assistant,
                        format!("{}\n[interrupted]", partial.answer),
                    );
                }
                let reasoning = non_empty(partial.reasoning);
                return match error {
                    ReplyError::Stopped => finish(
                        Outcome::Stopped,
                        partial.answer,
                        reasoning,
                        rounds,
                        records,
                        Some("stopped by the user".into()),
                    ),
                    ReplyError::Model(message) => {
                        events.emit(Event::Error {
                            message: message.clone(),
                        });
                        finish(
                            Outcome::ModelError,
                            partial.answer,
                            reasoning,
                            rounds,
                            records,
                            Some(message),
                        )
                    }
                };
            }
        };

        let parsed = protocol::parse(&reply.answer, &parse_tags);
        let repetition = matches!(reply.finish, Some(FinishReason::Repetition(_)));
        last_answer = parsed.placeholder_text();
        last_reasoning = non_empty(reply.reasoning);
        events.emit(Event::AnswerComplete {
            round: rounds,
            answer: last_answer.clone(),
            reasoning: last_reasoning.clone(),
            blocks: parsed.blocks.len(),
            finish: reply.finish.as_ref().into(),
        });
        memory.push(Role::Assistant, reply.answer.clone());

        let mut report = RoundReport {
            had_blocks: !parsed.blocks.is_empty() && agent != AgentName::Casual,
            all_succeeded: true,
            last_tool: None,
            clarification: reply.answer.contains(CLARIFICATION),
            repetition,
        };
        if repetition {
            memory.push(Role::User, repetition_feedback());
            last_error = Some("the reply kept repeating itself".into());
        } else if report.had_blocks && !report.clarification {
            let status_events = events.clone();
            let executed = execute_reply(
                &parsed,
                rounds,
                &toolbox,
                &tool_ctx,
                events,
                &ctx.approvals,
                |status| {
                    status_events.emit(Event::Status {
                        status,
                        round: rounds,
                        attempt: failures,
                        max_attempts,
                    });
                },
            )
            .await;
            report.all_succeeded = executed.all_succeeded;
            report.last_tool = executed.last_tool;
            if let Some(failed) = executed.records.iter().find(|r| !r.success && !r.skipped) {
                last_error = Some(failure_summary(failed));
            }
            records.extend(executed.records);
            memory.push(Role::User, executed.feedback);
            if executed.held {
                return finish(
                    Outcome::Done,
                    last_answer,
                    last_reasoning,
                    rounds,
                    records,
                    Some(super::approval::SHOWN_ONLY.into()),
                );
            }
            if cancel.is_cancelled() {
                return finish(
                    Outcome::Stopped,
                    last_answer,
                    last_reasoning,
                    rounds,
                    records,
                    Some("stopped by the user".into()),
                );
            }
        }

        match decide(agent, &report) {
            Decision::Done => {
                return finish(
                    Outcome::Done,
                    last_answer,
                    last_reasoning,
                    rounds,
                    records,
                    None,
                );
            }
            Decision::Clarify => {
                let question = last_answer.replace(CLARIFICATION, "").trim().to_owned();
                return finish(
                    Outcome::NeedsClarification,
                    last_answer,
                    last_reasoning,
                    rounds,
                    records,
                    Some(question),
                );
            }
            Decision::AskAgain { failed } => {
                if failed {
                    failures += 1;
                    if failures >= max_attempts {
                        let message = format!(
                            "gave up after {failures} failed attempts; the last error: {}",
                            last_error.as_deref().unwrap_or("unknown")
                        );
                        return finish(
                            Outcome::GaveUp,
                            last_answer,
                            last_reasoning,
                            rounds,
                            records,
                            Some(message),
                        );
                    }
                }
            }
        }
    }
}

/// Streams one reply, emitting deltas. On failure the text that arrived comes back with the error.
async fn stream_reply(
    ctx: &TurnContext,
    memory: &Memory,
    cancel: &CancellationToken,
) -> Result<Reply, (ReplyError, Reply)> {
    let events = &ctx.events;
    let settings = &ctx.config.model_settings;
    let window = ctx.context_window.unwrap_or(settings.context_window.value);
    let budget = budget::prompt_budget(window, settings.max_tokens.value);
    let fitted = match budget::fit(memory.messages(), memory.turn_starts(), budget) {
        Ok(fitted) => fitted,
        Err(too_big) => {
            let empty = Reply {
                answer: String::new(),
                reasoning: String::new(),
                finish: None,
            };
            return Err((ReplyError::Model(too_big.to_string()), empty));
        }
    };
    if fitted.trimmed() {
        events.emit(Event::ContextTrimmed {
            shortened: fitted.shortened,
            dropped: fitted.dropped,
            tokens: fitted.tokens,
            budget,
        });
    }
    let request = ChatRequest {
        messages: fitted.messages,
        options: GenerationOptions::from_config(&ctx.config),
    };
    let mut stream = ctx.model.stream(request, cancel.clone());
    let mut reply = Reply {
        answer: String::new(),
        reasoning: String::new(),
        finish: None,
    };
    loop {
        let item = tokio::select! {
            () = cancel.cancelled() => return Err((ReplyError::Stopped, reply)),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(Delta::Answer(text))) => {
                reply.answer.push_str(&text);
                events.emit(Event::AnswerDelta { text });
            }
            Some(Ok(Delta::Reasoning(text))) => {
                reply.reasoning.push_str(&text);
                events.emit(Event::ReasoningDelta { text });
            }
            Some(Ok(Delta::AnswerWasReasoning)) => {
                let moved = std::mem::take(&mut reply.answer);
                reply.reasoning.insert_str(0, &moved);
                events.emit(Event::AnswerWasReasoning);
            }
            Some(Ok(Delta::Retrying {
                attempt,
                delay,
                reason,
            })) => {
                events.emit(Event::Retrying {
                    attempt,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason,
                });
            }
            Some(Ok(Delta::Done(finish))) => {
                reply.finish = Some(finish.reason);
                return Ok(reply);
            }
            Some(Err(error)) => return Err((ReplyError::Model(error.to_string()), reply)),
            None if cancel.is_cancelled() => return Err((ReplyError::Stopped, reply)),
            None => {
                return Err((
                    ReplyError::Model("the model stream ended without finishing the reply".into()),
                    reply,
                ));
            }
        }
    }
}

fn non_empty(text: String) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// A short account of a failed block for the give-up message.
fn failure_summary(record: &BlockRecord) -> String {
    let body = record
        .feedback
        .strip_prefix(protocol::FAILURE_PREFIX)
        .unwrap_or(&record.feedback);
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = if lines.len() > 4 {
        &lines[lines.len() - 4..]
    } else {
        &lines[..]
    };
    format!("{} block: {}", record.tool_type, tail.join(" | "))
}
