//! The task's final answer, as every front end shows it (`TurnFinished`'s `answer`: `seek -p`,
//! `--json`'s `done`, the terminal UI, `seek serve`'s `/latest_answer`): the last reply with
//! its blocks as `block:N` placeholders, without the lines that are seek's own words echoed
//! back, trailing whitespace trimmed. When nothing is left but placeholders, the answer is the
//! last executed block's result said plainly ("Ran `ls`:" and its output), never a bare
//! `block:0` or seek's feedback.
//!
//! Owns that rule and its wording, in one place for every consumer. Pure text: it must not run
//! anything or decide how the task ended.

use super::seek_words::SeekWords;
use crate::protocol::placeholder_index;
use crate::wire::{BlockRecord, NotRun};

/// Lines of a block's output the answer shows, at most.
const OUTPUT_LINES: usize = 20;
/// Bytes of a block's output the answer shows, at most.
const OUTPUT_BYTES: usize = 2048;
/// Characters of a block's first line that name it.
const CODE_CHARS: usize = 60;

/// The final answer for a task whose last reply, in placeholder form, is `reply` and whose
/// blocks ran as `records` say (in order). Trailing whitespace is trimmed: it depends on how the
/// reply's stream ended (a small model's reply cut at its block keeps the closing fence's line
/// ending, a model that stops right at the fence has none), so the same run gives the same bytes.
pub fn final_answer(reply: &str, records: &[BlockRecord], seek: &SeekWords<'_>) -> String {
    let (kept, _) = seek.strip(reply);
    let only_placeholders = kept
        .lines()
        .all(|line| line.trim().is_empty() || placeholder_index(line).is_some());
    if only_placeholders {
        return last_result(records).unwrap_or_default();
    }
    kept
}

/// The last block that ran, said plainly; else the last block that did not run, and why.
fn last_result(records: &[BlockRecord]) -> Option<String> {
    let ran = records
        .iter()
        .rev()
        .find(|r| r.not_run.is_none() && !r.skipped);
    match ran {
        Some(record) => Some(ran_result(record)),
        None => records.last().map(not_run_result),
    }
}

fn ran_result(record: &BlockRecord) -> String {
    let code = code_name(record);
    let output = shortened(&record.output);
    if record.success {
        return if output.is_empty() {
            format!("Ran {code}: no output.")
        } else {
            format!("Ran {code}:\n{output}")
        };
    }
    let why = if record.stopped {
        "was stopped".to_owned()
    } else if record.timed_out {
        "timed out".to_owned()
    } else {
        record
            .exit_code
            .map_or_else(|| "failed".to_owned(), |c| format!("failed (exit {c})"))
    };
    let mut text = upper_first(&format!("{code} {why}"));
    if output.is_empty() {
        text.push_str(" with no output.");
    } else {
        text.push_str(":\n");
        text.push_str(&output);
    }
    text
}

fn not_run_result(record: &BlockRecord) -> String {
    let why = match record.not_run {
        Some(NotRun::Repeated) => "the same code had already failed",
        Some(NotRun::EarlierFailure) => "an earlier block failed",
        Some(NotRun::Declined) => "you declined it",
        Some(NotRun::ShownOnly) => "blocks are shown, not run (approval = never)",
        Some(NotRun::Interactive) => "it waits for interactive input",
        Some(NotRun::SafeMode) => "safe mode refused it",
        Some(NotRun::ReplyCut) => "the reply was cut",
        Some(NotRun::Stopped | NotRun::Interrupted) | None => "the task was stopped",
    };
    upper_first(&format!("{} was not run: {why}.", code_name(record)))
}

/// How the answer names a block: its one line of code, or its tool and first line.
fn code_name(record: &BlockRecord) -> String {
    let mut lines = record
        .block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    let first = match first.char_indices().nth(CODE_CHARS) {
        Some((at, _)) => format!("{}…", &first[..at]),
        None => first.to_owned(),
    };
    let more = lines.next().is_some();
    match (&record.save_path, more || first.is_empty()) {
        (Some(path), _) => format!("the {} block saved as {path}", record.tool_type),
        (None, true) if first.is_empty() => format!("the {} block", record.tool_type),
        (None, true) => format!("the {} block starting `{first}`", record.tool_type),
        (None, false) => format!("`{first}`"),
    }
}

