//! Recognising text seek itself wrote to the model — the wire prefixes, its feedback, nudge and
//! restatement sentences, and the lines of its built-in system prompts — when a model echoes it
//! back in a reply. Small models do: after `[failure] …\nThe task: …\nFix the code and send the
//! whole corrected block again.` some answer with exactly that text.
//!
//! Owns the list of those sentences as templates (`{}` stands for what varies); the unit tests
//! build each message with the function that really writes it, so a changed wording fails them.
//! Pure text: it must not decide what the answer becomes (`answer` does).

use crate::config::AgentName;
use crate::protocol::{FAILURE_PREFIX, SUCCESS_PREFIX, placeholder_index};

/// Lines of seek's own messages to the model, `{}` standing for any text.
const TEMPLATES: &[&str] = &[
    // small::short_feedback
    "(no error message)",
    "Fix the code and send the whole corrected block again.",
    // small::nudge
    "You did not run anything. Do the task now: answer with one ```{} code block that does it. seek runs it and shows you the output.",
    // small::short_feedback, a long success
    "[… {} bytes left out …]",
    // repeats::repeated_feedback
    "You sent the same {} code that already failed in round {}, so it was not run again. It failed with:",
    "Change the code to fix this error, then send the whole corrected block.",
    "(it printed nothing)",
    // execute: not run, several blocks, over the limit, repetition
    "Block {} ({}) was not run because {}.",
    "Block {} ({}):",
    "{} after block {} not run: seek runs at most {} blocks per reply. Put the work into fewer blocks.",
    "Your last reply was cut because it kept repeating the same text.{}",
    // cut::length_message
    "Your reply reached the token limit ({} tokens) before block {} ({}) was closed, so it was not run.{}",
    // approval
    super::approval::DECLINED,
    super::approval::SHOWN_ONLY,
];

/// Prompt lines shorter than this are not matched: short lines (`Rules:`, `Example:`) are words
/// a model may well write itself.
const MIN_PROMPT_LINE: usize = 24;

/// What seek told the model in one task, for recognising it in the model's reply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeekWords<'a> {
    /// The task as the user typed it: a small model's failure feedback restates it.
    pub task: &'a str,
    /// The agent whose built-in prompts the model was given.
    pub agent: AgentName,
}

impl SeekWords<'_> {
    /// `reply` without the lines that are seek's own text, trailing whitespace trimmed. A wire
    /// prefix line (`[failure] Error in execution:`) and the lines under it up to a blank line,
    /// a placeholder or one of seek's sentences are an echoed feedback message: what a block
    /// printed, relayed by seek.
    /// Returns the text and whether anything was left out.
    pub fn strip(&self, reply: &str) -> (String, bool) {
        let mut kept = String::with_capacity(reply.len());
        let mut in_echo = false;
        let mut stripped = false;
        for line in reply.split_inclusive('\n') {
            let body = line.trim();
            if body.is_empty() || placeholder_index(body).is_some() {
                in_echo = false;
            }
            if is_wire_prefix(body) {
                in_echo = true;
            }
            // Seek's own sentence ends an echoed message (short feedback closes with one),
            // unless relayed text follows it (`It failed with:`, `Block 0 (python):`, the tail
            // after `[… N bytes left out …]`).
            if self.is_seeks(body) {
                in_echo = body.ends_with(':') || (in_echo && body.ends_with("left out …]"));
                stripped = true;
                continue;
            }
            if in_echo && !body.is_empty() {
                stripped = true;
                continue;
            }
            kept.push_str(line);
        }
        let kept = if stripped {
            kept.trim_start_matches(['\n', '\r'])
        } else {
            &kept
        };
        (kept.trim_end().to_owned(), stripped)
    }

    /// Whether `line` (trimmed) is exactly a line seek wrote to the model.
    fn is_seeks(&self, line: &str) -> bool {
        if line.is_empty() {
            return false;
        }
        if TEMPLATES.iter().any(|t| matches(t, line)) || self.restates_task(line) {
            return true;
        }
        let line = unbulleted(line);
        line.len() >= MIN_PROMPT_LINE
            && prompt_lines(self.agent).any(|template| matches(&template, line))
    }

    /// `The task: …` with the task (or its start, as feedback cuts it).
    fn restates_task(&self, line: &str) -> bool {
        let task = self.task.trim();
        line.strip_prefix("The task:")
            .map(str::trim)
            .is_some_and(|told| !told.is_empty() && task.starts_with(told))
    }
}

fn is_wire_prefix(line: &str) -> bool {
    line == SUCCESS_PREFIX.trim_end() || line == FAILURE_PREFIX.trim_end()
}

/// A prompt's line without its list bullet.
fn unbulleted(line: &str) -> &str {
    line.strip_prefix("- ").unwrap_or(line).trim()
}

