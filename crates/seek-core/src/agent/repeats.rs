//! The code that already ran in a task. Models, small ones above all, send the same failing
//! block again and again until the attempt cap; running it again teaches nothing. A block whose
//! tool, save path and code (trailing spaces and blank lines aside) match one that failed earlier
//! in the task is not run: the model is told plainly that it resent failed code, with the error. Code
//! that succeeded is remembered too: a small model resending it has nothing more to do.
//!
//! Pure bookkeeping: it must not run anything or decide the round.

use crate::protocol::{self, Block};

/// The failed blocks of one task.
#[derive(Debug, Default)]
pub(crate) struct FailedBlocks {
    failed: Vec<Failed>,
}

/// One block that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    tag: String,
    save_path: Option<String>,
    code: String,
    /// The round it failed in.
    pub round: u32,
    /// The last lines of its error.
    pub error: String,
}

/// Lines of an error kept to remind the model of it.
const ERROR_LINES: usize = 4;
/// Characters of one such line kept.
const ERROR_LINE_CHARS: usize = 200;

impl FailedBlocks {
    /// The earlier failure of the same code, if `block` repeats one.
    pub fn earlier(&self, block: &Block) -> Option<&Failed> {
        let code = normalized(&block.code);
        self.failed
            .iter()
            .find(|f| f.tag == block.tag && f.save_path == block.save_path && f.code == code)
    }

    /// Remembers that `block` failed in `round` with `feedback` (the tool's feedback text).
    pub fn remember(&mut self, block: &Block, round: u32, feedback: &str) {
        if self.earlier(block).is_some() {
            return;
        }
        self.failed.push(Failed {
            tag: block.tag.clone(),
            save_path: block.save_path.clone(),
            code: normalized(&block.code),
            round,
            error: last_lines(feedback, ERROR_LINES),
        });
    }
}

/// The blocks that succeeded in one task, as compared (tool, save path and normalised code).
#[derive(Debug, Default)]
pub(crate) struct SucceededBlocks {
    succeeded: Vec<(String, Option<String>, String)>,
}

impl SucceededBlocks {
    /// Whether `block` resends code that succeeded earlier in the task.
    pub fn contains(&self, block: &Block) -> bool {
        let code = normalized(&block.code);
        self.succeeded
            .iter()
            .any(|(tag, path, done)| *tag == block.tag && *path == block.save_path && *done == code)
    }

    pub fn remember(&mut self, block: &Block) {
        if !self.contains(block) {
            self.succeeded.push((
                block.tag.clone(),
                block.save_path.clone(),
                normalized(&block.code),
            ));
        }
    }
}

/// What the model is told instead of running `block` again.
pub(crate) fn repeated_feedback(block: &Block, earlier: &Failed) -> String {
    let error = if earlier.error.is_empty() {
        "(it printed nothing)".to_owned()
    } else {
        earlier.error.clone()
    };
    protocol::feedback(
        false,
        &format!(
            "You sent the same {tag} code that already failed in round {round}, so it was not run again. It failed with:\n{error}\nChange the code to fix this error, then send the whole corrected block.",
            tag = block.tag,
            round = earlier.round,
        ),
    )
}

/// The code as compared: trailing spaces of each line and blank lines do not count.
fn normalized(code: &str) -> String {
    code.lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last `count` non-blank lines of a block's feedback (its `[failure]` prefix left out), each
/// cut to `ERROR_LINE_CHARS` characters.
pub(crate) fn last_lines(feedback: &str, count: usize) -> String {
    let body = feedback
        .strip_prefix(protocol::FAILURE_PREFIX)
        .or_else(|| feedback.strip_prefix(protocol::SUCCESS_PREFIX))
        .unwrap_or(feedback);
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(count)..]
        .iter()
        .map(|line| match line.char_indices().nth(ERROR_LINE_CHARS) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => (*line).to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(tag: &str, code: &str) -> Block {
        Block {
            index: 0,
            tag: tag.into(),
            info: tag.into(),
            save_path: None,
            code: code.into(),
            closed: true,
            span: 0..0,
        }
    }

    #[test]
    fn the_same_code_is_found_despite_trailing_spaces_and_blank_lines() {
        let mut failed = FailedBlocks::default();
        let feedback = protocol::feedback(false, "Traceback:\n  line 1\nNameError: name 'x'\n");
        failed.remember(&block("python", "print(x)\n"), 2, &feedback);
        let again = block("python", "\nprint(x)   \n\n");
        let earlier = failed.earlier(&again).expect("a repeat");
        assert_eq!(earlier.round, 2);
        assert_eq!(earlier.error, "Traceback:\n  line 1\nNameError: name 'x'");
        assert!(
            failed.earlier(&block("bash", "print(x)\n")).is_none(),
            "another tool"
        );
        assert!(
            failed.earlier(&block("python", "print(y)\n")).is_none(),
            "other code"
        );
        assert!(
            failed.earlier(&block("python", "  print(x)\n")).is_none(),
            "indentation is code"
        );
        let saved = Block {
            save_path: Some("x.py".into()),
            ..block("python", "print(x)\n")
        };
        assert!(
            failed.earlier(&saved).is_none(),
            "saving it elsewhere is another action"
        );
    }

    #[test]
    fn succeeded_code_is_known_again_by_tool_and_code() {
        let mut done = SucceededBlocks::default();
        done.remember(&block("bash", "ls\n"));
        done.remember(&block("bash", "ls \n\n"));
        assert_eq!(done.succeeded.len(), 1);
        assert!(done.contains(&block("bash", "\nls")));
        assert!(!done.contains(&block("python", "ls\n")));
        assert!(!done.contains(&block("bash", "ls -l\n")));
    }

    #[test]
    fn the_first_failure_is_kept() {
        let mut failed = FailedBlocks::default();
        let code = block("bash", "false\n");
        failed.remember(&code, 1, "[failure] Error in execution:\nfirst");
        failed.remember(&code, 3, "[failure] Error in execution:\nsecond");
        let earlier = failed.earlier(&code).expect("remembered");
        assert_eq!((earlier.round, earlier.error.as_str()), (1, "first"));
    }

    #[test]
    fn the_feedback_says_what_happened_and_keeps_the_wire_prefix() {
        let mut failed = FailedBlocks::default();
        let code = block("python", "import nope\n");
        failed.remember(
            &code,
            1,
            &protocol::feedback(false, "ModuleNotFoundError: No module named 'nope'"),
        );
        let text = repeated_feedback(&code, failed.earlier(&code).expect("remembered"));
        assert!(text.starts_with(protocol::FAILURE_PREFIX), "{text}");
        assert!(
            text.contains("same python code that already failed in round 1"),
            "{text}"
        );
        assert!(
            text.contains("ModuleNotFoundError: No module named 'nope'"),
            "{text}"
        );
    }

    #[test]
    fn last_lines_keep_the_end_and_cut_long_lines() {
        let long = "x".repeat(500);
        let text = format!("[failure] Error in execution:\na\n\nb\nc\nd\n{long}\n");
        let kept = last_lines(&text, 3);
        let lines: Vec<&str> = kept.lines().collect();
        assert_eq!(lines[..2], ["c", "d"]);
        assert_eq!(lines[2].chars().count(), ERROR_LINE_CHARS + 1);
        assert_eq!(last_lines("", 3), "");
    }
}
