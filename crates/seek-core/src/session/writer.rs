//! Appending to a session file: one `write` per record with `O_APPEND`, so a kill leaves at most
//! a torn last line; `sync` (fsync) at each turn's end. Records are written by a thread of the
//! file's own, in order, so neither the agent's task nor the async runtime waits on the disk. Every record goes through the masker
//! (`crate::secrets::Masker`) before it reaches the disk. The file is locked (`lock`) for as long as it is open here: a new session
//! appears in the folder already locked and with its header, and an existing one is locked
//! before anything is read or written.
//!
//! A session begun with `SessionFile::begin` is not on the disk yet: its records wait in the writer
//! thread until the model first answers (`starts_the_file`), and only then is the file created,
//! the same way as `create` does, with everything so far. A start that never reached the model
//! (the server refused the connection, no such model) so leaves no file, also when seek is
//! killed meanwhile: nothing was written that would need removing.
//!
//! Owns the open file, its writer thread and the first write failure (reported once by the runtime). It must not
//! read sessions or decide what is recorded.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};

use super::lock::{self, LockError};
use super::record::{MemoryOp, Record, now_ms, worth_keeping};
use crate::secrets::Masker;
use crate::wire::Event;

pub struct SessionFile {
    id: String,
    path: PathBuf,
    /// Shared with the writer thread, which does every append and fsync. `None` while a begun
    /// session is not on the disk yet.
    file: Arc<Mutex<Option<File>>>,
    /// The file exists (or its creation has been asked for).
    on_disk: AtomicBool,
    masker: Arc<Masker>,
    failure: Arc<Failure>,
    /// The writer thread's queue; `None` only while dropping.
    queue: Option<Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

/// What the writer thread is asked to do, in order.
enum Job {
    /// Creates the file of a begun session with its header and the records held so far.
    Create,
    /// Appends one encoded record.
    Line(String),
    /// Forces what was written to the disk; answered with the result.
    Sync(Sender<std::io::Result<()>>),
    /// Answered once every earlier line is written.
    Written(Sender<()>),
}

/// The first failure, kept until the runtime reports it (once).
#[derive(Debug, Default)]
struct Failure {
    first: Mutex<Option<String>>,
    /// A failure was noted already: the user hears of it once.
    noted: AtomicBool,
}

impl Failure {
    fn note(&self, message: String) {
        if !self.noted.swap(true, Ordering::SeqCst) {
            // Only `note` and `take` hold this lock, and neither can panic holding it.
            *self.first.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
        }
    }

    fn take(&self) -> Option<String> {
        self.first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
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
        let header = encode(&header, &masker)?;
        let file = create_locked(path, &[header])?;
        Self::from_file(path, id, Some(file), Pending::default(), masker)
    }

    /// Begins a session that is written only once the model first answers (`starts_the_file`):
    /// until then nothing is on the disk, and dropping it leaves nothing behind. Once created,
    /// the file is as `create` makes it, with every record given meanwhile, in order.
    pub fn begin(
        path: &Path,
        id: &str,
        header: Record,
        masker: Arc<Masker>,
    ) -> std::io::Result<Self> {
        let pending = Pending {
            lines: vec![encode(&header, &masker)?],
        };
        Self::from_file(path, id, None, pending, masker)
    }

    /// Opens an existing session to append to it, locked. Nothing is read or written: call
    /// `end_torn_line` once the session is loaded.
    pub(crate) fn reopen(path: &Path, id: &str, masker: Arc<Masker>) -> Result<Self, LockError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(LockError::Io)?;
        lock::lock_exclusive(&file)?;
        Self::from_file(path, id, Some(file), Pending::default(), masker).map_err(LockError::Io)
    }

