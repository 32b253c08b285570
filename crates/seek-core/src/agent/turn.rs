//! The block loop: one task of an agent that runs blocks (`Runs::Blocks`), from the user's
//! prompt to the end: stream a reply, run its blocks, feed the results back, and let the policy
//! decide, within the caps, until done. The turn profile (`profile`) is consulted at fixed
//! points; the loop itself knows no model size and no agent by name.
//!
//! It must not draw anything; everything it does goes out as events.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::answer::final_answer;
use super::context::{TurnContext, announce, tool_context};
use super::cut::{self, Cut};
use super::execute::{MAX_BLOCKS_PER_REPLY, RoundRules, execute_reply};
use super::foreign::{Foreign, foreign_blocks};
use super::memory::Memory;
use super::policy::{CLARIFICATION, Decision, RoundReport, decide};
use super::profile::{Profile, TaskState};
use super::prompts::agent_tools;
use super::reply::{Reply, ReplyError, stream_reply};
use super::seek_words::SeekWords;
use super::task::Task;
use super::usage;
use crate::agents::AgentSpec;
use crate::config::AgentName;
use crate::llm::Role;
use crate::protocol;
use crate::tools::{ToolContext, Toolbox};
use crate::wire::{BlockRecord, Event, NotRun, Outcome, Status, TurnUsage};

/// What the turn has gathered so far, for its `TurnFinished` event.
struct Progress {
    turn: u64,
    agent: &'static AgentSpec,
    rounds: u32,
    /// Failed rounds so far (each one asks the model to correct itself).
    failures: u32,
    records: Vec<BlockRecord>,
    last_answer: String,
    last_reasoning: Option<String>,
    /// The last failure, for the give-up message.
    last_error: Option<String>,
    /// The rounds' tokens so far (`None` until a reply came whole).
    usage: Option<TurnUsage>,
    /// What running blocks carries between rounds (the code that failed).
    rules: RoundRules,
    /// The task as the user typed it (seek's feedback restates it; the answer leaves it out).
    task: String,
}

impl Progress {
    fn new(turn: u64, agent: &'static AgentSpec) -> Self {
        Self {
            turn,
            agent,
            rounds: 0,
            failures: 0,
            records: Vec::new(),
            last_answer: String::new(),
            last_reasoning: None,
            last_error: None,
            usage: None,
            rules: RoundRules::default(),
            task: String::new(),
        }
    }

    /// The turn's last event. The runtime emits it once it holds the memory again, so a front
    /// end that reacts to it with a new command never finds the agent still busy.
    /// Its answer is the final answer (`answer::final_answer`), never a bare `block:N`.
    fn finish(self, outcome: Outcome, message: Option<String>) -> Event {
        let seek = SeekWords {
            task: &self.task,
            agent: self.agent.name,
        };
        let answer = final_answer(&self.last_answer, &self.records, &seek);
        Event::TurnFinished {
            usage: self.usage,
            turn: self.turn,
            outcome,
            answer,
            reasoning: self.last_reasoning,
            agent: self.agent.name,
            rounds: self.rounds,
            blocks: self.records,
            message,
            plan: None,
            web: None,
        }
    }

    /// How a task the policy calls done ends: a task done by running (the coder's) that ran
    /// blocks of which none succeeded failed, whatever the model said last (it may even have
    /// echoed seek's feedback). Blocks the user declined or that were only shown do not count.
    fn done(self) -> Event {
        let counted =
            |r: &&BlockRecord| !matches!(r.not_run, Some(NotRun::Declined | NotRun::ShownOnly));
        let tried = self.records.iter().filter(counted).count();
        if self.agent.done_by_running && tried > 0 && !self.succeeded() {
            let mut message = format!("no block of the task succeeded ({tried} tried)");
            if let Some(error) = &self.last_error {
                message.push_str(&format!("; the last error: {error}"));
            }
            return self.finish(Outcome::GaveUp, Some(message));
        }
        self.finish(Outcome::Done, None)
    }

