//! Sessions that survive anything: every event that matters and every change to the model's
//! memory is appended to `sessions/<id>.jsonl` as it happens, so a session can be listed,
//! resumed (transcript and memory) and never lost to a crash or a kill.
//!
//! One process writes a session at a time: the file is locked while it is open for writing, and
//! a second seek continuing it is told the session is busy.
//!
//! Owns the file format, writing, reading and listing. It must not run tasks or draw.

mod load;
mod lock;
mod peek;
mod record;
mod remove;
mod store;
mod writer;

use std::path::PathBuf;

pub use load::{Loaded, load};
pub use record::{MemoryOp, Record, VERSION, now_ms, worth_keeping};
pub use remove::{Pruned, prune, remove};
pub use store::{
    Listing, Skipped, Summary, dir, find, latest, list, new_id, path_of, prefix_file_of,
};
pub use writer::SessionFile;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no saved session in {0}; `seek sessions --all` lists every one")]
    NoSessionHere(String),
    #[error("no session {id} in {dir}: `seek sessions` lists them")]
    NotFound { id: String, dir: PathBuf },
    #[error("{count} sessions start with {id}: give more of the id (`seek sessions` lists them)")]
    Ambiguous { id: String, count: usize },
    #[error("{0} is not a seek session (it has no header line)")]
    NotASession(PathBuf),
    #[error("{path} is left alone: {why}")]
    NotRemovable { path: PathBuf, why: String },
    #[error(
        "session {id} is in use by another seek ({holder}): wait for it to end, or start a new session instead of continuing this one"
    )]
    Busy { id: String, holder: Holder },
}

/// The process holding a busy session, as far as the kernel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder(pub Option<u32>);

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(pid) => write!(f, "pid {pid}"),
            None => f.write_str("pid unknown"),
        }
    }
}

/// Where and how a runtime keeps its sessions.
#[derive(Debug, Clone)]
pub struct Sessions {
    pub data_dir: PathBuf,
    /// Masks every record before it reaches the disk.
    pub masker: std::sync::Arc<crate::secrets::Masker>,
    /// `model @ provider url`, credentials masked, for headers.
    pub model: String,
    pub work_dir: String,
}

impl Sessions {
    /// The sessions of `config`, masked by `masker`.
    pub fn for_config(
        config: &crate::config::Config,
        masker: std::sync::Arc<crate::secrets::Masker>,
        model_description: &str,
    ) -> Self {
        Self {
            data_dir: config.data_dir.clone(),
            masker,
            // A server's description ends with its URL, which may hold a password; the built-in
            // engine's ("smollm2-135m @ local") has none, and its `@` is not a URL's.
            model: if model_description.contains("://") {
                crate::config::redact_url(model_description)
            } else {
                model_description.to_owned()
            },
            work_dir: config.work_dir.value.display().to_string(),
        }
    }

    /// Starts a new session file, locked for this process.
    pub fn create(&self, agent: crate::config::AgentName) -> Result<SessionFile, SessionError> {
        self.start(agent, SessionFile::create)
    }

    /// Begins a new session that reaches the disk (as `create` makes it) only once the model
    /// first answers: a task that never reached the model leaves no file (`SessionFile::begin`).
    pub fn begin(&self, agent: crate::config::AgentName) -> Result<SessionFile, SessionError> {
        self.start(agent, SessionFile::begin)
    }

    fn start(
        &self,
        agent: crate::config::AgentName,
        open: fn(
            &std::path::Path,
            &str,
            Record,
            std::sync::Arc<crate::secrets::Masker>,
        ) -> std::io::Result<SessionFile>,
    ) -> Result<SessionFile, SessionError> {
        let created_ms = now_ms();
        let base = new_id(created_ms);
        // Two sessions started within the same second with the same random digits: extend.
        let mut n = 0;
        loop {
            let id = if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            n += 1;
            let path = path_of(&self.data_dir, &id);
            if path.exists() {
                continue;
            }
            let header = Record::Header {
                version: VERSION,
                id: id.clone(),
                created_ms,
                work_dir: self.work_dir.clone(),
                model: self.model.clone(),
                agent,
            };
            match open(&path, &id, header, std::sync::Arc::clone(&self.masker)) {
                // Another seek took the name between the check and the link.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => continue,
                created => return created.map_err(|source| SessionError::Io { path, source }),
            }
        }
    }

    /// Opens session `id` (`None`: the most recently active) to continue it, locked for this
    /// process before anything is read. `current` is the session this process has open, if any:
    /// continuing that one again shares its lock instead of finding it busy.
    pub(crate) fn reopen(
        &self,
        id: Option<&str>,
        current: Option<&SessionFile>,
    ) -> Result<(Loaded, SessionFile), SessionError> {
        let (id, path) = match id {
            Some(id) => find(&self.data_dir, id)?,
            None => latest(&self.data_dir, &self.work_dir)?,
        };
        let io = |source| SessionError::Io {
            path: path.clone(),
            source,
        };
        let file = match current.filter(|c| c.is_at(&path)) {
            Some(current) => current.share().map_err(io)?,
            None => SessionFile::reopen(&path, &id, std::sync::Arc::clone(&self.masker)).map_err(
                |e| match e {
                    lock::LockError::Held { pid } => SessionError::Busy {
                        id: id.clone(),
                        holder: Holder(pid),
                    },
                    lock::LockError::Io(source) => io(source),
                },
            )?,
        };
        let mut loaded = load(&path, &id)?;
        file.end_torn_line().map_err(io)?;
        if let Some(theirs) = loaded.work_dir.as_deref()
            && theirs != self.work_dir
        {
            // The work dir stays this seek's: moving elsewhere unasked would surprise more.
            loaded.warnings.push(format!(
                "session {id} worked in {theirs}; it continues here, in {}: start seek in {theirs} to work there",
                self.work_dir
            ));
        }
        Ok((loaded, file))
    }
}

/// Which saved session to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    Latest,
    Id(String),
}

#[cfg(test)]
mod tests;
