//! The status line's state: what the agent is doing, since when, how fast the model generates,
//! how many tokens the task used, how full the context window is and how the last task ended,
//! built from agent events.
//!
//! Owns the phase and its numbers; it must not draw beyond producing the line's text parts.
//! Generation speed counts streaming time only (`Event::Usage`'s `streaming_ms`): time spent
//! waiting for the first token or running blocks is not generation.

use std::time::{Duration, Instant};

use crate::agent::{Event, Outcome, RoundUsage, Status, TurnUsage, USER_ROUND};
use crate::render::cells::{format_duration, spinner};
use crate::wire::AgentName;

/// Streaming shorter than this gives no meaningful speed (a short reply arrives in one read).
const MIN_RATE_STREAMING_MS: f64 = 100.0;

#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Ready,
    Thinking,
    /// The model's answer text is streaming (not its reasoning).
    Answering,
    /// The user's own command (`!cmd`) runs; the text is the command.
    Command(String),
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

/// How full the context window is, as of the last request.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ContextFill {
    tokens: u64,
    window: Option<u64>,
    estimated: bool,
}

#[derive(Debug, Clone)]
pub struct StatusLine {
    pub phase: Phase,
    started: Option<Instant>,
    ended: Option<Instant>,
    /// The task's tokens so far (summed over its rounds).
    usage: TurnUsage,
    /// The last request's fill; it outlives the task (the conversation stays that long).
    context: Option<ContextFill>,
    /// Failed rounds so far and the cap.
    attempt: u32,
    max_attempts: u32,
    /// The last request left older messages out or shortened them (context budget).
    trimmed: bool,
    /// The ids of the plan's steps, in order (empty for a task without a plan).
    plan: Vec<String>,
    /// The plan step running now and its agent.
    step: Option<(String, AgentName)>,
    /// Whether the model is treated as small, and why (`model_size` event); it outlives the
    /// task, until the model changes.
    size: Option<(bool, String)>,
    /// The model runs in seek's own engine: there is no server to blame for its errors.
    pub built_in: bool,
    /// A model is being downloaded before a switch to it (`/model`), outside any task.
    fetching: bool,
}

impl Default for StatusLine {
    fn default() -> Self {
        Self {
            phase: Phase::Ready,
            started: None,
            ended: None,
            usage: TurnUsage::default(),
            context: None,
            attempt: 0,
            max_attempts: 0,
            trimmed: false,
            plan: Vec::new(),
            step: None,
            size: None,
            built_in: false,
            fetching: false,
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
                    context: self.context,
                    size: self.size.take(),
                    built_in: self.built_in,
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
            // What streams says what the model does: thinking until its answer text comes.
            Event::ReasoningDelta { .. } => {
                if let Phase::Retrying { .. } | Phase::Preparing(_) | Phase::Answering = self.phase
                {
                    self.phase = Phase::Thinking;
                }
            }
            Event::AnswerDelta { text } => {
                if let Phase::Retrying { .. } | Phase::Preparing(_) = self.phase {
                    self.phase = Phase::Thinking;
                }
                if self.phase == Phase::Thinking && !text.trim().is_empty() {
                    self.phase = Phase::Answering;
                }
            }
            // The user's own command: a task of its own for the status line, from its start to
            // its end (round 0 is no model round).
            Event::BlockStarted {
                round: USER_ROUND,
                code,
                ..
            } if !self.running() => {
                *self = StatusLine {
                    phase: Phase::Command(code.trim().to_owned()),
                    started: Some(now),
                    context: self.context,
                    size: self.size.take(),
                    ..StatusLine::default()
                };
            }
            Event::BlockFinished { record }
                if record.round == USER_ROUND && matches!(self.phase, Phase::Command(_)) =>
            {
                self.ended = Some(now);
                self.phase = if record.stopped {
                    Phase::Finished(Outcome::Stopped)
                } else {
                    Phase::Ready
                };
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
                self.fetching |= !self.running();
                self.phase = Phase::Preparing(message.clone());
            }
            // The download before a switch ended: switched, or not (an error says why).
            Event::ModelChanged { .. } | Event::Error { .. } if self.fetching => {
                self.fetching = false;
                self.phase = Phase::Ready;
                self.size = None;
            }
            Event::ContextTrimmed { .. } => self.trimmed = true,
            Event::ModelSize { small, reason, .. } => self.size = Some((*small, reason.clone())),
            // Another model is a fresh start: the last one's failure is no longer news.
            Event::ModelChanged { .. } => {
                self.size = None;
                self.forget_model_error();
            }
            // The user's own command (`!cmd`) ran fine: the model's failure is old news.
            Event::BlockFinished { record } if !self.running() && record.success => {
                self.forget_model_error();
            }
            Event::Usage { usage, .. } => self.add_round(usage),
            Event::Plan { steps, .. } | Event::Replanned { steps, .. } => {
                self.plan = steps.iter().map(|s| s.id.clone()).collect();
            }
            // Between steps the planner is at work again: the step's tool and attempts are over.
            Event::StepStarted { id, agent, .. } => {
                self.step = Some((id.clone(), *agent));
                self.between_steps();
            }
            Event::StepFinished { .. } => {
                self.step = None;
                self.between_steps();
            }
            // A step's sub-agent says what it does and what it uses; its own start and end are
            // not the task's.
            Event::Step { event, .. } => match event.as_ref() {
                Event::TurnStarted { .. }
                | Event::TurnFinished { .. }
                | Event::Cleared
                | Event::Step { .. } => {}
                inner => self.apply(inner, now),
            },
            Event::Cleared => {
                self.context = None;
                self.forget_model_error();
            }
            Event::TurnFinished { outcome, usage, .. } => {
                self.phase = Phase::Finished(*outcome);
                self.ended = Some(now);
                // The task's own sums are the reference when it gives them.
                if let Some(usage) = usage {
                    self.usage = *usage;
                    if usage.context_tokens > 0 {
                        self.context = Some(ContextFill {
                            tokens: usage.context_tokens,
                            window: usage.context_window,
                            estimated: usage.estimated,
                        });
                    }
                }
            }
            _ => {}
        }
    }

