//! Bounded output capture and streaming UTF-8 decoding.
//!
//! Owns the head-and-tail buffer that keeps memory bounded however much a block prints, and the
//! decoder that turns byte chunks into text without splitting a character. It must not read from
//! processes; the runner feeds it.

use std::collections::VecDeque;

/// Keeps the first and last bytes of a stream, `limit` bytes in all, and counts the rest.
#[derive(Debug, Clone)]
pub struct HeadTail {
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
    pub fn ends_with_newline(&self) -> bool {
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
pub struct Utf8Stream {
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
}