/// The lines of `agent`'s built-in prompts a model might echo, as templates: the rules and
/// explanations, not the example exchange (`User: …`, `Assistant: …`) nor code.
fn prompt_lines(agent: AgentName) -> impl Iterator<Item = String> {
    let spec = crate::agents::spec(agent);
    let texts = [Some(spec.prompt), spec.small_prompt];
    texts.into_iter().flatten().flat_map(|prompt| {
        let mut in_code = false;
        prompt
            .text
            .lines()
            .filter_map(move |line| {
                let line = line.trim();
                if line.starts_with("```") {
                    in_code = !in_code;
                    return None;
                }
                let line = unbulleted(line);
                let dialogue = line.starts_with("User:") || line.starts_with("Assistant:");
                let template = wildcards(line);
                // What is left besides the fields must be long enough to be seek's words.
                let literal = template.len() - 2 * template.matches("{}").count();
                (!in_code && !dialogue && literal >= MIN_PROMPT_LINE).then_some(template)
            })
            .collect::<Vec<_>>()
    })
}

/// A prompt line with its `{work_dir}`-style fields as `{}`.
fn wildcards(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if after[..close]
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_') =>
            {
                out.push_str("{}");
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `line` is `template` with each `{}` standing for any text.
fn matches(template: &str, line: &str) -> bool {
    let parts: Vec<&str> = template.split("{}").collect();
    let (first, last) = match parts.as_slice() {
        [only] => return *only == line,
        [first, .., last] => (*first, *last),
        [] => return false,
    };
    if line.len() < first.len() + last.len() || !line.starts_with(first) || !line.ends_with(last) {
        return false;
    }
    // Leftmost matching of each middle part is enough when the only wildcard is "anything".
    let mut rest = &line[first.len()..line.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Block, feedback};

    fn words(task: &str) -> SeekWords<'_> {
        SeekWords {
            task,
            agent: AgentName::Coder,
        }
    }

    fn block() -> Block {
        Block {
            index: 1,
            tag: "python".into(),
            info: "python".into(),
            save_path: None,
            code: "print(x)\n".into(),
            closed: false,
            span: 0..0,
        }
    }

    /// Every message seek writes to the model, built by the code that writes it.
    fn seeks_messages(task: &str) -> Vec<String> {
        let mut failed = super::super::repeats::FailedBlocks::default();
        failed.remember(
            &block(),
            2,
            &feedback(false, "NameError: name 'x' is not defined\n"),
        );
        let earlier = failed.earlier(&block()).cloned().expect("remembered");
        let long: String = (0..400).map(|i| format!("line {i}\n")).collect();
        vec![
            super::super::small::nudge(task),
            super::super::small::short_feedback(&feedback(false, "Error: boom\n"), task),
            super::super::small::short_feedback(&feedback(false, ""), task),
            super::super::small::short_feedback(&feedback(true, &long), task),
            super::super::repeats::repeated_feedback(&block(), &earlier),
            super::super::cut::repetition_message(0),
            super::super::cut::repetition_message(1),
            super::super::cut::repetition_message(3),
            super::super::cut::length_message(&block(), 512),
            super::super::execute::over_limit_feedback(1),
            super::super::execute::over_limit_feedback(4),
            super::super::execute::not_run_feedback(&block(), "an earlier block failed"),
            format!("Block 0 (python):\n{}", feedback(true, "")),
            format!("Block 0 (python):\n{}", feedback(true, "5\n")),
            feedback(false, super::super::approval::DECLINED),
            feedback(false, super::super::approval::SHOWN_ONLY),
        ]
    }

    #[test]
    fn every_message_seek_writes_to_the_model_is_recognised_whole() {
        let task = "print the numbers 1 to 5 with python";
        for message in seeks_messages(task) {
            let (kept, stripped) = words(task).strip(&message);
            assert_eq!(kept, "", "left of {message:?}");
            assert!(stripped, "{message:?}");
        }
    }

    #[test]
    fn an_echoed_failure_goes_with_the_error_it_relays() {
        let task = "print y";
        let echoed = format!(
            "{}\nThanks, here is the fix.",
            super::super::small::short_feedback(
                &feedback(false, "NameError: name 'y' is not defined\n"),
                task
            )
        );
        let (kept, stripped) = words(task).strip(&echoed);
        assert_eq!(kept, "Thanks, here is the fix.");
        assert!(stripped);
    }

    #[test]
    fn the_models_own_words_stay_as_written() {
        let task = "print 2 + 3";
        for reply in [
            "The answer is 5.",
            "Done: it printed 7, 8 and 9.\nblock:0",
            "The task: something else entirely",
            "Fix the code",
            "Rules:",
        ] {
            assert_eq!(words(task).strip(reply), (reply.to_owned(), false));
        }
        assert_eq!(
            words(task).strip("Done.\n\n"),
            ("Done.".to_owned(), false),
            "trailing whitespace is trimmed"
        );
    }

    #[test]
    fn lines_of_the_built_in_prompts_are_seeks() {
        let (kept, stripped) = words("x").strip(
            "- Answer each task with one code block. Do not only explain.\n- Work directory (every block runs here; save files here): /home/u/project\nok",
        );
        assert_eq!(kept, "ok");
        assert!(stripped);
    }

    #[test]
    fn templates_match_whole_lines_only() {
        assert!(matches("Block {} ({}):", "Block 0 (bash):"));
        assert!(!matches("Block {} ({}):", "Block 0 (bash): and more"));
        assert!(matches("a{}b{}c", "abc"));
        assert!(!matches("ab{}ba", "aba"));
        assert!(matches("exact", "exact"));
        assert_eq!(wildcards("dir: {work_dir} {x y}"), "dir: {} {x y}");
    }
}
