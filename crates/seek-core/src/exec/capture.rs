//! Bounded output capture and streaming UTF-8 decoding.
//!
//! Owns the head-and-tail buffer that keeps memory bounded however much a block prints, the
//! decoder that turns byte chunks into text without splitting a character, and a running block's
//! output as the runner reads it (`Output`: kept, decoded, passed on, seek's own notes added). It
//! must not read from processes; the runner feeds it.

use std::collections::VecDeque;
use std::time::Duration;

use super::{Ending, RunResult};

/// Keeps the first and last bytes of a stream, `limit` bytes in all, and counts the rest.
#[derive(Debug, Clone)]
pub(crate) struct HeadTail {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    seen: u64,
}

impl HeadTail {
    pub fn new(limit: usize) -> Self {
        let head_limit = limit / 2;
        Self {
            head_limit,
            tail_limit: limit - head_limit,
            head: Vec::with_capacity(head_limit.min(64 * 1024)),
            tail: VecDeque::new(),
            seen: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.seen += bytes.len() as u64;
        let room = self.head_limit - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_limit {
            self.tail.clear();
            self.tail
                .extend(bytes[bytes.len() - self.tail_limit..].iter().copied());
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
        self.tail.drain(..overflow);
        self.tail.extend(bytes.iter().copied());
    }

    /// Bytes pushed in all.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Whether the last byte kept is a line end (false when nothing was pushed).
    pub(crate) fn ends_with_newline(&self) -> bool {
        self.tail.back().or(self.head.last()) == Some(&b'\n')
    }

    /// Bytes dropped from the middle.
    pub fn omitted(&self) -> u64 {
        self.seen - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text, decoded lossily, with a line saying how much was omitted between head and
    /// tail. Cut points are moved to line starts where one is near, so lines stay whole.
    pub fn render(&self) -> String {
        let omitted = self.omitted();
        if omitted == 0 {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = cut_after_last_newline(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = cut_before_first_newline(&tail);
        let dropped =
            omitted + (self.head.len() - head.len()) as u64 + (self.tail.len() - tail.len()) as u64;
        let mut out = String::from_utf8_lossy(head).into_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[… {dropped} bytes of output omitted …]\n"));
        out.push_str(&String::from_utf8_lossy(tail));
        out
    }
}

/// Drops a partial last line if a newline is within the last 256 bytes.
fn cut_after_last_newline(bytes: &[u8]) -> &[u8] {
    let window = bytes.len().saturating_sub(256);
    match bytes[window..].iter().rposition(|&b| b == b'\n') {
        Some(i) => &bytes[..window + i + 1],
        None => bytes,
    }
}

/// Drops a partial first line if a newline is within the first 256 bytes.
fn cut_before_first_newline(bytes: &[u8]) -> &[u8] {
    let window = bytes.len().min(256);
    match bytes[..window].iter().position(|&b| b == b'\n') {
        Some(i) => &bytes[i + 1..],
        None => bytes,
    }
}

/// Decodes a byte stream into text chunk by chunk, holding back an incomplete character at a
/// chunk's end; invalid bytes become U+FFFD.
#[derive(Debug, Default, Clone)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let keep = incomplete_suffix(&self.pending);
        let complete = self.pending.len() - keep;
        let text = String::from_utf8_lossy(&self.pending[..complete]).into_owned();
        self.pending.drain(..complete);
        text
    }

    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// Length of a trailing, possibly incomplete UTF-8 sequence (0 if the end is complete).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte: look further back for the lead byte
        }
        let needed = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// The block's output as it arrives: kept head-and-tail, decoded, and passed to the caller.
pub(super) struct Output<F> {
    capture: HeadTail,
    decoder: Utf8Stream,
    on_output: F,
    pub(super) pipe_open: bool,
}

impl<F: FnMut(&str)> Output<F> {
    pub(super) fn new(limit: usize, on_output: F) -> Self {
        Self {
            capture: HeadTail::new(limit),
            decoder: Utf8Stream::default(),
            on_output,
            pipe_open: true,
        }
    }

    /// Takes one read's result: bytes are output, 0 is the end of the output, and an error is
    /// reported in the output (and the log) before the pipe is given up: the block's output
    /// after it is lost, and the model and the user must not take the cut for the block's end.
    pub(super) fn take_read(&mut self, read: std::io::Result<usize>, buf: &[u8]) {
        match read {
            Ok(0) => self.pipe_open = false,
            Ok(n) => self.push(&buf[..n]),
            Err(e) => {
                self.pipe_open = false;
                self.flush();
                self.note(&format!(
                    "reading the block's output failed ({e}); what it printed after this is lost"
                ));
            }
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.capture.push(bytes);
        (self.on_output)(&self.decoder.decode(bytes));
    }

    /// Passes on a character the decoder held back waiting for the rest of it.
    pub(super) fn flush(&mut self) {
        let rest = self.decoder.finish();
        if !rest.is_empty() {
            (self.on_output)(&rest);
        }
    }

    /// Adds seek's own line to the output, on a line of its own, and logs it.
    pub(super) fn note(&mut self, message: &str) {
        tracing::warn!("exec: {message}");
        let mut line = String::new();
        if self.capture.seen() > 0 && !self.capture.ends_with_newline() {
            line.push('\n');
        }
        line.push_str(&format!("[seek: {message}]\n"));
        self.capture.push(line.as_bytes());
        (self.on_output)(&line);
    }

    pub(super) fn into_result(self, ending: Ending, duration: Duration) -> RunResult {
        RunResult {
            ending,
            duration,
            output: self.capture.render(),
            bytes_seen: self.capture.seen(),
            truncated: self.capture.omitted() > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = HeadTail::new(100);
        c.push(b"hello\n");
        c.push(b"world\n");
        assert_eq!(c.render(), "hello\nworld\n");
        assert_eq!((c.seen(), c.omitted()), (12, 0));
    }

    #[test]
    fn large_output_keeps_head_and_tail() {
        let mut c = HeadTail::new(1000);
        for i in 0..10_000 {
            c.push(format!("line {i}\n").as_bytes());
        }
        let text = c.render();
        assert!(text.starts_with("line 0\nline 1\n"), "{text}");
        assert!(text.ends_with("line 9999\n"), "{text}");
        assert!(text.contains("bytes of output omitted"), "{text}");
        assert!(text.len() < 1100);
        assert!(
            text.lines()
                .all(|l| l.starts_with("line ") || l.starts_with("[…")),
            "whole lines: {text}"
        );
    }

    #[test]
    fn a_single_huge_chunk_is_bounded() {
        let mut c = HeadTail::new(64);
        c.push(&vec![b'x'; 1 << 20]);
        assert_eq!(c.seen(), 1 << 20);
        assert_eq!(c.omitted(), (1 << 20) - 64);
    }

    #[test]
    fn the_last_kept_byte_says_whether_a_line_ended() {
        let mut c = HeadTail::new(8);
        assert!(!c.ends_with_newline());
        c.push(b"ab\n");
        assert!(c.ends_with_newline(), "a line end in the head");
        c.push(b"cd");
        assert!(!c.ends_with_newline());
        c.push(b"efghij\n");
        assert!(c.ends_with_newline(), "a line end in the tail");
    }

    #[test]
    fn utf8_is_never_split() {
        let text = "héllo wörld → ✓ 🚀";
        let mut stream = Utf8Stream::default();
        let mut out = String::new();
        for b in text.as_bytes() {
            out.push_str(&stream.decode(std::slice::from_ref(b)));
        }
        out.push_str(&stream.finish());
        assert_eq!(out, text);
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut stream = Utf8Stream::default();
        let out = stream.decode(&[b'a', 0xff, b'b', 0xfe]) + &stream.finish();
        assert_eq!(out, "a\u{fffd}b\u{fffd}");
    }

    fn collecting(seen: &mut String) -> Output<impl FnMut(&str) + '_> {
        Output::new(1024, move |text: &str| seen.push_str(text))
    }

    #[test]
    fn a_read_error_is_reported_not_taken_for_the_end_of_output() {
        let mut seen = String::new();
        let mut output = collecting(&mut seen);
        output.take_read(Ok(5), b"hello");
        output.take_read(Err(std::io::Error::other("bad pipe")), &[]);
        assert!(!output.pipe_open, "the pipe is given up after an error");
        let result = output.into_result(Ending::Exited { code: 0 }, Duration::ZERO);
        assert!(
            result
                .output
                .starts_with("hello\n[seek: reading the block's output failed (bad pipe)"),
            "{}",
            result.output
        );
        assert!(
            seen.ends_with("what it printed after this is lost]\n"),
            "{seen}"
        );
    }

    #[test]
    fn a_zero_read_ends_the_output_quietly() {
        let mut seen = String::new();
        let mut output = collecting(&mut seen);
        output.take_read(Ok(3), b"ok\n");
        output.take_read(Ok(0), &[]);
        assert!(!output.pipe_open);
        let result = output.into_result(Ending::Exited { code: 0 }, Duration::ZERO);
        assert_eq!(result.output, "ok\n");
        assert_eq!(seen, "ok\n");
    }

    #[test]
    fn a_character_split_by_a_read_error_is_still_passed_on() {
        let mut seen = String::new();
        let mut output = collecting(&mut seen);
        let check = "✓".as_bytes();
        output.take_read(Ok(2), &check[..2]);
        output.take_read(Err(std::io::Error::other("gone")), &[]);
        drop(output);
        assert!(seen.starts_with('\u{fffd}'), "{seen}");
    }
}
