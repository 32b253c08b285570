//! seek's own files (its config, prompt overrides, sessions, prompt history and log) as a save
//! must see them: by path, for a file not made yet, and by identity (device and inode) for
//! every other name an existing file or folder may have.
//!
//! Owns the list and the two checks. It must not decide where seek keeps its files: whoever
//! builds the tool context names them (`Config::own_files`).

use std::path::{Path, PathBuf};

/// One of seek's files or folders (a folder covers everything in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnFile {
    pub path: PathBuf,
    /// What it is, for messages: "config file", "session files", ….
    pub what: &'static str,
}

/// The files blocks' saves must never write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnFiles {
    entries: Vec<OwnFile>,
}

impl OwnFiles {
    pub fn new(entries: impl IntoIterator<Item = (PathBuf, &'static str)>) -> Self {
        Self {
            entries: entries
                .into_iter()
                .map(|(path, what)| OwnFile { path, what })
                .collect(),
        }
    }

    pub fn entries(&self) -> &[OwnFile] {
        &self.entries
    }

    /// What `path` (absolute, canonical, with no link in it) is of seek's, if it is one of its
    /// files or lies in one of its folders.
    pub(crate) fn covering(&self, path: &Path) -> Option<&'static str> {
        self.entries
            .iter()
            .find(|e| path.starts_with(resolved(&e.path)))
            .map(|e| e.what)
    }

    /// The device and inode of every entry that exists now. Taken at each save: a session or
    /// the history may have been created since the last one.
    pub(crate) fn identities(&self) -> Identities {
        use std::os::unix::fs::MetadataExt;
        Identities(
            self.entries
                .iter()
                .filter_map(|e| {
                    let meta = std::fs::metadata(&e.path).ok()?;
                    Some((meta.dev(), meta.ino(), e.what))
                })
                .collect(),
        )
    }
}

/// Devices and inodes of seek's own files, at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Identities(Vec<(u64, u64, &'static str)>);

impl Identities {
    /// What the file `device`:`inode` is of seek's, if it is one of its files or folders.
    pub(crate) fn of(&self, device: u64, inode: u64) -> Option<&'static str> {
        self.0
            .iter()
            .find(|(d, i, _)| *d == device && *i == inode)
            .map(|(_, _, what)| *what)
    }
}

/// `path` with its longest existing ancestor made canonical and the rest appended, so a file
/// not created yet compares with the real location of the folder it would go in.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut missing = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            return missing
                .iter()
                .rev()
                .fold(canonical, |acc: PathBuf, name| acc.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_files_folders_and_files_not_made_yet() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("config/seek")).expect("config dir");
        std::fs::write(root.join("config/seek/config.toml"), "").expect("config");
        // The data dir is reached through a link: the check compares real locations.
        std::fs::create_dir_all(root.join("real-data")).expect("data");
        std::os::unix::fs::symlink(root.join("real-data"), root.join("data")).expect("link");
        let own = OwnFiles::new([
            (root.join("config/seek"), "config folder"),
            (root.join("data/sessions"), "session files"),
            (root.join("data/history"), "prompt history"),
        ]);
        assert_eq!(
            own.covering(&root.join("config/seek/config.toml")),
            Some("config folder")
        );
        assert_eq!(
            own.covering(&root.join("config/seek/prompts/coder.md")),
            Some("config folder")
        );
        assert_eq!(
            own.covering(&root.join("real-data/sessions/x.jsonl")),
            Some("session files"),
            "a folder not made yet, behind a link"
        );
        assert_eq!(
            own.covering(&root.join("real-data/history")),
            Some("prompt history")
        );
        assert_eq!(own.covering(&root.join("real-data/historyx")), None);
        assert_eq!(own.covering(&root.join("config/seek-other")), None);
        assert_eq!(own.covering(&root.join("work/x.py")), None);
    }

    #[test]
    fn identities_are_taken_for_what_exists() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "").expect("config");
        let own = OwnFiles::new([
            (config.clone(), "config file"),
            (dir.path().join("absent"), "log"),
        ]);
        let meta = std::fs::metadata(&config).expect("meta");
        let ids = own.identities();
        assert_eq!(ids.of(meta.dev(), meta.ino()), Some("config file"));
        assert_eq!(ids.of(meta.dev(), meta.ino() + 1), None);
    }
}
