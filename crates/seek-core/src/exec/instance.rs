//! One running seek's footprint outside its data: the private temp dir blocks get as `TMPDIR`,
//! and the lock that says the instance is alive, so a later seek can clean up after one that was
//! killed (its temp dir, its blocks' control groups and whatever still runs in them).
//!
//! The temp dir is made with `mkdtemp` semantics (a fresh random name, created exclusively with
//! mode 0700, its owner checked), so nothing planted in advance under a guessable name is ever
//! used. The lock is `<data dir>/run/<name>`, held with `flock` for the instance's life (the
//! kernel drops it when the process dies, however it dies), holding the temp dir's path.
//!
//! Owns creating, holding and removing these; it must not run blocks.

use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the instance could not start.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error("cannot make a private temp dir in {}: {source}", parent.display())]
    TempDir {
        parent: PathBuf,
        source: std::io::Error,
    },
    #[error("the new temp dir {} is not a folder owned by seek's user with mode 0700", path.display())]
    TempDirNotPrivate { path: PathBuf },
}

/// A live seek instance. Dropping it removes the temp dir and the lock.
#[derive(Debug)]
pub struct Instance {
    name: String,
    temp_dir: PathBuf,
    lock: Option<(PathBuf, File)>,
}

const PREFIX: &str = "seek-";

impl Instance {
    /// Makes the private temp dir in `temp_parent` and, when `run_dir` is given, takes the
    /// instance's lock there (a lock that cannot be taken only loses the later clean-up).
    pub fn start(temp_parent: &Path, run_dir: Option<&Path>) -> Result<Self, InstanceError> {
        let temp = tempfile::Builder::new()
            .prefix(PREFIX)
            .rand_bytes(10)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(temp_parent)
            .map_err(|source| InstanceError::TempDir {
                parent: temp_parent.to_owned(),
                source,
            })?;
        let temp_dir = temp.keep();
        if !is_private_dir(&temp_dir) {
            return Err(InstanceError::TempDirNotPrivate { path: temp_dir });
        }
        let name = temp_dir
            .file_name()
            .map(|n| n.to_string_lossy().trim_start_matches(PREFIX).to_owned())
            .unwrap_or_default();
        super::cgroup::set_instance(&name);
        let lock = run_dir.and_then(|dir| take_lock(dir, &name, &temp_dir));
        Ok(Self {
            name,
            temp_dir,
            lock,
        })
    }

    /// The temp dir blocks get as `TMPDIR`.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// The random part of the temp dir's name, which also names the instance's control groups.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.temp_dir);
        if let Some((path, _file)) = self.lock.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A folder (not a link) owned by this user, readable only by it.
fn is_private_dir(path: &Path) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_dir() && m.uid() == me && m.mode() & 0o777 == 0o700)
}

/// Writes and locks the lock under a draft name, then moves it into place: another seek's
/// `clean_stale` never sees it unlocked (it would take it for a dead instance's and remove this
/// one's temp dir).
fn take_lock(run_dir: &Path, name: &str, temp_dir: &Path) -> Option<(PathBuf, File)> {
    std::fs::create_dir_all(run_dir).ok()?;
    let path = run_dir.join(name);
    let mut draft = tempfile::Builder::new()
        .prefix(DRAFT_PREFIX)
        .tempfile_in(run_dir)
        .ok()?;
    if !try_flock(draft.as_file()) {
        return None;
    }
    draft.write_all(temp_dir.as_os_str().as_bytes()).ok()?;
    let file = draft.persist_noclobber(&path).ok()?;
    Some((path, file))
}

/// Locks being made start with this; `clean_stale` leaves them alone.
const DRAFT_PREFIX: &str = ".new-";

fn try_flock(file: &File) -> bool {
    // SAFETY: flock(2) on a descriptor this process owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Removes what dead instances left: for each lock in `run_dir` no live process holds, its temp
/// dir (only a private folder named like seek's in a temp dir) and its blocks' control groups,
/// killing what still runs in them. Returns how many instances were cleaned.
pub(crate) fn clean_stale(run_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return 0;
    };
    let mut cleaned = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(DRAFT_PREFIX) {
            // Being made by a seek that is starting (a crashed one's draft is a few bytes).
            continue;
        }
        let path = entry.path();
        let Ok(file) = File::open(&path) else {
            continue;
        };
        if !try_flock(&file) {
            continue; // alive
        }
        if let Ok(recorded) = std::fs::read(&path) {
            let temp_dir = PathBuf::from(std::ffi::OsString::from_vec(recorded));
            let named_like_ours = temp_dir
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == format!("{PREFIX}{name}"));
            if named_like_ours && is_private_dir(&temp_dir) {
                let _ = std::fs::remove_dir_all(&temp_dir);
            }
        }
        super::cgroup::remove_stale(&name);
        let _ = std::fs::remove_file(&path);
        cleaned += 1;
    }
    cleaned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temp_dir_is_fresh_private_and_removed() {
        let parent = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let instance = Instance::start(parent.path(), Some(run.path())).unwrap();
        let dir = instance.temp_dir().to_owned();
        assert!(is_private_dir(&dir));
        assert!(run.path().join(instance.name()).exists());
        assert_eq!(clean_stale(run.path()), 0, "a live instance is left alone");
        assert!(dir.exists());
        drop(instance);
        assert!(!dir.exists());
        assert_eq!(std::fs::read_dir(run.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_lock_being_made_is_left_alone() {
        let run = tempfile::tempdir().unwrap();
        std::fs::write(run.path().join(".new-abc"), "/tmp/seek-abc").unwrap();
        assert_eq!(clean_stale(run.path()), 0);
        assert!(run.path().join(".new-abc").exists());
    }

    #[test]
    fn a_dead_instance_is_cleaned_and_only_its_own_folder_removed() {
        let parent = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let stale_temp = parent.path().join("seek-abc");
        std::fs::create_dir(&stale_temp).unwrap();
        std::fs::set_permissions(&stale_temp, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(stale_temp.join("f"), "x").unwrap();
        std::fs::write(run.path().join("abc"), stale_temp.as_os_str().as_bytes()).unwrap();
        // A lock whose recorded folder is not named after it is not trusted.
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(run.path().join("xyz"), victim.path().as_os_str().as_bytes()).unwrap();
        assert_eq!(clean_stale(run.path()), 2);
        assert!(!stale_temp.exists());
        assert!(victim.path().exists());
    }
}
