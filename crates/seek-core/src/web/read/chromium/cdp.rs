//! The DevTools protocol over the pipe Chromium is started with (`--remote-debugging-pipe`):
//! JSON messages ended by a NUL byte, commands written to the browser's fd 3 and answers and
//! events read from its fd 4. There is no listening socket at all, so no other process on the
//! machine can reach the browser's control channel.
//!
//! Owns the framing, matching answers to commands by id, and fanning events out to whoever
//! listens. It must not know what a page is (the reader and `dom.rs` do) nor start processes
//! (`launch.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, oneshot};

/// One message larger than this ends the connection: a page's markup is cut in the page before
/// it is sent (`max_page_bytes`), and a screenshot of a 1280×1024 window is a few MiB.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// How many events may wait for a slow listener before the oldest are dropped (listeners only
/// count requests and wait for loads; a lagging one resynchronises by asking the page).
const EVENT_BACKLOG: usize = 4096;

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CdpError {
    /// The browser answered with an error.
    #[error("{method}: {message}")]
    Command { method: String, message: String },
    /// The pipe closed: the browser exited or was killed.
    #[error("the browser closed its control pipe (it exited or crashed)")]
    Closed,
}

/// An event the browser sent: `Network.requestWillBeSent`, `Page.loadEventFired`, ….
#[derive(Debug, Clone)]
pub(crate) struct CdpEvent {
    pub method: String,
    /// The target session it belongs to (`None`: the browser itself).
    pub session: Option<String>,
    pub params: Value,
}

type Pending = HashMap<u64, oneshot::Sender<Result<Value, CdpError>>>;

/// The connection. Cloning shares it.
#[derive(Clone)]
pub(crate) struct Cdp {
    inner: Arc<Inner>,
}

struct Inner {
    writer: tokio::sync::Mutex<pipe::Sender>,
    pending: Mutex<Option<Pending>>,
    next_id: AtomicU64,
    events: broadcast::Sender<CdpEvent>,
}

impl Inner {
    /// The waiting commands; `None` once the pipe closed. A poisoned lock (a panic elsewhere while
    /// holding it) still guards a map that is whole: each operation on it is one call.
    fn pending(&self) -> MutexGuard<'_, Option<Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Cdp {
    /// Speaks over `to_browser` (the browser's fd 3) and `from_browser` (its fd 4); a task reads
    /// answers and events until the pipe closes.
    pub fn new(to_browser: pipe::Sender, from_browser: pipe::Receiver) -> Self {
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let inner = Arc::new(Inner {
            writer: tokio::sync::Mutex::new(to_browser),
            pending: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(1),
            events,
        });
        tokio::spawn(read_loop(Arc::clone(&inner), from_browser));
        Self { inner }
    }

    /// Events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<CdpEvent> {
        self.inner.events.subscribe()
    }

    /// Sends `method` with `params` to the browser (`session: None`) or a page's session, and
    /// waits for the answer. Unbounded: callers bound it with their own timeout.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_owned());
        }
        let (tx, rx) = oneshot::channel();
        match self.inner.pending().as_mut() {
            Some(pending) => pending.insert(id, tx),
            None => return Err(CdpError::Closed),
        };
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        let written = {
            let mut writer = self.inner.writer.lock().await;
            writer.write_all(&bytes).await
        };
        if written.is_err() {
            if let Some(pending) = self.inner.pending().as_mut() {
                pending.remove(&id);
            }
            return Err(CdpError::Closed);
        }
        match rx.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(CdpError::Command { message, .. })) => Err(CdpError::Command {
                method: method.to_owned(),
                message,
            }),
            Ok(Err(other)) => Err(other),
            Err(_) => Err(CdpError::Closed),
        }
    }
}

async fn read_loop(inner: Arc<Inner>, mut from_browser: pipe::Receiver) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    'reading: loop {
        let read = match from_browser.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let searched_from = buffer.len();
        buffer.extend_from_slice(&chunk[..read]);
        let mut start = 0;
        let mut scan = searched_from;
        while let Some(offset) = memchr::memchr(0, &buffer[scan..]) {
            let end = scan + offset;
            dispatch(&inner, &buffer[start..end]);
            start = end + 1;
            scan = start;
        }
        buffer.drain(..start);
        if buffer.len() > MAX_MESSAGE {
            break 'reading;
        }
    }
    // Every command still waiting learns that no answer will come.
    let waiting = inner.pending().take();
    for (_, tx) in waiting.into_iter().flatten() {
        let _ = tx.send(Err(CdpError::Closed));
    }
}

