//! Appending to a session file: one `write` per record with `O_APPEND`, so a kill leaves at most
//! a torn last line; `sync` (fsync) at each turn's end. Every record goes through the masker
//! (`crate::secrets::Masker`) before it reaches the disk.
//!
//! Owns the open file and the first write failure (reported once by the runtime). It must not
//! read sessions or decide what is recorded.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::record::{MemoryOp, Record, now_ms, worth_keeping};
use crate::agent::Event;
use crate::secrets::Masker;

pub struct SessionFile {
    id: String,
    path: PathBuf,
    file: Mutex<File>,
    masker: Arc<Masker>,
    failure: Mutex<Option<String>>,
    /// A failure was noted already: the user hears of it once.
    noted: AtomicBool,
}

impl std::fmt::Debug for SessionFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFile").field("id", &self.id).finish()
    }
}

impl SessionFile {
    /// Creates `path` (which must not exist) and writes its header.
    pub fn create(
        path: &Path,
        id: &str,
        header: Record,
        masker: Arc<Masker>,
    ) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)?;
        let session = Self::from_file(path, id, file, masker);
        session.append(&header)?;
        Ok(session)
    }

    /// Opens an existing session to append to it. A torn last line gets a line end first, so
    /// the next record starts on a line of its own.
    pub fn reopen(path: &Path, id: &str, masker: Arc<Masker>) -> std::io::Result<Self> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)?;
        let mut last = [b'\n'];
        if file.metadata()?.len() > 0 {
            file.seek(SeekFrom::End(-1))?;
            file.read_exact(&mut last)?;
        }
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
        Ok(Self::from_file(path, id, file, masker))
    }

    fn from_file(path: &Path, id: &str, file: File, masker: Arc<Masker>) -> Self {
        Self {
            id: id.to_owned(),
            path: path.to_owned(),
            file: Mutex::new(file),
            masker,
            failure: Mutex::new(None),
            noted: AtomicBool::new(false),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record, masked, as one line.
    pub fn append(&self, record: &Record) -> std::io::Result<()> {
        let mut line = self
            .masker
            .json_line(record)
            .map_err(std::io::Error::other)?;
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("session file lock poisoned"))?;
        file.write_all(line.as_bytes())
    }

    /// Appends, remembering (not returning) a failure: recording must never stop a task.
    fn append_or_note(&self, record: &Record) {
        if let Err(e) = self.append(record) {
            self.note(format!(
                "the session file {} cannot be written ({e}): this session is not being saved",
                self.path.display()
            ));
        }
    }

    fn note(&self, message: String) {
        if !self.noted.swap(true, Ordering::SeqCst)
            && let Ok(mut failure) = self.failure.lock()
        {
            *failure = Some(message);
        }
    }

    /// Records `event` if it is worth keeping (`worth_keeping`). A task's end is kept without its block list: each block's result is
    /// already in the file (`block_finished`), and writing it twice would double long sessions.
    pub fn record_event(&self, event: &Event) {
        if !worth_keeping(event) {
            return;
        }
        let mut event = event.clone();
        if let Event::TurnFinished { blocks, .. } = &mut event {
            blocks.clear();
        }
        self.append_or_note(&Record::Event {
            at_ms: now_ms(),
            event,
        });
    }

    pub fn record_memory(&self, op: MemoryOp) {
        self.append_or_note(&Record::Memory {
            at_ms: now_ms(),
            op,
        });
    }

    /// Forces what was written to the disk (at each turn's end).
    pub fn sync(&self) {
        let result = match self.file.lock() {
            Ok(file) => file.sync_data(),
            Err(_) => Ok(()),
        };
        if let Err(e) = result {
            self.note(format!(
                "the session file {} cannot be synced: {e}",
                self.path.display()
            ));
        }
    }

    /// The first failure, once.
    pub fn take_failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|mut f| f.take())
    }
}
