//! Sessions that survive anything: every event that matters and every change to the model's
//! memory is appended to `sessions/<id>.jsonl` as it happens, so a session can be listed,
//! resumed (transcript and memory) and never lost to a crash or a kill.
//!
//! Owns the file format, writing, reading and listing. It must not run tasks or draw.

mod load;
mod record;
mod store;
mod writer;

use std::path::PathBuf;

pub use load::{Loaded, load};
pub use record::{MemoryOp, Record, VERSION, now_ms, worth_keeping};
pub use store::{Summary, dir, find, latest, list, new_id, path_of, summarise};
pub use writer::SessionFile;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("there is no session to continue in {0}: start one with `seek` or `seek -p`")]
    NoSessions(PathBuf),
    #[error("no session {id} in {dir}: `seek sessions` lists them")]
    NotFound { id: String, dir: PathBuf },
    #[error("{count} sessions start with {id}: give more of the id (`seek sessions` lists them)")]
    Ambiguous { id: String, count: usize },
    #[error("{0} is not a seek session (it has no header line)")]
    NotASession(PathBuf),
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
            model: crate::config::redact_url(model_description),
            work_dir: config.work_dir.value.display().to_string(),
        }
    }

    /// Starts a new session file.
    pub fn create(&self, agent: crate::config::AgentName) -> Result<SessionFile, SessionError> {
        let created_ms = now_ms();
        let mut id = new_id(created_ms);
        let mut path = path_of(&self.data_dir, &id);
        // Two sessions started within the same second with the same random digits: extend.
        let mut n = 1;
        while path.exists() {
            id = format!("{}-{n}", new_id(created_ms));
            path = path_of(&self.data_dir, &id);
            n += 1;
        }
        let header = Record::Header {
            version: VERSION,
            id: id.clone(),
            created_ms,
            work_dir: self.work_dir.clone(),
            model: self.model.clone(),
            agent,
        };
        SessionFile::create(&path, &id, header, std::sync::Arc::clone(&self.masker))
            .map_err(|source| SessionError::Io { path, source })
    }

    /// Opens session `id` to continue it.
    pub fn reopen(&self, id: &str) -> Result<(Loaded, SessionFile), SessionError> {
        let (id, path) = find(&self.data_dir, id)?;
        let loaded = load(&path, &id)?;
        let file = SessionFile::reopen(&path, &id, std::sync::Arc::clone(&self.masker))
            .map_err(|source| SessionError::Io { path, source })?;
        Ok((loaded, file))
    }
}

#[cfg(test)]
mod tests;
