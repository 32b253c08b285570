//! Which folders a block may write, carved so that seek's own files stay out of reach.
//!
//! Landlock only adds rights: a rule on a folder grants them to everything beneath it. When one of
//! seek's own folders (its config, its data dir) lies inside a writable root — the work dir is the
//! home folder, say — the root is not granted whole. Instead each of its entries is granted except
//! the one leading to seek's files, which is carved the same way, down to seek's folder itself.
//! The folders on the way keep their existing files writable (those are entries too) but get no
//! right to create, remove or rename entries, so nothing can be put in the place of seek's
//! folders either. Symbolic links among the entries are never granted (a rule would follow them).
//!
//! Owns this computation only; it must not build the ruleset or apply it.

use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One writable place: an open handle on it (taken without following links, so the rule is on the
/// very folder or file that was checked).
#[derive(Debug)]
pub(crate) struct Grant {
    pub handle: OwnedFd,
    /// Folders get every right; files only the rights that apply to files.
    pub is_dir: bool,
}

/// The places to grant write access beneath, given the writable `roots` and the `protected`
/// paths. Paths that do not exist are skipped. Comparisons use canonical paths.
pub(crate) fn writable_beneath(
    roots: &[PathBuf],
    protected: &[PathBuf],
) -> std::io::Result<Vec<Grant>> {
    let protected: Vec<PathBuf> = protected
        .iter()
        .filter_map(|p| canonical_or_parent(p))
        .collect();
    let mut grants = Vec::new();
    for root in roots {
        let Ok(root) = std::fs::canonicalize(root) else {
            continue;
        };
        carve(&root, &protected, &mut grants)?;
    }
    Ok(grants)
}

/// The canonical form of `path`, or of its nearest existing ancestor joined with the rest (a
/// config folder that does not exist yet is still protected).
fn canonical_or_parent(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = std::fs::canonicalize(path) {
        return Some(real);
    }
    let parent = path.parent()?;
    let name = path.file_name()?;
    Some(canonical_or_parent(parent)?.join(name))
}

fn carve(place: &Path, protected: &[PathBuf], grants: &mut Vec<Grant>) -> std::io::Result<()> {
    // A root that is itself seek's, or lies inside seek's files (the data dir's `cache` and
    // `workspace` are granted as roots of their own), is handled by the caller's choice of roots:
    // only folders strictly above a protected path are carved.
    let inside: Vec<&PathBuf> = protected
        .iter()
        .filter(|p| p.starts_with(place) && p.as_path() != place)
        .collect();
    let Some((handle, is_dir)) = open_no_follow(place) else {
        return Ok(());
    };
    if inside.is_empty() {
        if protected.iter().any(|p| p.as_path() == place) {
            return Ok(());
        }
        grants.push(Grant { handle, is_dir });
        return Ok(());
    }
    let entries = match std::fs::read_dir(place) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if protected.contains(&path) {
            continue;
        }
        if entry.file_type()?.is_symlink() {
            continue;
        }
        carve(&path, protected, grants)?;
    }
    Ok(())
}

/// An `O_PATH` handle on `path` itself and whether it is a folder; `None` for a symbolic link or
/// a path that is gone.
fn open_no_follow(path: &Path) -> Option<(OwnedFd, bool)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    (!meta.file_type().is_symlink()).then(|| (file.into(), meta.is_dir()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::fs::MetadataExt;

    /// The granted places, named by matching each handle's inode with `candidates`.
    fn paths(grants: &[Grant], candidates: &[PathBuf]) -> Vec<PathBuf> {
        let mut p: Vec<PathBuf> = grants
            .iter()
            .map(|g| {
                let held = std::fs::File::from(g.handle.try_clone().unwrap())
                    .metadata()
                    .unwrap();
                candidates
                    .iter()
                    .find(|c| {
                        let m = std::fs::symlink_metadata(c).unwrap();
                        (m.dev(), m.ino()) == (held.dev(), held.ino())
                    })
                    .cloned()
                    .unwrap_or_else(|| PathBuf::from("<unexpected>"))
            })
            .collect();
        p.sort();
        p
    }

    fn tree(root: &Path) -> Vec<PathBuf> {
        let mut all = vec![root.to_owned()];
        for entry in std::fs::read_dir(root).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                all.extend(tree(&entry.path()));
            } else {
                all.push(entry.path());
            }
        }
        all
    }

    #[test]
    fn a_root_without_protected_paths_is_granted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let other = tempfile::tempdir().unwrap();
        let grants =
            writable_beneath(std::slice::from_ref(&root), &[other.path().join("seek")]).unwrap();
        assert_eq!(paths(&grants, &tree(&root)), vec![root]);
    }

    #[test]
    fn protected_folders_inside_a_root_are_carved_out() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        for d in [
            ".config/seek",
            ".config/other",
            ".local/share/seek/cache",
            "proj",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join("notes.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", home.join("etc-link")).unwrap();
        let protected = [home.join(".config/seek"), home.join(".local/share/seek")];
        let roots = [home.clone(), home.join(".local/share/seek/cache")];
        let grants = writable_beneath(&roots, &protected).unwrap();
        assert_eq!(
            paths(&grants, &tree(&home)),
            vec![
                home.join(".config/other"),
                home.join(".local/share/seek/cache"),
                home.join("notes.txt"),
                home.join("proj"),
            ]
        );
    }

    #[test]
    fn a_protected_path_that_does_not_exist_yet_still_carves() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(home.join(".config")).unwrap();
        std::fs::create_dir_all(home.join("proj")).unwrap();
        let grants = writable_beneath(
            std::slice::from_ref(&home),
            &[home.join(".config/seek/config.toml")],
        )
        .unwrap();
        assert_eq!(paths(&grants, &tree(&home)), vec![home.join("proj")]);
    }

    #[test]
    fn a_root_that_is_protected_is_not_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let grants =
            writable_beneath(std::slice::from_ref(&root), std::slice::from_ref(&root)).unwrap();
        assert!(grants.is_empty());
    }
}
