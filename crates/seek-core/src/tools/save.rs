//! Saving a block to its `:path` inside the work dir, so that nothing outside it is ever written,
//! whatever links, FIFOs or racing processes the work dir holds.
//!
//! Owns the save rules: a relative path with no `..` above the work dir; every folder opened
//! relative to the one before it, never through a symbolic link (a link anywhere is refused,
//! even one pointing inside: save to the real path); missing folders made with `mkdirat` in the
//! folder just opened; only a regular file with one name replaced, never one of seek's own
//! files. The code goes to a fresh temporary file in the target's folder, renamed over the
//! target: whatever is swapped in at the target's name meanwhile (a link, a FIFO, a hard link)
//! is replaced, never opened. It must not run code.

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::confined::{self, BadPath, Kind};
use super::own_files::{Identities, OwnFiles};

/// Why a block was not saved. Each message names the path and what to do instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SaveError {
    #[error("`{0}` is an absolute path; save paths are relative to the work dir (e.g. `hello.py`)")]
    Absolute(String),
    #[error("`{0}` leads outside the work dir; save paths must stay inside it")]
    Escapes(String),
    #[error("the save path is empty")]
    Empty,
    #[error("`{0}` holds a NUL byte, which no file name may hold")]
    Nul(String),
    #[error(
        "`{path}`: `{link}` is a symbolic link (to `{target}`); seek never saves through a link, wherever it points: save to the real path, with no link in it"
    )]
    Link {
        path: String,
        link: String,
        target: String,
    },
    #[error("`{path}`: `{folder}` is {kind}, not a folder")]
    NotAFolder {
        path: String,
        folder: String,
        kind: &'static str,
    },
    #[error(
        "`{path}` is {kind}, not a regular file; seek only saves regular files: save under another name"
    )]
    NotRegular { path: String, kind: &'static str },
    #[error(
        "`{path}` has {links} hard links (other names for the same file, which may be outside the work dir); seek does not save over a hard-linked file: save under another name"
    )]
    HardLinked { path: String, links: u64 },
    #[error(
        "`{path}` is seek's own {what}; blocks may never write seek's config, prompts, sessions, history or log"
    )]
    OwnFile { path: String, what: &'static str },
    #[error(
        "the sandbox is read-only, so `{0}` was not saved: nothing is written in the work dir in this mode"
    )]
    ReadOnly(String),
    #[error(
        "`{path}`: `{folder}` changed while seek was saving (a folder swapped with a link?); nothing was written: save again"
    )]
    Changed { path: String, folder: String },
    #[error("cannot write `{path}`: {message}")]
    Io { path: String, message: String },
}

/// Writes `code` to `path` (as written in the fence) inside `work_dir`, creating parent folders,
/// refusing every way out and every file of seek's own. Returns the file's absolute path.
pub fn save_block(
    work_dir: &Path,
    path: &str,
    code: &str,
    own: &OwnFiles,
) -> Result<PathBuf, SaveError> {
    // A fence's `:path` often carries spaces around it.
    let path = path.trim();
    let io = |e: std::io::Error| SaveError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let names = confined::components(path).map_err(|why| match why {
        BadPath::Empty => SaveError::Empty,
        BadPath::Absolute => SaveError::Absolute(path.to_owned()),
        BadPath::Escapes => SaveError::Escapes(path.to_owned()),
        BadPath::Nul => SaveError::Nul(path.to_owned()),
    })?;
    let Some((file_name, folders)) = names.split_last() else {
        return Err(SaveError::Empty);
    };
    let root_path = std::fs::canonicalize(work_dir).map_err(io)?;
    // No name is a followed link, so this is where the file really goes.
    let target = names.iter().fold(root_path.clone(), |acc, n| acc.join(n));
    if let Some(what) = own.covering(&target) {
        return Err(SaveError::OwnFile {
            path: path.to_owned(),
            what,
        });
    }
    let seeks = own.identities();
    let mut folder = confined::open_root(&root_path).map_err(io)?;
    let mut walked = PathBuf::new();
    for name in folders {
        walked.push(name);
        folder = enter_folder(folder.as_fd(), name, &walked, path)?;
        let node = confined::stat_fd(folder.as_fd()).map_err(io)?;
        if let Some(what) = seeks.of(node.device, node.inode) {
            return Err(SaveError::OwnFile {
                path: path.to_owned(),
                what,
            });
        }
    }
    let kept = replaceable(folder.as_fd(), file_name, path, &seeks)?;
    write_replacing(folder.as_fd(), file_name, code, kept).map_err(io)?;
    Ok(target)
}

