//! Streaming one round's reply: the conversation fitted to the context budget, sent, and the
//! deltas forwarded as events while they arrive; what came back, with the server's token
//! counts and the streaming clock for the round's usage.
//!
//! Owns the request a round sends and the reading of its stream. It must not parse blocks or
//! decide anything about the round (the turn does).

use tokio_util::sync::CancellationToken;

use super::budget;
use super::context::TurnContext;
use super::memory::Memory;
use super::shell::is_note;
use super::usage::StreamClock;
use crate::llm::{
    ChatRequest, Delta, FinishReason, GenerationOptions, Message, RepetitionGuard, Role, Usage,
};
use crate::protocol::{self, ToolTags};
use crate::wire::Event;

/// One round's reply.
pub(super) struct Reply {
    pub answer: String,
    pub reasoning: String,
    pub finish: Option<FinishReason>,
    /// The server's counts, when it gave them.
    pub usage: Option<Usage>,
    /// The budget's estimate of the request's tokens.
    pub prompt_estimate: u64,
    pub clock: StreamClock,
}

impl Reply {
    /// This reply's tokens: the server's counts, else the estimate.
    pub fn usage(&self, context_window: u64) -> crate::wire::RoundUsage {
        super::usage::round_usage(
            self.usage,
            super::usage::Sent {
                prompt_estimate: self.prompt_estimate,
                answer: &self.answer,
                reasoning: &self.reasoning,
            },
            &self.clock,
            context_window,
        )
    }

    pub fn empty() -> Self {
        Self {
            answer: String::new(),
            reasoning: String::new(),
            finish: None,
            usage: None,
            prompt_estimate: 0,
            clock: StreamClock::default(),
        }
    }
}

