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

/// Watches a growing reply.
#[derive(Debug, Default, Clone)]
pub struct RepetitionGuard {
    tail: Vec<u8>,
    since_check: usize,
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
    /// Adds answer text; returns the repetition once the tail has become a loop.
    pub fn push(&mut self, text: &str) -> Option<Repetition> {
        self.tail.extend_from_slice(text.as_bytes());
        if self.tail.len() > 2 * WINDOW {
            self.tail.drain(..self.tail.len() - WINDOW);
        }
        self.since_check += text.len();
        if self.since_check < CHECK_EVERY {
            return None;
        }
        self.since_check = 0;
        let window = &self.tail[self.tail.len().saturating_sub(WINDOW)..];
        periodic_suffix(window)
    }
}

/// The shortest unit whose repetition forms a long enough suffix of `text`.
///
/// Candidate unit lengths are the distances back to earlier occurrences of the last few bytes
/// (found with a SIMD substring search); each candidate is verified by walking backwards while
/// `text[i] == text[i + unit]`. Ordinary prose rarely repeats a 24-byte snippet, so a check costs
/// about one fast scan of the window.
fn periodic_suffix(text: &[u8]) -> Option<Repetition> {
    if text.len() < MIN_SPAN {
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
        if span >= MIN_SPAN && span >= MIN_COPIES * unit {
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
