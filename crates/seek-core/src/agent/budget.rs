//! The context budget: what of the conversation goes into a request so that it fits the model's
//! window. The system prompt and the current task's prompt stay whole; older execution outputs are
//! shortened first (head and tail), then the oldest exchanges left out, and as a last resort the
//! latest exchange (the last reply and its feedback) is cut by bytes as far as needed, so a block's
//! output, however long its lines, never keeps a request from being sent. A request that cannot
//! fit even so (the system prompt and the task alone are too big) is not sent.
//!
//! Pure: it works on a copy and never changes the memory (the session keeps everything).

use crate::llm::{Message, Role};

/// Tokens counted per message for the chat template's framing.
const PER_MESSAGE: u64 = 4;
/// Lines kept at each end of a shortened older output…
const KEEP_LINES: usize = 8;
/// …and at most this many bytes at each end, whatever the lines' length.
const KEEP_BYTES: usize = 1_000;
/// Bytes the latest reply and feedback keep while the other can give more: the feedback is cut
/// down to this before the reply is touched, and only then either is cut further.
const LATEST_FLOOR_BYTES: usize = 600;

/// A conservative token estimate: one token per three bytes (English runs near four, code near
/// three, CJK text one per character, which is three bytes).
pub fn estimate(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// The same estimate for a piece of text (a reply, when the server does not count it).
pub(crate) fn estimate_text(text: &str) -> u64 {
    content_tokens(text.len())
}

fn message_tokens(message: &Message) -> u64 {
    content_tokens(message.content.len()) + PER_MESSAGE
}

fn content_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(3)
}

/// Tokens a request may use: the window less room for the reply (a quarter of the window, or
/// `max_tokens` if smaller).
pub(crate) fn prompt_budget(window: u64, max_tokens: u64) -> u64 {
    window.saturating_sub(max_tokens.min(window / 4))
}

/// The messages to send, and what was done to them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fitted {
    pub messages: Vec<Message>,
    /// Where the current task's prompt is in `messages` (`messages.len()` with no task).
    pub current_start: usize,
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
pub(crate) struct TooBig {
    pub tokens: u64,
    pub budget: u64,
}

/// The working copy: the messages still in, their running token total, and which were cut.
struct Draft {
    kept: Vec<Option<Message>>,
    cut: Vec<bool>,
    tokens: u64,
    dropped: usize,
}

impl Draft {
    fn over(&self, budget: u64) -> u64 {
        self.tokens.saturating_sub(budget)
    }

    /// Replaces message `i`'s text with `shorter`.
    fn replace(&mut self, i: usize, shorter: String) {
        if let Some(message) = self.kept[i].as_mut() {
            self.tokens -= content_tokens(message.content.len());
            self.tokens += content_tokens(shorter.len());
            message.content = shorter;
            self.cut[i] = true;
        }
    }

    fn drop(&mut self, i: usize) {
        if let Some(message) = self.kept[i].take() {
            self.tokens -= message_tokens(&message);
            self.dropped += 1;
        }
    }

    fn content(&self, i: usize) -> Option<&str> {
        self.kept[i].as_ref().map(|m| m.content.as_str())
    }
}

