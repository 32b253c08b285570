//! Where sessions live (`sessions/<id>.jsonl` in the data dir), their ids, listing them and
//! finding one by id or as the latest.
//!
//! Owns file names and the listing summary. It must not interpret events beyond what a listing
//! shows.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::SessionError;
use super::record::Record;

/// Bytes read from a file's end to find its last record.
const TAIL: u64 = 64 * 1024;

/// The sessions folder of a data dir.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("sessions")
}

pub fn path_of(data_dir: &Path, id: &str) -> PathBuf {
    dir(data_dir).join(format!("{id}.jsonl"))
}

/// A new id: the UTC time (so names sort by creation) and four random hex digits.
pub fn new_id(now_ms: u64) -> String {
    let secs = now_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = crate::log::civil_from_days(days as i64);
    let random = std::fs::read("/proc/sys/kernel/random/uuid")
        .ok()
        .and_then(|u| u.get(..4).map(|b| String::from_utf8_lossy(b).into_owned()))
        .unwrap_or_else(|| format!("{:04x}", now_ms % 0xffff));
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{random}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// One line of `seek sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub id: String,
    pub path: PathBuf,
    /// Time of the last complete record (the file's mtime if none can be read).
    pub last_activity_ms: u64,
    pub agent: String,
    pub turns: usize,
    pub first_prompt: String,
}

impl Summary {
    /// The column titles for `line`.
    pub const TITLES: &'static str =
        "ID                     LAST ACTIVITY (UTC)  AGENT  TASKS  FIRST PROMPT";

    /// One line of a listing.
    pub fn line(&self) -> String {
        let prompt: String = self
            .first_prompt
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        format!(
            "{:<22} {:<20} {:<6} {:>5}  {prompt}",
            self.id,
            crate::log::utc_minutes(self.last_activity_ms),
            self.agent,
            self.turns
        )
    }
}

/// The session files in `data_dir`: (id, path), by name only.
fn files(data_dir: &Path) -> Result<Vec<(String, PathBuf)>, SessionError> {
    let folder = dir(data_dir);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SessionError::Io {
                path: folder,
                source,
            });
        }
    };
    Ok(entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|p| {
            let id = p.file_stem()?.to_string_lossy().into_owned();
            Some((id, p))
        })
        .collect())
}

/// Newest activity first, then the newer id.
fn by_activity(a: (u64, &str), b: (u64, &str)) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then_with(|| b.1.cmp(a.1))
}

/// Every session in `data_dir`, the most recently active first.
pub fn list(data_dir: &Path) -> Result<Vec<Summary>, SessionError> {
    let mut sessions: Vec<Summary> = files(data_dir)?
        .into_iter()
        .filter_map(|(_, path)| summarise(&path).ok())
        .collect();
    sessions.sort_by(|a, b| by_activity((a.last_activity_ms, &a.id), (b.last_activity_ms, &b.id)));
    Ok(sessions)
}

/// The most recently active session: (id, path). Reads only each file's tail.
pub fn latest(data_dir: &Path) -> Result<(String, PathBuf), SessionError> {
    files(data_dir)?
        .into_iter()
        .map(|(id, path)| (last_activity(&path), id, path))
        .min_by(|a, b| by_activity((a.0, &a.1), (b.0, &b.1)))
        .map(|(_, id, path)| (id, path))
        .ok_or_else(|| SessionError::NoSessions(dir(data_dir)))
}

/// The session `id` names, exactly or as the one id it starts: (id, path). Reads no file.
pub fn find(data_dir: &Path, id: &str) -> Result<(String, PathBuf), SessionError> {
    let exact = path_of(data_dir, id);
    if exact.is_file() {
        return Ok((id.to_owned(), exact));
    }
    let mut matches: Vec<(String, PathBuf)> = files(data_dir)?
        .into_iter()
        .filter(|(name, _)| name.starts_with(id))
        .collect();
    match matches.len() {
        1 => Ok(matches.remove(0)),
        0 => Err(SessionError::NotFound {
            id: id.to_owned(),
            dir: dir(data_dir),
        }),
        n => Err(SessionError::Ambiguous {
            id: id.to_owned(),
            count: n,
        }),
    }
}

/// Reads what a listing shows without parsing every record: the header, a count of task
/// starts, the first prompt, and the time of the last complete line.
pub fn summarise(path: &Path) -> Result<Summary, SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_owned(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let header_agent = match serde_json::from_slice::<Record>(first_line) {
        Ok(Record::Header { agent, .. }) => agent.to_string(),
        _ => "?".into(),
    };
    let marker = b"\"type\":\"turn_started\"";
    let turns = memchr::memmem::find_iter(&bytes, marker).count();
    // The task whose record's line holds byte `at`: (prompt, agent).
    let task_at = |at: usize| {
        let line_start = bytes[..at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let line_end = bytes[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |i| at + i);
        match serde_json::from_slice::<Record>(&bytes[line_start..line_end]) {
            Ok(Record::Event {
                event: crate::agent::Event::TurnStarted { prompt, agent, .. },
                ..
            }) => Some((prompt, agent.to_string())),
            _ => None,
        }
    };
    let first_prompt = memchr::memmem::find(&bytes, marker)
        .and_then(task_at)
        .map(|(prompt, _)| prompt)
        .unwrap_or_default();
    // The agent of the last task (the header has the configured one, `auto` perhaps).
    let agent = memchr::memmem::rfind(&bytes, marker)
        .and_then(task_at)
        .map_or(header_agent, |(_, agent)| agent);
    let tail = &bytes[bytes.len().saturating_sub(TAIL as usize)..];
    let last_activity_ms = last_record_ms(tail).unwrap_or_else(|| modified_ms(path));
    Ok(Summary {
        id,
        path: path.to_owned(),
        last_activity_ms,
        agent,
        turns,
        first_prompt,
    })
}

/// The time of the last complete record in `tail` (a file's last bytes).
fn last_record_ms(tail: &[u8]) -> Option<u64> {
    tail.split(|b| *b == b'\n')
        .rev()
        .find_map(|line| serde_json::from_slice::<Record>(line).ok())
        .and_then(|r| r.at_ms())
}

fn modified_ms(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// The time of a session's last record, reading only the file's tail.
fn last_activity(path: &Path) -> u64 {
    let tail = (|| -> std::io::Result<Vec<u8>> {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL)))?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail)?;
        Ok(tail)
    })()
    .unwrap_or_default();
    last_record_ms(&tail).unwrap_or_else(|| modified_ms(path))
}
