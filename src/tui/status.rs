//! The status line's state: what the agent is doing, since when, how fast the model streams and
//! how the last task ended, built from agent events.
//!
//! Owns the phase and its numbers; it must not draw beyond producing the line's text parts.

use std::time::{Duration, Instant};

use crate::agent::{Event, Outcome, Status};
use crate::tui::render::cells::{format_duration, spinner};

#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Ready,
    Thinking,
    Executing(String),
    Correcting,
    /// The model request failed before its first token and is tried again.
    Retrying {
        attempt: u32,
        reason: String,
    },
    /// The model is being downloaded, checked or loaded; the text says how far.
    Preparing(String),
    Finished(Outcome),
}

#[derive(Debug, Clone)]
pub struct StatusLine {
    pub phase: Phase,
    started: Option<Instant>,
    ended: Option<Instant>,
    /// Streamed pieces (one per token on the servers seek knows) and when they came.
    pieces: u64,
    first_piece: Option<Instant>,
    last_piece: Option<Instant>,
    /// Failed rounds so far and the cap.
    attempt: u32,
    max_attempts: u32,
    /// The last request left older messages out or shortened them (context budget).
    trimmed: bool,
}

impl Default for StatusLine {
    fn default() -> Self {
        Self {
            phase: Phase::Ready,
            started: None,
            ended: None,
            pieces: 0,
            first_piece: None,
            last_piece: None,
            attempt: 0,
            max_attempts: 0,
            trimmed: false,
        }
    }
}

impl StatusLine {
    pub fn running(&self) -> bool {
        !matches!(self.phase, Phase::Ready | Phase::Finished(_))
    }

    pub fn apply(&mut self, event: &Event, now: Instant) {
        match event {
            Event::TurnStarted { .. } => {
                *self = StatusLine {
                    phase: Phase::Thinking,
                    started: Some(now),
                    ..StatusLine::default()
                };
            }
            Event::Status {
                status,
                attempt,
                max_attempts,
                ..
            } => {
                self.attempt = *attempt;
                self.max_attempts = *max_attempts;
                self.phase = match status {
                    Status::Thinking => Phase::Thinking,
                    Status::Executing { tool } => Phase::Executing(tool.clone()),
                    Status::Correcting => Phase::Correcting,
                };
            }
            Event::ReasoningDelta { .. } | Event::AnswerDelta { .. } => {
                self.pieces += 1;
                self.first_piece.get_or_insert(now);
                self.last_piece = Some(now);
                if let Phase::Retrying { .. } | Phase::Preparing(_) = self.phase {
                    self.phase = Phase::Thinking;
                }
            }
            Event::Retrying {
                attempt, reason, ..
            } => {
                self.phase = Phase::Retrying {
                    attempt: *attempt,
                    reason: reason.clone(),
                };
            }
            Event::ModelPreparing { message, .. } => {
                self.phase = Phase::Preparing(message.clone());
            }
            Event::ContextTrimmed { .. } => self.trimmed = true,
            Event::TurnFinished { outcome, .. } => {
                self.phase = Phase::Finished(*outcome);
                self.ended = Some(now);
            }
            _ => {}
        }
    }

    /// Tokens per second over the streamed part of the task.
    fn rate(&self) -> Option<f64> {
        let span = self
            .last_piece?
            .saturating_duration_since(self.first_piece?);
        (self.pieces >= 8 && span > Duration::from_millis(100))
            .then(|| (self.pieces - 1) as f64 / span.as_secs_f64())
    }

    fn attempt_text(&self) -> Option<String> {
        (self.max_attempts > 0 && self.attempt > 0)
            .then(|| format!("attempt {}/{}", self.attempt + 1, self.max_attempts))
    }

