//! Token usage: one round's counts (the server's, or the budget's estimate when it gives none)
//! and how long its reply streamed, and a task's sum of them.
//!
//! Owns the arithmetic and the streaming clock. It must not emit events or talk to the model:
//! the turn measures with `StreamClock` and reports what `round_usage` and `add` return.

use std::time::Instant;

use super::budget;
use crate::llm::Usage;
use crate::wire::{RoundUsage, TurnUsage};

/// The time from a reply's first streamed token to its last. Only answer and reasoning text
/// ticks it: neither the wait before the first token nor anything after the last counts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StreamClock {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl StreamClock {
    /// A token (answer or reasoning text) arrived now.
    pub fn tick(&mut self) {
        self.tick_at(Instant::now());
    }

    fn tick_at(&mut self, at: Instant) {
        self.first.get_or_insert(at);
        self.last = Some(at);
    }

    /// Milliseconds between the first and the last token (0 before two arrived).
    pub fn streaming_ms(&self) -> f64 {
        match (self.first, self.last) {
            (Some(first), Some(last)) => last.duration_since(first).as_secs_f64() * 1000.0,
            _ => 0.0,
        }
    }
}

/// What one round sent and got back, for when the server does not count.
#[derive(Debug, Clone, Copy)]
pub struct Sent<'a> {
    /// The budget's estimate of the request's tokens.
    pub prompt_estimate: u64,
    /// The reply's text: answer and reasoning.
    pub answer: &'a str,
    pub reasoning: &'a str,
}

/// A round's usage: each count the server reported, else the estimate (and then `estimated`).
pub(crate) fn round_usage(
    reported: Option<Usage>,
    sent: Sent<'_>,
    clock: &StreamClock,
    context_window: u64,
) -> RoundUsage {
    let reported = reported.unwrap_or_default();
    let estimated = reported.prompt_tokens.is_none() || reported.completion_tokens.is_none();
    RoundUsage {
        prompt_tokens: reported.prompt_tokens.unwrap_or(sent.prompt_estimate),
        completion_tokens: reported.completion_tokens.unwrap_or_else(|| {
            budget::estimate_text(sent.answer) + budget::estimate_text(sent.reasoning)
        }),
        streaming_ms: clock.streaming_ms(),
        context_window: Some(context_window),
        estimated,
    }
}

/// `total` with `round` added: counts and streaming time summed, the context as of this round.
pub fn add(total: Option<TurnUsage>, round: &RoundUsage) -> TurnUsage {
    add_task(
        total,
        &TurnUsage {
            prompt_tokens: round.prompt_tokens,
            completion_tokens: round.completion_tokens,
            context_tokens: round.prompt_tokens,
            context_window: round.context_window,
            streaming_ms: round.streaming_ms,
            estimated: round.estimated,
        },
    )
}

/// `total` with a whole task's (a plan step's) tokens added: counts and streaming time summed,
/// the context as of the later one.
pub(crate) fn add_task(total: Option<TurnUsage>, more: &TurnUsage) -> TurnUsage {
    let total = total.unwrap_or_default();
    TurnUsage {
        prompt_tokens: total.prompt_tokens.saturating_add(more.prompt_tokens),
        completion_tokens: total
            .completion_tokens
            .saturating_add(more.completion_tokens),
        context_tokens: more.context_tokens,
        context_window: more.context_window.or(total.context_window),
        streaming_ms: total.streaming_ms + more.streaming_ms,
        estimated: total.estimated || more.estimated,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_clock_counts_from_the_first_token_to_the_last() {
        let mut clock = StreamClock::default();
        assert_eq!(clock.streaming_ms(), 0.0);
        let start = Instant::now();
        clock.tick_at(start + Duration::from_millis(900));
        assert_eq!(clock.streaming_ms(), 0.0, "one token streams in no time");
        clock.tick_at(start + Duration::from_millis(1_150));
        clock.tick_at(start + Duration::from_millis(1_400));
        assert!((clock.streaming_ms() - 500.0).abs() < 1e-6);
    }

    #[test]
    fn the_servers_counts_win_and_missing_ones_are_estimated() {
        let clock = StreamClock::default();
        let sent = Sent {
            prompt_estimate: 100,
            answer: "abcdef",
            reasoning: "abc",
        };
        let counted = Usage {
            prompt_tokens: Some(42),
            completion_tokens: Some(7),
        };
        let usage = round_usage(Some(counted), sent, &clock, 8192);
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (42, 7));
        assert!(!usage.estimated);
        assert_eq!(usage.context_window, Some(8192));
        let usage = round_usage(None, sent, &clock, 8192);
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (100, 3));
        assert!(usage.estimated);
        let half = Usage {
            prompt_tokens: Some(42),
            completion_tokens: None,
        };
        let usage = round_usage(Some(half), sent, &clock, 8192);
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (42, 3));
        assert!(usage.estimated);
    }

    #[test]
    fn a_task_sums_its_rounds_and_its_context_is_the_last_request() {
        let round = |prompt, completion, ms, estimated| RoundUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            streaming_ms: ms,
            context_window: Some(4096),
            estimated,
        };
        let total = add(None, &round(100, 10, 200.0, false));
        let total = add(Some(total), &round(150, 20, 300.0, true));
        assert_eq!(
            total,
            TurnUsage {
                prompt_tokens: 250,
                completion_tokens: 30,
                context_tokens: 150,
                context_window: Some(4096),
                streaming_ms: 500.0,
                estimated: true,
            }
        );
    }
}
