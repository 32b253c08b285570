//! Appending to a session file: one `write` per record with `O_APPEND`, so a kill leaves at most
//! a torn last line; `sync` (fsync) at each turn's end. Every record goes through the masker
//! (`crate::secrets::Masker`) before it reaches the disk. The file is locked (`lock`) for as long as it is open here: a new session
//! appears in the folder already locked and with its header, and an existing one is locked
//! before anything is read or written.
//!
//! Owns the open file and the first write failure (reported once by the runtime). It must not
//! read sessions or decide what is recorded.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::lock::{self, LockError};
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
    /// Creates `path` with its header, locked. The file is written and locked under a temporary
    /// name and then linked into place, so no other seek ever sees it empty or unlocked; the
    /// error is `AlreadyExists` if `path` exists.
    pub fn create(
        path: &Path,
        id: &str,
        header: Record,
        masker: Arc<Masker>,
    ) -> std::io::Result<Self> {
        let folder = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(folder)?;
        let draft = tempfile::Builder::new()
            .prefix(".new-")
            .suffix(".tmp")
            .append(true)
            .tempfile_in(folder)?;
        lock::lock_exclusive(draft.as_file()).map_err(|e| match e {
            LockError::Io(e) => e,
            // Nobody else can know a file created a moment ago under a random name.
            LockError::Held { .. } => std::io::Error::other("a new session file was locked"),
        })?;
        draft
            .as_file()
            .write_all(encode(&header, &masker)?.as_bytes())?;
        let file = draft.persist_noclobber(path).map_err(|e| e.error)?;
        Ok(Self::from_file(path, id, file, masker))
    }

    /// Opens an existing session to append to it, locked. Nothing is read or written: call
    /// `end_torn_line` once the session is loaded.
    pub fn reopen(path: &Path, id: &str, masker: Arc<Masker>) -> Result<Self, LockError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(LockError::Io)?;
        lock::lock_exclusive(&file)?;
        Ok(Self::from_file(path, id, file, masker))
    }

    /// Gives a torn last line (a kill while writing) a line end, so the next record starts on a
    /// line of its own.
    pub fn end_torn_line(&self) -> std::io::Result<()> {
        let mut file = self.handle()?;
        let mut last = [b'\n'];
        if file.metadata()?.len() > 0 {
            file.seek(SeekFrom::End(-1))?;
            file.read_exact(&mut last)?;
        }
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Whether this is the file at `path` (the same inode, whatever the name).
    pub fn is_at(&self, path: &Path) -> bool {
        let (Ok(file), Ok(there)) = (self.handle(), std::fs::metadata(path)) else {
            return false;
        };
        file.metadata()
            .is_ok_and(|mine| (mine.dev(), mine.ino()) == (there.dev(), there.ino()))
    }

    /// A second handle on this open file, sharing its lock (continuing the session this
    /// process already has open must not find it locked by itself).
    pub fn share(&self) -> std::io::Result<Self> {
        let file = self.handle()?.try_clone()?;
        Ok(Self::from_file(
            &self.path,
            &self.id,
            file,
            Arc::clone(&self.masker),
        ))
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

    fn handle(&self) -> std::io::Result<std::sync::MutexGuard<'_, File>> {
        self.file
            .lock()
            .map_err(|_| std::io::Error::other("session file lock poisoned"))
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line.
    pub fn append(&self, record: &Record) -> std::io::Result<()> {
        let line = encode(record, &self.masker)?;
        self.handle()?.write_all(line.as_bytes())
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
        if !self.noted.swap(true, Ordering::SeqCst) {
            // Only `note` and `take_failure` hold this lock, and neither can panic holding it.
            *self
                .failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(message);
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
    /// A lock poisoned by a write that panicked midway is a failure (its record may be torn),
    /// though what was written is still forced to the disk.
    pub fn sync(&self) {
        let result = match self.file.lock() {
            Ok(file) => file.sync_data(),
            Err(poisoned) => {
                let synced = poisoned.into_inner().sync_data();
                synced.and(Err(std::io::Error::other(
                    "a write to it failed midway (its last record may be torn)",
                )))
            }
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
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// One record as one line, secrets masked.
fn encode(record: &Record, masker: &Masker) -> std::io::Result<String> {
    let mut line = masker.json_line(record).map_err(std::io::Error::other)?;
    line.push('\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_file_lock_is_reported_as_a_failed_sync() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.jsonl");
        let masker = Arc::new(Masker::new(Vec::<String>::new()));
        let file = SessionFile::create(
            &path,
            "s",
            Record::Header {
                version: 1,
                id: "s".into(),
                created_ms: 0,
                work_dir: "/w".into(),
                model: "m".into(),
                agent: crate::config::AgentName::Casual,
            },
            masker,
        )
        .expect("a new session file");
        file.sync();
        assert_eq!(file.take_failure(), None, "a healthy file syncs quietly");

        std::thread::scope(|scope| {
            let poisoner = scope.spawn(|| {
                let _held = file.file.lock();
                panic!("a write panics holding the file");
            });
            assert!(poisoner.join().is_err());
        });
        file.sync();
        let failure = file.take_failure().expect("the poisoned lock is reported");
        assert!(
            failure.contains("cannot be synced") && failure.contains("failed midway"),
            "{failure}"
        );
    }
}
