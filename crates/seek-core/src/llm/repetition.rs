//! The repetition guard: small models loop, writing the same text until the token limit.
//!
//! Owns the detection of a reply whose tail is one unit repeated many times. Pure and
//! incremental: each check looks at a bounded window, and checks are spaced out, so the cost per
//! streamed byte is constant. It must not decide what happens next.

use memchr::memmem;

/// How much of the reply's tail is kept for checks.
const WINDOW: usize = 4096;
/// The repeated span must be at least this long…
const MIN_SPAN: usize = 800;
/// …and hold at least this many copies of the unit.
const MIN_COPIES: usize = 4;
/// The longest unit considered.
const MAX_UNIT: usize = MIN_SPAN;
/// Length of the tail snippet whose earlier occurrences propose unit lengths.
const PROBE: usize = 24;
/// Check again after this many new bytes.
const CHECK_EVERY: usize = 256;

/// A small model's loops are caught sooner (`RepetitionGuard::strict`): a short unit repeated
/// this many times…
const STRICT_COPIES: usize = 6;
/// …over at least this many bytes is a loop (`The answer is 5.` seven times), checked this
/// often.
const STRICT_SPAN: usize = 120;
const STRICT_CHECK_EVERY: usize = 32;

/// Watches a growing reply.
#[derive(Debug, Default, Clone)]
pub struct RepetitionGuard {
    tail: Vec<u8>,
    since_check: usize,
    strict: bool,
}

/// A detected loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repetition {
    /// Length in bytes of the repeated unit.
    pub unit_len: usize,
    /// Bytes of the tail covered by the repetition.
    pub span: usize,
}

impl RepetitionGuard {
    /// A guard that also calls a short unit repeated a few lines long a loop. For a small
    /// model, whose loops start at once and whose one-line tasks never need seven identical
    /// lines in a row; a capable model's table of zeros must not be cut, so it is not the
    /// default.
    pub fn strict() -> Self {
        Self {
            strict: true,
            ..Self::default()
        }
    }

    /// Adds answer text; returns the repetition once the tail has become a loop.
    pub fn push(&mut self, text: &str) -> Option<Repetition> {
        self.tail.extend_from_slice(text.as_bytes());
        if self.tail.len() > 2 * WINDOW {
            self.tail.drain(..self.tail.len() - WINDOW);
        }
        self.since_check += text.len();
        let every = if self.strict {
            STRICT_CHECK_EVERY
        } else {
            CHECK_EVERY
        };
        if self.since_check < every {
            return None;
        }
        self.since_check = 0;
        let window = &self.tail[self.tail.len().saturating_sub(WINDOW)..];
        let found = periodic_suffix(window, MIN_SPAN, MIN_COPIES);
        if self.strict {
            found.or_else(|| periodic_suffix(window, STRICT_SPAN, STRICT_COPIES))
        } else {
            found
        }
    }
}

/// The shortest unit whose repetition forms a long enough suffix of `text`.
///
/// Candidate unit lengths are the distances back to earlier occurrences of the last few bytes
/// (found with a SIMD substring search); each candidate is verified by walking backwards while
/// `text[i] == text[i + unit]`. Ordinary prose rarely repeats a 24-byte snippet, so a check costs
/// about one fast scan of the window.
fn periodic_suffix(text: &[u8], min_span: usize, min_copies: usize) -> Option<Repetition> {
    if text.len() < min_span.max(PROBE + 1) {
        return None;
    }
    let probe = &text[text.len() - PROBE..];
    let search_from = text.len().saturating_sub(PROBE + MAX_UNIT);
    let haystack = &text[search_from..text.len() - 1];
    for found in memmem::rfind_iter(haystack, probe) {
        let unit = text.len() - PROBE - (search_from + found);
        if unit == 0 {
            continue;
        }
        // Length of the suffix that has period `unit`.
        let mut start = text.len() - unit;
        while start > 0 && text[start - 1] == text[start - 1 + unit] {
            start -= 1;
        }
        let span = text.len() - start;
        if span >= min_span && span >= min_copies * unit {
            return Some(Repetition {
                unit_len: unit,
                span,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(guard: &mut RepetitionGuard, text: &str, piece: usize) -> Option<Repetition> {
        let bytes = text.as_bytes();
        bytes
            .chunks(piece)
            .find_map(|c| guard.push(std::str::from_utf8(c).unwrap_or("")))
    }

    #[test]
    fn a_looping_reply_is_caught() {
        let mut guard = RepetitionGuard::default();
        let intro = "Let me write the code.\n";
        let unit = "I will now print the result of the calculation again.\n";
        let found =
            feed(&mut guard, &format!("{intro}{}", unit.repeat(40)), 7).expect("loop caught");
        assert_eq!(found.unit_len, unit.len());
        assert!(found.span >= MIN_SPAN);
    }

    #[test]
    fn short_units_repeated_long_are_caught() {
        let mut guard = RepetitionGuard::default();
        let found = feed(&mut guard, &"ha ".repeat(1000), 10).expect("loop caught");
        assert_eq!(found.unit_len, 3);
    }

    #[test]
    fn ordinary_replies_pass() {
        let mut guard = RepetitionGuard::default();
        let text: String = (0..400)
            .map(|i| format!("line {i}: value is {}\n", i * 7919 % 104_729))
            .collect();
        assert_eq!(feed(&mut guard, &text, 13), None);
        let unit: String =
            (0..20).map(|i| format!("row {i}\n")).collect::<String>() + &"x".repeat(300);
        let three = unit.repeat(3);
        assert!(three.len() >= MIN_SPAN);
        assert_eq!(
            RepetitionGuard::default().push(&three),
            None,
            "three copies are not a loop"
        );
    }

    #[test]
    fn a_strict_guard_catches_a_short_unit_after_a_few_lines() {
        let unit = "The answer is 5.\n\n";
        let text = format!("```bash\nmv old.txt new.txt\n```\n{}", unit.repeat(12));
        assert_eq!(feed(&mut RepetitionGuard::default(), &text, 5), None, "lax");
        let found = feed(&mut RepetitionGuard::strict(), &text, 5).expect("strict");
        assert_eq!(found.unit_len, unit.len());
        let comments = feed(&mut RepetitionGuard::strict(), &"# \n".repeat(60), 3);
        assert_eq!(comments.map(|r| r.unit_len), Some(3));
    }

    #[test]
    fn a_strict_guard_still_passes_ordinary_code() {
        let code: String = (1..=40).map(|i| format!("print({i} * {i})\n")).collect();
        let five_rows = "0, 0, 0, 0\n".repeat(5);
        for text in [code, five_rows, format!("Title\n{}\n", "=".repeat(100))] {
            assert_eq!(
                feed(&mut RepetitionGuard::strict(), &text, 4),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn a_strict_guard_keeps_the_lax_rule_for_long_units() {
        let unit: String = (0..6)
            .map(|i| format!("step {i} of the long plan here\n"))
            .collect();
        assert!(unit.len() > STRICT_SPAN);
        let found = feed(&mut RepetitionGuard::strict(), &unit.repeat(6), 9).expect("caught");
        assert_eq!(found.unit_len, unit.len());
    }

    #[test]
    fn a_short_run_of_one_character_is_not_a_loop() {
        let mut guard = RepetitionGuard::default();
        assert_eq!(
            feed(
                &mut guard,
                &format!("Title\n{}\nText\n", "=".repeat(120)),
                64
            ),
            None
        );
    }
}
