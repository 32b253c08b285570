//! What one streamed reply may cost the client, whatever the server sends: how long a line it
//! reads, how far past `max_tokens` it follows a reply, and how much of a non-streamed body it
//! keeps.
//!
//! Owns those limits and the meter that enforces the token bound. Pure: no I/O and no timers (the
//! client holds the deadlines). It must not decide what becomes of a stopped reply.

/// How far past `max_tokens` a reply may run before it is stopped, in per cent of `max_tokens`…
/// Servers count tokens their own way (a template's end token, a last piece sent after the
/// limit), so an honest server may overshoot a little; a server that ignores the limit does not
/// stop at all.
pub(crate) const TOKEN_MARGIN_PERCENT: u64 = 25;
/// …and at least this many tokens, for small `max_tokens`.
pub(crate) const MIN_TOKEN_MARGIN: u64 = 256;
/// The most bytes a token may average before a reply counts as past `max_tokens` by its size.
/// Real tokenizers average three to five bytes per token over a reply (code with deep indentation
/// a little more, CJK text less); the bound catches servers that send many tokens per streamed
/// piece, which the piece count alone would not, and it is what bounds a reply's size: at most
/// `(max_tokens + margin) × 8` bytes, 40 KiB at the default `max_tokens`.
pub(crate) const MAX_BYTES_PER_TOKEN: u64 = 8;
/// The most bytes of an error body (or a model list, or a server's properties) read into memory.
pub(crate) const MAX_BODY_BYTES: usize = 4 << 20;

/// Counts a reply's streamed text against `max_tokens`.
#[derive(Debug, Clone)]
pub(crate) struct TokenMeter {
    max_tokens: u64,
    allowed: u64,
    pieces: u64,
    bytes: u64,
}

/// A reply that went past `max_tokens` and its margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overrun {
    pub max_tokens: u64,
    /// Pieces of text received (each at least one token on every server seek knows).
    pub pieces: u64,
    pub bytes: u64,
}

impl Overrun {
    /// What was received, in words.
    pub fn describe(&self) -> String {
        format!("{} pieces of text, {}", self.pieces, size(self.bytes))
    }
}

/// A byte count in words: `4 MiB`, `80 KiB`, `100 bytes` (rounded up).
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{} KiB", bytes.div_ceil(1 << 10))
    } else {
        format!("{bytes} bytes")
    }
}

impl TokenMeter {
    pub fn new(max_tokens: u64) -> Self {
        let margin = (max_tokens.saturating_mul(TOKEN_MARGIN_PERCENT) / 100).max(MIN_TOKEN_MARGIN);
        Self {
            max_tokens,
            allowed: max_tokens.saturating_add(margin),
            pieces: 0,
            bytes: 0,
        }
    }

    /// Counts one streamed piece of answer or reasoning (servers count both against the limit);
    /// `Err` once the reply is past `max_tokens` and its margin, by pieces or by bytes.
    pub fn count(&mut self, text: &str) -> Result<(), Overrun> {
        self.pieces += 1;
        self.bytes = self.bytes.saturating_add(text.len() as u64);
        let too_many_pieces = self.pieces > self.allowed;
        let too_many_bytes = self.bytes > self.allowed.saturating_mul(MAX_BYTES_PER_TOKEN);
        if too_many_pieces || too_many_bytes {
            Err(Overrun {
                max_tokens: self.max_tokens,
                pieces: self.pieces,
                bytes: self.bytes,
            })
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_honest_reply_of_max_tokens_passes() {
        let mut meter = TokenMeter::new(4096);
        // One token per piece, a long-ish average of six bytes.
        for _ in 0..4096 {
            assert!(meter.count("token ").is_ok());
        }
        // A server's own overshoot (an end token, a last piece) is within the margin.
        for _ in 0..16 {
            assert!(meter.count("x").is_ok());
        }
    }

    #[test]
    fn endless_pieces_stop_past_the_margin() {
        let mut meter = TokenMeter::new(4096);
        let allowed = 4096 + 4096 / 4;
        for i in 0..allowed {
            assert!(meter.count("t").is_ok(), "piece {i}");
        }
        let overrun = meter.count("t").expect_err("one piece too many");
        assert_eq!(overrun.pieces, allowed + 1);
        assert_eq!(overrun.max_tokens, 4096);
    }

    #[test]
    fn big_pieces_stop_by_their_size() {
        let mut meter = TokenMeter::new(100);
        let piece = "y".repeat(1024);
        let mut sent = 0;
        while meter.count(&piece).is_ok() {
            sent += piece.len() as u64;
        }
        assert!(sent <= (100 + MIN_TOKEN_MARGIN) * MAX_BYTES_PER_TOKEN);
        assert!(sent + 1024 > (100 + MIN_TOKEN_MARGIN) * MAX_BYTES_PER_TOKEN);
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size(4 << 20), "4 MiB");
        assert_eq!(size((4 << 20) + 1), "4097 KiB");
        assert_eq!(size(1500), "2 KiB");
        assert_eq!(size(100), "100 bytes");
    }

    #[test]
    fn huge_limits_do_not_overflow() {
        let mut meter = TokenMeter::new(u64::MAX);
        assert!(meter.count("fine").is_ok());
    }
}