    /// Gives a torn last line (a kill while writing) a line end, so the next record starts on a
    /// line of its own.
    pub(crate) fn end_torn_line(&self) -> std::io::Result<()> {
        self.wait_written();
        let mut guard = self.handle()?;
        let file = on_disk(&mut guard)?;
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
    pub(crate) fn is_at(&self, path: &Path) -> bool {
        let (Ok(mut guard), Ok(there)) = (self.handle(), std::fs::metadata(path)) else {
            return false;
        };
        let Ok(file) = on_disk(&mut guard) else {
            return false;
        };
        file.metadata()
            .is_ok_and(|mine| (mine.dev(), mine.ino()) == (there.dev(), there.ino()))
    }

    /// A second handle on this open file, sharing its lock (continuing the session this
    /// process already has open must not find it locked by itself). Every record queued so far
    /// is written first, so the file read next is whole.
    pub fn share(&self) -> std::io::Result<Self> {
        self.wait_written();
        let file = on_disk(&mut *self.handle()?)?.try_clone()?;
        Self::from_file(
            &self.path,
            &self.id,
            Some(file),
            Pending::default(),
            Arc::clone(&self.masker),
        )
    }

    /// Wraps an open, locked file (or, with `None`, the records of a begun session) and starts
    /// its writer thread.
    fn from_file(
        path: &Path,
        id: &str,
        file: Option<File>,
        pending: Pending,
        masker: Arc<Masker>,
    ) -> std::io::Result<Self> {
        let on_disk = AtomicBool::new(file.is_some());
        let file = Arc::new(Mutex::new(file));
        let failure = Arc::new(Failure::default());
        let (queue, jobs) = channel();
        let writer = {
            let (file, failure, path) = (Arc::clone(&file), Arc::clone(&failure), path.to_owned());
            std::thread::Builder::new()
                .name("seek-session".into())
                .spawn(move || write_jobs(&jobs, &file, pending, &failure, &path))?
        };
        Ok(Self {
            id: id.to_owned(),
            path: path.to_owned(),
            file,
            on_disk,
            masker,
            failure,
            queue: Some(queue),
            writer: Some(writer),
        })
    }

    fn handle(&self) -> std::io::Result<std::sync::MutexGuard<'_, Option<File>>> {
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

    /// Queues one record as one line, remembering (not returning) a failure: recording must
    /// never stop a task, nor make it wait on the disk.
    fn append_or_note(&self, record: &Record) {
        match encode(record, &self.masker) {
            Ok(line) => self.send(Job::Line(line)),
            Err(e) => self.failure.note(format!(
                "a record for the session file {} cannot be encoded ({e}): this session is not being saved",
                self.path.display()
            )),
        }
    }

    fn send(&self, job: Job) {
        let sent = self.queue.as_ref().is_some_and(|q| q.send(job).is_ok());
        if !sent {
            self.failure.note(format!(
                "the session file {} has no writer: this session is not being saved",
                self.path.display()
            ));
        }
    }

    /// Blocks until every record queued so far is written.
    fn wait_written(&self) {
        let (done, written) = channel();
        self.send(Job::Written(done));
        let _ = written.recv();
    }

    /// Records `event` if it is worth keeping (`worth_keeping`). A task's end is kept without its block list: each block's result is
    /// already in the file (`block_finished`), and writing it twice would double long sessions.
    pub fn record_event(&self, event: &Event) {
        if starts_the_file(event) && !self.on_disk.swap(true, Ordering::SeqCst) {
            self.send(Job::Create);
        }
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

    /// Writes every queued record and forces them to the disk (at each task's end). Blocks
    /// until done: call it off the async runtime.
    pub fn sync(&self) {
        let (reply, result) = channel();
        self.send(Job::Sync(reply));
        let result = result
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the writer thread stopped")));
        if let Err(e) = result {
            self.failure.note(format!(
                "the session file {} cannot be synced: {e}",
                self.path.display()
            ));
        }
    }

    /// The first failure, once.
    pub(crate) fn take_failure(&self) -> Option<String> {
        self.failure.take()
    }
}

/// Dropping waits for the queued records, so the file is whole and its lock released when the
/// handle is gone (another seek may take the session at once).
impl Drop for SessionFile {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The records of a begun session that is not on the disk yet, its header first.
#[derive(Default)]
struct Pending {
    lines: Vec<String>,
}

/// The writer thread: does each job in order until every handle is gone. Lines of a session not
/// on the disk yet are held until `Job::Create`.
fn write_jobs(
    jobs: &Receiver<Job>,
    file: &Mutex<Option<File>>,
    mut pending: Pending,
    failure: &Failure,
    path: &Path,
) {
    let unwritable = |e: std::io::Error| {
        failure.note(format!(
            "the session file {} cannot be written ({e}): this session is not being saved",
            path.display()
        ));
    };
    for job in jobs {
        match job {
            Job::Create => {
                let lines = std::mem::take(&mut pending.lines);
                if lines.is_empty() {
                    continue;
                }
                match create_locked(path, &lines) {
                    Ok(created) => match file.lock() {
                        Ok(mut slot) => *slot = Some(created),
                        Err(_) => unwritable(std::io::Error::other("session file lock poisoned")),
                    },
                    Err(e) => unwritable(e),
                }
            }
            Job::Line(line) => {
                let mut slot = match file.lock() {
                    Ok(slot) => slot,
                    Err(_) => {
                        unwritable(std::io::Error::other("session file lock poisoned"));
                        continue;
                    }
                };
                match slot.as_mut() {
                    Some(file) => {
                        if let Err(e) = file.write_all(line.as_bytes()) {
                            unwritable(e);
                        }
                    }
                    // Not created yet (held until the model answers), or its creation failed
                    // (noted once; the rest is dropped).
                    None if !pending.lines.is_empty() => pending.lines.push(line),
                    None => {}
                }
            }
            Job::Sync(reply) => {
                let _ = reply.send(sync_data(file));
            }
            Job::Written(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Whether `event` shows the model answered (or a block ran): what makes a begun session worth
/// a file.
fn starts_the_file(event: &Event) -> bool {
    matches!(
        event,
        Event::ReasoningDelta { .. }
            | Event::AnswerDelta { .. }
            | Event::AnswerComplete { .. }
            | Event::BlockStarted { .. }
            | Event::BlockFinished { .. }
    )
}

/// Creates `path` holding `lines`, locked. The file is written and locked under a temporary name
/// and then linked into place, so no other seek ever sees it empty or unlocked; the error is
/// `AlreadyExists` if `path` exists.
fn create_locked(path: &Path, lines: &[String]) -> std::io::Result<File> {
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
    draft.as_file().write_all(lines.concat().as_bytes())?;
    draft.persist_noclobber(path).map_err(|e| e.error)
}

/// The open file, or an error while a begun session is not on the disk yet.
fn on_disk(slot: &mut Option<File>) -> std::io::Result<&mut File> {
    slot.as_mut().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the session is not on the disk yet",
        )
    })
}

/// fsync. A lock poisoned by a write that panicked midway is a failure (its record may be
/// torn), though what was written is still forced to the disk.
fn sync_data(file: &Mutex<Option<File>>) -> std::io::Result<()> {
    match file.lock() {
        // A begun session not on the disk yet has nothing to sync.
        Ok(file) => file.as_ref().map_or(Ok(()), File::sync_data),
        Err(poisoned) => {
            let synced = poisoned
                .into_inner()
                .as_ref()
                .map_or(Ok(()), File::sync_data);
            synced.and(Err(std::io::Error::other(
                "a write to it failed midway (its last record may be torn)",
            )))
        }
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