/// Opens the folder `name` in `parent`, making it if missing; refuses a link or a non-folder.
fn enter_folder(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    walked: &Path,
    path: &str,
) -> Result<OwnedFd, SaveError> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY;
    let open = || confined::open_beneath(parent, Path::new(name), flags);
    let opened = match open() {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            match nix::sys::stat::mkdirat(parent, name, Mode::from_bits_truncate(0o777)) {
                // Made meanwhile by someone else: open whatever is there, by the same rules.
                Ok(()) | Err(Errno::EEXIST) => open(),
                Err(e) => Err(e.into()),
            }
        }
        other => other,
    };
    opened.map_err(|e| refused_name(parent, name, walked, path, e))
}

/// Why opening `name` in `parent` failed, in the model's terms.
fn refused_name(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    walked: &Path,
    path: &str,
    error: std::io::Error,
) -> SaveError {
    match confined::stat_at(parent, name).map(|n| n.kind) {
        Ok(Kind::Symlink) => SaveError::Link {
            path: path.to_owned(),
            link: walked.display().to_string(),
            target: confined::link_target(parent, name),
        },
        Ok(kind) if kind != Kind::Folder => SaveError::NotAFolder {
            path: path.to_owned(),
            folder: walked.display().to_string(),
            kind: kind.described(),
        },
        // It was a link (or not a folder) when opened and is a folder now: something is
        // swapping them.
        Ok(_) if matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            SaveError::Changed {
                path: path.to_owned(),
                folder: walked.display().to_string(),
            }
        }
        _ => SaveError::Io {
            path: path.to_owned(),
            message: format!("{}: {error}", walked.display()),
        },
    }
}

/// What a replaced file passes on to the new one.
#[derive(Debug, Clone, Copy)]
struct Kept {
    permissions: u32,
    owner: u32,
    group: u32,
}

/// Whether the file `name` in `folder` may be replaced: missing (`None`: new file), or a regular
/// file with one name that is not seek's (`Some(what the new file keeps)`).
fn replaceable(
    folder: BorrowedFd<'_>,
    name: &OsStr,
    path: &str,
    seeks: &Identities,
) -> Result<Option<Kept>, SaveError> {
    let node = match confined::stat_at(folder, name) {
        Ok(node) => node,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => {
            return Err(SaveError::Io {
                path: path.to_owned(),
                message: e.to_string(),
            });
        }
    };
    let path = path.to_owned();
    match node.kind {
        Kind::Symlink => Err(SaveError::Link {
            link: path.clone(),
            target: confined::link_target(folder, name),
            path,
        }),
        Kind::Regular => {
            if let Some(what) = seeks.of(node.device, node.inode) {
                Err(SaveError::OwnFile { path, what })
            } else if node.links > 1 {
                Err(SaveError::HardLinked {
                    path,
                    links: node.links,
                })
            } else {
                Ok(Some(Kept {
                    permissions: node.permissions,
                    owner: node.owner,
                    group: node.group,
                }))
            }
        }
        kind => Err(SaveError::NotRegular {
            path,
            kind: kind.described(),
        }),
    }
}