    /// A finished task's model failure goes back to `ready` (other endings stay: they are the
    /// last task's result, not a state of the model).
    fn forget_model_error(&mut self) {
        if self.phase == Phase::Finished(Outcome::ModelError) {
            self.phase = Phase::Ready;
        }
    }

    fn between_steps(&mut self) {
        if self.running() {
            self.phase = Phase::Thinking;
        }
        self.attempt = 0;
        self.max_attempts = 0;
    }

    fn add_round(&mut self, round: &RoundUsage) {
        let usage = &mut self.usage;
        // The counts are the server's word: absurd ones saturate instead of overflowing.
        usage.prompt_tokens = usage.prompt_tokens.saturating_add(round.prompt_tokens);
        usage.completion_tokens = usage
            .completion_tokens
            .saturating_add(round.completion_tokens);
        usage.context_tokens = round.prompt_tokens;
        usage.context_window = round.context_window.or(usage.context_window);
        // NaN, negative or infinite time (a damaged session) adds nothing.
        if round.streaming_ms.is_finite() && round.streaming_ms > 0.0 {
            usage.streaming_ms += round.streaming_ms;
        }
        usage.estimated |= round.estimated;
        self.context = Some(ContextFill {
            tokens: round.prompt_tokens,
            window: round.context_window,
            estimated: round.estimated,
        });
    }

    /// How long the task has run (until it ended), if one started.
    pub fn elapsed(&self, now: Instant) -> Option<Duration> {
        self.started
            .map(|s| self.ended.unwrap_or(now).saturating_duration_since(s))
    }

    /// Generation speed: completion tokens over streaming time only.
    fn rate(&self) -> Option<f64> {
        let usage = &self.usage;
        (usage.streaming_ms.is_finite()
            && usage.streaming_ms >= MIN_RATE_STREAMING_MS
            && usage.completion_tokens > 0)
            .then(|| usage.completion_tokens as f64 * 1000.0 / usage.streaming_ms)
    }

    /// `95 tok/s`, `1.2k tokens`, `ctx 41%`: what is known of the task's tokens.
    fn usage_parts(&self) -> Vec<String> {
        let about = if self.usage.estimated { "~" } else { "" };
        let mut parts = Vec::new();
        if let Some(rate) = self.rate() {
            // `as` saturates: a server's absurd count gives `>999M`, not forty digits.
            parts.push(format!("{about}{} tok/s", count(rate.round() as u64)));
        }
        let total = self
            .usage
            .prompt_tokens
            .saturating_add(self.usage.completion_tokens);
        if total > 0 {
            parts.push(format!("{about}{} tokens", count(total)));
        }
        if let Some(fill) = self.context
            && let Some(window) = fill.window.filter(|w| *w > 0)
        {
            let about = if fill.estimated { "~" } else { "" };
            let percent = (fill.tokens.saturating_mul(100) / window).min(999);
            parts.push(format!("ctx {about}{percent}%"));
        }
        parts
    }