/// `output` without trailing whitespace, at most `OUTPUT_LINES` lines and `OUTPUT_BYTES`
/// bytes, saying how much was left out.
fn shortened(output: &str) -> String {
    let output = output.trim_end();
    let lines: Vec<&str> = output.lines().collect();
    let mut text = lines[..lines.len().min(OUTPUT_LINES)].join("\n");
    let mut left = lines.len().saturating_sub(OUTPUT_LINES);
    if text.len() > OUTPUT_BYTES {
        let mut at = OUTPUT_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let dropped = text[at..].lines().count().saturating_sub(1);
        text.truncate(at);
        left += dropped;
        text.push('…');
    }
    if left > 0 {
        let lines = if left == 1 { "line" } else { "lines" };
        text.push_str(&format!("\n[… {left} more {lines}]"));
    }
    text
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentName;

    fn seek() -> SeekWords<'static> {
        SeekWords {
            task: "list the text files",
            agent: AgentName::Coder,
        }
    }

    fn record(code: &str, output: &str, success: bool) -> BlockRecord {
        BlockRecord {
            round: 1,
            index: 0,
            tool_type: "bash".into(),
            block: code.into(),
            save_path: None,
            feedback: String::new(),
            success,
            exit_code: Some(if success { 0 } else { 2 }),
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 1.0,
            output: output.into(),
            not_run: None,
        }
    }

    #[test]
    fn a_bare_placeholder_becomes_the_blocks_result() {
        let ran = [record("ls *.txt\n", "a.txt\nb.txt\n", true)];
        for reply in [
            "block:0",
            "block:0\n",
            "\n block:0 \n\n",
            "block:0\nblock:1",
        ] {
            assert_eq!(
                final_answer(reply, &ran, &seek()),
                "Ran `ls *.txt`:\na.txt\nb.txt"
            );
        }
        let silent = [record("touch a.txt\n", "", true)];
        assert_eq!(
            final_answer("block:0", &silent, &seek()),
            "Ran `touch a.txt`: no output."
        );
        let failed = [record("ls nope\n", "ls: cannot access 'nope'\n", false)];
        assert_eq!(
            final_answer("block:0", &failed, &seek()),
            "`ls nope` failed (exit 2):\nls: cannot access 'nope'"
        );
    }

    #[test]
    fn the_last_block_that_ran_is_the_one_told() {
        let mut repeated = record("ls nope\n", "", false);
        repeated.not_run = Some(NotRun::Repeated);
        repeated.round = 2;
        let records = [
            record("echo hi\n", "hi\n", true),
            record("ls nope\n", "no such file\n", false),
            repeated.clone(),
        ];
        assert_eq!(
            final_answer("block:0", &records, &seek()),
            "`ls nope` failed (exit 2):\nno such file"
        );
        assert_eq!(
            final_answer("block:0", &[repeated], &seek()),
            "`ls nope` was not run: the same code had already failed."
        );
        assert_eq!(final_answer("block:0", &[], &seek()), "");
        assert_eq!(final_answer("  \n", &[], &seek()), "");
    }

    #[test]
    fn seeks_echoed_feedback_is_never_the_answer() {
        let records = [record("cat x\n", "cat: x: No such file\n", false)];
        let echoed = "[failure] Error in execution:\ncat: x: No such file\nThe task: list the text files\nFix the code and send the whole corrected block again.\n";
        assert_eq!(
            final_answer(echoed, &records, &seek()),
            "`cat x` failed (exit 2):\ncat: x: No such file"
        );
    }

    #[test]
    fn prose_answers_keep_their_placeholders() {
        let ran = [record("ls\n", "a\n", true)];
        assert_eq!(
            final_answer("Listing.\nblock:0\nDone.\n\n", &ran, &seek()),
            "Listing.\nblock:0\nDone."
        );
        assert_eq!(final_answer("All done.", &ran, &seek()), "All done.");
    }

    #[test]
    fn a_long_output_is_shortened_and_a_long_block_named_by_its_start() {
        let output: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let code = "import os\nfor f in os.listdir():\n    print(f)\n";
        let mut long = record(code, &output, true);
        long.tool_type = "python".into();
        let answer = final_answer("block:0", &[long], &seek());
        assert!(
            answer.starts_with("Ran the python block starting `import os`:\nline 0\n"),
            "{answer}"
        );
        assert!(answer.ends_with("line 19\n[… 80 more lines]"), "{answer}");
        let wide = "é".repeat(3000);
        let answer = final_answer("block:0", &[record("x\n", &wide, true)], &seek());
        assert!(answer.len() < OUTPUT_BYTES + 100, "{}", answer.len());
        assert!(answer.ends_with('…'), "cut on a character boundary");
    }

    #[test]
    fn a_saved_file_and_a_timeout_are_named() {
        let mut saved = record("print('hi')\n", "hi\n", true);
        saved.save_path = Some("hi.py".into());
        saved.tool_type = "python".into();
        assert_eq!(
            final_answer("block:0", &[saved], &seek()),
            "Ran the python block saved as hi.py:\nhi"
        );
        let mut slow = record("sleep 99\n", "", false);
        slow.timed_out = true;
        slow.exit_code = None;
        assert_eq!(
            final_answer("block:0", &[slow], &seek()),
            "`sleep 99` timed out with no output."
        );
    }
}
