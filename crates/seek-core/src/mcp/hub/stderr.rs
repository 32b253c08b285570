//! A stdio server's stderr: read line by line into seek's log (bounded), with the last lines
//! kept to explain a failure.
//!
//! Owns the bounds (line length, lines logged) and the tail. It must not decide a server's state:
//! the hub reads the tail when it has to say why a server failed or exited.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::watch;

/// Longer lines are cut (the rest of the line is read and dropped).
const MAX_LINE_BYTES: usize = 2048;
/// Lines written to the log per server; the rest is read and dropped, so a chatty server can
/// neither fill the disk nor block on a full pipe.
const MAX_LOGGED_LINES: usize = 1000;
/// Lines kept to explain an exit.
const TAIL_LINES: usize = 5;

/// The last lines a server wrote to stderr, and whether it has closed it.
#[derive(Debug, Clone)]
pub(super) struct Tail {
    lines: Arc<Mutex<VecDeque<String>>>,
    closed: watch::Receiver<bool>,
}

impl Tail {
    /// The last non-empty line, made safe to show and shortened.
    pub fn last_line(&self) -> Option<String> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .rev()
            .find(|line| !line.trim().is_empty())
            .map(|line| {
                let safe = crate::terminal_safe::terminal_safe(line.trim()).replace('\n', " ");
                shorten(&safe, 300)
            })
    }

    /// Waits until stderr is closed (the server and its children are gone), at most `within`.
    pub(crate) async fn wait_closed(&self, within: std::time::Duration) {
        let mut closed = self.closed.clone();
        let _ = tokio::time::timeout(within, closed.wait_for(|closed| *closed)).await;
    }
}

/// Starts reading `stderr` in the background; lines go to the log as `mcp[NAME] …`.
pub(super) fn drain(server: &str, stderr: impl AsyncRead + Unpin + Send + 'static) -> Tail {
    let lines = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
    let (closed_tx, closed) = watch::channel(false);
    let tail = Tail {
        lines: Arc::clone(&lines),
        closed,
    };
    let prefix = format!("mcp[{server}]");
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr);
        let mut logged = 0usize;
        let mut line = Vec::new();
        while read_bounded_line(&mut reader, &mut line).await {
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if logged < MAX_LOGGED_LINES {
                tracing::info!("{prefix} {text}");
            } else if logged == MAX_LOGGED_LINES {
                tracing::info!("{prefix} (further stderr not logged)");
            }
            logged = logged.saturating_add(1);
            let mut kept = lines.lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() == TAIL_LINES {
                kept.pop_front();
            }
            kept.push_back(text.to_owned());
        }
        closed_tx.send_replace(true);
    });
    tail
}

/// Reads one line into `line` (at most `MAX_LINE_BYTES` kept), `false` at the end of the stream.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> bool {
    line.clear();
    let mut read_any = false;
    loop {
        let (consumed, done) = {
            let available = match reader.fill_buf().await {
                Ok(available) => available,
                Err(_) => return read_any,
            };
            if available.is_empty() {
                return read_any;
            }
            read_any = true;
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let room = MAX_LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&available[..take.min(room)]);
            (take, newline.is_some())
        };
        reader.consume(consumed);
        if done {
            return true;
        }
    }
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(super) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_cut_and_the_tail_keeps_the_last_lines() {
        let mut input = Vec::new();
        input.extend_from_slice(&vec![b'x'; MAX_LINE_BYTES * 3]);
        input.push(b'\n');
        for n in 0..10 {
            input.extend_from_slice(format!("line {n}\n").as_bytes());
        }
        input.extend_from_slice(b"\x1b[31mlast\x1b[0m\n\n");
        let tail = drain("t", std::io::Cursor::new(input));
        tail.wait_closed(std::time::Duration::from_secs(5)).await;
        assert!(*tail.closed.borrow());
        let kept = tail.lines.lock().unwrap().clone();
        assert_eq!(kept.len(), TAIL_LINES);
        assert!(kept.iter().all(|line| line.len() <= MAX_LINE_BYTES));
        assert_eq!(tail.last_line().as_deref(), Some("last"));
    }

    #[tokio::test]
    async fn a_line_without_newline_at_the_end_counts() {
        let tail = drain("t", std::io::Cursor::new(b"fatal: no config".to_vec()));
        tail.wait_closed(std::time::Duration::from_secs(5)).await;
        assert_eq!(tail.last_line().as_deref(), Some("fatal: no config"));
    }

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("hé", 2), "hé");
    }
}
