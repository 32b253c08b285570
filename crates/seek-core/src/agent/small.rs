//! What seek does differently for a small model (`Config::small_model`): the words of the nudge
//! when a coder task's first reply runs nothing, feedback cut to what such a model can use
//! (a failure's last lines, a success's output bounded), and how warm it samples once stuck. The compact prompt is the agent's
//! (`AgentSpec::small_prompt`); the one-block cut is the reply stream's.
//!
//! Pure text: it must not decide the round or run anything.

use super::repeats::last_lines;
use crate::protocol::{FAILURE_PREFIX, SUCCESS_PREFIX, ToolTags};

/// Lines of a failure a small model is shown: the error is at the end of what a program prints.
const FAILURE_LINES: usize = 3;
/// A success's output shown to a small model, at most (head and tail), in bytes.
const SUCCESS_BYTES: usize = 1500;
const SUCCESS_TAIL_BYTES: usize = 500;

/// The tags a nudge may name, as the user would write them in a task.
const LANGUAGES: [(&str, &str); 5] = [
    ("python", "python"),
    ("bash", "bash"),
    ("shell", "bash"),
    ("go", "go"),
    ("java", "java"),
];

/// What the model is told when its first reply to a coder task ran nothing.
pub fn nudge(task: &str) -> String {
    let tag = named_language(task).unwrap_or("python");
    format!(
        "You did not run anything. Do the task now: answer with one ```{tag} code block that does it. seek runs it and shows you the output."
    )
}

/// How a small model's coder reply starts while no block of the task has succeeded
/// (`Adaptations::open_fence`): a fence already opened, for the language the task names
/// (`… with python` → "```python"), bash when it names none of the agent's. Left for the model:
/// the rest of the fence line (so a `:path` save still works) and the code. A 135M model asked
/// to "create hello.txt" otherwise answers in prose or prints the text with python.
pub(crate) fn fence_opening(task: &str, tags: &ToolTags) -> String {
    let tag = named_language(task)
        .and_then(|tag| tags.resolve(tag))
        .or_else(|| tags.resolve("bash"))
        .unwrap_or_default();
    format!("```{tag}")
}

/// The language a task names (`… with bash`, `a C program`), as a fence tag.
pub(super) fn named_language(task: &str) -> Option<&'static str> {
    let lower = task.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words.windows(2).any(|w| w[0] == "c" && w[1] == "program") {
        return Some("c");
    }
    LANGUAGES
        .iter()
        .find(|(word, _)| words.contains(word))
        .map(|(_, tag)| *tag)
}

/// How warm a small model samples once it was `stuck` that many times in the task (it resent
/// failed code, or its reply looped): greedy decoding would answer the same way again, so each
/// time warms it (0.5, 0.8, then 1.0).
pub(crate) fn resample_temperature(stuck: u32) -> Option<f64> {
    (stuck > 0).then(|| (0.2 + 0.3 * f64::from(stuck)).min(1.0))
}

/// The task as a failure restates it, at most (in bytes).
const TASK_BYTES: usize = 200;

