//! The work dir's file names for `@path` completion: a bounded, breadth-first walk.
//!
//! Owns which entries are listed: relative paths with `/` separators, directories ending in `/`,
//! at most a few thousand, skipping `.git`, `target` and `node_modules`. It reads directory
//! entries only (never file contents), does not follow symbolic links into directories (a link
//! loop or a link to `/` cannot make it walk the machine) and leaves out names that are not
//! UTF-8 or hold control characters (they could not be typed back, nor shown as they are). It
//! must not draw or decide what is attached: the agent reads the file the prompt names.

use std::collections::VecDeque;
use std::path::Path;

/// Entries listed at most; the walk stops there (big trees stay fast to complete).
pub(crate) const LIMIT: usize = 3_000;
/// Directories read at most, so a tree of empty folders cannot keep the walk going.
const DIRS: usize = 1_000;
/// Folders never walked into: build output and dependencies nobody attaches.
const SKIPPED: [&str; 3] = [".git", "target", "node_modules"];

/// The entries under `root`, shallowest first, each directory's sorted by name.
pub fn list(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut queue = VecDeque::from([String::new()]);
    let mut dirs_read = 0;
    while let Some(relative) = queue.pop_front() {
        if dirs_read == DIRS || found.len() >= LIMIT {
            break;
        }
        dirs_read += 1;
        let Ok(entries) = std::fs::read_dir(root.join(&relative)) else {
            continue;
        };
        let mut here: Vec<(String, bool)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                if name.chars().any(char::is_control) || SKIPPED.contains(&name.as_str()) {
                    return None;
                }
                // `file_type` does not follow links: a link to a directory is listed as a
                // name, never walked.
                let is_dir = entry.file_type().ok()?.is_dir();
                Some((name, is_dir))
            })
            .collect();
        here.sort();
        for (name, is_dir) in here {
            if found.len() >= LIMIT {
                break;
            }
            let path = format!("{relative}{name}");
            if is_dir {
                let dir = format!("{path}/");
                queue.push_back(dir.clone());
                found.push(dir);
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_is_relative_bounded_and_skips_build_dirs_and_links() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for folder in ["src/deep", ".git/objects", "target/debug", "node_modules/x"] {
            std::fs::create_dir_all(root.join(folder)).expect("mkdir");
        }
        for file in [
            "notes.txt",
            "src/main.rs",
            "src/deep/x.rs",
            "target/debug/seek",
        ] {
            std::fs::write(root.join(file), "x").expect("write");
        }
        std::os::unix::fs::symlink("/", root.join("root-link")).expect("link");
        std::fs::write(root.join("bad\x1bname"), "x").expect("write");
        let listed = list(root);
        assert_eq!(
            listed,
            [
                "notes.txt",
                "root-link",
                "src/",
                "src/deep/",
                "src/main.rs",
                "src/deep/x.rs"
            ]
        );

        for i in 0..LIMIT + 10 {
            std::fs::write(root.join(format!("f{i:05}")), "").expect("write");
        }
        assert_eq!(list(root).len(), LIMIT, "bounded");
        assert!(list(&root.join("missing")).is_empty());
    }
}
