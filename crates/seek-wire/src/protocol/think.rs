//! Separating `<think>…</think>` reasoning from the answer, batch and incremental.
//!
//! Owns the tag rules: no tags → no reasoning; an unterminated `<think>` → still thinking; a reply
//! that starts without `<think>` but contains `</think>` (the chat template put the opening tag in
//! the prompt) → the text before it is reasoning; several think blocks are all reasoning. It must
//! not know where the text comes from; providers that send reasoning in a separate field bypass it.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// A piece of a streamed reply, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThinkDelta {
    Reasoning(String),
    Answer(String),
    /// A `</think>` arrived with no `<think>` before it: everything emitted so far as answer was
    /// in fact reasoning; the consumer moves it over.
    AnswerWasReasoning,
}

/// A whole reply, split.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReasoningSplit {
    /// The reasoning, trimmed; `None` when the reply had no think tags.
    pub reasoning: Option<String>,
    /// The answer, trimmed.
    pub answer: String,
    /// The reply ended inside a `<think>` block.
    pub still_thinking: bool,
}

/// Splits a whole reply (or a prefix of one) into reasoning and answer.
pub fn split_reasoning(text: &str) -> ReasoningSplit {
    let mut splitter = ThinkSplitter::default();
    let mut reasoning = String::new();
    let mut answer = String::new();
    let mut apply = |delta: ThinkDelta| match delta {
        ThinkDelta::Reasoning(r) => reasoning.push_str(&r),
        ThinkDelta::Answer(a) => answer.push_str(&a),
        ThinkDelta::AnswerWasReasoning => reasoning.insert_str(0, &std::mem::take(&mut answer)),
    };
    splitter.push(text).into_iter().for_each(&mut apply);
    let still_thinking = splitter.is_thinking();
    let saw_tags = splitter.saw_tags();
    splitter.finish().into_iter().for_each(&mut apply);
    ReasoningSplit {
        reasoning: saw_tags.then(|| reasoning.trim().to_owned()),
        answer: answer.trim().to_owned(),
        still_thinking,
    }
}

/// Incremental splitter. Holds back at most the length of a tag, so a `<thi` at the end of a
/// piece never leaks into the answer.
#[derive(Debug, Clone, Default)]
pub struct ThinkSplitter {
    inside: bool,
    saw_open: bool,
    saw_close: bool,
    emitted_answer: bool,
    emitted_reasoning: bool,
    pending: String,
}

impl ThinkSplitter {
    /// Classifies `delta`; pieces that might be the start of a tag are held until decided.
    pub fn push(&mut self, delta: &str) -> Vec<ThinkDelta> {
        // Most pieces hold no tag at all: pass them through without searching.
        if self.pending.is_empty() && !delta.contains('<') {
            let mut out = Vec::with_capacity(1);
            if self.inside {
                self.reasoning(delta, &mut out);
            } else {
                self.answer(delta, &mut out);
            }
            return out;
        }
        let mut buf = std::mem::take(&mut self.pending);
        buf.push_str(delta);
        let mut out = Vec::new();
        let mut rest = buf.as_str();
        loop {
            if self.inside {
                match rest.find(CLOSE) {
                    Some(at) => {
                        self.reasoning(&rest[..at], &mut out);
                        self.inside = false;
                        self.saw_close = true;
                        rest = &rest[at + CLOSE.len()..];
                    }
                    None => {
                        let keep = partial_tag_suffix(rest, &[CLOSE]);
                        self.reasoning(&rest[..rest.len() - keep], &mut out);
                        self.pending = rest[rest.len() - keep..].to_owned();
                        return out;
                    }
                }
            } else {
                let open = rest.find(OPEN);
                let close = rest.find(CLOSE);
                match (open, close) {
                    (Some(o), c) if c.is_none_or(|c| o < c) => {
                        self.answer(&rest[..o], &mut out);
                        self.inside = true;
                        if self.emitted_reasoning {
                            self.reasoning("\n", &mut out);
                        }
                        self.saw_open = true;
                        rest = &rest[o + OPEN.len()..];
                    }
                    (_, Some(c)) => {
                        if !self.saw_open && !self.saw_close {
                            // The template opened the think block in the prompt.
                            if self.emitted_answer {
                                out.push(ThinkDelta::AnswerWasReasoning);
                                self.emitted_answer = false;
                                self.emitted_reasoning = true;
                            }
                            self.reasoning(&rest[..c], &mut out);
                        } else {
                            // A stray close tag after a complete think block: drop the tag only.
                            self.answer(&rest[..c], &mut out);
                        }
                        self.saw_close = true;
                        rest = &rest[c + CLOSE.len()..];
                    }
                    _ => {
                        let keep = partial_tag_suffix(rest, &[OPEN, CLOSE]);
                        self.answer(&rest[..rest.len() - keep], &mut out);
                        self.pending = rest[rest.len() - keep..].to_owned();
                        return out;
                    }
                }
            }
        }
    }

