//! Reading only the ends of a session file, so that listing sessions and choosing the one `-c`
//! continues cost the same for a 1 GB session as for a small one: a bounded head (the header
//! line, the first task's prompt) and a bounded tail (the last record's time, the latest task's
//! number and agent). A window starts small and grows only while what it looks for is not in
//! it, up to a cap; a line longer than the cap is never read whole.
//!
//! Owns those bounds and what is found within them. It must not read past them, nor write.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use super::record::Record;
use crate::wire::AgentName;
use crate::wire::Event;

/// The header must end within this many bytes of the start.
const HEADER_MAX: u64 = 64 * 1024;
/// The first window read at either end.
const FIRST_WINDOW: u64 = 64 * 1024;
/// The largest window read at either end.
const WINDOW_MAX: u64 = 1024 * 1024;
/// How much of a prompt too long for the head window is decoded (a listing shows 60 characters).
const PROMPT_PREFIX: usize = 4 * 1024;

const TURN_STARTED: &[u8] = b"\"type\":\"turn_started\"";
const TURN_FINISHED: &[u8] = b"\"type\":\"turn_finished\"";

/// Why a file in the sessions folder is not a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotASession {
    Empty,
    /// The first line is not a session header (or does not end within 64 KiB).
    NoHeader,
}

impl std::fmt::Display for NotASession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Empty => "empty",
            Self::NoHeader => "its first line is not a session header",
        })
    }
}

/// What the tail says about the latest activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latest {
    /// The time of the last complete record.
    pub at_ms: Option<u64>,
    /// The number and agent of the latest task started or finished. `None` when the tail
    /// windows hold none.
    pub task: Option<(u64, AgentName)>,
    /// Every byte of the file was looked at (a small file), so a missing task means none.
    pub whole_file: bool,
}

/// What a session's header says that a listing needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderInfo {
    pub agent: AgentName,
    /// The work dir; `None` in files older than that field.
    pub work_dir: Option<String>,
}

/// A session file opened for peeking.
pub(crate) struct Peek {
    file: File,
    len: u64,
    read: u64,
}

impl Peek {
    /// Opens a regular file; anything else (a FIFO, a device, a folder) is an error, and
    /// opening never waits (`O_NONBLOCK`: a FIFO would otherwise block until it has a writer).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Self::open_with(path, 0)
    }

    /// As `open`, but a symbolic link is an error instead of being followed (for removing).
    pub(crate) fn open_no_follow(path: &Path) -> std::io::Result<Self> {
        Self::open_with(path, libc::O_NOFOLLOW)
    }

    fn open_with(path: &Path, flags: libc::c_int) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | flags)
            .open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok(Self {
            file,
            len: meta.len(),
            read: 0,
        })
    }

    /// Bytes read so far (bounded by the windows, whatever the file's size).
    #[cfg(test)]
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read
    }

    pub(crate) fn modified_ms(&self) -> u64 {
        self.file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64)
    }

    /// `len` bytes from `start` (fewer if the file is shorter now).
    fn read_at(&mut self, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0; usize::try_from(len).unwrap_or(usize::MAX)];
        let mut filled = 0;
        while filled < buf.len() {
            match self.file.read_at(&mut buf[filled..], start + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf.truncate(filled);
        self.read += filled as u64;
        Ok(buf)
    }

    /// The open file (to lock it).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// What the header says, or why this is not a session.
    pub fn header(&mut self) -> std::io::Result<Result<HeaderInfo, NotASession>> {
        if self.len == 0 {
            return Ok(Err(NotASession::Empty));
        }
        let head = self.read_at(0, self.len.min(HEADER_MAX))?;
        let Some(end) = memchr::memchr(b'\n', &head) else {
            return Ok(Err(NotASession::NoHeader));
        };
        Ok(match serde_json::from_slice::<Record>(&head[..end]) {
            Ok(Record::Header {
                agent, work_dir, ..
            }) => Ok(HeaderInfo {
                agent,
                work_dir: Some(work_dir).filter(|w| !w.is_empty()),
            }),
            _ => Err(NotASession::NoHeader),
        })
    }

    /// The first task's prompt, whole if its line ends within the head windows, else its
    /// beginning.
    pub fn first_prompt(&mut self) -> std::io::Result<Option<String>> {
        let mut window = FIRST_WINDOW;
        loop {
            let whole = window >= self.len;
            let head = self.read_at(0, window.min(self.len))?;
            if let Some(at) = memchr::memmem::find(&head, TURN_STARTED) {
                let start = line_start(&head, at);
                if let Some(end) = memchr::memchr(b'\n', &head[at..]).map(|i| at + i) {
                    return Ok(match serde_json::from_slice::<Record>(&head[start..end]) {
                        Ok(Record::Event {
                            event: Event::TurnStarted { prompt, .. },
                            ..
                        }) => Some(prompt),
                        _ => None,
                    });
                }
                if whole || window >= WINDOW_MAX {
                    return Ok(prompt_prefix(&head[at..]));
                }
            } else if whole || window >= WINDOW_MAX {
                return Ok(None);
            }
            window *= 4;
        }
    }

    /// The last record's time and, if `want_task`, the latest task's number and agent.
    pub fn latest(&mut self, want_task: bool) -> std::io::Result<Latest> {
        let mut found = Latest::default();
        let mut window = FIRST_WINDOW;
        loop {
            let start = self.len.saturating_sub(window);
            let tail = self.read_at(start, self.len - start)?;
            found.whole_file = start == 0;
            scan_tail(&tail, start == 0, want_task, &mut found);
            let done = found.at_ms.is_some() && (found.task.is_some() || !want_task);
            if done || start == 0 || window >= WINDOW_MAX {
                return Ok(found);
            }
            window *= 4;
        }
    }
}

