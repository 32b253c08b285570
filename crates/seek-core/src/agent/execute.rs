//! Running the tool blocks of one reply: in text order, one at a time, the first failure stopping
//! the rest; every executed block's feedback goes back to the model in one message.
//!
//! It must not decide what happens after the round (the policy does).

use super::approval::{ApprovalGate, DECLINED, SHOWN_ONLY, Verdict};
use super::events::EventSink;
use super::repeats::{FailedBlocks, SucceededBlocks, repeated_feedback};
use crate::protocol::{self, Block, Parsed};
use crate::tool_kind::ToolKind;
use crate::tools::{Refusal, ToolContext, ToolOutcome, Toolbox, execute_block};
use crate::wire::{BlockRecord, Event, NotRun, Status};

/// Tool blocks of one reply that are run (or reported as not run) one by one, at most. A reply
/// holding more is answered with one sentence for all the rest: without a bound, a reply of a
/// hundred thousand tiny blocks costs a process, a record and an event each.
pub(crate) const MAX_BLOCKS_PER_REPLY: usize = 16;

/// Streamed output forwarded per block as events, at most; the block's final head-and-tail
/// output still arrives whole in `BlockFinished`. Keeps memory bounded when a block prints
/// gigabytes and the consumer is slow.
const STREAMED_OUTPUT_LIMIT: usize = 256 * 1024;

/// What running a reply's blocks produced.
#[derive(Debug, Clone, Default)]
pub(crate) struct Executed {
    pub records: Vec<BlockRecord>,
    /// The feedback message for the model.
    pub feedback: String,
    pub all_succeeded: bool,
    pub last_tool: Option<ToolKind>,
    /// Blocks were shown but not run (approval = never): the task ends with this reply.
    pub held: bool,
    /// The reply resent code that already succeeded and nothing ran: the task ends, that
    /// code's output being the answer (`RoundRules::end_on_rerun`).
    pub rerun: bool,
}

impl Executed {
    /// Reports `block` as not run: to the front end, in the records, and to the model.
    fn not_run(
        &mut self,
        round: u32,
        block: &Block,
        why: NotRun,
        events: &EventSink,
        feedback_parts: &mut Vec<String>,
    ) {
        let (for_model, record_feedback, skipped) = match why {
            NotRun::Declined => {
                let feedback = protocol::feedback(false, DECLINED);
                (feedback.clone(), feedback, false)
            }
            NotRun::ShownOnly => {
                let feedback = protocol::feedback(false, SHOWN_ONLY);
                (feedback.clone(), feedback, true)
            }
            NotRun::EarlierFailure
            | NotRun::Stopped
            | NotRun::Interrupted
            | NotRun::Interactive
            | NotRun::SafeMode
            | NotRun::Repeated
            | NotRun::ReplyCut => {
                let reason = match why {
                    NotRun::Repeated => "the same code failed before",
                    NotRun::EarlierFailure => "an earlier block failed",
                    NotRun::ReplyCut => "the reply was cut",
                    NotRun::Interactive => "it waits for interactive input",
                    NotRun::SafeMode => "safe mode refused it",
                    _ => "the task was stopped",
                };
                (
                    not_run_feedback(block, reason),
                    format!("not run: {reason}"),
                    true,
                )
            }
        };
        feedback_parts.push(for_model);
        let mut outcome = ToolOutcome::failed_without_process(String::new());
        outcome.feedback = record_feedback;
        let mut record = block_record(round, block, outcome, skipped);
        record.not_run = Some(why);
        events.emit(Event::BlockFinished {
            record: record.clone(),
        });
        self.records.push(record);
        if why == NotRun::ShownOnly {
            self.held = true;
        } else {
            self.all_succeeded = false;
        }
    }
}

/// What a task carries from round to round into running a reply's blocks.
#[derive(Debug, Default)]
pub(crate) struct RoundRules {
    /// The blocks that failed so far: the same code is not run again.
    pub failed: FailedBlocks,
    /// Code that already failed is refused instead of run (`Adaptations::refuse_repeats`).
    pub refuse_repeats: bool,
    /// The blocks that succeeded so far.
    pub succeeded: SucceededBlocks,
    /// A reply whose first block resends succeeded code runs nothing and ends the task
    /// (`Adaptations::end_on_rerun`; `Executed::rerun`).
    pub end_on_rerun: bool,
    /// Feedback cut for a small model (`small::short_feedback`).
    pub short_feedback: bool,
    /// The task as the user typed it, which short feedback restates after a failure.
    pub task: String,
}

impl Executed {
    /// Reports `block` as not run because it repeats code that failed, telling the model `told`.
    fn not_run_again(
        &mut self,
        round: u32,
        block: &Block,
        told: String,
        events: &EventSink,
        feedback_parts: &mut Vec<String>,
    ) {
        let mut outcome = ToolOutcome::failed_without_process(String::new());
        outcome.feedback = told.clone();
        feedback_parts.push(told);
        let mut record = block_record(round, block, outcome, false);
        record.not_run = Some(NotRun::Repeated);
        events.emit(Event::BlockFinished {
            record: record.clone(),
        });
        self.records.push(record);
        self.all_succeeded = false;
        self.last_tool = ToolKind::from_tag(&block.tag);
    }
}

