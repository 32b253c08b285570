//! The user's own shell command (`!cmd`): run with the bash tool under exactly what blocks run
//! under (sandbox, work dir, limits, withheld variables), without an approval question (the
//! user typed it), shown as a block of round 0, and its command and output kept for the model
//! as a note before the next task's prompt.
//!
//! Owns running one such command and the note's words and bounds. It must not start a task or
//! decide when a command may run (the runtime refuses one while a task runs).

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::context::{TurnContext, tool_context};
use super::memory::Memory;
use crate::protocol::Block;
use crate::secrets::Masker;
use crate::tool_kind::ToolKind;
use crate::tools::{ToolOutcome, Toolbox, execute_block};
use crate::wire::{BlockRecord, Event};

/// The round the user's commands are shown in: no model round has this number.
pub const USER_ROUND: u32 = 0;
/// How every note begins: what tells a note from other user messages in a saved conversation.
pub(crate) const NOTE_HEAD: &str =
    "The user ran a shell command in the work dir themselves (not one of your blocks):";
/// Output of a command kept in the model's note at most (its head and tail).
pub(crate) const NOTE_OUTPUT_LIMIT: usize = 8 * 1024;
/// Streamed output forwarded as events at most (the record still has the bounded whole).
const STREAMED_OUTPUT_LIMIT: usize = 256 * 1024;

/// Starts `command` as the user's command number `index` on a task of its own; it ends with
/// its note in `memory` and its `BlockFinished` event, for the runtime to emit. The token
/// stops it.
pub(super) fn spawn(
    ctx: &TurnContext,
    mut memory: Memory,
    index: usize,
    command: String,
    masker: &Arc<Masker>,
) -> (JoinHandle<(Memory, Event)>, CancellationToken) {
    let cancel = CancellationToken::new();
    let (ctx, masker, stop) = (ctx.clone(), Arc::clone(masker), cancel.clone());
    let task = tokio::spawn(async move {
        let record = run(&ctx, index, &command, &stop).await;
        memory.push_note(note(&record, &masker));
        (memory, Event::BlockFinished { record })
    });
    (task, cancel)
}

/// Runs `command` as the user's command number `index`: `BlockStarted`, `BlockOutput`s, and
/// the record for the `BlockFinished` the runtime emits. `cancel` is the runtime's Stop.
pub(super) async fn run(
    ctx: &TurnContext,
    index: usize,
    command: &str,
    cancel: &CancellationToken,
) -> BlockRecord {
    let tool_ctx = tool_context(ctx, cancel);
    let toolbox = Toolbox::builtin(&ctx.config).only(&[ToolKind::Bash]);
    let mut code = command.trim().to_owned();
    code.push('\n');
    let block = Block {
        index,
        tag: ToolKind::Bash.tag().to_owned(),
        info: ToolKind::Bash.tag().to_owned(),
        save_path: None,
        code,
        closed: true,
        span: 0..0,
    };
    ctx.events.emit(Event::BlockStarted {
        round: USER_ROUND,
        index,
        tool: block.tag.clone(),
        code: block.code.clone(),
        save_path: None,
    });
    let outcome = match toolbox.get(&block.tag) {
        Some(tool) => {
            let sink = ctx.events.clone();
            let mut forwarded = 0usize;
            let mut on_output = move |chunk: &str| {
                if forwarded < STREAMED_OUTPUT_LIMIT {
                    forwarded += chunk.len();
                    sink.emit(Event::BlockOutput {
                        round: USER_ROUND,
                        index,
                        text: chunk.to_owned(),
                    });
                }
            };
            execute_block(tool, &block, &tool_ctx, &mut on_output).await
        }
        None => ToolOutcome::failed_without_process("bash is not available here".to_owned()),
    };
    BlockRecord {
        round: USER_ROUND,
        index,
        tool_type: block.tag,
        block: block.code,
        save_path: None,
        success: outcome.success,
        exit_code: outcome.exit_code(),
        timed_out: outcome.timed_out(),
        stopped: outcome.stopped(),
        skipped: false,
        duration_ms: outcome.duration.as_secs_f64() * 1000.0,
        feedback: outcome.feedback,
        output: outcome.output,
        not_run: None,
    }
}

/// How many commands of the user's a session's recorded events hold (the next index).
pub(super) fn commands_in(events: &[(u64, Event)]) -> usize {
    events
        .iter()
        .filter(|(_, e)| matches!(e, Event::BlockStarted { round, .. } if *round == USER_ROUND))
        .count()
}

