//! The context budget: what of the conversation goes into a request so that it fits the model's
//! window. The system prompt, the current task's prompt and the latest exchange stay whole; older
//! execution outputs are shortened first (head and tail), then the oldest exchanges left out.
//! A request that cannot fit even so is not sent.
//!
//! Pure: it works on a copy and never changes the memory (the session keeps everything).

use crate::llm::{Message, Role};

/// Tokens counted per message for the chat template's framing.
const PER_MESSAGE: u64 = 4;
/// Lines kept at each end of a shortened output.
const KEEP_LINES: usize = 8;
/// Bytes kept at each end of a shortened output whose lines are long.
const KEEP_BYTES: usize = 1_000;

/// A conservative token estimate: one token per three bytes (English runs near four, code near
/// three, CJK text one per character, which is three bytes).
pub fn estimate(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| (m.content.len() as u64).div_ceil(3) + PER_MESSAGE)
        .sum()
}

/// Tokens a request may use: the window less room for the reply (a quarter of the window, or
/// `max_tokens` if smaller).
pub fn prompt_budget(window: u64, max_tokens: u64) -> u64 {
    window.saturating_sub(max_tokens.min(window / 4))
}

/// The messages to send, and what was done to them.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub messages: Vec<Message>,
    pub shortened: usize,
    pub dropped: usize,
    pub tokens: u64,
}

impl Fitted {
    pub fn trimmed(&self) -> bool {
        self.shortened > 0 || self.dropped > 0
    }
}

/// Why nothing could be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the task does not fit the model's context window: about {tokens} tokens are needed and {budget} are available even with older messages left out; shorten the task, or raise context_window if the model allows more"
)]
pub struct TooBig {
    pub tokens: u64,
    pub budget: u64,
}

/// Fits `messages` (system prompt first) into `budget` tokens. `turn_starts` are the indices of
/// the tasks' prompts; the last is the current task.
pub fn fit(messages: &[Message], turn_starts: &[usize], budget: u64) -> Result<Fitted, TooBig> {
    let mut kept: Vec<Option<Message>> = messages.iter().cloned().map(Some).collect();
    let mut fitted = Fitted {
        messages: Vec::new(),
        shortened: 0,
        dropped: 0,
        tokens: estimate(messages),
    };
    let total = |kept: &[Option<Message>]| -> u64 {
        kept.iter()
            .flatten()
            .map(|m| (m.content.len() as u64).div_ceil(3) + PER_MESSAGE)
            .sum()
    };
    let current = turn_starts.last().copied().unwrap_or(messages.len());
    // The latest exchange: the last reply and what followed it (its feedback).
    let latest = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .filter(|&i| i > current)
        .unwrap_or(messages.len());
    let protected = |i: usize| i == 0 || i == current || i >= latest;

    if fitted.tokens > budget {
        // 1. Older execution outputs (user messages that are not task prompts), oldest first.
        for i in 1..messages.len() {
            if total(&kept) <= budget {
                break;
            }
            let is_output = messages[i].role == Role::User && !turn_starts.contains(&i);
            if is_output && !protected(i) {
                let Some(message) = kept[i].as_mut() else {
                    continue;
                };
                if let Some(short) = shorten(&message.content) {
                    message.content = short;
                    fitted.shortened += 1;
                }
            }
        }
        // 2. Whole earlier tasks, oldest first; then earlier rounds of the current task.
        let mut spans: Vec<(usize, usize)> = turn_starts
            .windows(2)
            .map(|w| (w[0], w[1]))
            .filter(|&(_, end)| end <= current)
            .collect();
        if let Some(&first) = turn_starts.first()
            && first > 1
        {
            spans.insert(0, (1, first));
        }
        spans.extend((current + 1..latest).map(|i| (i, i + 1)));
        for (start, end) in spans {
            if total(&kept) <= budget {
                break;
            }
            for slot in &mut kept[start..end] {
                if slot.take().is_some() {
                    fitted.dropped += 1;
                }
            }
        }
        // 3. Last resort: the latest exchange's own outputs and reply, shortened.
        for i in (latest..messages.len()).rev() {
            if total(&kept) <= budget {
                break;
            }
            if let Some(message) = kept[i].as_mut()
                && let Some(short) = shorten(&message.content)
            {
                message.content = short;
                fitted.shortened += 1;
            }
        }
    }
    fitted.tokens = total(&kept);
    if fitted.tokens > budget {
        return Err(TooBig {
            tokens: fitted.tokens,
            budget,
        });
    }
    fitted.messages = kept.into_iter().flatten().collect();
    Ok(fitted)
}