    /// The left part: a mark and what is happening. The second value says whether it is bad news.
    pub fn describe(&self, now: Instant) -> (String, Tone) {
        let elapsed = self
            .started
            .map(|s| self.ended.unwrap_or(now).saturating_duration_since(s));
        let mut parts: Vec<String> = Vec::new();
        let tone;
        match &self.phase {
            Phase::Ready => return ("ready".into(), Tone::Quiet),
            Phase::Finished(outcome) => {
                let (text, t) = match outcome {
                    Outcome::Done => ("✓ done", Tone::Good),
                    Outcome::NeedsClarification => ("? the model asks you something", Tone::Warn),
                    Outcome::GaveUp => ("✗ gave up", Tone::Bad),
                    Outcome::RoundLimit => ("✗ round limit reached", Tone::Bad),
                    Outcome::Stopped => ("■ stopped", Tone::Warn),
                    Outcome::ModelError => ("! model server error", Tone::Bad),
                };
                tone = t;
                parts.push(text.into());
            }
            running => {
                let spin = spinner(elapsed.unwrap_or_default());
                tone = Tone::Busy;
                parts.push(match running {
                    Phase::Thinking => format!("{spin} Thinking"),
                    Phase::Executing(tool) => format!("{spin} Executing {tool}"),
                    Phase::Correcting => format!("{spin} Correcting"),
                    Phase::Retrying { attempt, reason } => {
                        format!("{spin} retrying ({attempt}): {reason}")
                    }
                    Phase::Preparing(message) => format!("{spin} {message}"),
                    _ => String::new(),
                });
            }
        }
        parts.extend(self.attempt_text());
        if let Some(elapsed) = elapsed {
            parts.push(format_duration(elapsed));
        }
        if let Some(rate) = self.rate() {
            parts.push(format!("{rate:.0} tok/s"));
        }
        if self.trimmed {
            parts.push("context trimmed".into());
        }
        (parts.join(" · "), tone)
    }
}

/// How the status reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Quiet,
    Busy,
    Good,
    Warn,
    Bad,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentName;

    #[test]
    fn a_task_reads_thinking_then_executing_then_done_with_a_rate() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut s = StatusLine::default();
        assert_eq!(s.describe(t0).0, "ready");
        s.apply(
            &Event::TurnStarted {
                turn: 1,
                prompt: "x".into(),
                agent: AgentName::Coder,
            },
            t0,
        );
        assert_eq!(s.describe(at(50)).0, "⠋ Thinking · 0.05 s");
        for i in 0..=10 {
            s.apply(&Event::AnswerDelta { text: "a".into() }, at(1000 + i * 100));
        }
        s.apply(
            &Event::Status {
                status: Status::Executing {
                    tool: "python".into(),
                },
                round: 2,
                attempt: 1,
                max_attempts: 5,
            },
            at(2100),
        );
        assert_eq!(
            s.describe(at(2500)).0,
            "⠴ Executing python · attempt 2/5 · 2.5 s · 10 tok/s"
        );
        s.apply(
            &Event::TurnFinished {
                usage: None,
                turn: 1,
                outcome: Outcome::Done,
                answer: String::new(),
                reasoning: None,
                agent: AgentName::Coder,
                rounds: 2,
                blocks: Vec::new(),
                message: None,
            },
            at(3000),
        );
        assert!(!s.running());
        assert_eq!(
            s.describe(at(9000)),
            ("✓ done · attempt 2/5 · 3.0 s · 10 tok/s".into(), Tone::Good)
        );
    }

    #[test]
    fn preparing_the_model_shows_its_progress_until_the_first_token() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut s = StatusLine::default();
        s.apply(
            &Event::TurnStarted {
                turn: 1,
                prompt: "x".into(),
                agent: AgentName::Coder,
            },
            t0,
        );
        s.apply(
            &Event::ModelPreparing {
                stage: "download".into(),
                model: "smollm2-135m".into(),
                done_bytes: 1,
                total_bytes: Some(2),
                message: "smollm2-135m: 49.2 MB of 98.4 MB (50%)".into(),
            },
            at(100),
        );
        assert_eq!(
            s.describe(at(100)).0,
            "⠙ smollm2-135m: 49.2 MB of 98.4 MB (50%) · 0.10 s"
        );
        s.apply(&Event::AnswerDelta { text: "a".into() }, at(200));
        assert_eq!(s.describe(at(300)).0, "⠸ Thinking · 0.30 s");
    }
}