/// Where the line holding byte `at` starts.
fn line_start(bytes: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1)
}

/// Fills what `found` lacks from the complete lines of `tail`, the last first. The first line is
/// complete only if `tail` starts the file; the part after the last line end is a torn write.
fn scan_tail(tail: &[u8], starts_file: bool, want_task: bool, found: &mut Latest) {
    let mut lines = tail.split(|b| *b == b'\n').rev().skip(1).peekable();
    while let Some(line) = lines.next() {
        let is_first = lines.peek().is_none();
        if is_first && !starts_file {
            break;
        }
        let wanted_task = want_task
            && found.task.is_none()
            && (memchr::memmem::find(line, TURN_STARTED).is_some()
                || memchr::memmem::find(line, TURN_FINISHED).is_some());
        if found.at_ms.is_some() && !wanted_task {
            continue;
        }
        let Ok(record) = serde_json::from_slice::<Record>(line) else {
            continue;
        };
        if found.at_ms.is_none() {
            found.at_ms = record.at_ms();
        }
        if let Record::Event {
            event: Event::TurnStarted { turn, agent, .. } | Event::TurnFinished { turn, agent, .. },
            ..
        } = record
            && want_task
            && found.task.is_none()
        {
            found.task = Some((turn, agent));
        }
        if found.at_ms.is_some() && (found.task.is_some() || !want_task) {
            return;
        }
    }
}

