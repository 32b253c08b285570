//! Small file writes done off the caller's thread, in order: the terminal UI must never wait on
//! a disk (prompt history, the log).
//!
//! Owns the one writer thread. A write that fails is reported in the log (the log's own writes,
//! queued with `in_background_unreported`, are dropped when they fail); it never stops anything.
//! It must not know the log: it sits below it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

/// One write to a file, creating its folder if needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileWrite {
    Append { path: PathBuf, text: String },
    Replace { path: PathBuf, text: String },
}

impl FileWrite {
    pub fn path(&self) -> &PathBuf {
        match self {
            FileWrite::Append { path, .. } | FileWrite::Replace { path, .. } => path,
        }
    }

    /// Does the write now, on this thread.
    pub fn perform(&self) -> std::io::Result<()> {
        if let Some(dir) = self.path().parent() {
            std::fs::create_dir_all(dir)?;
        }
        match self {
            FileWrite::Append { path, text } => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?
                .write_all(text.as_bytes()),
            FileWrite::Replace { path, text } => std::fs::write(path, text),
        }
    }
}

enum Job {
    /// A write, and whether its failure is reported in the log.
    Write(FileWrite, bool),
    /// Answered once every earlier write is done.
    Flush(Sender<()>),
}

static WRITER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

fn send(job: Job) {
    let writer = WRITER.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::spawn(move || {
            for job in rx {
                let (write, reported) = match job {
                    Job::Write(write, reported) => (write, reported),
                    Job::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                if let Err(e) = write.perform()
                    && reported
                {
                    tracing::warn!("cannot write {}: {e}", write.path().display());
                }
            }
        });
        Mutex::new(tx)
    });
    if let Ok(tx) = writer.lock() {
        let _ = tx.send(job);
    }
}

/// Queues `write` for the writer thread (started on first use).
pub fn in_background(write: FileWrite) {
    send(Job::Write(write, true));
}

/// Queues `write` like `in_background`, but a failure is dropped rather than reported in the
/// log: for the log's own writes.
pub(crate) fn in_background_unreported(write: FileWrite) {
    send(Job::Write(write, false));
}

/// Waits (at most `bound`) until every queued write is done: before the process exits.
pub fn flush(bound: std::time::Duration) {
    let (done, finished) = channel();
    send(Job::Flush(done));
    let _ = finished.recv_timeout(bound);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_and_replaces_create_folders_and_report_failures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file");
        FileWrite::Append {
            path: path.clone(),
            text: "one\n".into(),
        }
        .perform()
        .unwrap();
        FileWrite::Append {
            path: path.clone(),
            text: "two\n".into(),
        }
        .perform()
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        FileWrite::Replace {
            path: path.clone(),
            text: "new\n".into(),
        }
        .perform()
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let under_a_file = FileWrite::Append {
            path: path.join("x"),
            text: String::new(),
        };
        assert!(under_a_file.perform().is_err());
    }
}
