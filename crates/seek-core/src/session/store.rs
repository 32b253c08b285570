//! Where sessions live (`sessions/<id>.jsonl` in the data dir), their ids, listing them and
//! finding one by id or as the latest. Listing and choosing the latest read only each file's
//! ends (`peek`); a file that does not start with a session header is left out of both.
//!
//! Owns file names and the listing summary. It must not interpret events beyond what a listing
//! shows.

use std::path::{Path, PathBuf};

use super::SessionError;
use super::peek::{NotASession, Peek};

/// The sessions folder of a data dir.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("sessions")
}

pub fn path_of(data_dir: &Path, id: &str) -> PathBuf {
    dir(data_dir).join(format!("{id}.jsonl"))
}

/// Where the built-in engine keeps what it has read of the session at `session` (a cache: it
/// goes with the session and is never needed to continue it).
pub fn prefix_file_of(session: &Path) -> PathBuf {
    session.with_extension("kv")
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
    /// The latest task's number, which counts the tasks (`None`: not within what was read).
    pub turns: Option<u64>,
    /// The first task's prompt (only its beginning if it is very long).
    pub first_prompt: String,
    /// The work dir the session ran in; `None` in files older than that field.
    pub work_dir: Option<String>,
}

/// The widest the DIR column gets; longer paths lose their middle.
const DIR_WIDTH: usize = 28;

impl Summary {
    /// The column titles for `line`.
    pub const TITLES: &'static str = "ID                     LAST ACTIVITY (UTC)  AGENT  TASKS  DIR                           FIRST PROMPT";

    /// The first prompt's first line, at most 60 characters: how listings and removals name a
    /// session. From a file: shown through `terminal_safe` by whoever prints it.
    pub fn prompt_head(&self) -> String {
        self.first_prompt
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect()
    }

    /// One line of a listing; `home` is written `~` in the DIR column. The prompt and the
    /// folder come from a file: shown through `terminal_safe` by whoever prints the line.
    pub fn line(&self, home: Option<&Path>) -> String {
        let prompt = self.prompt_head();
        let turns = self.turns.map_or_else(|| "?".to_owned(), |n| n.to_string());
        let dir = self.work_dir.as_deref().map_or_else(
            || "?".to_owned(),
            |w| crate::config::abbreviate_home(Path::new(w), home),
        );
        format!(
            "{:<22} {:<20} {:<6} {turns:>5}  {:<DIR_WIDTH$}  {prompt}",
            self.id,
            crate::log::utc_minutes(self.last_activity_ms),
            self.agent,
            middle_ellipsis(&dir, DIR_WIDTH),
        )
    }

    /// Whether the session ran in `work_dir` (as `Sessions::work_dir` writes it).
    pub(crate) fn is_in(&self, work_dir: &str) -> bool {
        self.work_dir.as_deref() == Some(work_dir)
    }

    /// The entry a front end's session picker shows.
    pub fn entry(&self) -> crate::wire::SessionEntry {
        crate::wire::SessionEntry {
            id: self.id.clone(),
            last_activity_ms: self.last_activity_ms,
            agent: self.agent.clone(),
            turns: self.turns,
            first_prompt: self.first_prompt.chars().take(200).collect(),
            work_dir: self.work_dir.clone(),
        }
    }
}

/// `text` in at most `width` characters, its middle replaced by `…` if it is longer.
fn middle_ellipsis(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width || width < 3 {
        return text.to_owned();
    }
    let keep = width - 1;
    let (head, tail) = (keep / 2, keep - keep / 2);
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// A file in the sessions folder that is not listed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The sessions in a data dir, the most recently active first, and the files left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub sessions: Vec<Summary>,
    pub skipped: Vec<Skipped>,
}

impl Listing {
    /// Keeps only the sessions that ran in `work_dir`.
    pub fn only_in(mut self, work_dir: &str) -> Self {
        self.sessions.retain(|s| s.is_in(work_dir));
        self
    }

