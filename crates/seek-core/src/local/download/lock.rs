//! The per-file download lock: an exclusive `flock` on `<file>.lock`, so two seek processes
//! never write the same file; the second waits and then finds the file done.
//!
//! Owns taking and releasing the lock. The lock file itself is left in place (removing it would
//! race with a process about to lock it); the kernel releases the lock when its holder exits,
//! however it exits.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub(super) struct FileLock {
    _held: Flock<File>,
}

/// `<file>.lock`.
pub(super) fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// The lock if it is free now, `None` if another process holds it.
pub(super) fn try_lock(path: &Path) -> io::Result<Option<FileLock>> {
    match Flock::lock(open(path)?, FlockArg::LockExclusiveNonblock) {
        Ok(held) => Ok(Some(FileLock { _held: held })),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(io::Error::from(errno)),
    }
}

/// Waits for the lock. Blocking: call it on a blocking thread.
pub(super) fn lock(path: &Path) -> io::Result<FileLock> {
    loop {
        match Flock::lock(open(path)?, FlockArg::LockExclusive) {
            Ok(held) => return Ok(FileLock { _held: held }),
            // A signal interrupted the wait; wait again.
            Err((_, Errno::EINTR)) => {}
            Err((_, errno)) => return Err(io::Error::from(errno)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = lock_path(&dir.path().join("m.gguf"));
        let first = try_lock(&path).expect("lock").expect("free");
        // flock locks belong to the open file description, so a second open conflicts even in
        // the same process, as a second seek process would.
        assert!(try_lock(&path).expect("try").is_none(), "held");
        drop(first);
        assert!(try_lock(&path).expect("try").is_some(), "released");
        assert!(lock(&path).is_ok());
    }
}