/// What the model reads before the next task: the command and its output (each its head and
/// tail, at most `NOTE_OUTPUT_LIMIT`) and how it ended, with secrets masked.
pub(super) fn note(record: &BlockRecord, masker: &Masker) -> String {
    let ending = if record.stopped {
        "was stopped".to_owned()
    } else if record.timed_out {
        "timed out".to_owned()
    } else if record.not_run.is_some() || (record.exit_code.is_none() && !record.success) {
        format!("did not run ({})", record.feedback.trim())
    } else {
        format!("exited with code {}", record.exit_code.unwrap_or(0))
    };
    let output = head_and_tail(&record.output, NOTE_OUTPUT_LIMIT);
    let output = if output.trim().is_empty() {
        "(no output)\n".to_owned()
    } else if output.ends_with('\n') {
        output
    } else {
        format!("{output}\n")
    };
    // A pasted script can be long too: the model gets its head and tail, as of the output.
    let command = head_and_tail(&record.block, NOTE_OUTPUT_LIMIT);
    let (command_fence, output_fence) = (fence_for(&command), fence_for(&output));
    let note = format!(
        "{NOTE_HEAD}\n{command_fence}bash\n{command}{command_fence}\nIt {ending}. Its output:\n{output_fence}\n{output}{output_fence}"
    );
    masker.mask(&note).into_owned()
}

/// Whether a user message is a note of the user's command.
pub(super) fn is_note(content: &str) -> bool {
    content.starts_with(NOTE_HEAD)
}

/// `text` if it fits `limit` bytes, else its head and tail around a line saying how much was
/// left out, cut at character boundaries.
fn head_and_tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut head_end = limit / 2;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - limit / 2;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

/// A fence longer than any run of backticks in `text`, so the text cannot close it.
pub(super) fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(output: &str, exit_code: Option<i32>) -> BlockRecord {
        BlockRecord {
            round: USER_ROUND,
            index: 0,
            tool_type: "bash".into(),
            block: "ls -la\n".into(),
            save_path: None,
            feedback: String::new(),
            success: exit_code == Some(0),
            exit_code,
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 1.0,
            output: output.into(),
            not_run: None,
        }
    }

    #[test]
    fn the_note_names_the_command_its_exit_and_its_output() {
        let masker = Masker::new(["hunter2-secret-token".to_owned()]);
        let note = note(
            &record("a.txt\nkey=hunter2-secret-token\n", Some(2)),
            &masker,
        );
        assert!(note.contains("```bash\nls -la\n```"), "{note}");
        assert!(note.contains("It exited with code 2. Its output:\n```\na.txt\n"));
        assert!(!note.contains("hunter2-secret-token"), "{note}");
    }

    #[test]
    fn long_output_keeps_its_head_and_tail_within_the_bound() {
        let output: String = (0..10_000).map(|i| format!("line {i} é\n")).collect();
        let note = note(
            &record(&output, Some(0)),
            &Masker::new(Vec::<String>::new()),
        );
        assert!(
            note.len() < NOTE_OUTPUT_LIMIT + 1_000,
            "{} bytes",
            note.len()
        );
        assert!(note.contains("line 0 é\n") && note.contains("line 9999 é\n"));
        assert!(note.contains("bytes left out"));
    }

    #[test]
    fn a_pasted_megabyte_command_is_bounded_in_the_note_too() {
        let huge = BlockRecord {
            block: format!("echo {}\n", "a".repeat(1 << 20)),
            ..record("", Some(0))
        };
        let note = note(&huge, &Masker::new(Vec::<String>::new()));
        assert!(
            note.len() < 2 * NOTE_OUTPUT_LIMIT + 1_000,
            "{} bytes",
            note.len()
        );
        assert!(note.contains("bytes left out"));
    }

    #[test]
    fn output_with_fences_cannot_close_the_notes_block() {
        let note = note(
            &record("```\nx\n", Some(0)),
            &Masker::new(Vec::<String>::new()),
        );
        assert!(note.contains("\n````\n```\nx\n````"), "{note}");
        let stopped = BlockRecord {
            stopped: true,
            ..record("", None)
        };
        let note = super::note(&stopped, &Masker::new(Vec::<String>::new()));
        assert!(note.contains("It was stopped. Its output:\n```\n(no output)\n```"));
    }
}
