//! A reply that did not end by itself: cut by the repetition guard, or at `max_tokens`. Its
//! blocks that will not run are reported as such (`NotRun::ReplyCut`), so no pane waits for a
//! run that never comes, and the model is told why.
//!
//! The rule: a reply cut for repeating itself runs none of its blocks (its text is a loop, its
//! blocks are likely copies or fragments). A reply cut at `max_tokens` runs its complete blocks
//! as usual: they were written whole. Only its last, unclosed block is not run, and the model
//! is asked for shorter replies. Owns those records and words; it must not run anything.

use super::events::EventSink;
use super::execute::repetition_feedback;
use crate::llm::FinishReason;
use crate::protocol::{self, Block};
use crate::wire::{BlockRecord, Event, NotRun};

/// How a reply was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    Repetition,
    Length,
}

impl Cut {
    pub fn of(finish: Option<&FinishReason>) -> Option<Self> {
        match finish {
            Some(FinishReason::Repetition(_)) => Some(Cut::Repetition),
            Some(FinishReason::Length) => Some(Cut::Length),
            _ => None,
        }
    }

    /// Why, as the pane and the record say it.
    fn reason(self) -> &'static str {
        match self {
            Cut::Repetition => "the reply was cut: it kept repeating itself",
            Cut::Length => "the reply was cut at the token limit (max_tokens) before it was closed",
        }
    }
}

/// Reports each of `blocks` as not run because the reply was cut: a `BlockFinished` each, and
/// the records for the turn's end.
pub(super) fn not_run(
    blocks: &[Block],
    round: u32,
    cut: Cut,
    events: &EventSink,
) -> Vec<BlockRecord> {
    blocks
        .iter()
        .map(|block| {
            let record = BlockRecord {
                round,
                index: block.index,
                tool_type: block.tag.clone(),
                block: block.code.clone(),
                save_path: block.save_path.clone(),
                feedback: format!("not run: {}", cut.reason()),
                success: false,
                exit_code: None,
                timed_out: false,
                stopped: false,
                skipped: true,
                duration_ms: 0.0,
                output: String::new(),
                not_run: Some(NotRun::ReplyCut),
            };
            events.emit(Event::BlockFinished {
                record: record.clone(),
            });
            record
        })
        .collect()
}

/// What the model is told about a reply cut for repeating itself whose `blocks` were not run.
pub(super) fn repetition_message(blocks: usize) -> String {
    let mut text = repetition_feedback();
    match blocks {
        0 => {}
        1 => text.push_str(" Its code block was not run."),
        n => text.push_str(&format!(" None of its {n} code blocks was run.")),
    }
    text
}

/// What the model is told about the unclosed `block` of a reply cut at `max_tokens`.
pub(super) fn length_message(block: &Block, max_tokens: u64) -> String {
    protocol::feedback(
        false,
        &format!(
            "Your reply reached the token limit ({max_tokens} tokens) before block {} ({}) was closed, so it was not run. Write a shorter reply: less prose, one block, and split long code over several replies.",
            block.index, block.tag
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(index: usize, closed: bool) -> Block {
        Block {
            index,
            tag: "python".into(),
            info: "python".into(),
            save_path: None,
            code: "print(1)\n".into(),
            closed,
            span: 0..0,
        }
    }

    #[test]
    fn cut_blocks_are_finished_as_not_run_with_the_reason() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let records = not_run(
            &[block(0, true), block(1, false)],
            2,
            Cut::Repetition,
            &EventSink::new(tx),
        );
        assert_eq!(records.len(), 2);
        for (i, record) in records.iter().enumerate() {
            assert_eq!((record.round, record.index), (2, i));
            assert_eq!(record.not_run, Some(NotRun::ReplyCut));
            assert!(record.skipped && !record.success);
            assert!(record.feedback.contains("kept repeating itself"));
            let event = rx.try_recv().expect("one event per block");
            assert!(matches!(event, Event::BlockFinished { record: r } if &r == record));
        }
    }

    #[test]
    fn the_model_is_told_what_was_not_run_and_why() {
        assert!(repetition_message(0).ends_with("at most one code block."));
        assert!(repetition_message(1).ends_with("Its code block was not run."));
        assert!(repetition_message(3).contains("None of its 3 code blocks"));
        let length = length_message(&block(1, false), 512);
        assert!(length.starts_with(protocol::FAILURE_PREFIX));
        assert!(length.contains("token limit (512 tokens) before block 1 (python)"));
        assert_eq!(Cut::of(Some(&FinishReason::Length)), Some(Cut::Length));
        assert_eq!(Cut::of(Some(&FinishReason::Stop)), None);
    }
}