/// Writes `code` to a new temporary file in `folder` and renames it to `name`. The new file
/// keeps the permissions of the file it replaces, and its owner where seek may give it (as
/// root); a new file gets 0666 less the umask.
fn write_replacing(
    folder: BorrowedFd<'_>,
    name: &OsStr,
    code: &str,
    kept: Option<Kept>,
) -> std::io::Result<()> {
    let (temp_name, file) = create_temp(folder)?;
    let written = (|| {
        let mut file = std::fs::File::from(file);
        file.write_all(code.as_bytes())?;
        if let Some(kept) = kept {
            // Best effort: only root may give a file away; chown before chmod, which it resets.
            let _ = std::os::unix::fs::fchown(&file, Some(kept.owner), Some(kept.group));
            nix::sys::stat::fchmod(file.as_fd(), Mode::from_bits_truncate(kept.permissions))?;
        }
        nix::fcntl::renameat(folder, temp_name.as_os_str(), folder, name)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = nix::unistd::unlinkat(
            folder,
            temp_name.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
    written
}

/// A new, empty file in `folder` under an unused random name. `O_EXCL` makes it ours: a link or
/// anything else already holding the name makes the call fail instead of opening it.
fn create_temp(folder: BorrowedFd<'_>) -> std::io::Result<(OsString, OwnedFd)> {
    let flags = OFlag::O_WRONLY
        | OFlag::O_CREAT
        | OFlag::O_EXCL
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC;
    let mut last = Errno::EEXIST;
    for _ in 0..16 {
        let name = OsString::from(format!(".seek-save-{:016x}", random()));
        match nix::fcntl::openat(
            folder,
            name.as_os_str(),
            flags,
            Mode::from_bits_truncate(0o666),
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(Errno::EEXIST) => last = Errno::EEXIST,
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.into())
}

/// A random number from the standard library's per-process hash keys (no extra crate); the
/// names only need to be hard to guess, `O_EXCL` makes them safe.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};

    fn save(dir: &Path, path: &str, code: &str) -> Result<PathBuf, SaveError> {
        save_block(dir, path, code, &OwnFiles::default())
    }

    #[test]
    fn saves_inside_and_creates_folders() {
        let dir = tempfile::tempdir().expect("tempdir");
        let saved = save(dir.path(), " sub/dir/tmp.py ", "print(1)\n").expect("saved");
        assert_eq!(std::fs::read_to_string(&saved).expect("read"), "print(1)\n");
        assert!(saved.ends_with("sub/dir/tmp.py"));
        save(dir.path(), "a/../b.py", "x").expect("a/../b stays inside");
        assert!(dir.path().join("b.py").exists());
        // Saving again replaces the file and keeps its permissions.
        std::fs::set_permissions(&saved, std::fs::Permissions::from_mode(0o750)).expect("chmod");
        save(dir.path(), "sub/dir/tmp.py", "print(2)\n").expect("saved again");
        assert_eq!(std::fs::read_to_string(&saved).expect("read"), "print(2)\n");
        let meta = std::fs::metadata(&saved).expect("meta");
        assert_eq!(meta.permissions().mode() & 0o777, 0o750);
        // As root, seek also keeps the owner of the file it replaces.
        if meta.uid() == 0 {
            std::os::unix::fs::chown(&saved, Some(4321), Some(4321)).expect("chown");
            save(dir.path(), "sub/dir/tmp.py", "print(3)\n").expect("saved as root");
            let meta = std::fs::metadata(&saved).expect("meta");
            assert_eq!((meta.uid(), meta.gid()), (4321, 4321));
            assert_eq!(meta.permissions().mode() & 0o777, 0o750);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub/dir"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["tmp.py"], "no temporary file is left");
    }

    #[test]
    fn refuses_every_way_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        let w = dir.path();
        std::fs::write(outside.path().join("target"), "original").expect("target");
        symlink(outside.path(), w.join("link")).expect("symlink");
        symlink(outside.path().join("f.py"), w.join("f.py")).expect("file link");
        symlink(outside.path().join("target"), w.join("g.py")).expect("hop 2");
        symlink("g.py", w.join("chain.py")).expect("hop 1");
        symlink("link", w.join("chain-dir")).expect("folder chain");
        std::fs::hard_link(outside.path().join("target"), w.join("hard.py")).expect("hard link");
        let cases = [
            ("/etc/passwd", "absolute"),
            ("~/x.py", "absolute"),
            ("../x.py", "outside"),
            ("a/../../x.py", "outside"),
            ("link/x.py", "`link` is a symbolic link"),
            ("link/new/x.py", "`link` is a symbolic link"),
            ("f.py", "`f.py` is a symbolic link"),
            ("chain.py", "`chain.py` is a symbolic link (to `g.py`)"),
            ("chain-dir/x.py", "`chain-dir` is a symbolic link"),
            ("hard.py", "has 2 hard links"),
            ("", "empty"),
            ("a\0b", "NUL"),
        ];
        for (path, why) in cases {
            let err = save(w, path, "x").expect_err(path).to_string();
            assert!(err.contains(why), "{path}: {err}");
        }
        let outside_names: Vec<_> = std::fs::read_dir(outside.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(outside_names, ["target"], "nothing written outside");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("target")).expect("read"),
            "original"
        );
        assert!(
            !w.join("link/new").exists(),
            "no folder made through a link"
        );
    }

    #[test]
    fn a_link_inside_the_work_dir_is_refused_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = dir.path();
        std::fs::create_dir(w.join("real")).expect("dir");
        std::fs::write(w.join("real/x.py"), "old").expect("file");
        symlink("real", w.join("alias")).expect("inner link");
        symlink("real/x.py", w.join("y.py")).expect("inner file link");
        let err = save(w, "alias/x.py", "new").expect_err("through an inner link");
        assert!(err.to_string().contains("save to the real path"), "{err}");
        assert!(save(w, "y.py", "new").is_err());
        assert_eq!(
            std::fs::read_to_string(w.join("real/x.py")).expect("read"),
            "old"
        );
        save(w, "real/x.py", "new").expect("the real path is saved");
        assert_eq!(
            std::fs::read_to_string(w.join("real/x.py")).expect("read"),
            "new"
        );
    }

    #[test]
    fn only_regular_files_are_replaced_and_a_fifo_never_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = dir.path();
        nix::unistd::mkfifo(&w.join("pipe.py"), Mode::from_bits_truncate(0o600)).expect("fifo");
        std::fs::create_dir(w.join("folder.py")).expect("dir");
        std::fs::write(w.join("file"), "x").expect("file");
        let err = save(w, "pipe.py", "x").expect_err("fifo").to_string();
        assert!(
            err.contains("is a FIFO (named pipe), not a regular file"),
            "{err}"
        );
        let err = save(w, "folder.py", "x").expect_err("folder").to_string();
        assert!(err.contains("is a folder, not a regular file"), "{err}");
        let err = save(w, "file/x.py", "x")
            .expect_err("file as folder")
            .to_string();
        assert!(
            err.contains("`file` is a regular file, not a folder"),
            "{err}"
        );
        let socket = std::os::unix::net::UnixListener::bind(w.join("sock.py")).expect("socket");
        let err = save(w, "sock.py", "x").expect_err("socket").to_string();
        assert!(err.contains("is a socket"), "{err}");
        drop(socket);
        assert!(
            std::fs::symlink_metadata(w.join("pipe.py"))
                .expect("still there")
                .file_type()
                .is_fifo()
        );
    }

    #[test]
    fn seeks_own_files_are_refused_by_path_and_by_any_other_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        // The work dir holds seek's config folder (say the work dir is the home).
        std::fs::create_dir_all(root.join(".config/seek")).expect("config dir");
        let config = root.join(".config/seek/config.toml");
        std::fs::write(&config, "max_rounds = 3\n").expect("config");
        std::fs::create_dir_all(root.join("data")).expect("data");
        let own = OwnFiles::new([
            (config.clone(), "config file"),
            (root.join(".config/seek"), "config folder"),
            (root.join("data/sessions"), "session files"),
        ]);
        let save = |path: &str| save_block(&root, path, "sandbox = \"off\"\n", &own);
        let err = save(".config/seek/config.toml")
            .expect_err("config")
            .to_string();
        assert!(err.contains("seek's own config"), "{err}");
        let err = save(".config/seek/prompts/coder.md")
            .expect_err("prompts")
            .to_string();
        assert!(err.contains("seek's own config folder"), "{err}");
        let err = save("data/sessions/new.jsonl")
            .expect_err("not made yet")
            .to_string();
        assert!(err.contains("seek's own session files"), "{err}");
        std::fs::hard_link(&config, root.join("cfg.toml")).expect("hard link");
        let err = save("cfg.toml").expect_err("hard link").to_string();
        assert!(err.contains("seek's own config file"), "{err}");
        // A folder that is seek's under another name: a bind mount would do; a hard link to a
        // folder cannot exist, so the identity check is tested on the file above.
        assert_eq!(
            std::fs::read_to_string(&config).expect("config"),
            "max_rounds = 3\n"
        );
        assert_eq!(std::fs::metadata(&config).expect("meta").nlink(), 2);
        assert!(!root.join(".config/seek/prompts").exists());
    }
}
