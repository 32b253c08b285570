//! Removing sessions: `seek sessions rm ID…` and `seek sessions prune --older-than AGE`.
//!
//! Only what is surely a seek session goes: a regular file in the sessions folder, reached
//! without following a symbolic link, whose first line is a session header, and that no running
//! seek holds (its lock, `lock`). The lock is taken on the very file that was checked and kept
//! until it is unlinked, so a seek cannot start continuing it in between; the name is unlinked
//! only if it still names that file.
//!
//! Owns those checks and the unlinking. It must not write or rewrite any session.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::lock::{self, LockError};
use super::peek::Peek;
use super::store::{Summary, find, list, summarise};
use super::{Holder, SessionError};

/// What pruning did (or, on a dry run, would do).
#[derive(Debug, Default)]
pub struct Pruned {
    /// Removed (or to be removed), the least recently active first.
    pub removed: Vec<Summary>,
    /// Old enough but left: (id, why), e.g. in use by a running seek.
    pub kept: Vec<(String, String)>,
}

/// Removes the session `id` names (exactly or as the one id it starts); returns what it was.
pub fn remove(data_dir: &Path, id: &str) -> Result<Summary, SessionError> {
    let (id, path) = find(data_dir, id)?;
    remove_checked(&id, &path, false)
}

/// Removes every session whose last activity is older than `cutoff_ms` (ms since the epoch);
/// with `dry_run`, removes nothing and says what would go. A session in use is never touched.
pub fn prune(data_dir: &Path, cutoff_ms: u64, dry_run: bool) -> Result<Pruned, SessionError> {
    let mut old: Vec<Summary> = list(data_dir)?
        .sessions
        .into_iter()
        .filter(|s| s.last_activity_ms < cutoff_ms)
        .collect();
    old.sort_by(|a, b| (a.last_activity_ms, &a.id).cmp(&(b.last_activity_ms, &b.id)));
    let mut pruned = Pruned::default();
    for summary in old {
        match remove_checked(&summary.id, &summary.path, dry_run) {
            Ok(removed) => pruned.removed.push(removed),
            Err(e) => pruned.kept.push((summary.id, e.to_string())),
        }
    }
    Ok(pruned)
}