fn dispatch(inner: &Inner, message: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(message) else {
        // One unreadable message is dropped; its command (if any) times out at its caller.
        return;
    };
    if let Some(id) = value.get("id").and_then(Value::as_u64) {
        let Some(tx) = inner.pending().as_mut().and_then(|p| p.remove(&id)) else {
            return;
        };
        let answer = match value.get("error") {
            Some(error) => Err(CdpError::Command {
                method: String::new(),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned(),
            }),
            None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(answer);
        return;
    }
    let Some(method) = value.get("method").and_then(Value::as_str) else {
        return;
    };
    let event = CdpEvent {
        method: method.to_owned(),
        session: value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        params: value.get("params").cloned().unwrap_or(Value::Null),
    };
    // No listener is not an error: events nobody waits for are dropped.
    let _ = inner.events.send(event);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake browser on the other end of two pipes: answers `Echo` with its params, fails
    /// `Fail`, and sends an event before each answer.
    fn fake_browser() -> Cdp {
        let (to_browser, mut browser_reads) = pipe::pipe().expect("a pipe");
        let (mut browser_writes, from_browser) = pipe::pipe().expect("a pipe");
        tokio::spawn(async move {
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 1024];
            loop {
                let Ok(n) = browser_reads.read(&mut chunk).await else {
                    return;
                };
                if n == 0 {
                    return;
                }
                buffer.extend_from_slice(&chunk[..n]);
                while let Some(end) = buffer.iter().position(|b| *b == 0) {
                    let message: Value = serde_json::from_slice(&buffer[..end]).expect("json");
                    buffer.drain(..=end);
                    let id = message["id"].clone();
                    let event = json!({"method": "Test.event", "params": {"id": id}});
                    let answer = if message["method"] == "Fail" {
                        json!({"id": id, "error": {"code": -1, "message": "no such thing"}})
                    } else {
                        json!({"id": id, "result": message["params"]})
                    };
                    // Garbage between messages is skipped.
                    let mut out = b"{not json\0".to_vec();
                    out.extend_from_slice(event.to_string().as_bytes());
                    out.push(0);
                    out.extend_from_slice(answer.to_string().as_bytes());
                    out.push(0);
                    browser_writes.write_all(&out).await.expect("write");
                }
            }
        });
        Cdp::new(to_browser, from_browser)
    }

    #[tokio::test]
    async fn answers_are_matched_to_their_commands_and_events_fan_out() {
        let cdp = fake_browser();
        let mut events = cdp.subscribe();
        let (a, b) = tokio::join!(
            cdp.call(None, "Echo", json!({"n": 1})),
            cdp.call(Some("s1"), "Echo", json!({"n": 2}))
        );
        assert_eq!(a, Ok(json!({"n": 1})));
        assert_eq!(b, Ok(json!({"n": 2})));
        let event = events.recv().await.expect("an event");
        assert_eq!(event.method, "Test.event");
        let failed = cdp.call(None, "Fail", json!({})).await;
        assert_eq!(
            failed,
            Err(CdpError::Command {
                method: "Fail".into(),
                message: "no such thing".into()
            })
        );
    }

    #[tokio::test]
    async fn a_closed_pipe_fails_waiting_and_later_commands() {
        let (to_browser, browser_reads) = pipe::pipe().expect("a pipe");
        let (browser_writes, from_browser) = pipe::pipe().expect("a pipe");
        let cdp = Cdp::new(to_browser, from_browser);
        let waiting = tokio::spawn({
            let cdp = cdp.clone();
            async move { cdp.call(None, "Echo", json!({})).await }
        });
        // The browser reads the command, then dies.
        let mut reads = browser_reads;
        let mut chunk = [0u8; 256];
        let _ = reads.read(&mut chunk).await;
        drop(browser_writes);
        drop(reads);
        assert_eq!(waiting.await.expect("joined"), Err(CdpError::Closed));
        assert_eq!(
            cdp.call(None, "Echo", json!({})).await,
            Err(CdpError::Closed)
        );
    }
}
