//! Saving a block to its `:path` inside the work dir.
//!
//! Owns the confinement rules: relative paths only, no `..` escape, no symlink (in the path or as
//! the file) that leads outside the work dir; parent folders are created. It must not run code.

use std::path::{Component, Path, PathBuf};

/// Why a block was not saved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SaveError {
    #[error("`{0}` is an absolute path; save paths are relative to the work dir (e.g. `hello.py`)")]
    Absolute(String),
    #[error("`{0}` leads outside the work dir; save paths must stay inside it")]
    Escapes(String),
    #[error("`{path}` goes through a link to {target}, outside the work dir")]
    SymlinkEscape { path: String, target: String },
    #[error("the save path is empty")]
    Empty,
    #[error("cannot write `{path}`: {message}")]
    Io { path: String, message: String },
}

/// Writes `code` to `path` (as written in the fence) inside `work_dir`, creating parent folders.
/// Returns the file's absolute path.
pub fn save_block(work_dir: &Path, path: &str, code: &str) -> Result<PathBuf, SaveError> {
    let target = confined_path(work_dir, path)?;
    std::fs::write(&target, code).map_err(|e| SaveError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    Ok(target)
}

/// Resolves `path` inside `work_dir`, creating missing parent folders, refusing every way out.
pub fn confined_path(work_dir: &Path, path: &str) -> Result<PathBuf, SaveError> {
    let io = |e: std::io::Error| SaveError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let trimmed = path.trim();
    if trimmed.is_empty() {
        return Err(SaveError::Empty);
    }
    let relative = Path::new(trimmed);
    if relative.is_absolute() || trimmed.starts_with('~') {
        return Err(SaveError::Absolute(path.to_owned()));
    }
    let root = std::fs::canonicalize(work_dir).map_err(io)?;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                // `a/../b` stays inside; `../b` does not.
                if parts.pop().is_none() {
                    return Err(SaveError::Escapes(path.to_owned()));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(SaveError::Absolute(path.to_owned()));
            }
        }
    }
    let Some((file_name, dirs)) = parts.split_last() else {
        return Err(SaveError::Empty);
    };
    let mut current = root.clone();
    for dir in dirs {
        current.push(dir);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                current = inside(&root, &current, path)?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&current).map_err(io)?;
            }
            Err(e) => return Err(io(e)),
        }
    }
    current.push(file_name);
    if std::fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink()) {
        let target = std::fs::read_link(&current).map_err(io)?;
        let resolved = current
            .parent()
            .map_or(target.clone(), |parent| parent.join(&target));
        let resolved_parent = resolved
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok());
        if !resolved_parent.is_some_and(|p| p.starts_with(&root)) {
            return Err(SaveError::SymlinkEscape {
                path: path.to_owned(),
                target: target.display().to_string(),
            });
        }
    }
    Ok(current)
}

/// Resolves a symlinked folder and checks it stays under `root`.
fn inside(root: &Path, link: &Path, path: &str) -> Result<PathBuf, SaveError> {
    let resolved = std::fs::canonicalize(link).map_err(|e| SaveError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if resolved.starts_with(root) {
        Ok(resolved)
    } else {
        Err(SaveError::SymlinkEscape {
            path: path.to_owned(),
            target: resolved.display().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_inside_and_creates_folders() {
        let dir = tempfile::tempdir().expect("tempdir");
        let saved = save_block(dir.path(), " sub/dir/tmp.py ", "print(1)\n").expect("saved");
        assert_eq!(std::fs::read_to_string(&saved).expect("read"), "print(1)\n");
        assert!(saved.ends_with("sub/dir/tmp.py"));
        save_block(dir.path(), "a/../b.py", "x").expect("a/../b stays inside");
        assert!(dir.path().join("b.py").exists());
    }

    #[test]
    fn refuses_every_way_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).expect("symlink");
        std::os::unix::fs::symlink(outside.path().join("f.py"), dir.path().join("f.py"))
            .expect("file link");
        let cases = [
            ("/etc/passwd", "absolute"),
            ("~/x.py", "absolute"),
            ("../x.py", "outside"),
            ("a/../../x.py", "outside"),
            ("link/x.py", "link"),
            ("f.py", "link"),
            ("", "empty"),
        ];
        for (path, why) in cases {
            let err = save_block(dir.path(), path, "x")
                .expect_err(path)
                .to_string();
            assert!(err.contains(why), "{path}: {err}");
        }
        assert_eq!(
            std::fs::read_dir(outside.path()).expect("ls").count(),
            0,
            "nothing written outside"
        );
    }
}