/// The beginning of the prompt of a `turn_started` record whose line runs past what was read:
/// `from` starts at the record's type tag.
fn prompt_prefix(from: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"prompt\":\"";
    let at = memchr::memmem::find(from, KEY)? + KEY.len();
    let raw = &from[at..from.len().min(at + PROMPT_PREFIX)];
    // Up to the closing quote, if it was read.
    let mut end = raw.len();
    let mut escaped = false;
    for (i, b) in raw.iter().enumerate() {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    // The cut may split an escape (`\uD83D\uDE00` is 12 bytes) or a UTF-8 sequence: shorten
    // until the rest decodes.
    let mut quoted = Vec::with_capacity(end + 2);
    for drop in 0..=12.min(end) {
        quoted.clear();
        quoted.push(b'"');
        quoted.extend_from_slice(&raw[..end - drop]);
        quoted.push(b'"');
        if let Ok(text) = serde_json::from_slice::<String>(&quoted) {
            return Some(text);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at_ms: u64, event: Event) -> String {
        serde_json::to_string(&Record::Event { at_ms, event }).unwrap()
    }

    fn header() -> String {
        serde_json::to_string(&Record::Header {
            version: 1,
            id: "x".into(),
            created_ms: 5,
            work_dir: "/w".into(),
            model: "m".into(),
            agent: AgentName::Coder,
        })
        .unwrap()
    }

    fn started(turn: u64, prompt: &str) -> Event {
        Event::TurnStarted {
            turn,
            prompt: prompt.into(),
            agent: AgentName::Casual,
        }
    }

    fn peek(text: &[u8]) -> (tempfile::TempDir, Peek) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        let peek = Peek::open(&path).unwrap();
        (dir, peek)
    }

    #[test]
    fn headers_are_recognised_and_everything_else_is_not() {
        let (_d, mut p) = peek(format!("{}\n", header()).as_bytes());
        let info = p.header().unwrap().unwrap();
        assert_eq!(
            (info.agent, info.work_dir.as_deref()),
            (AgentName::Coder, Some("/w"))
        );
        for (text, why) in [
            (&b""[..], NotASession::Empty),
            (b"\0\0\0\n", NotASession::NoHeader),
            (b"{}\n", NotASession::NoHeader),
            (header().as_bytes(), NotASession::NoHeader),
        ] {
            let (_d, mut p) = peek(text);
            assert_eq!(p.header().unwrap(), Err(why), "{text:?}");
        }
        let long = format!("{}\n", " ".repeat(HEADER_MAX as usize) + &header());
        let (_d, mut p) = peek(long.as_bytes());
        assert_eq!(p.header().unwrap(), Err(NotASession::NoHeader));
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.jsonl");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let err = Peek::open(&fifo).err().expect("a FIFO is refused");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(Peek::open(dir.path()).is_err(), "a folder is refused");
    }

    #[test]
    fn the_tail_gives_the_last_record_and_the_latest_task() {
        let text = format!(
            "{}\n{}\n{}\n{{\"kind\":\"ev",
            header(),
            event(10, started(3, "p")),
            event(20, Event::Cleared),
        );
        let (_d, mut p) = peek(text.as_bytes());
        let latest = p.latest(true).unwrap();
        assert_eq!(latest.at_ms, Some(20), "the torn last line is not a record");
        assert_eq!(latest.task, Some((3, AgentName::Casual)));
        assert!(latest.whole_file);
    }

    #[test]
    fn a_huge_file_is_read_only_at_its_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let prompt = "é".repeat(600_000);
        std::fs::write(
            &path,
            format!("{}\n{}\n", header(), event(1, started(1, &prompt))),
        )
        .unwrap();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.set_len(1 << 30).unwrap();
        use std::io::Write;
        writeln!(&file, "\n{}", event(99, started(7, "last"))).unwrap();
        let mut p = Peek::open(&path).unwrap();
        assert_eq!(p.header().unwrap().unwrap().agent, AgentName::Coder);
        let first = p.first_prompt().unwrap().unwrap();
        assert!(
            first.len() < 2 * PROMPT_PREFIX && first.starts_with("éé"),
            "the prompt's beginning: {} bytes",
            first.len()
        );
        let latest = p.latest(true).unwrap();
        assert_eq!(latest.at_ms, Some(99));
        assert_eq!(latest.task, Some((7, AgentName::Casual)));
        assert!(!latest.whole_file);
        assert!(p.bytes_read() < 4 * WINDOW_MAX, "{} bytes", p.bytes_read());
    }

    #[test]
    fn a_tail_without_any_record_stops_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, format!("{}\n", header())).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let mut p = Peek::open(&path).unwrap();
        assert_eq!(p.latest(true).unwrap(), Latest::default());
        assert_eq!(p.first_prompt().unwrap(), None);
        assert!(p.bytes_read() < 4 * WINDOW_MAX, "{} bytes", p.bytes_read());
    }

    #[test]
    fn a_cut_prompt_decodes_to_its_beginning() {
        let record = |prompt: &str| event(1, started(1, prompt));
        for prompt in ["a\"b\\c\nd", "😀é", &"x".repeat(10_000), &"😀".repeat(3000)] {
            let line = record(prompt);
            let at = memchr::memmem::find(line.as_bytes(), TURN_STARTED).unwrap();
            for cut in [line.len(), line.len() - 10, at + 40, at + 41, at + 43] {
                let cut = cut.min(line.len());
                let got = prompt_prefix(&line.as_bytes()[at..cut]).unwrap_or_default();
                assert!(prompt.starts_with(&got), "{prompt:?} cut at {cut}: {got:?}");
            }
        }
    }
}