    /// A block of the task has succeeded.
    fn succeeded(&self) -> bool {
        self.records.iter().any(|r| r.success)
    }

    /// What the turn profile is told of the task.
    fn state(&self) -> TaskState<'_> {
        TaskState {
            succeeded: self.succeeded(),
            written: self.usage.map_or(0, |u| u.completion_tokens),
            last_error: self.last_error.as_deref(),
        }
    }

    /// How a task ends whose reply held only blocks its agent cannot run: given up (as a coder
    /// task none of whose blocks succeeded) unless a block of the task succeeded before.
    fn not_runnable(self, foreign: &Foreign) -> Event {
        if self.succeeded() {
            return self.done();
        }
        let message = super::foreign::ending_message(self.agent.name, foreign);
        self.finish(Outcome::GaveUp, Some(message))
    }

    /// The message when the round cap is reached, `None` while rounds are left.
    fn round_limit(&self, max_rounds: u32) -> Option<String> {
        (self.rounds >= max_rounds).then(|| {
            format!(
                "stopped after {} rounds without finishing (max_rounds = {max_rounds}); ask again to continue",
                self.rounds
            )
        })
    }

    /// Counts a failed round; the give-up message once `max_attempts` failed.
    fn count_failure(&mut self, max_attempts: u32) -> Option<String> {
        self.failures += 1;
        (self.failures >= max_attempts).then(|| {
            format!(
                "gave up after {} failed attempts; the last error: {}",
                self.failures,
                self.last_error.as_deref().unwrap_or("unknown")
            )
        })
    }
}

/// The tools a turn's agent may use, and how its blocks run.
struct Tools {
    toolbox: Toolbox,
    /// Every tool the agent owns is parsed, installed or not: a missing one fails with a
    /// message naming what to install instead of its block passing silently as markdown.
    parse_tags: protocol::ToolTags,
    ctx: ToolContext,
}

impl Tools {
    fn for_agent(ctx: &TurnContext, agent: AgentName, cancel: &CancellationToken) -> Self {
        let mut toolbox = Toolbox::for_model_blocks(&ctx.config).only(agent_tools(agent));
        if let Some(hub) = &ctx.mcp
            && super::prompts::may_call_mcp(agent, &ctx.config)
        {
            toolbox = toolbox.with_mcp(Arc::clone(hub));
        }
        let parse_tags = toolbox.tags();
        Self {
            toolbox,
            parse_tags,
            ctx: tool_context(ctx, cancel),
        }
    }
}

