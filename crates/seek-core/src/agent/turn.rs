//! One task, from the user's prompt to the end: stream a reply, run its blocks, feed the results
//! back, and let the policy decide, within the caps, until done.
//!
//! It must not draw anything; everything it does goes out as events.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::answer::final_answer;
use super::cut::{self, Cut};
use super::execute::{EventSink, MAX_BLOCKS_PER_REPLY, RoundRules, execute_reply};
use super::foreign::{Foreign, foreign_blocks};
use super::memory::Memory;
use super::policy::{CLARIFICATION, Decision, RoundReport, decide};
use super::prompts::{agent_tools, resolve_agent};
use super::reply::{Reply, ReplyError, Shape, stream_reply};
use super::seek_words::SeekWords;
pub use super::task::Task;
use super::usage;
use crate::config::{AgentName, Config};
use crate::llm::{ChatModel, Role};
use crate::protocol;
use crate::tools::{ToolContext, Toolbox};
use crate::wire::{BlockRecord, Event, NotRun, Outcome, Status, TurnUsage};

/// What a turn needs from the runtime.
#[derive(Clone)]
pub struct TurnContext {
    pub config: Arc<Config>,
    pub model: Arc<dyn ChatModel>,
    pub events: EventSink,
    /// The model's context window in tokens, once known (the server's word or the config's);
    /// a new model gets a new cell.
    pub context_window: Arc<tokio::sync::OnceCell<u64>>,
    /// The configuration with what the server said of the model (`size::sized`), once known;
    /// a new model gets a new cell.
    pub sized: Arc<tokio::sync::OnceCell<Arc<Config>>>,
    /// Whether blocks run without asking, and the user's answers when they do not.
    pub approvals: super::approval::ApprovalGate,
    /// The confinement of blocks (`None`: sandbox off).
    pub sandbox: Option<Arc<crate::exec::sandbox::Sandbox>>,
    /// Credential-like variables blocks must not inherit.
    pub env_remove: Arc<Vec<std::ffi::OsString>>,
    /// The configured MCP servers (`None`: none are configured).
    pub mcp: Option<Arc<crate::mcp::Hub>>,
}

/// What the turn has gathered so far, for its `TurnFinished` event.
struct Progress {
    turn: u64,
    agent: AgentName,
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
    /// A small model's reply would have ended the task with nothing run, and it was told to
    /// run it (once a task).
    nudged: bool,
    /// Times the model was stuck: a block resending failed code (`NotRun::Repeated`), or a
    /// reply cut for repeating itself. A greedy model stuck so answers the same way again.
    stuck: u32,
    /// The task as the user typed it (seek's feedback restates it; the answer leaves it out).
    task: String,
}