/// One block's feedback as a small model gets it: a failure's last lines, the task again (after
/// an error a small model forgets it and writes about the error instead), and what to do; a
/// success's output bounded. The wire prefixes stay.
pub(crate) fn short_feedback(feedback: &str, task: &str) -> String {
    if feedback.starts_with(FAILURE_PREFIX) {
        let error = last_lines(feedback, FAILURE_LINES);
        let error = if error.is_empty() {
            "(no error message)".to_owned()
        } else {
            error
        };
        let task = task.trim();
        let task = &task[..floor_char_boundary(task, TASK_BYTES.min(task.len()))];
        let restated = if task.is_empty() {
            String::new()
        } else {
            format!("\nThe task: {task}")
        };
        return format!(
            "{FAILURE_PREFIX}{error}{restated}\nFix the code and send the whole corrected block again."
        );
    }
    match feedback.strip_prefix(SUCCESS_PREFIX) {
        Some(output) if output.len() > SUCCESS_BYTES => {
            let head = floor_char_boundary(output, SUCCESS_BYTES - SUCCESS_TAIL_BYTES);
            let tail = ceil_char_boundary(output, output.len() - SUCCESS_TAIL_BYTES);
            format!(
                "{SUCCESS_PREFIX}{}\n[… {} bytes left out …]\n{}",
                &output[..head],
                tail - head,
                &output[tail..]
            )
        }
        _ => feedback.to_owned(),
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::feedback;

    #[test]
    fn the_nudge_names_the_language_the_task_names() {
        assert!(nudge("delete junk.tmp with bash").contains("```bash"));
        assert!(nudge("write a C program that prints 42").contains("```c "));
        assert!(nudge("print 12 factorial").contains("```python"));
        assert!(nudge("use the shell to list files").contains("```bash"));
        assert!(nudge("a Go program").contains("```go"));
        assert!(
            nudge("compute the cost of cargo").contains("```python"),
            "a word containing go is not Go"
        );
    }

    #[test]
    fn the_fence_is_opened_for_the_named_language_else_bash() {
        let coder = ToolTags::new(["bash", "python", "c", "go", "java"]);
        assert_eq!(
            fence_opening("print 1 to 5 with python", &coder),
            "```python"
        );
        assert_eq!(
            fence_opening("write a C program that prints 42", &coder),
            "```c"
        );
        assert_eq!(
            fence_opening("create hello.txt containing Hello", &coder),
            "```bash"
        );
        assert_eq!(
            fence_opening("save a python script greet.py", &coder),
            "```python",
            "the fence line stays open: the model may add `:greet.py`"
        );
        let python_only = ToolTags::new(["python"]);
        assert_eq!(
            fence_opening("list the files with bash", &python_only),
            "```",
            "never a tag the agent cannot run"
        );
    }

    #[test]
    fn each_refused_resend_warms_the_sampling_up_to_one() {
        let warmth: Vec<Option<f64>> = (0..5).map(resample_temperature).collect();
        assert_eq!(warmth[0], None, "greedy or as configured until stuck");
        assert!((warmth[1].unwrap_or_default() - 0.5).abs() < 1e-9);
        assert!((warmth[2].unwrap_or_default() - 0.8).abs() < 1e-9);
        assert_eq!(warmth[3], Some(1.0));
        assert_eq!(warmth[4], Some(1.0));
    }

    #[test]
    fn a_failure_is_its_last_lines_and_what_to_do() {
        let traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    print(y)\n          ^\nNameError: name 'y' is not defined\n";
        let short = short_feedback(&feedback(false, traceback), " print y ");
        assert_eq!(
            short,
            "[failure] Error in execution:\n    print(y)\n          ^\nNameError: name 'y' is not defined\nThe task: print y\nFix the code and send the whole corrected block again."
        );
        assert!(short_feedback(&feedback(false, ""), "").contains("(no error message)\nFix"));
        let long_task = "é".repeat(300);
        let restated = short_feedback(&feedback(false, "boom"), &long_task);
        assert!(
            restated.len() <= 320,
            "the task is bounded: {}",
            restated.len()
        );
    }

    #[test]
    fn a_success_keeps_short_output_and_bounds_long_output() {
        let ok = feedback(true, "5\n");
        assert_eq!(short_feedback(&ok, "task"), ok);
        let long: String = (0..2000).map(|i| format!("line é {i}\n")).collect();
        let short = short_feedback(&feedback(true, &long), "task");
        assert!(short.starts_with(SUCCESS_PREFIX));
        assert!(short.len() < SUCCESS_BYTES + 200, "{}", short.len());
        assert!(short.contains("line é 0\n"), "the head");
        assert!(short.ends_with("line é 1999\n"), "the tail");
        assert!(short.contains("bytes left out"));
    }
}