/// Runs one task of an agent that works in the block loop (`Runs::Blocks`; `run` dispatches);
/// returns its `TurnFinished` event for the runtime to emit.
pub(super) async fn run_turn(
    ctx: &TurnContext,
    memory: &mut Memory,
    turn: u64,
    task: Task,
    agent: AgentName,
    cancel: CancellationToken,
) -> Event {
    let spec = crate::agents::spec(agent);
    let config = &ctx.config;
    let events = &ctx.events;
    let tools = Tools::for_agent(ctx, agent, &cancel);
    let max_attempts = config.max_attempts.value;
    let max_rounds = config.max_rounds.value;

    let task_words = task.prompt.clone();
    memory.begin_turn(announce(events, turn, agent, task));
    let mut progress = Progress::new(turn, spec);
    progress.task = task_words.clone();
    let mut profile = Profile::for_task(config.adaptations(), spec, &task_words, &tools.parse_tags);
    profile.block_rules(&mut progress.rules);

    // The server is asked for the window once per model; Stop is heard while it is asked.
    let window = tokio::select! {
        () = cancel.cancelled() => None,
        window = super::window::known(ctx) => Some(window),
    };
    let Some(window) = window else {
        return progress.finish(Outcome::Stopped, Some(ReplyError::Stopped.to_string()));
    };

    loop {
        if let Some(message) = progress.round_limit(max_rounds) {
            return progress.finish(Outcome::RoundLimit, Some(message));
        }
        let shape = match profile.shape_request(progress.state()) {
            Ok(shape) => shape,
            Err(message) => return progress.finish(Outcome::GaveUp, Some(message)),
        };
        progress.rounds += 1;
        emit_status(ctx, &progress, max_attempts);

        let reply = match stream_reply(ctx, memory, window, &cancel, shape).await {
            Ok(reply) => reply,
            Err((error, partial)) => return reply_failed(ctx, memory, progress, error, partial),
        };
        let (mut report, taken) = take_reply(ctx, memory, &mut progress, &tools, reply, window);
        let mut stuck = u32::from(report.repetition);
        // A repeating reply got feedback instead; a question waits for the user's answer.
        let runs_blocks = report.had_blocks && !report.clarification && !report.repetition;
        if runs_blocks {
            let ran = run_blocks(
                ctx,
                memory,
                &mut progress,
                &tools,
                &taken,
                &mut report,
                &cancel,
                &profile,
            )
            .await;
            stuck = ran.repeated;
            if let Some((outcome, message)) = ran.ends {
                return progress.finish(outcome, message);
            }
        }
        profile.after_round(stuck);
        // Only code the agent cannot run: nothing the task needed ran, so it is not done.
        if let Some(foreign) = taken.foreign.as_ref().filter(|_| !report.had_blocks) {
            return progress.not_runnable(foreign);
        }

        match decide(agent, &report) {
            Decision::Done => match profile.on_done(progress.state(), &report) {
                Some(nudge) => memory.push(Role::User, nudge),
                None => return progress.done(),
            },
            Decision::Clarify => {
                let question = progress
                    .last_answer
                    .replace(CLARIFICATION, "")
                    .trim()
                    .to_owned();
                return progress.finish(Outcome::NeedsClarification, Some(question));
            }
            Decision::AskAgain { failed: true } => {
                if let Some(message) = progress.count_failure(max_attempts) {
                    return progress.finish(Outcome::GaveUp, Some(message));
                }
            }
            Decision::AskAgain { failed: false } => {}
        }
    }
}

/// Says whether the model is thinking afresh or correcting a failure.
fn emit_status(ctx: &TurnContext, progress: &Progress, max_attempts: u32) {
    let status = if progress.failures > 0 {
        Status::Correcting
    } else {
        Status::Thinking
    };
    ctx.events.emit(Event::Status {
        status,
        round: progress.rounds,
        attempt: progress.failures,
        max_attempts,
    });
}

/// Ends the turn on a reply that did not arrive whole: the text that came is kept in memory
/// (marked interrupted), and a model failure is also an `Error` event.
fn reply_failed(
    ctx: &TurnContext,
    memory: &mut Memory,
    mut progress: Progress,
    error: ReplyError,
    partial: Reply,
) -> Event {
    if !partial.answer.is_empty() {
        memory.push(
            Role::Assistant,
            format!("{}\n[interrupted]", partial.answer),
        );
    }
    progress.last_answer = partial.answer;
    progress.last_reasoning = non_empty(partial.reasoning);
    let message = error.to_string();
    let outcome = match error {
        ReplyError::Stopped => Outcome::Stopped,
        ReplyError::TooBig(_) | ReplyError::Model(_) | ReplyError::StreamEnded => {
            ctx.events.emit(Event::Error {
                message: message.clone(),
            });
            Outcome::ModelError
        }
    };
    progress.finish(outcome, Some(message))
}

/// A reply as the round took it: its blocks, how it was cut, if it was, and its blocks for
/// tools the agent does not have.
struct Taken {
    parsed: protocol::Parsed,
    cut: Option<Cut>,
    foreign: Option<Foreign>,
}