/// Runs the blocks of `parsed` with `toolbox`, each once `gate` lets it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute_reply(
    parsed: &Parsed,
    round: u32,
    toolbox: &Toolbox,
    base: &ToolContext,
    events: &EventSink,
    gate: &ApprovalGate,
    rules: &mut RoundRules,
    status: impl Fn(Status),
) -> Executed {
    let mut ctx = base.clone();
    let mut executed = Executed {
        all_succeeded: true,
        ..Executed::default()
    };
    let mut feedback_parts = Vec::new();
    let several = parsed.blocks.len() > 1;
    for block in &parsed.blocks {
        if !executed.all_succeeded || ctx.cancel.is_cancelled() {
            let why = if ctx.cancel.is_cancelled() {
                NotRun::Stopped
            } else {
                NotRun::EarlierFailure
            };
            executed.not_run(round, block, why, events, &mut feedback_parts);
            continue;
        }
        if rules.end_on_rerun && block.index == 0 && rules.succeeded.contains(block) {
            executed.rerun = true;
            break;
        }
        if let Some(earlier) = rules.failed.earlier(block).filter(|_| rules.refuse_repeats) {
            let told = repeated_feedback(block, earlier);
            executed.not_run_again(round, block, told, events, &mut feedback_parts);
            continue;
        }
        let block = &match gate.verdict(round, block, events, &ctx.cancel).await {
            Verdict::Run(code) if code == block.code => block.clone(),
            Verdict::Run(code) => Block {
                code,
                ..block.clone()
            },
            Verdict::Stopped => {
                executed.not_run(round, block, NotRun::Stopped, events, &mut feedback_parts);
                continue;
            }
            Verdict::Refused(why) => {
                executed.not_run(round, block, why, events, &mut feedback_parts);
                continue;
            }
        };
        status(Status::Executing {
            tool: block.tag.clone(),
        });
        events.emit(Event::BlockStarted {
            round,
            index: block.index,
            tool: block.tag.clone(),
            code: block.code.clone(),
            save_path: block.save_path.clone(),
        });
        let outcome = match toolbox.get(&block.tag) {
            Some(tool) => {
                let mut forwarded = 0usize;
                let index = block.index;
                let sink = events.clone();
                let mut on_output = move |chunk: &str| {
                    if forwarded < STREAMED_OUTPUT_LIMIT {
                        forwarded += chunk.len();
                        sink.emit(Event::BlockOutput {
                            round,
                            index,
                            text: chunk.to_owned(),
                        });
                    }
                };
                execute_block(tool, block, &ctx, &mut on_output).await
            }
            None => ToolOutcome::failed_without_process(format!(
                "no tool runs `{}` blocks here",
                block.tag
            )),
        };
        // Only a file really written counts (not one the read-only sandbox kept from disk).
        if outcome.saved
            && let Some(path) = &block.save_path
        {
            ctx.saved_this_reply.push(path.clone());
        }
        executed.all_succeeded &= outcome.success;
        executed.last_tool = ToolKind::from_tag(&block.tag);
        // A block the user stopped says nothing about its code.
        if outcome.success {
            rules.succeeded.remember(block);
        } else if !outcome.stopped() {
            rules.failed.remember(block, round, &outcome.feedback);
        }
        let for_model = if rules.short_feedback {
            super::small::short_feedback(&outcome.feedback, &rules.task)
        } else {
            outcome.feedback.clone()
        };
        feedback_parts.push(if several {
            format!("Block {} ({}):\n{for_model}", block.index, block.tag)
        } else {
            for_model
        });
        let refused = outcome.refused.map(not_run_for);
        let mut record = block_record(round, block, outcome, false);
        record.not_run = refused;
        events.emit(Event::BlockFinished {
            record: record.clone(),
        });
        executed.records.push(record);
    }
    if parsed.over_limit > 0 {
        feedback_parts.push(over_limit_feedback(parsed.over_limit));
    }
    executed.feedback = feedback_parts.join("\n\n");
    executed
}

/// What the model is told about a block of its reply that was not run, and why.
pub(super) fn not_run_feedback(block: &Block, reason: &str) -> String {
    format!(
        "Block {} ({}) was not run because {reason}.",
        block.index, block.tag
    )
}

/// What the model is told about the blocks past `MAX_BLOCKS_PER_REPLY`.
pub(super) fn over_limit_feedback(count: usize) -> String {
    let (blocks, were) = if count == 1 {
        ("block", "was")
    } else {
        ("blocks", "were")
    };
    format!(
        "{count} more {blocks} after block {last} {were} not run: seek runs at most {MAX_BLOCKS_PER_REPLY} blocks per reply. Put the work into fewer blocks.",
        last = MAX_BLOCKS_PER_REPLY - 1
    )
}

/// Why a block a tool refused did not run, on the wire. The model's feedback stays the tool's
/// own (AgenticSeek's words where it has them); this only types the refusal for front ends.
fn not_run_for(refusal: Refusal) -> NotRun {
    match refusal {
        Refusal::Interactive => NotRun::Interactive,
        Refusal::SafeMode => NotRun::SafeMode,
    }
}

/// The result record of `block`.
fn block_record(round: u32, block: &Block, outcome: ToolOutcome, skipped: bool) -> BlockRecord {
    BlockRecord {
        round,
        index: block.index,
        tool_type: block.tag.clone(),
        block: block.code.clone(),
        save_path: block.save_path.clone(),
        success: outcome.success,
        exit_code: outcome.exit_code(),
        timed_out: outcome.timed_out(),
        stopped: outcome.stopped(),
        skipped,
        duration_ms: outcome.duration.as_secs_f64() * 1000.0,
        feedback: outcome.feedback,
        output: outcome.output,
        not_run: None,
    }
}

/// The feedback for a reply that was cut for repeating itself.
pub(crate) fn repetition_feedback() -> String {
    protocol::feedback(
        false,
        "Your last reply was cut because it kept repeating the same text. Do not repeat yourself: write one short answer, with at most one code block.",
    )
}
