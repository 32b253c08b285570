//! A stdio server's stdout on its way to rmcp's transport: every message (one line) is bounded,
//! and lines that are not JSON-RPC are noticed, so a failure can say why.
//!
//! rmcp drops an oversized line and keeps the connection, so a call whose answer is too large
//! would only time out; here the stream ends instead (the hub then reports the server as gone,
//! naming the bound). It must not parse messages: rmcp does.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The largest message seek reads from a server (rmcp's own default line bound, and the bound
/// its HTTP transport puts on one event or response).
pub(super) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How much of the first line that is not JSON-RPC is kept to quote.
const QUOTE_BYTES: usize = 120;

/// What was seen on stdout that the protocol cannot use.
#[derive(Debug, Default)]
pub(super) struct Notes {
    /// A message exceeded `MAX_MESSAGE_BYTES`: the stream was ended.
    pub oversized: bool,
    /// Lines that do not start like a JSON-RPC message.
    pub stray_lines: usize,
    /// The first of those lines, cut.
    pub first_stray: Option<String>,
}

impl Notes {
    /// What to add to a failure message, if anything.
    pub fn explain(&self) -> Option<String> {
        if self.oversized {
            return Some(format!(
                "it sent a message larger than {} MiB",
                MAX_MESSAGE_BYTES / (1024 * 1024)
            ));
        }
        let first = self.first_stray.as_ref()?;
        let quoted = crate::terminal_safe::terminal_safe(first).replace('\n', " ");
        Some(format!(
            "it wrote {} line(s) that are not JSON-RPC on stdout, the first: \"{}\" (an MCP server \
             must log to stderr)",
            self.stray_lines,
            quoted.trim()
        ))
    }
}

/// `inner`, ending with an error once a line grows past `MAX_MESSAGE_BYTES`.
pub(super) struct Bounded<R> {
    inner: R,
    /// Bytes of the current line so far.
    line_len: usize,
    /// The start of the current line (up to `QUOTE_BYTES`), while it may be quoted.
    line_start: Vec<u8>,
    notes: Arc<Mutex<Notes>>,
    failed: bool,
}

impl<R> Bounded<R> {
    pub fn new(inner: R) -> (Self, Arc<Mutex<Notes>>) {
        let notes = Arc::new(Mutex::new(Notes::default()));
        let bounded = Self {
            inner,
            line_len: 0,
            line_start: Vec::new(),
            notes: Arc::clone(&notes),
            failed: false,
        };
        (bounded, notes)
    }

    /// Accounts for `bytes` just read; `false` when the line has grown too large.
    fn observe(&mut self, bytes: &[u8]) -> bool {
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = rest.iter().position(|b| *b == b'\n');
            let piece = &rest[..newline.unwrap_or(rest.len())];
            self.line_len = self.line_len.saturating_add(piece.len());
            if self.line_len > MAX_MESSAGE_BYTES {
                return false;
            }
            let room = QUOTE_BYTES.saturating_sub(self.line_start.len());
            self.line_start
                .extend_from_slice(&piece[..piece.len().min(room)]);
            match newline {
                Some(at) => {
                    self.end_line();
                    rest = &rest[at + 1..];
                }
                None => rest = &[],
            }
        }
        true
    }

    fn end_line(&mut self) {
        let start = String::from_utf8_lossy(&self.line_start);
        let trimmed = start.trim_start_matches(['\u{feff}', ' ', '\t', '\r']);
        let stray = !trimmed.is_empty() && !trimmed.starts_with(['{', '[']);
        if stray {
            let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
            notes.stray_lines = notes.stray_lines.saturating_add(1);
            if notes.first_stray.is_none() {
                notes.first_stray = Some(trimmed.trim_end().to_owned());
            }
        }
        self.line_len = 0;
        self.line_start.clear();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.failed {
            return Poll::Ready(Err(too_large()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let fresh = &buf.filled()[before..];
                if this.observe(fresh) {
                    return Poll::Ready(Ok(()));
                }
                this.failed = true;
                this.notes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .oversized = true;
                // Nothing of the oversized line reaches the transport.
                buf.set_filled(before);
                Poll::Ready(Err(too_large()))
            }
            other => other,
        }
    }
}

fn too_large() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "an MCP message exceeded the size bound",
    )
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn read_all(input: Vec<u8>) -> (std::io::Result<Vec<u8>>, Arc<Mutex<Notes>>) {
        let (mut bounded, notes) = Bounded::new(std::io::Cursor::new(input));
        let mut out = Vec::new();
        let result = bounded.read_to_end(&mut out).await.map(|_| out);
        (result, notes)
    }

    #[tokio::test]
    async fn messages_pass_unchanged_and_stray_lines_are_noted() {
        let input = b"hello from print()\n{\"jsonrpc\":\"2.0\"}\n\n  [1]\nsecond stray\n".to_vec();
        let (out, notes) = read_all(input.clone()).await;
        assert_eq!(out.unwrap(), input);
        let notes = notes.lock().unwrap();
        assert_eq!(notes.stray_lines, 2);
        assert_eq!(notes.first_stray.as_deref(), Some("hello from print()"));
        assert!(notes.explain().unwrap().contains("2 line(s)"));
    }

    #[tokio::test]
    async fn a_line_past_the_bound_ends_the_stream() {
        let mut input = b"{\"ok\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_MESSAGE_BYTES + 10));
        let (out, notes) = read_all(input).await;
        assert_eq!(out.unwrap_err().kind(), std::io::ErrorKind::InvalidData);
        let notes = notes.lock().unwrap();
        assert!(notes.oversized);
        assert!(notes.explain().unwrap().contains("16 MiB"));
    }

    #[tokio::test]
    async fn a_line_at_the_bound_passes() {
        let mut input = vec![b'{'; MAX_MESSAGE_BYTES];
        input.push(b'\n');
        input.extend_from_slice(b"{}\n");
        let (out, notes) = read_all(input.clone()).await;
        assert_eq!(out.unwrap().len(), input.len());
        assert!(!notes.lock().unwrap().oversized);
    }
}