impl Progress {
    fn new(turn: u64, agent: AgentName) -> Self {
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
            nudged: false,
            stuck: 0,
            task: String::new(),
        }
    }

    /// The turn's last event. The runtime emits it once it holds the memory again, so a front
    /// end that reacts to it with a new command never finds the agent still busy.
    /// Its answer is the final answer (`answer::final_answer`), never a bare `block:N`.
    fn finish(self, outcome: Outcome, message: Option<String>) -> Event {
        let seek = SeekWords {
            task: &self.task,
            agent: self.agent,
        };
        let answer = final_answer(&self.last_answer, &self.records, &seek);
        Event::TurnFinished {
            usage: self.usage,
            turn: self.turn,
            outcome,
            answer,
            reasoning: self.last_reasoning,
            agent: self.agent,
            rounds: self.rounds,
            blocks: self.records,
            message,
            plan: None,
            web: None,
        }
    }

    /// How a task the policy calls done ends: a coder task that ran blocks of which none
    /// succeeded failed, whatever the model said last (it may even have echoed seek's feedback).
    /// Blocks the user declined or that were only shown do not count.
    fn done(self) -> Event {
        let counted =
            |r: &&BlockRecord| !matches!(r.not_run, Some(NotRun::Declined | NotRun::ShownOnly));
        let tried = self.records.iter().filter(counted).count();
        if self.agent == AgentName::Coder && tried > 0 && !self.records.iter().any(|r| r.success) {
            let mut message = format!("no block of the task succeeded ({tried} tried)");
            if let Some(error) = &self.last_error {
                message.push_str(&format!("; the last error: {error}"));
            }
            return self.finish(Outcome::GaveUp, Some(message));
        }
        self.finish(Outcome::Done, None)
    }

    /// What a small model's task may still write before a block of it works (`budget`): the
    /// whole budget once one has.
    fn tokens_left(&self, budget: u64) -> u64 {
        if self.records.iter().any(|r| r.success) {
            return budget;
        }
        let written = self.usage.map_or(0, |u| u.completion_tokens);
        budget.saturating_sub(written)
    }

    /// The give-up message once the budget is spent.
    fn budget_spent(&self, budget: u64) -> String {
        let mut message = format!(
            "gave up: the model wrote {budget} tokens without a block that worked (a small model's \
             limit for a task); try a bigger model (/model) or say the task another way"
        );
        if let Some(error) = &self.last_error {
            message.push_str(&format!("; the last error: {error}"));
        }
        message
    }

    /// How a task ends whose reply held only blocks its agent cannot run: given up (as a coder
    /// task none of whose blocks succeeded) unless a block of the task succeeded before.
    fn not_runnable(self, foreign: &Foreign) -> Event {
        if self.records.iter().any(|r| r.success) {
            return self.done();
        }
        let message = super::foreign::ending_message(self.agent, foreign);
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

/// How blocks run: the work dir, the sandbox, the limits, the withheld variables; the user's
/// own commands (`!cmd`) run under exactly the same.
pub(super) fn tool_context(ctx: &TurnContext, cancel: &CancellationToken) -> ToolContext {
    let config = &ctx.config;
    let mut tool_ctx = ToolContext::new(config.work_dir.value.clone());
    tool_ctx.output_limit = usize::try_from(config.output_limit_bytes.value).unwrap_or(usize::MAX);
    tool_ctx.cancel = cancel.clone();
    tool_ctx.sandbox = ctx.sandbox.clone();
    tool_ctx.env_remove = Arc::clone(&ctx.env_remove);
    tool_ctx.limits = config.safety.limits();
    tool_ctx.safe_mode = config.safety.safe_mode.value;
    tool_ctx.own_files = Arc::new(crate::tools::OwnFiles::new(config.own_files()));
    tool_ctx.refuse_no_code = config.adaptations().refuse_no_code;
    tool_ctx
}

/// Tells the front ends a task starts: `TurnStarted`, then the router's choice, the attached
/// files and the ones refused. Returns the message the model gets.
pub(super) fn announce(events: &EventSink, turn: u64, agent: AgentName, task: Task) -> String {
    events.emit(Event::TurnStarted {
        turn,
        prompt: task.prompt,
        agent,
    });
    if let Some(route) = task.route {
        events.emit(Event::Routed { route });
    }
    if !task.attached.is_empty() {
        events.emit(Event::Attached {
            files: task.attached,
        });
    }
    if !task.refused.is_empty() {
        events.emit(Event::Error {
            message: task.refused.join("; "),
        });
    }
    task.message
}

/// Runs one task; returns its `TurnFinished` event for the runtime to emit.
pub async fn run_turn(
    ctx: &TurnContext,
    memory: &mut Memory,
    turn: u64,
    task: Task,
    agent: AgentName,
    cancel: CancellationToken,
) -> Event {
    let agent = resolve_agent(agent);
    if crate::agents::spec(agent).runs == crate::agents::Runs::Web {
        return super::web::run_web(ctx, memory, turn, task, cancel).await;
    }
    let config = &ctx.config;
    let events = &ctx.events;
    let tools = Tools::for_agent(ctx, agent, &cancel);
    let max_attempts = config.max_attempts.value;
    let max_rounds = config.max_rounds.value;

    let task_words = task.prompt.clone();
    memory.begin_turn(announce(events, turn, agent, task));
    let mut progress = Progress::new(turn, agent);
    progress.task = task_words.clone();
    let adapt = config.adaptations();
    progress.rules.short_feedback = adapt.short_feedback;
    progress.rules.task = task_words.clone();
    progress.rules.refuse_repeats = adapt.refuse_repeats;
    progress.rules.end_on_rerun = adapt.end_on_rerun;
    // A small model gets one block per reply: what it writes after its block is not generated.
    let one_block = (adapt.one_block && agent != AgentName::Casual).then_some(&tools.parse_tags);
    let examples = if adapt.example_turns && agent == AgentName::Coder {
        super::examples::example_turns(&task_words, adapt.nearest_example, adapt.fill_values)
    } else {
        Vec::new()
    };
    let fence = (adapt.open_fence && agent == AgentName::Coder)
        .then(|| super::small::fence_opening(&task_words, &tools.parse_tags));

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
        let left = adapt
            .task_tokens
            .filter(|_| agent == AgentName::Coder)
            .map(|budget| progress.tokens_left(budget));
        if left == Some(0) {
            let message = progress.budget_spent(adapt.task_tokens.unwrap_or_default());
            return progress.finish(Outcome::GaveUp, Some(message));
        }
        progress.rounds += 1;
        emit_status(ctx, &progress, max_attempts);

        let shape = Shape {
            one_block,
            min_temperature: adapt
                .resample
                .then(|| super::small::resample_temperature(progress.stuck))
                .flatten(),
            strict_loops: adapt.strict_loops,
            examples: &examples,
            max_tokens: match (adapt.reply_cap, left) {
                (Some(cap), Some(left)) => Some(cap.min(left)),
                (cap, left) => cap.or(left),
            },
            // Once a block worked, the model may answer in words ("Done: …").
            opening: fence
                .as_deref()
                .filter(|_| !progress.records.iter().any(|r| r.success)),
        };
        let reply = match stream_reply(ctx, memory, window, &cancel, shape).await {
            Ok(reply) => reply,
            Err((error, partial)) => return reply_failed(ctx, memory, progress, error, partial),
        };
        let (mut report, taken) = take_reply(ctx, memory, &mut progress, &tools, reply, window);
        // A repeating reply got feedback instead; a question waits for the user's answer.
        let runs_blocks = report.had_blocks && !report.clarification && !report.repetition;
        if runs_blocks
            && let Some((outcome, message)) = run_blocks(
                ctx,
                memory,
                &mut progress,
                &tools,
                &taken,
                &mut report,
                &cancel,
            )
            .await
        {
            return progress.finish(outcome, message);
        }
        // Only code the agent cannot run: nothing the task needed ran, so it is not done.
        if let Some(foreign) = taken.foreign.as_ref().filter(|_| !report.had_blocks) {
            return progress.not_runnable(foreign);
        }

        match decide(agent, &report) {
            Decision::Done if adapt.nudge && should_nudge(agent, &progress, &report) => {
                progress.nudged = true;
                memory.push(Role::User, super::small::nudge(&task_words));
            }
            Decision::Done => return progress.done(),
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

/// Whether a small model's reply would end a coder task with nothing done: no block in it and
/// none that succeeded before. Such models often answer in prose ("12 factorial is 12 * 11
/// factorial.") at first, or after a failed or looping reply, and are told once to run it.
fn should_nudge(agent: AgentName, progress: &Progress, report: &RoundReport) -> bool {
    agent == AgentName::Coder
        && !progress.records.iter().any(|r| r.success)
        && !progress.nudged
        && !report.had_blocks
        && !report.clarification
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
    let runs_code = progress.agent != AgentName::Casual;
    if repetition {
        let blocks: &[protocol::Block] = if runs_code { &parsed.blocks } else { &[] };
        let records = cut::not_run(blocks, progress.rounds, Cut::Repetition, &ctx.events);
        memory.push(Role::User, cut::repetition_message(records.len()));
        progress.records.extend(records);
        progress.last_error = Some("the reply kept repeating itself".into());
        progress.stuck += 1;
    }
    let foreign = runs_code
        .then(|| foreign_blocks(&parsed.text, &tools.parse_tags))
        .flatten()
        .filter(|_| !repetition);
    if let Some(foreign) = &foreign {
        ctx.events.emit(Event::BlocksAgentCannotRun {
            round: progress.rounds,
            agent: progress.agent,
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

/// Runs the reply's blocks and feeds their results back. Returns how the turn ends when it must
/// end here: blocks held for approval, or the user stopped them.
async fn run_blocks(
    ctx: &TurnContext,
    memory: &mut Memory,
    progress: &mut Progress,
    tools: &Tools,
    taken: &Taken,
    report: &mut RoundReport,
    cancel: &CancellationToken,
) -> Option<(Outcome, Option<String>)> {
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
        let asked = super::reply::capped_tokens(
            ctx.config.model_settings.max_tokens.value,
            ctx.config.adaptations().reply_cap,
        );
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
            .push_str(&super::foreign::for_model(progress.agent, foreign));
    }
    report.all_succeeded = executed.all_succeeded;
    report.last_tool = executed.last_tool;
    let repeated = |r: &&BlockRecord| r.not_run == Some(NotRun::Repeated);
    progress.stuck +=
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
    if executed.rerun {
        return Some((Outcome::Done, Some(RERUN.into())));
    }
    memory.push(Role::User, executed.feedback);
    if executed.held {
        return Some((Outcome::Done, Some(super::approval::SHOWN_ONLY.into())));
    }
    if cancel.is_cancelled() {
        return Some((Outcome::Stopped, Some(ReplyError::Stopped.to_string())));
    }
    None
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
        let mut progress = Progress::new(1, AgentName::Coder);
        progress.rounds = 2;
        assert_eq!(progress.round_limit(3), None);
        progress.rounds = 3;
        let message = progress.round_limit(3).expect("at the cap");
        assert!(message.starts_with("stopped after 3 rounds"), "{message}");
    }

    #[test]
    fn the_turn_gives_up_at_max_attempts_naming_the_last_error() {
        let mut progress = Progress::new(1, AgentName::Coder);
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
        let mut progress = Progress::new(7, AgentName::Coder);
        progress.rounds = 2;
        progress.last_answer = "answer".into();
        let event = progress.finish(Outcome::Done, None);
        assert!(
            matches!(&event, Event::TurnFinished { turn: 7, rounds: 2, answer, outcome: Outcome::Done, message: None, .. } if answer == "answer"),
            "{event:?}"
        );
    }
}