/// Why a reply did not arrive whole. Kept typed until the turn's end, where it becomes the
/// `Error` event's and the `TurnFinished` event's message.
#[derive(Debug, thiserror::Error)]
pub(super) enum ReplyError {
    #[error("stopped by the user")]
    Stopped,
    #[error(transparent)]
    TooBig(#[from] budget::TooBig),
    #[error(transparent)]
    Model(#[from] crate::llm::LlmError),
    #[error("the model stream ended without finishing the reply")]
    StreamEnded,
}

/// How a small model's reply is asked for and taken (`Shape::default()`: as configured).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Shape<'a> {
    /// The reply ends as soon as its first block of these tags is complete
    /// (`FinishReason::BlockComplete`): a small model's rambling after its block (more blocks,
    /// invented output, repeats) is never generated, shown or kept.
    pub one_block: Option<&'a ToolTags>,
    /// Sample at least this warm: a greedy model that resent failed code would send it again.
    pub min_temperature: Option<f64>,
    /// A short unit repeated a few lines long ends the reply as a loop
    /// (`RepetitionGuard::strict`), besides the server's or engine's own guard.
    pub strict_loops: bool,
    /// The reply's tokens, at most (and never more than `max_tokens`).
    pub max_tokens: Option<u64>,
    /// Worked exchanges that go just before the task (`examples::example_turns`,
    /// `examples_at`).
    pub examples: &'a [Message],
    /// The reply starts with this text (`small::fence_opening`), where the model continues a
    /// started answer (`ChatModel::continues_answer`); elsewhere nothing is started for it.
    pub opening: Option<&'a str>,
}

/// Streams one reply, emitting deltas. On failure the text that arrived comes back with the error.
pub(super) async fn stream_reply(
    ctx: &TurnContext,
    memory: &Memory,
    window: u64,
    cancel: &CancellationToken,
    shape: Shape<'_>,
) -> Result<Reply, (ReplyError, Reply)> {
    stream(ctx, memory, window, cancel, None, shape).await
}

/// `stream_reply`, asking the server to hold the reply to `json_schema` where it can (the
/// planner's plans).
pub(super) async fn stream_reply_with(
    ctx: &TurnContext,
    memory: &Memory,
    window: u64,
    cancel: &CancellationToken,
    json_schema: Option<serde_json::Value>,
) -> Result<Reply, (ReplyError, Reply)> {
    stream(ctx, memory, window, cancel, json_schema, Shape::default()).await
}

async fn stream(
    ctx: &TurnContext,
    memory: &Memory,
    window: u64,
    cancel: &CancellationToken,
    json_schema: Option<serde_json::Value>,
    shape: Shape<'_>,
) -> Result<Reply, (ReplyError, Reply)> {
    let one_block = shape.one_block;
    let events = &ctx.events;
    let Rendered {
        mut messages,
        fitted,
        budget,
    } = match rendered(&ctx.config, memory, window, shape.examples) {
        Ok(rendered) => rendered,
        Err(too_big) => return Err((too_big.into(), Reply::empty())),
    };
    if fitted.trimmed() {
        events.emit(Event::ContextTrimmed {
            shortened: fitted.shortened,
            dropped: fitted.dropped,
            tokens: fitted.tokens,
            budget,
        });
    }
    let opening = shape.opening.filter(|_| ctx.model.continues_answer());
    messages.extend(opening.map(|text| Message::new(Role::Assistant, text)));
    let request = ChatRequest {
        messages,
        options: capped(
            warmed(
                GenerationOptions::from_config(&ctx.config),
                shape.min_temperature,
            ),
            shape.max_tokens,
        ),
        json_schema,
        prefix_file: prefix_file(ctx),
    };
    let mut stream = ctx.model.stream(request, cancel.clone());
    let mut reply = Reply {
        prompt_estimate: fitted.tokens,
        ..Reply::empty()
    };
    let mut loops = shape.strict_loops.then(RepetitionGuard::strict);
    // Shown and kept with the first text the model writes, so a reply of nothing stays empty.
    let mut unsent_opening = opening;
    loop {
        let item = tokio::select! {
            () = cancel.cancelled() => return Err((ReplyError::Stopped, reply)),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(Delta::Answer(mut text))) => {
                reply.clock.tick();
                if let Some(opening) = unsent_opening.take() {
                    text.insert_str(0, opening);
                }
                let start = reply.answer.len();
                reply.answer.push_str(&text);
                // Only a delta ending a line can complete a closing fence.
                let block_end = one_block
                    .filter(|_| text.contains('\n'))
                    .and_then(|tags| protocol::first_block_end(&reply.answer, tags))
                    .filter(|&end| end > start);
                if let Some(end) = block_end {
                    reply.answer.truncate(end);
                    text.truncate(end - start);
                }
                let looping = loops.as_mut().and_then(|guard| guard.push(&text));
                events.emit(Event::AnswerDelta { text });
                if let Some(repetition) = looping.filter(|_| block_end.is_none()) {
                    reply.finish = Some(FinishReason::Repetition(repetition));
                    return Ok(reply);
                }
                if block_end.is_some() {
                    // Dropping the stream on return closes the connection (or stops the
                    // built-in engine), so nothing more is generated.
                    reply.finish = Some(FinishReason::BlockComplete);
                    return Ok(reply);
                }
            }
            Some(Ok(Delta::Reasoning(text))) => {
                reply.clock.tick();
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
            Some(Ok(Delta::Preparing(p))) => {
                events.emit(Event::ModelPreparing {
                    stage: p.stage.to_owned(),
                    model: p.model,
                    done_bytes: p.done_bytes,
                    total_bytes: p.total_bytes,
                    message: p.message,
                });
            }
            Some(Ok(Delta::Done(finish))) => {
                reply.finish = Some(finish.reason);
                reply.usage = finish.usage;
                return Ok(reply);
            }
            Some(Err(error)) => return Err((error.into(), reply)),
            None if cancel.is_cancelled() => return Err((ReplyError::Stopped, reply)),
            None => return Err((ReplyError::StreamEnded, reply)),
        }
    }
}

/// A request's messages, before a started answer (`Shape::opening`) is added, and how the
/// conversation was fitted.
pub(super) struct Rendered {
    pub messages: Vec<Message>,
    /// What fitting did to the conversation (its `messages` are taken: they are the above,
    /// before joining).
    pub fitted: budget::Fitted,
    pub budget: u64,
}

/// The messages a request sends for `memory` under `config`: the conversation fitted to the
/// budget the window leaves once the reply and `examples` have their room, the notes of the
/// user's commands joined, `examples` just before the task (`examples_at`). Every request is rendered here,
/// and so is a warm-up's reading ahead of the next one (`warm`): the two cannot differ.
pub(super) fn rendered(
    config: &crate::config::Config,
    memory: &Memory,
    window: u64,
    examples: &[Message],
) -> Result<Rendered, budget::TooBig> {
    let budget = budget::prompt_budget(window, config.model_settings.max_tokens.value)
        .saturating_sub(budget::estimate(examples));
    let mut fitted = budget::fit(memory.messages(), memory.turn_starts(), budget)?;
    let mut messages = std::mem::take(&mut fitted.messages);
    let at = examples_at(&messages, fitted.current_start);
    messages.splice(at..at, examples.iter().cloned());
    let messages = join_notes(messages);
    Ok(Rendered {
        messages,
        fitted,
        budget,
    })
}

/// Where the engine saves what it read of this session's conversation (beside its file).
pub(super) fn prefix_file(ctx: &TurnContext) -> Option<std::path::PathBuf> {
    ctx.events
        .session
        .as_ref()
        .map(|session| crate::session::prefix_file_of(session.path()))
}

/// The messages with the notes of the user's commands (`!cmd`) joined to the user messages
/// around them: the feedback before and the next task's prompt after. Chat templates that
/// insist on alternating roles refuse a run of user messages, and the model reads the commands
/// as part of the task they lead to. Other messages are sent as they are.
/// `options` sampling at least `min_temperature` warm.
fn warmed(mut options: GenerationOptions, min_temperature: Option<f64>) -> GenerationOptions {
    if let Some(floor) = min_temperature {
        options.temperature = Some(options.temperature.map_or(floor, |t| t.max(floor)));
    }
    options
}

/// Where a task's worked examples go in `messages` (its prompt at `current_start`): just
/// before the task, and before the user messages that lead into it (the notes of the user's
/// commands, or feedback a stopped task left), so that they stay joined to the prompt. So what
/// precedes them, the system prompt and the earlier tasks, is the same whatever the examples
/// are: a request continues the conversation read for the one before (the built-in engine and
/// servers that cache prompts read only what follows), where examples chosen for each task
/// and put after the system prompt made every task's request differ from its second message
/// on. A first task's examples come right after the system prompt, as before.
fn examples_at(messages: &[Message], current_start: usize) -> usize {
    let first = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
    let mut at = current_start.min(messages.len()).max(first);
    while at > first && messages[at - 1].role == Role::User {
        at -= 1;
    }
    at
}

/// `options` asking for at most `cap` tokens.
fn capped(mut options: GenerationOptions, cap: Option<u64>) -> GenerationOptions {
    options.max_tokens = capped_tokens(options.max_tokens, cap);
    options
}

/// The tokens a reply is asked for: `max_tokens`, lowered to `cap` when there is one.
pub(super) fn capped_tokens(max_tokens: u64, cap: Option<u64>) -> u64 {
    cap.map_or(max_tokens, |cap| cap.min(max_tokens))
}

fn join_notes(messages: Vec<Message>) -> Vec<Message> {
    let mut joined: Vec<Message> = Vec::with_capacity(messages.len());
    let mut last_holds_note = false;
    for message in messages {
        let note = message.role == Role::User && is_note(&message.content);
        match joined.last_mut() {
            Some(last)
                if last.role == Role::User
                    && message.role == Role::User
                    && (note || last_holds_note) =>
            {
                last.content.push_str("\n\n");
                last.content.push_str(&message.content);
                last_holds_note = true;
            }
            _ => {
                joined.push(message);
                last_holds_note = note;
            }
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::shell::NOTE_HEAD;

    #[test]
    fn warming_raises_a_colder_temperature_and_keeps_a_warmer_one() {
        let options = |temperature| GenerationOptions {
            max_tokens: 8,
            temperature,
            top_p: None,
            seed: Some(0),
            context_window: 64,
        };
        assert_eq!(warmed(options(None), None).temperature, None);
        assert_eq!(warmed(options(None), Some(0.5)).temperature, Some(0.5));
        assert_eq!(warmed(options(Some(0.0)), Some(0.5)).temperature, Some(0.5));
        assert_eq!(warmed(options(Some(0.9)), Some(0.5)).temperature, Some(0.9));
        assert_eq!(warmed(options(Some(0.2)), None).temperature, Some(0.2));
    }

    #[test]
    fn examples_go_before_the_task_and_the_notes_leading_into_it() {
        let m = |role, content: &str| Message::new(role, content);
        let contents = |messages: &[Message]| -> Vec<String> {
            messages.iter().map(|m| m.content.clone()).collect()
        };
        // A first task: right after the system prompt (as before), or first with none.
        let first = [m(Role::System, "system"), m(Role::User, "task")];
        assert_eq!(examples_at(&first, 1), 1);
        assert_eq!(examples_at(&[m(Role::User, "task")], 0), 0);
        // A later task: after the earlier ones, before the notes and the prompt.
        let note = format!("{NOTE_HEAD} `ls`");
        let later = [
            m(Role::System, "system"),
            m(Role::User, "task 1"),
            m(Role::Assistant, "answer 1"),
            m(Role::User, &note),
            m(Role::User, "task 2"),
        ];
        assert_eq!(examples_at(&later, 4), 3);
        // No task (a warm-up's start): at the end, where the next task's examples will go.
        assert_eq!(examples_at(&later[..3], 3), 3);
        let mut sent = later.to_vec();
        sent.splice(
            3..3,
            [m(Role::User, "ex task"), m(Role::Assistant, "ex block")],
        );
        let sent = join_notes(sent);
        assert_eq!(
            contents(&sent)[..4],
            ["system", "task 1", "answer 1", "ex task"]
        );
        assert_eq!(
            sent[5].content,
            format!("{note}\n\ntask 2"),
            "the note stays with its task"
        );
    }

    #[test]
    fn a_cap_lowers_max_tokens_and_never_raises_it() {
        let options = |max_tokens| GenerationOptions {
            max_tokens,
            temperature: None,
            top_p: None,
            seed: None,
            context_window: 64,
        };
        assert_eq!(capped(options(1024), Some(512)).max_tokens, 512);
        assert_eq!(capped(options(256), Some(512)).max_tokens, 256);
        assert_eq!(capped(options(1024), None).max_tokens, 1024);
    }

    #[test]
    fn reply_errors_keep_their_words_at_the_edge() {
        assert_eq!(ReplyError::Stopped.to_string(), "stopped by the user");
        assert_eq!(
            ReplyError::StreamEnded.to_string(),
            "the model stream ended without finishing the reply"
        );
        let too_big = budget::TooBig {
            tokens: 10,
            budget: 5,
        };
        assert_eq!(
            ReplyError::from(too_big.clone()).to_string(),
            too_big.to_string()
        );
    }

    #[test]
    fn notes_join_the_user_messages_around_them_and_nothing_else_is_joined() {
        let m = |role, content: &str| Message::new(role, content);
        let note = format!("{NOTE_HEAD} `ls`");
        let sent = join_notes(vec![
            m(Role::System, "system"),
            m(Role::User, "task"),
            m(Role::Assistant, "a block"),
            m(Role::User, "[success] output"),
            m(Role::User, &note),
            m(Role::User, "what is here?"),
            m(Role::Assistant, "two files"),
            m(Role::User, "[failure] stopped"),
            m(Role::User, "next task"),
        ]);
        assert_eq!(
            sent,
            [
                m(Role::System, "system"),
                m(Role::User, "task"),
                m(Role::Assistant, "a block"),
                m(
                    Role::User,
                    &format!("[success] output\n\n{note}\n\nwhat is here?")
                ),
                m(Role::Assistant, "two files"),
                m(Role::User, "[failure] stopped"),
                m(Role::User, "next task"),
            ]
        );
    }
}