    /// `step 2/3 · coder` while a plan's step runs.
    fn step_text(&self) -> Option<String> {
        let (id, agent) = self.step.as_ref()?;
        Some(match self.plan.iter().position(|s| s == id) {
            Some(at) => format!("step {}/{} · {agent}", at + 1, self.plan.len()),
            None => {
                let id = crate::render::plan::ellipsis(&crate::render::plan::one_line(id), 4);
                format!("step {id} · {agent}")
            }
        })
    }

    fn attempt_text(&self) -> Option<String> {
        (self.max_attempts > 0 && self.attempt > 0).then(|| {
            format!(
                "attempt {}/{}",
                self.attempt.saturating_add(1),
                self.max_attempts
            )
        })
    }

    /// The left part: a mark and what is happening. The second value says whether it is bad news.
    pub fn describe(&self, now: Instant) -> (String, Tone) {
        let elapsed = self.elapsed(now);
        let mut parts: Vec<String> = Vec::new();
        let tone;
        match &self.phase {
            Phase::Ready => {
                parts.push("ready".into());
                parts.extend(self.size_text());
                return (parts.join(" · "), Tone::Quiet);
            }
            Phase::Finished(outcome) => {
                let (text, t) = match outcome {
                    Outcome::Done => ("✓ done", Tone::Good),
                    Outcome::NeedsClarification => ("? the model asks you something", Tone::Warn),
                    Outcome::GaveUp => ("✗ gave up", Tone::Bad),
                    Outcome::RoundLimit => ("✗ round limit reached", Tone::Bad),
                    Outcome::Stopped => ("■ stopped", Tone::Warn),
                    Outcome::ModelError if self.built_in => ("! model error", Tone::Bad),
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
                    Phase::Answering => format!("{spin} Answering"),
                    Phase::Command(command) => format!(
                        "{spin} running !{}",
                        crate::picker::fit(&crate::complete::first_line(command), 40)
                    ),
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
        if self.running() {
            parts.extend(self.step_text());
        }
        parts.extend(self.attempt_text());
        if let Some(elapsed) = elapsed {
            parts.push(format_duration(elapsed));
        }
        parts.extend(self.usage_parts());
        if self.trimmed {
            parts.push("context trimmed".into());
        }
        parts.extend(self.size_text());
        (parts.join(" · "), tone)
    }

    /// `small model (135M parameters, from llama-server /v1/models)` once decided; while a task
    /// runs only `small model`. Nothing for a large one: only a small model changes what seek
    /// does, and the line's room is for the state and the key hints (`seek config` and the
    /// `model_size` event say either decision).
    fn size_text(&self) -> Option<String> {
        let (small, why) = self.size.as_ref()?;
        if !*small {
            return None;
        }
        if self.running() {
            return Some("small model".to_owned());
        }
        Some(format!("small model ({why})"))
    }
}

/// A token count in a few characters: `840`, `1.2k`, `57k`, `1.3M`, `>999M` (no real task gets
/// there; a server reporting absurd counts does).
fn count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => format!("{:.1}k", n as f64 / 1e3),
        10_000..1_000_000 => format!("{:.0}k", n as f64 / 1e3),
        1_000_000..999_950_000 => format!("{:.1}M", n as f64 / 1e6),
        _ => ">999M".to_owned(),
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

    fn started(s: &mut StatusLine, t0: Instant) {
        s.apply(
            &Event::TurnStarted {
                turn: 1,
                prompt: "x".into(),
                agent: AgentName::Coder,
            },
            t0,
        );
    }

    fn usage(prompt: u64, completion: u64, streaming_ms: f64, window: Option<u64>) -> Event {
        Event::Usage {
            round: 1,
            usage: RoundUsage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                streaming_ms,
                context_window: window,
                estimated: false,
            },
        }
    }

    fn finished(outcome: Outcome, usage: Option<TurnUsage>) -> Event {
        Event::TurnFinished {
            usage,
            turn: 1,
            outcome,
            answer: String::new(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 2,
            blocks: Vec::new(),
            message: None,
            plan: None,
            web: None,
        }
    }

    #[test]
    fn a_task_reads_thinking_then_executing_then_done_with_speed_tokens_and_context() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut s = StatusLine::default();
        assert_eq!(s.describe(t0).0, "ready");
        started(&mut s, t0);
        assert_eq!(s.describe(at(50)).0, "⠋ Thinking · 0.05 s");
        s.apply(&usage(3_000, 190, 2_000.0, Some(8_192)), at(2_000));
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
            "⠴ Executing python · attempt 2/5 · 2.5 s · 95 tok/s · 3.2k tokens · ctx 36%"
        );
        // A block that runs for a minute does not slow the model down.
        s.apply(&usage(3_400, 10, 100.0, Some(8_192)), at(62_000));
        s.apply(&finished(Outcome::Done, None), at(63_000));
        assert!(!s.running());
        assert_eq!(
            s.describe(at(99_000)),
            (
                "✓ done · attempt 2/5 · 1 min 03 s · 95 tok/s · 6.6k tokens · ctx 41%".into(),
                Tone::Good
            )
        );
    }

