//! `file_finder`'s disk side: walking the work dir and reading one file, both through
//! `confined` (no link followed, nothing above the work dir), never blocking on a FIFO (an entry
//! is only opened once it is known to be a regular file, and then with `O_NONBLOCK`), bounded,
//! and ending as soon as the turn is stopped.
//!
//! Owns what is visited and read. It must not rank or format results (the tool does).

use std::ffi::OsString;
use std::io::Read as _;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use tokio_util::sync::CancellationToken;

use crate::tools::confined::{self, Kind};

/// Folders never searched.
const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules"];
/// Entries visited at most, so a huge tree cannot stall a turn.
pub(super) const MAX_VISITED: usize = 200_000;
/// Bytes read per call, between checks for a stop.
const READ_CHUNK: usize = 64 * 1024;

/// The turn was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stopped;

/// What a matching entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum What {
    File {
        size: u64,
    },
    /// A symbolic link, listed but never followed.
    Link {
        target: String,
    },
    /// A FIFO, socket or device: listed, never opened.
    Other(Kind),
}

/// One entry that matched.
#[derive(Debug, Clone)]
pub(super) struct Found {
    /// From the work dir, with no link in it.
    pub relative: PathBuf,
    pub name: String,
    pub rank: u8,
    pub what: What,
}

/// Every entry below `root` (folders excepted) whose name and relative path `rank` accepts,
/// best first; and whether the walk stopped at `MAX_VISITED`. Linked folders are not entered,
/// and a folder swapped for a link while walking is skipped.
pub(super) fn search(
    root: BorrowedFd<'_>,
    cancel: &CancellationToken,
    rank: impl Fn(&str, &str) -> Option<u8>,
) -> Result<(Vec<Found>, bool), Stopped> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    let mut visited = 0;
    while let Some(folder) = pending.pop() {
        if cancel.is_cancelled() {
            return Err(Stopped);
        }
        let Ok(fd) = confined::open_beneath(root, &folder, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
        else {
            continue;
        };
        let Ok(mut dir) = nix::dir::Dir::from_fd(fd) else {
            continue;
        };
        let mut entries = Vec::new();
        for entry in dir.iter() {
            // One entry past the bound is enough to say the search was cut.
            if visited + entries.len() > MAX_VISITED {
                break;
            }
            if entries.len() % 1024 == 1023 && cancel.is_cancelled() {
                return Err(Stopped);
            }
            let Ok(entry) = entry else { break };
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                entries.push((OsString::from_vec(name.to_vec()), entry.file_type()));
            }
        }
        let dir_fd = dir.as_fd();
        for (name, listed) in entries {
            visited += 1;
            if visited > MAX_VISITED {
                sort(&mut found);
                return Ok((found, true));
            }
            if visited % 1024 == 0 && cancel.is_cancelled() {
                return Err(Stopped);
            }
            let kind = match listed {
                Some(listed) => kind_listed(listed),
                // Some file systems do not say in the listing.
                None => match confined::stat_at(dir_fd, &name) {
                    Ok(node) => node.kind,
                    Err(_) => continue,
                },
            };
            let relative = folder.join(&name);
            let shown = name.to_string_lossy().into_owned();
            if kind == Kind::Folder {
                if !SKIPPED_DIRS.contains(&shown.as_str()) {
                    pending.push(relative);
                }
                continue;
            }
            let Some(rank) = rank(&shown, &relative.to_string_lossy()) else {
                continue;
            };
            let what = match kind {
                Kind::Symlink => What::Link {
                    target: confined::link_target(dir_fd, &name),
                },
                Kind::Regular => What::File {
                    size: confined::stat_at(dir_fd, &name).map_or(0, |n| n.size),
                },
                other => What::Other(other),
            };
            found.push(Found {
                relative,
                name: shown,
                rank,
                what,
            });
        }
    }
    sort(&mut found);
    Ok((found, false))
}

/// Best rank first, then shallower paths, then by name.
fn sort(found: &mut [Found]) {
    found.sort_by(|a, b| {
        let key = |f: &Found| (f.rank, f.relative.components().count());
        key(a)
            .cmp(&key(b))
            .then_with(|| a.relative.cmp(&b.relative))
    });
}

fn kind_listed(listed: nix::dir::Type) -> Kind {
    use nix::dir::Type;
    match listed {
        Type::Directory => Kind::Folder,
        Type::Symlink => Kind::Symlink,
        Type::Fifo => Kind::Fifo,
        Type::Socket => Kind::Socket,
        Type::CharacterDevice => Kind::CharDevice,
        Type::BlockDevice => Kind::BlockDevice,
        Type::File => Kind::Regular,
    }
}