    /// One line naming the files left out, if any.
    pub fn warning(&self) -> Option<String> {
        let first = self.skipped.first()?;
        let folder = first.path.parent().unwrap_or(Path::new("."));
        let files: Vec<String> = self
            .skipped
            .iter()
            .map(|s| {
                let name = s.path.file_name().unwrap_or_default().to_string_lossy();
                format!("{name} ({})", s.reason)
            })
            .collect();
        Some(format!(
            "{} file(s) in {} are not seek sessions and were skipped: {}",
            files.len(),
            folder.display(),
            files.join(", ")
        ))
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

/// Every session in `data_dir`, the most recently active first, and the files that are not
/// sessions (empty, no header line, unreadable).
pub fn list(data_dir: &Path) -> Result<Listing, SessionError> {
    let mut listing = Listing::default();
    for (_, path) in files(data_dir)? {
        match summarise(&path) {
            Ok(summary) => listing.sessions.push(summary),
            Err(reason) => listing.skipped.push(Skipped { path, reason }),
        }
    }
    listing
        .sessions
        .sort_by(|a, b| by_activity((a.last_activity_ms, &a.id), (b.last_activity_ms, &b.id)));
    listing.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(listing)
}

/// The most recently active session that ran in `work_dir`: (id, path). Reads only each file's
/// ends; files that are not sessions, and sessions older than the work dir in the header, are
/// never chosen.
pub fn latest(data_dir: &Path, work_dir: &str) -> Result<(String, PathBuf), SessionError> {
    files(data_dir)?
        .into_iter()
        .filter_map(|(id, path)| {
            let mut peek = Peek::open(&path).ok()?;
            let header = peek.header().ok()?.ok()?;
            if header.work_dir.as_deref() != Some(work_dir) {
                return None;
            }
            let latest = peek.latest(false).ok()?;
            let at = latest.at_ms.unwrap_or_else(|| peek.modified_ms());
            Some((at, id, path))
        })
        .min_by(|a, b| by_activity((a.0, &a.1), (b.0, &b.1)))
        .map(|(_, id, path)| (id, path))
        .ok_or_else(|| SessionError::NoSessionHere(work_dir.to_owned()))
}

/// The session `id` names, exactly or as the one id it starts: (id, path). Reads no file.
pub fn find(data_dir: &Path, id: &str) -> Result<(String, PathBuf), SessionError> {
    // An id is a file name in the sessions folder, never a way out of it; nor does an empty
    // prefix stand for "the only session".
    if id.is_empty() || id.starts_with('.') || id.contains(['/', '\0']) {
        return Err(SessionError::NotFound {
            id: id.to_owned(),
            dir: dir(data_dir),
        });
    }
    let exact = path_of(data_dir, id);
    if exact.is_file() {
        return Ok((id.to_owned(), exact));
    }
    let mut matches: Vec<(String, PathBuf)> = files(data_dir)?
        .into_iter()
        .filter(|(name, path)| name.starts_with(id) && path.is_file())
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

/// What a listing shows, from the file's ends only: the header, the first prompt, the latest
/// task's number and agent, and the time of the last complete record. `Err`: why the file is
/// not listed.
pub(crate) fn summarise(path: &Path) -> Result<Summary, String> {
    let mut peek = Peek::open(path).map_err(|e| e.to_string())?;
    let summary = (|| -> std::io::Result<Result<Summary, NotASession>> {
        let header = match peek.header()? {
            Ok(header) => header,
            Err(why) => return Ok(Err(why)),
        };
        let header_agent = header.agent;
        let first_prompt = peek.first_prompt()?.unwrap_or_default();
        let latest = peek.latest(true)?;
        let (turns, agent) = match latest.task {
            Some((turn, agent)) => (Some(turn), agent),
            None if latest.whole_file => (Some(0), header_agent),
            None => (None, header_agent),
        };
        Ok(Ok(Summary {
            id: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: path.to_owned(),
            last_activity_ms: latest.at_ms.unwrap_or_else(|| peek.modified_ms()),
            agent: agent.to_string(),
            turns,
            first_prompt,
            work_dir: header.work_dir,
        }))
    })();
    match summary {
        Ok(Ok(summary)) => Ok(summary),
        Ok(Err(why)) => Err(why.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
