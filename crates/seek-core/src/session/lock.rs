//! One writer per session: an exclusive `flock` taken without waiting on the session file, held
//! for as long as the process keeps the file open, so a second seek continuing the same session
//! is refused instead of interleaving its records with the first's. The kernel drops the lock
//! with the holder's last descriptor, also on `kill -9`, so a dead process never blocks anyone.
//!
//! Owns the lock call and finding the holder's pid (in `/proc/locks`). It must not open, read or
//! write session files.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// Why a session file could not be locked.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Another open file holds the lock; the holder's pid when the kernel says.
    Held {
        pid: Option<u32>,
    },
    Io(std::io::Error),
}

/// Takes the exclusive lock on `file` or says who holds it. A filesystem without `flock`
/// (some network mounts) leaves the file unlocked, with a line in the log: refusing to save the
/// session there would be worse than the race the lock prevents.
pub(crate) fn lock_exclusive(file: &File) -> Result<(), LockError> {
    loop {
        // SAFETY: flock reads only the descriptor number, which `file` keeps open for the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Err(LockError::Held { pid: holder(file) }),
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS) => {
                tracing::warn!(
                    "session files cannot be locked here ({err}); two seeks continuing one session would mix their records"
                );
                return Ok(());
            }
            _ => return Err(LockError::Io(err)),
        }
    }
}

/// The pid of the process holding a `flock` on `file`, from `/proc/locks`.
fn holder(file: &File) -> Option<u32> {
    let meta = file.metadata().ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(&locks, meta.dev(), meta.ino())
}

/// The holder of a `flock` on device `dev`, inode `ino` in the text of `/proc/locks`, whose
/// lines read `1: FLOCK  ADVISORY  WRITE 4242 fe:00:5399340 0 EOF` (waiters carry a `->`).
fn holder_in(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let (major, minor) = (u64::from(libc::major(dev)), u64::from(libc::minor(dev)));
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, kind, _, _, pid, place, ..] = fields.as_slice() else {
            return None;
        };
        if *kind != "FLOCK" {
            return None;
        }
        let mut parts = place.split(':');
        let line_major = u64::from_str_radix(parts.next()?, 16).ok()?;
        let line_minor = u64::from_str_radix(parts.next()?, 16).ok()?;
        let line_ino = parts.next()?.parse::<u64>().ok()?;
        ((line_major, line_minor, line_ino) == (major, minor, ino))
            .then(|| pid.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_file_is_refused_and_told_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let first = File::create(&path).unwrap();
        lock_exclusive(&first).unwrap();
        let second = File::open(&path).unwrap();
        match lock_exclusive(&second) {
            Err(LockError::Held { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected the lock to be held: {other:?}"),
        }
        // A duplicate of the holder's descriptor shares its lock; closing the holder frees it.
        let shared = first.try_clone().unwrap();
        drop(first);
        assert!(matches!(
            lock_exclusive(&second),
            Err(LockError::Held { .. })
        ));
        drop(shared);
        lock_exclusive(&second).unwrap();
    }

    #[test]
    fn proc_locks_lines_are_matched_by_device_and_inode() {
        let dev = libc::makedev(0xfe, 0x01);
        let text = "1: POSIX  ADVISORY  WRITE 7 fe:01:42 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 4242 fe:01:42 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 99 fe:01:42 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 5 fe:01:43 0 EOF\n";
        assert_eq!(holder_in(text, dev, 42), Some(4242));
        assert_eq!(holder_in(text, dev, 44), None);
        assert_eq!(holder_in("garbage\n\n1:\n", dev, 42), None);
    }
}