/// Fits `messages` (system prompt first) into `budget` tokens. `turn_starts` are the indices of
/// the tasks' prompts; the last is the current task.
pub fn fit(messages: &[Message], turn_starts: &[usize], budget: u64) -> Result<Fitted, TooBig> {
    let mut draft = Draft {
        kept: messages.iter().cloned().map(Some).collect(),
        cut: vec![false; messages.len()],
        tokens: estimate(messages),
        dropped: 0,
    };
    let current = turn_starts.last().copied().unwrap_or(messages.len());
    // The latest exchange: the last reply and what followed it (its feedback).
    let latest = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .filter(|&i| i > current)
        .unwrap_or(messages.len());
    let protected = |i: usize| i == 0 || i == current || i >= latest;

    // 1. Older execution outputs (user messages that are not task prompts), oldest first.
    for (i, message) in messages.iter().enumerate().skip(1) {
        if draft.over(budget) == 0 {
            break;
        }
        let is_output = message.role == Role::User && !turn_starts.contains(&i);
        if is_output
            && !protected(i)
            && let Some(short) = draft.content(i).and_then(shorten)
        {
            draft.replace(i, short);
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
        if draft.over(budget) == 0 {
            break;
        }
        for i in start..end {
            draft.drop(i);
        }
    }
    // 3. Last resort: the latest exchange, its feedback before its reply, cut by bytes exactly as
    //    far as needed: first no shorter than a floor, then as short as it takes.
    for floor in [LATEST_FLOOR_BYTES, 0] {
        for i in (latest..messages.len()).rev() {
            let over = draft.over(budget);
            if over == 0 {
                break;
            }
            let Some(text) = draft.content(i) else {
                continue;
            };
            let allowed = content_tokens(text.len()).saturating_sub(over);
            let max_bytes = usize::try_from(allowed.saturating_mul(3))
                .unwrap_or(usize::MAX)
                .max(floor);
            if let Some(short) = cut_to(text, max_bytes) {
                draft.replace(i, short);
            }
        }
    }
    if draft.over(budget) > 0 {
        return Err(TooBig {
            tokens: draft.tokens,
            budget,
        });
    }
    // The prompt itself is never dropped: the messages kept before it place it.
    let current_start = draft.kept[..current.min(messages.len())]
        .iter()
        .filter(|m| m.is_some())
        .count();
    Ok(Fitted {
        current_start,
        shortened: draft.cut.iter().filter(|&&c| c).count(),
        dropped: draft.dropped,
        tokens: draft.tokens,
        messages: draft.kept.into_iter().flatten().collect(),
    })
}

/// An older output's first and last `KEEP_LINES` lines, at most `KEEP_BYTES` at each end, with a
/// line saying what was cut; `None` if that would not make it shorter.
fn shorten(text: &str) -> Option<String> {
    let after_head_lines = text
        .match_indices('\n')
        .nth(KEEP_LINES - 1)
        .map_or(text.len(), |(i, _)| i + 1);
    let head_end = text.floor_char_boundary(after_head_lines.min(KEEP_BYTES));
    let before_tail_lines = text
        .trim_end_matches('\n')
        .rmatch_indices('\n')
        .nth(KEEP_LINES - 1)
        .map_or(0, |(i, _)| i + 1);
    let tail_start =
        text.ceil_char_boundary(before_tail_lines.max(text.len().saturating_sub(KEEP_BYTES)));
    if tail_start <= head_end {
        return None;
    }
    let short = head_and_tail(text, head_end, tail_start);
    (short.len() < text.len()).then_some(short)
}

/// `text` cut to at most `max_bytes` (or, when `max_bytes` cannot even hold the line saying what
/// was cut, to that line alone): its head and tail, split at character boundaries, around a line
/// saying how much was left out and why. `None` if it is short enough already.
fn cut_to(text: &str, max_bytes: usize) -> Option<String> {
    if text.len() <= max_bytes {
        return None;
    }
    // The marker can be no longer than for the whole text left out.
    let marker_len = marker(text.len(), text.matches('\n').count()).len() + 2;
    let keep = max_bytes.saturating_sub(marker_len);
    let head_end = text.floor_char_boundary(keep / 2);
    let tail_start = text.ceil_char_boundary(text.len() - (keep - keep / 2));
    Some(head_and_tail(text, head_end, tail_start))
}

/// `text[..head_end]`, the marker for what lies between, `text[tail_start..]`.
fn head_and_tail(text: &str, head_end: usize, tail_start: usize) -> String {
    let left_out = &text[head_end..tail_start];
    let marker = marker(left_out.len(), left_out.matches('\n').count());
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    if !tail.is_empty() {
        out.push('\n');
    }
    out.push_str(tail);
    out
}

fn marker(bytes: usize, lines: usize) -> String {
    match lines {
        0 => format!("[… {bytes} bytes left out to fit the context window …]"),
        1 => format!("[… {bytes} bytes (1 line) left out to fit the context window …]"),
        _ => format!("[… {bytes} bytes ({lines} lines) left out to fit the context window …]"),
    }
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

    /// The latest exchange of a one-task conversation whose block printed `output`.
    fn with_latest_output(output: String) -> (Vec<Message>, Vec<usize>) {
        let messages = vec![
            m(Role::System, "system prompt ".repeat(50)),
            m(Role::User, "the current task"),
            m(Role::Assistant, "```bash\nrun it\n```"),
            m(
                Role::User,
                format!("[success] Execution success, code output:\n{output}"),
            ),
        ];
        (messages, vec![1])
    }

    #[test]
    fn a_latest_output_with_a_huge_first_line_is_cut_to_fit() {
        let progress: String = (1..=3000).map(|i| format!("\rprogress {i}/3000")).collect();
        let json = format!(
            "{{\"items\":[{}{{}}]}}\n",
            (0..5000)
                .map(|i| format!("{{\"id\":{i}}},"))
                .collect::<String>()
        );
        let xs_then_lines = format!(
            "{}{}",
            "x".repeat(32 * 1024),
            (1..=20_000).map(|i| format!("{i}\n")).collect::<String>()
        );
        let cjk = "界".repeat(30_000);
        for (what, output) in [
            ("progress bar", progress),
            ("minified JSON", json),
            ("long line, then lines", xs_then_lines),
            ("CJK", cjk),
        ] {
            let (messages, starts) = with_latest_output(output);
            for budget in [400, 700, 2_000] {
                let fitted = fit(&messages, &starts, budget)
                    .unwrap_or_else(|e| panic!("{what} in {budget}: {e}"));
                assert!(fitted.tokens <= budget, "{what}: {fitted:?}");
                assert_eq!(fitted.tokens, estimate(&fitted.messages), "{what}");
                let kept = &fitted.messages;
                assert_eq!(kept[0], messages[0], "{what}: the system prompt is whole");
                assert_eq!(kept[1], messages[1], "{what}: the task is whole");
                assert_eq!(kept[2], messages[2], "{what}: a short reply is whole");
                let feedback = &kept[3].content;
                assert!(
                    feedback.starts_with("[success] Execution success, code output:\n"),
                    "{what}: {feedback}"
                );
                assert!(
                    feedback.contains("left out to fit the context window"),
                    "{what}: {feedback}"
                );
                assert_eq!(fitted.shortened, 1, "{what}");
            }
        }
    }

    #[test]
    fn a_huge_reply_is_cut_too_once_its_feedback_is_down_to_the_floor() {
        let messages = vec![
            m(Role::System, "system"),
            m(Role::User, "task"),
            m(Role::Assistant, "y".repeat(100_000)),
            m(Role::User, "z".repeat(100_000)),
        ];
        let fitted = fit(&messages, &[1], 500).unwrap();
        assert!(fitted.tokens <= 500, "{fitted:?}");
        assert_eq!(fitted.shortened, 2);
        assert!(fitted.messages[3].content.len() <= LATEST_FLOOR_BYTES);
        assert!(fitted.messages[2].content.contains("left out"));
    }

    #[test]
    fn cutting_says_what_was_left_out_and_keeps_characters_whole() {
        let text = format!("{}\n{}", "é".repeat(5_000), "末".repeat(5_000));
        for max in [0, 10, 100, 101, 102, 103, 1_000, 9_999] {
            let cut = cut_to(&text, max).expect("cut");
            let floor = marker(text.len(), 1).len() + 2;
            assert!(cut.len() <= max.max(floor), "{max}: {} bytes", cut.len());
            let left_out: usize = cut
                .split("[… ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .and_then(|n| n.parse().ok())
                .expect("the marker counts bytes");
            let marker_line = cut.lines().find(|l| l.starts_with("[…")).expect("marker");
            let kept = cut.len() - marker_line.len();
            assert!(
                (text.len() - left_out).abs_diff(kept) <= 2,
                "{max}: the count is exact (give or take the marker's line breaks)"
            );
        }
        assert_eq!(cut_to("short", 5), None);
    }

    #[test]
    fn older_outputs_keep_at_most_a_kilobyte_at_each_end() {
        let long_lines: String = (0..40)
            .map(|i| format!("{i}{}\n", "w".repeat(5_000)))
            .collect();
        let short = shorten(&long_lines).expect("shortened");
        assert!(short.len() <= 2 * KEEP_BYTES + 100, "{} bytes", short.len());
        assert!(short.starts_with("0www"));
        let lines: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let short = shorten(&lines).expect("shortened");
        assert!(short.starts_with("line 0\n") && short.contains("line 7\n"));
        assert!(!short.contains("line 8\n") && short.contains("line 92\n"));
        assert!(short.contains("(84 lines) left out"), "{short}");
        assert!(short.ends_with("line 99\n"));
        assert_eq!(shorten("a\nb\n"), None);
    }

    #[test]
    fn budgets_leave_room_for_the_reply() {
        assert_eq!(prompt_budget(8192, 4096), 6144);
        assert_eq!(prompt_budget(8192, 512), 7680);
        assert_eq!(prompt_budget(2048, 4096), 1536);
    }
}