/// Head and tail of a long text with a line saying what was cut; `None` if it is short already.
fn shorten(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (head, tail, cut) = if lines.len() > KEEP_LINES * 2 + 1 {
        (
            lines[..KEEP_LINES].join("\n"),
            lines[lines.len() - KEEP_LINES..].join("\n"),
            format!("{} lines", lines.len() - KEEP_LINES * 2),
        )
    } else if text.len() > KEEP_BYTES * 2 + 100 {
        let head_end = floor_boundary(text, KEEP_BYTES);
        let tail_start = floor_boundary(text, text.len() - KEEP_BYTES);
        (
            text[..head_end].to_owned(),
            text[tail_start..].to_owned(),
            format!("{} bytes", tail_start - head_end),
        )
    } else {
        return None;
    };
    let short = format!("{head}\n[… {cut} left out to fit the context window …]\n{tail}");
    (short.len() < text.len()).then_some(short)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: Role, content: impl Into<String>) -> Message {
        Message::new(role, content)
    }

    /// A conversation of `tasks` tasks, each: prompt, reply, long output, reply.
    fn conversation(tasks: usize) -> (Vec<Message>, Vec<usize>) {
        let mut messages = vec![m(Role::System, "system prompt")];
        let mut starts = Vec::new();
        for t in 0..tasks {
            starts.push(messages.len());
            messages.push(m(Role::User, format!("task {t}")));
            messages.push(m(
                Role::Assistant,
                format!("reply {t} ```python\nprint()\n```"),
            ));
            let output: String = (0..200)
                .map(|l| format!("[success] output line {l}\n"))
                .collect();
            messages.push(m(Role::User, output));
            messages.push(m(Role::Assistant, format!("done {t}")));
        }
        (messages, starts)
    }

    #[test]
    fn a_conversation_that_fits_is_sent_whole() {
        let (messages, starts) = conversation(2);
        let fitted = fit(&messages, &starts, 1_000_000).unwrap();
        assert_eq!(fitted.messages, messages);
        assert!(!fitted.trimmed());
    }

    #[test]
    fn outputs_shrink_before_exchanges_are_dropped() {
        let (messages, starts) = conversation(3);
        let all = estimate(&messages);
        let fitted = fit(&messages, &starts, all / 2).unwrap();
        assert!(fitted.shortened >= 1 && fitted.dropped == 0, "{fitted:?}");
        assert!(fitted.tokens <= all / 2);
        assert!(
            fitted
                .messages
                .iter()
                .any(|m| m.content.contains("left out to fit"))
        );
    }

    #[test]
    fn the_oldest_tasks_go_and_the_current_task_and_latest_exchange_stay_whole() {
        let (mut messages, mut starts) = conversation(30);
        starts.push(messages.len());
        messages.push(m(Role::User, "the current task"));
        messages.push(m(Role::Assistant, "working on it"));
        let latest_output: String = (0..30).map(|l| format!("latest {l}\n")).collect();
        messages.push(m(Role::User, latest_output.clone()));
        let budget = 2_000;
        let fitted = fit(&messages, &starts, budget).unwrap();
        assert!(fitted.tokens <= budget, "{} > {budget}", fitted.tokens);
        assert!(fitted.dropped > 0);
        let kept = &fitted.messages;
        assert_eq!(kept[0].content, "system prompt");
        let n = kept.len();
        assert_eq!(kept[n - 3].content, "the current task");
        assert_eq!(kept[n - 2].content, "working on it");
        assert_eq!(kept[n - 1].content, latest_output);
        assert!(
            !kept.iter().any(|m| m.content == "task 0"),
            "the oldest task went first"
        );
    }

    #[test]
    fn a_task_too_big_for_the_window_is_refused() {
        let messages = vec![m(Role::System, "system"), m(Role::User, "x".repeat(30_000))];
        let err = fit(&messages, &[1], 1_000).unwrap_err();
        assert!(err.tokens > 1_000);
        assert!(err.to_string().contains("does not fit"));
    }

    #[test]
    fn budgets_leave_room_for_the_reply() {
        assert_eq!(prompt_budget(8192, 4096), 6144);
        assert_eq!(prompt_budget(8192, 512), 7680);
        assert_eq!(prompt_budget(2048, 4096), 1536);
    }
}