/// Takes a whole reply: parses its blocks, announces it and its usage, keeps it in memory, and
/// says what the round holds for the policy. A repeating reply is answered with feedback here,
/// its blocks reported as not run.
fn take_reply(
    ctx: &TurnContext,
    memory: &mut Memory,
    progress: &mut Progress,
    tools: &Tools,
    reply: Reply,
    window: u64,
) -> (RoundReport, Taken) {
    let parsed = protocol::parse_at_most(&reply.answer, &tools.parse_tags, MAX_BLOCKS_PER_REPLY);
    let cut = Cut::of(reply.finish.as_ref());
    let repetition = cut == Some(Cut::Repetition);
    let round_usage = reply.usage(window);
    progress.last_answer = parsed.placeholder_text();
    progress.last_reasoning = non_empty(reply.reasoning);
    ctx.events.emit(Event::AnswerComplete {
        round: progress.rounds,
        answer: progress.last_answer.clone(),
        reasoning: progress.last_reasoning.clone(),
        blocks: parsed.blocks.len(),
        finish: crate::llm::answer_finish(reply.finish.as_ref()),
    });
    ctx.events.emit(Event::Usage {
        round: progress.rounds,
        usage: round_usage,
    });
    progress.usage = Some(usage::add(progress.usage, &round_usage));
    if parsed.over_limit > 0 {
        ctx.events.emit(Event::BlocksNotRun {
            round: progress.rounds,
            count: parsed.over_limit,
            limit: MAX_BLOCKS_PER_REPLY,
        });
    }
    let clarification = reply.answer.contains(CLARIFICATION);
    memory.push(Role::Assistant, reply.answer);
    let runs_code = !progress.agent.tools.is_empty();
    if repetition {
        let blocks: &[protocol::Block] = if runs_code { &parsed.blocks } else { &[] };
        let records = cut::not_run(blocks, progress.rounds, Cut::Repetition, &ctx.events);
        memory.push(Role::User, cut::repetition_message(records.len()));
        progress.records.extend(records);
        progress.last_error = Some("the reply kept repeating itself".into());
    }
    let foreign = runs_code
        .then(|| foreign_blocks(&parsed.text, &tools.parse_tags))
        .flatten()
        .filter(|_| !repetition);
    if let Some(foreign) = &foreign {
        ctx.events.emit(Event::BlocksAgentCannotRun {
            round: progress.rounds,
            agent: progress.agent.name,
            tools: foreign.tools.clone(),
            can_run: foreign.can_run,
        });
    }
    let report = RoundReport {
        had_blocks: !parsed.blocks.is_empty() && runs_code,
        all_succeeded: true,
        last_tool: None,
        clarification,
        repetition,
    };
    (
        report,
        Taken {
            parsed,
            cut,
            foreign,
        },
    )
}

/// What running a reply's blocks came to.
struct Ran {
    /// How the turn ends here: blocks held for approval, the user stopped them, or a resend of
    /// code that worked ended it.
    ends: Option<(Outcome, Option<String>)>,
    /// Blocks not run because they resent code that had failed.
    repeated: u32,
}