/// The checks of the module's contract, then the unlink (none on a dry run).
fn remove_checked(id: &str, path: &Path, dry_run: bool) -> Result<Summary, SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_owned(),
        source,
    };
    let named = std::fs::symlink_metadata(path).map_err(io)?;
    if !named.file_type().is_file() {
        return Err(SessionError::NotRemovable {
            path: path.to_owned(),
            why: "not a regular file (a link is never followed)".into(),
        });
    }
    // Refuses a link put in its place since: the file checked is the file locked and unlinked.
    let mut peek = Peek::open_no_follow(path).map_err(io)?;
    if peek.header().map_err(io)?.is_err() {
        return Err(SessionError::NotASession(path.to_owned()));
    }
    match lock::lock_exclusive(peek.file()) {
        Ok(()) => {}
        Err(LockError::Held { pid }) => {
            return Err(SessionError::Busy {
                id: id.to_owned(),
                holder: Holder(pid),
            });
        }
        Err(LockError::Io(source)) => return Err(io(source)),
    }
    let summary = summarise(path).map_err(|why| SessionError::NotRemovable {
        path: path.to_owned(),
        why,
    })?;
    if !dry_run {
        let opened = peek.file().metadata().map_err(io)?;
        let now = std::fs::symlink_metadata(path).map_err(io)?;
        if (opened.dev(), opened.ino()) != (now.dev(), now.ino()) {
            return Err(SessionError::NotRemovable {
                path: path.to_owned(),
                why: "it was replaced while being removed".into(),
            });
        }
        std::fs::remove_file(path).map_err(io)?;
        // What the engine had read of it goes with it (a cache, perhaps never written).
        let prefixes = super::store::prefix_file_of(path);
        for leftover in [prefixes.with_extension("kv.partial"), prefixes] {
            if let Err(e) = std::fs::remove_file(&leftover)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!("removing {} failed: {e}", leftover.display());
            }
        }
    }
    // The lock goes with `peek`, after the name is gone.
    drop(peek);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::AgentName;
    use crate::wire::Event;
    use std::path::PathBuf;

    fn sessions(dir: &Path) -> super::super::Sessions {
        super::super::Sessions {
            data_dir: dir.to_owned(),
            masker: std::sync::Arc::new(crate::secrets::Masker::new(Vec::<String>::new())),
            model: "m".into(),
            work_dir: "/w".into(),
        }
    }

    fn saved(dir: &Path, prompt: &str) -> (String, PathBuf) {
        let file = sessions(dir).create(AgentName::Casual).unwrap();
        file.record_event(&Event::TurnStarted {
            turn: 1,
            prompt: prompt.into(),
            agent: AgentName::Casual,
        });
        file.sync();
        (file.id().to_owned(), file.path().to_owned())
    }

    #[test]
    fn a_session_is_removed_by_a_unique_prefix_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        let (id, path) = saved(dir.path(), "first");
        let removed = remove(dir.path(), &id[..id.len() - 1]).unwrap();
        assert_eq!(removed.id, id);
        assert_eq!(removed.first_prompt, "first");
        assert!(!path.exists());
        assert!(matches!(
            remove(dir.path(), &id),
            Err(SessionError::NotFound { .. })
        ));
    }

    #[test]
    fn the_engines_saved_prefixes_go_with_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let (id, path) = saved(dir.path(), "first");
        let (kept, other) = saved(dir.path(), "second");
        let prefixes = super::super::prefix_file_of(&path);
        std::fs::write(&prefixes, b"cache").unwrap();
        std::fs::write(prefixes.with_extension("kv.partial"), b"half").unwrap();
        let others = super::super::prefix_file_of(&other);
        std::fs::write(&others, b"cache").unwrap();
        // A dry run leaves it.
        let before = prune(dir.path(), u64::MAX, true).unwrap();
        assert_eq!(before.removed.len(), 2);
        assert!(prefixes.exists());
        remove(dir.path(), &id).unwrap();
        assert!(!prefixes.exists());
        assert!(!prefixes.with_extension("kv.partial").exists());
        assert!(others.exists(), "{kept}'s stays");
        // A session never given one is removed all the same.
        std::fs::remove_file(&others).unwrap();
        remove(dir.path(), &kept).unwrap();
        assert!(!other.exists());
    }

    #[test]
    fn a_session_in_use_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = sessions(dir.path()).create(AgentName::Casual).unwrap();
        let err = remove(dir.path(), file.id()).unwrap_err();
        assert!(matches!(err, SessionError::Busy { .. }), "{err}");
        assert!(file.path().exists());
        let pruned = prune(dir.path(), u64::MAX, false).unwrap();
        assert!(pruned.removed.is_empty());
        assert_eq!(pruned.kept.len(), 1);
        assert!(file.path().exists());
    }

    #[test]
    fn links_folders_and_foreign_files_are_never_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (_, real) = saved(dir.path(), "kept");
        let outside = tempfile::tempdir().unwrap();
        let (_, target) = saved(outside.path(), "elsewhere");
        let folder = super::super::dir(dir.path());
        std::os::unix::fs::symlink(&target, folder.join("link.jsonl")).unwrap();
        std::fs::write(folder.join("notes.jsonl"), "{\"not\":\"a session\"}\n").unwrap();
        std::fs::create_dir(folder.join("sub.jsonl")).unwrap();
        for id in ["link", "notes", "sub"] {
            let err = remove(dir.path(), id).unwrap_err();
            assert!(
                matches!(
                    err,
                    SessionError::NotRemovable { .. }
                        | SessionError::NotASession(_)
                        | SessionError::NotFound { .. }
                ),
                "{id}: {err}"
            );
        }
        assert!(target.exists() && real.exists());
        assert!(folder.join("link.jsonl").symlink_metadata().is_ok());
        assert!(folder.join("notes.jsonl").exists());
    }

    #[test]
    fn ids_cannot_reach_outside_the_sessions_folder() {
        let dir = tempfile::tempdir().unwrap();
        let (_, real) = saved(dir.path(), "kept");
        let outside = dir.path().join("victim.jsonl");
        std::fs::copy(&real, &outside).unwrap();
        for id in ["../victim", "/etc/passwd", "", ".", ".."] {
            assert!(remove(dir.path(), id).is_err(), "{id:?}");
        }
        assert!(outside.exists());
    }

    #[test]
    fn a_dry_run_removes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (id, path) = saved(dir.path(), "old");
        let pruned = prune(dir.path(), u64::MAX, true).unwrap();
        assert_eq!(pruned.removed.len(), 1);
        assert_eq!(pruned.removed[0].id, id);
        assert!(path.exists());
        let pruned = prune(dir.path(), 0, false).unwrap();
        assert!(pruned.removed.is_empty(), "nothing is older than the epoch");
        let pruned = prune(dir.path(), u64::MAX, false).unwrap();
        assert_eq!(pruned.removed.len(), 1);
        assert!(!path.exists());
    }
}