/// The first `cap` bytes of the regular file `relative` and its size; or why it is not read.
pub(super) fn read(
    root: BorrowedFd<'_>,
    relative: &Path,
    cap: u64,
    cancel: &CancellationToken,
) -> Result<Result<(Vec<u8>, u64), String>, Stopped> {
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let fd = match confined::open_beneath(root, relative, flags) {
        Ok(fd) => fd,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            return Ok(Err(
                "its path now goes through a symbolic link, and seek never follows links".into(),
            ));
        }
        Err(e) => return Ok(Err(format!("cannot read it: {e}"))),
    };
    // Checked again on what was opened: the entry may have been swapped since the listing.
    let node = match confined::stat_fd(fd.as_fd()) {
        Ok(node) => node,
        Err(e) => return Ok(Err(format!("cannot read it: {e}"))),
    };
    if node.kind != Kind::Regular {
        return Ok(Err(format!(
            "it is {}, not a regular file; only regular files are read",
            node.kind.described()
        )));
    }
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    while bytes.len() < cap {
        if cancel.is_cancelled() {
            return Err(Stopped);
        }
        let want = (cap - bytes.len()).min(READ_CHUNK);
        match file.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Ok(Err(format!("cannot read it: {e}"))),
        }
    }
    Ok(Ok((bytes, node.size)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn contains(wanted: &'static str) -> impl Fn(&str, &str) -> Option<u8> {
        move |name, _| name.contains(wanted).then_some(0)
    }

    #[test]
    fn links_are_listed_not_entered_and_other_files_are_named() {
        let work = tempfile::tempdir().expect("work");
        let outside = tempfile::tempdir().expect("outside");
        let w = work.path();
        std::fs::create_dir_all(w.join("a/.git")).expect("dirs");
        std::fs::write(w.join("a/x-file"), "12345").expect("file");
        std::fs::write(w.join("a/.git/x-hidden"), "").expect("skipped");
        std::fs::write(outside.path().join("x-outside"), "").expect("outside file");
        symlink(outside.path(), w.join("x-dir-link")).expect("dir link");
        symlink("a/x-file", w.join("x-link")).expect("file link");
        nix::unistd::mkfifo(
            &w.join("x-pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .expect("fifo");
        let root = confined::open_root(w).expect("root");
        let (found, cut) =
            search(root.as_fd(), &CancellationToken::new(), contains("x-")).expect("search");
        assert!(!cut);
        let seen: Vec<(String, What)> = found
            .iter()
            .map(|f| (f.relative.display().to_string(), f.what.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "x-dir-link".into(),
                    What::Link {
                        target: outside.path().display().to_string()
                    }
                ),
                (
                    "x-link".into(),
                    What::Link {
                        target: "a/x-file".into()
                    }
                ),
                ("x-pipe".into(), What::Other(Kind::Fifo)),
                ("a/x-file".into(), What::File { size: 5 }),
            ]
        );
    }

    #[test]
    fn reads_are_bounded_refuse_fifos_and_stop_when_asked() {
        let work = tempfile::tempdir().expect("work");
        let w = work.path();
        std::fs::write(w.join("big"), vec![b'a'; 300_000]).expect("big");
        nix::unistd::mkfifo(
            &w.join("pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .expect("fifo");
        symlink("big", w.join("link")).expect("link");
        let root = confined::open_root(w).expect("root");
        let go = CancellationToken::new();
        let (bytes, size) = read(root.as_fd(), Path::new("big"), 100_000, &go)
            .expect("not stopped")
            .expect("read");
        assert_eq!((bytes.len(), size), (100_000, 300_000));
        let why = read(root.as_fd(), Path::new("pipe"), 10, &go)
            .expect("not stopped")
            .expect_err("a fifo is not read");
        assert!(
            why.contains("a FIFO (named pipe), not a regular file"),
            "{why}"
        );
        let why = read(root.as_fd(), Path::new("link"), 10, &go)
            .expect("not stopped")
            .expect_err("a link is not followed");
        assert!(why.contains("symbolic link"), "{why}");

        let stopped = CancellationToken::new();
        stopped.cancel();
        assert_eq!(
            read(root.as_fd(), Path::new("big"), 100_000, &stopped).map(|_| ()),
            Err(Stopped)
        );
        assert_eq!(
            search(root.as_fd(), &stopped, contains("b")).map(|_| ()),
            Err(Stopped)
        );
    }
}