    /// Flushes held-back text at the end of the reply.
    pub fn finish(&mut self) -> Vec<ThinkDelta> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        if self.inside {
            self.reasoning(&rest, &mut out);
        } else {
            self.answer(&rest, &mut out);
        }
        out
    }

    /// The reply so far ends inside a think block.
    pub fn is_thinking(&self) -> bool {
        self.inside
    }

    /// Any think tag was seen.
    pub fn saw_tags(&self) -> bool {
        self.saw_open || self.saw_close
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<ThinkDelta>) {
        if !text.is_empty() {
            self.emitted_reasoning = true;
            out.push(ThinkDelta::Reasoning(text.to_owned()));
        }
    }

    fn answer(&mut self, text: &str, out: &mut Vec<ThinkDelta>) {
        if !text.is_empty() {
            self.emitted_answer = true;
            out.push(ThinkDelta::Answer(text.to_owned()));
        }
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of one of `tags`.
fn partial_tag_suffix(text: &str, tags: &[&str]) -> usize {
    let longest = tags.iter().map(|t| t.len() - 1).max().unwrap_or(0);
    (1..=longest.min(text.len()))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && tags.iter().any(|t| t.starts_with(&text[text.len() - n..]))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_tags_means_no_reasoning() {
        // AgenticSeek returned "" for this and "t" for "short" (§3.1 [probed]).
        for text in ["no tags here at all", "short"] {
            let split = split_reasoning(text);
            assert_eq!(split.reasoning, None);
            assert_eq!(split.answer, text);
        }
    }

    #[test]
    fn a_think_block_is_reasoning() {
        let split = split_reasoning("<think>plan it</think>\n\nThe answer.");
        assert_eq!(split.reasoning.as_deref(), Some("plan it"));
        assert_eq!(split.answer, "The answer.");
        assert!(!split.still_thinking);
    }

    #[test]
    fn unterminated_think_is_still_thinking() {
        // AgenticSeek returned "<think>" as the reasoning (§3.1 [probed]).
        let split = split_reasoning("<think>unterminated");
        assert_eq!(split.reasoning.as_deref(), Some("unterminated"));
        assert_eq!(split.answer, "");
        assert!(split.still_thinking);
    }

    #[test]
    fn close_without_open_means_the_template_opened_it() {
        let split = split_reasoning("I should list files.\n</think>\nHere:");
        assert_eq!(split.reasoning.as_deref(), Some("I should list files."));
        assert_eq!(split.answer, "Here:");
    }

    #[test]
    fn several_think_blocks_are_all_reasoning() {
        let split = split_reasoning("<think>a</think>one <think>b</think>two");
        assert_eq!(split.reasoning.as_deref(), Some("a\nb"));
        assert_eq!(split.answer, "one two");
    }

    #[test]
    fn stray_close_after_a_block_is_dropped() {
        let split = split_reasoning("<think>a</think>x</think>y");
        assert_eq!(split.answer, "xy");
    }

    #[test]
    fn streaming_holds_back_partial_tags() {
        let mut s = ThinkSplitter::default();
        assert_eq!(s.push("Hi <thi"), vec![ThinkDelta::Answer("Hi ".into())]);
        assert_eq!(s.push("nk>x"), vec![ThinkDelta::Reasoning("x".into())]);
        assert!(s.is_thinking());
        assert_eq!(s.push("</th"), vec![]);
        assert_eq!(
            s.push("ink>done <"),
            vec![ThinkDelta::Answer("done ".into())]
        );
        assert_eq!(s.finish(), vec![ThinkDelta::Answer("<".into())]);
    }

    #[test]
    fn streaming_reclassifies_on_late_close() {
        let mut s = ThinkSplitter::default();
        assert_eq!(s.push("hmm "), vec![ThinkDelta::Answer("hmm ".into())]);
        assert_eq!(
            s.push("ok</think>A"),
            vec![
                ThinkDelta::AnswerWasReasoning,
                ThinkDelta::Reasoning("ok".into()),
                ThinkDelta::Answer("A".into())
            ]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_result() {
        let text = "pre<think>é thought</think>answer <think>more</think> end</think>";
        let whole = split_reasoning(text);
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let mut s = ThinkSplitter::default();
            let (mut r, mut a) = (String::new(), String::new());
            let deltas = [s.push(&text[..cut]), s.push(&text[cut..]), s.finish()];
            for d in deltas.into_iter().flatten() {
                match d {
                    ThinkDelta::Reasoning(x) => r.push_str(&x),
                    ThinkDelta::Answer(x) => a.push_str(&x),
                    ThinkDelta::AnswerWasReasoning => r.insert_str(0, &std::mem::take(&mut a)),
                }
            }
            assert_eq!(Some(r.trim().to_owned()), whole.reasoning, "cut {cut}");
            assert_eq!(a.trim(), whole.answer, "cut {cut}");
        }
    }
}