    #[test]
    fn a_model_error_names_no_server_for_the_built_in_engine_and_is_forgotten() {
        let t0 = Instant::now();
        for (built_in, words) in [(true, "! model error"), (false, "! model server error")] {
            let mut s = StatusLine {
                built_in,
                ..StatusLine::default()
            };
            started(&mut s, t0);
            s.apply(&finished(Outcome::ModelError, None), t0);
            assert!(s.describe(t0).0.starts_with(words), "{}", s.describe(t0).0);
            // Still the built-in engine at the next task: it outlives a task's start.
            started(&mut s, t0);
            s.apply(&finished(Outcome::ModelError, None), t0);
            assert!(s.describe(t0).0.starts_with(words));
            s.apply(
                &Event::ModelChanged {
                    description: "other @ local".into(),
                },
                t0,
            );
            assert_eq!(s.describe(t0).0, "ready", "a switch forgets it");
        }
        // A fetch before a switch that failed ends in `ready` too, not spinning.
        let mut s = StatusLine::default();
        s.apply(
            &Event::ModelPreparing {
                stage: "download".into(),
                model: "big".into(),
                done_bytes: 0,
                total_bytes: Some(1),
                message: "big: downloading".into(),
            },
            t0,
        );
        assert!(s.running());
        s.apply(
            &Event::Error {
                message: "could not download big".into(),
            },
            t0,
        );
        assert!(!s.running());
        assert_eq!(s.describe(t0).0, "ready");
    }

    #[test]
    fn estimates_say_so_and_an_unknown_window_shows_no_percentage() {
        let t0 = Instant::now();
        let mut s = StatusLine::default();
        started(&mut s, t0);
        s.apply(&usage(500, 12, 20.0, None), t0);
        assert_eq!(
            s.describe(t0).0,
            "⠋ Thinking · 0.00 s · 512 tokens",
            "no window: no ctx; 20 ms of streaming: no speed"
        );
        let estimated = TurnUsage {
            prompt_tokens: 900,
            completion_tokens: 300,
            context_tokens: 900,
            context_window: Some(4_096),
            streaming_ms: 3_000.0,
            estimated: true,
        };
        s.apply(&finished(Outcome::Done, Some(estimated)), t0);
        assert_eq!(
            s.describe(t0).0,
            "✓ done · 0.00 s · ~100 tok/s · ~1.2k tokens · ctx ~21%"
        );
        // The context stays as full for the next task, until the conversation is cleared.
        started(&mut s, t0);
        assert_eq!(s.describe(t0).0, "⠋ Thinking · 0.00 s · ctx ~21%");
        s.apply(&Event::Cleared, t0);
        assert_eq!(s.describe(t0).0, "⠋ Thinking · 0.00 s");
    }

    #[test]
    fn absurd_counts_from_a_server_or_a_damaged_session_neither_panic_nor_sprawl() {
        let t0 = Instant::now();
        let mut s = StatusLine::default();
        started(&mut s, t0);
        s.apply(&usage(u64::MAX, u64::MAX, 100.0, Some(1)), t0);
        s.apply(&usage(u64::MAX, u64::MAX, f64::NAN, Some(0)), t0);
        s.apply(&usage(7, 7, -5.0, None), t0);
        s.apply(
            &usage(u64::MAX, u64::MAX, f64::INFINITY, Some(u64::MAX)),
            t0,
        );
        let (line, _) = s.describe(t0);
        assert!(!line.contains("NaN") && !line.contains("inf"), "{line}");
        assert!(line.chars().count() < 80, "{line}");
        let mut s = StatusLine::default();
        started(&mut s, t0);
        s.apply(&usage(1, u64::MAX, 100.0, Some(1)), t0);
        let (line, _) = s.describe(t0);
        assert!(
            line.chars().count() < 80,
            "a huge speed is shown short: {line}"
        );
        assert!(line.contains("tokens"), "{line}");
    }

    #[test]
    fn token_counts_are_short() {
        assert_eq!(count(840), "840");
        assert_eq!(count(1_234), "1.2k");
        assert_eq!(count(56_789), "57k");
        assert_eq!(count(1_300_000), "1.3M");
    }

    #[test]
    fn preparing_the_model_shows_its_progress_until_the_first_token() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut s = StatusLine::default();
        started(&mut s, t0);
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
        assert_eq!(s.describe(at(300)).0, "⠸ Answering · 0.30 s");
    }
}