/// Runs the reply's blocks and feeds their results back.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the round; a struct would only rename them
async fn run_blocks(
    ctx: &TurnContext,
    memory: &mut Memory,
    progress: &mut Progress,
    tools: &Tools,
    taken: &Taken,
    report: &mut RoundReport,
    cancel: &CancellationToken,
    profile: &Profile,
) -> Ran {
    let max_attempts = ctx.config.max_attempts.value;
    let (round, attempt) = (progress.rounds, progress.failures);
    let status_events = ctx.events.clone();
    // A reply cut at max_tokens runs its whole blocks; its unclosed last one is reported apart.
    let parsed = &taken.parsed;
    let (whole, unclosed) = match taken.cut {
        Some(Cut::Length) => {
            let mut whole = parsed.clone();
            let unclosed: Vec<protocol::Block> =
                whole.blocks.iter().filter(|b| !b.closed).cloned().collect();
            whole.blocks.retain(|b| b.closed);
            (std::borrow::Cow::Owned(whole), unclosed)
        }
        _ => (std::borrow::Cow::Borrowed(parsed), Vec::new()),
    };
    let mut executed = execute_reply(
        &whole,
        round,
        &tools.toolbox,
        &tools.ctx,
        &ctx.events,
        &ctx.approvals,
        &mut progress.rules,
        |status| {
            status_events.emit(Event::Status {
                status,
                round,
                attempt,
                max_attempts,
            });
        },
    )
    .await;
    if let Some(first) = unclosed.first() {
        let asked = profile.asked_tokens(ctx.config.model_settings.max_tokens.value);
        let note = cut::length_message(first, asked);
        if !executed.feedback.is_empty() {
            executed.feedback.push_str("\n\n");
        }
        executed.feedback.push_str(&note);
        executed.all_succeeded = false;
        progress.last_error = Some("the reply was cut at max_tokens".into());
        let records = cut::not_run(&unclosed, round, Cut::Length, &ctx.events);
        executed.records.extend(records);
    }
    if let Some(foreign) = &taken.foreign {
        if !executed.feedback.is_empty() {
            executed.feedback.push_str("\n\n");
        }
        executed
            .feedback
            .push_str(&super::foreign::for_model(progress.agent.name, foreign));
    }
    report.all_succeeded = executed.all_succeeded;
    report.last_tool = executed.last_tool;
    let repeated = |r: &&BlockRecord| r.not_run == Some(NotRun::Repeated);
    let repeated_count =
        u32::try_from(executed.records.iter().filter(repeated).count()).unwrap_or(u32::MAX);
    // A refused resend's feedback is seek's words; the error it repeats is already the last one.
    if let Some(failed) = executed
        .records
        .iter()
        .find(|r| !r.success && !r.skipped && !repeated(r))
    {
        progress.last_error = Some(failure_summary(failed));
    }
    progress.records.extend(executed.records);
    let ends = if executed.rerun {
        Some((Outcome::Done, Some(RERUN.into())))
    } else {
        memory.push(Role::User, executed.feedback);
        if executed.held {
            Some((Outcome::Done, Some(super::approval::SHOWN_ONLY.into())))
        } else if cancel.is_cancelled() {
            Some((Outcome::Stopped, Some(ReplyError::Stopped.to_string())))
        } else {
            None
        }
    };
    Ran {
        ends,
        repeated: repeated_count,
    }
}

/// Why a small model's task ended when it resent code that already ran.
const RERUN: &str = "the model sent code that already ran again; that code's result is the answer";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_cap_is_reached_after_max_rounds() {
        let mut progress = Progress::new(1, crate::agents::spec(AgentName::Coder));
        progress.rounds = 2;
        assert_eq!(progress.round_limit(3), None);
        progress.rounds = 3;
        let message = progress.round_limit(3).expect("at the cap");
        assert!(message.starts_with("stopped after 3 rounds"), "{message}");
    }

    #[test]
    fn the_turn_gives_up_at_max_attempts_naming_the_last_error() {
        let mut progress = Progress::new(1, crate::agents::spec(AgentName::Coder));
        assert_eq!(progress.count_failure(2), None);
        progress.last_error = Some("bash block: boom".into());
        let message = progress
            .count_failure(2)
            .expect("the second failure gives up");
        assert_eq!(
            message,
            "gave up after 2 failed attempts; the last error: bash block: boom"
        );
    }

    #[test]
    fn the_finish_event_carries_what_was_gathered() {
        let mut progress = Progress::new(7, crate::agents::spec(AgentName::Coder));
        progress.rounds = 2;
        progress.last_answer = "answer".into();
        let event = progress.finish(Outcome::Done, None);
        assert!(
            matches!(&event, Event::TurnFinished { turn: 7, rounds: 2, answer, outcome: Outcome::Done, message: None, .. } if answer == "answer"),
            "{event:?}"
        );
    }
}
