//! Opening paths inside a folder without ever leaving it: every name is resolved relative to the
//! folder's file descriptor and no symbolic link is followed, so neither a link (however many
//! hops) nor a folder swapped for a link while seek works can lead out.
//!
//! Owns the path rules shared by saves and `file_finder` (relative, normalised, no `..` above the
//! start) and the two ways the kernel enforces "no link, never above": `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux 5.6+), and, where that call is missing or
//! filtered (`ENOSYS`, or `EPERM` from a seccomp filter), a walk opening one name at a time with
//! `O_NOFOLLOW`. It must not write anything.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

/// Why a path written by the model is not one seek resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadPath {
    Empty,
    /// Absolute, or starting with `~`.
    Absolute,
    /// `..` climbs above the start.
    Escapes,
    /// A NUL byte, which no file name may hold.
    Nul,
}

/// The names of `path` (relative, `.` dropped, `a/../b` folded to `b`), or why it is refused.
/// Surrounding whitespace is trimmed: a fence's `:path` often carries some.
pub(crate) fn components(path: &str) -> Result<Vec<OsString>, BadPath> {
    let trimmed = path.trim();
    if trimmed.is_empty() {
        return Err(BadPath::Empty);
    }
    if trimmed.contains('\0') {
        return Err(BadPath::Nul);
    }
    let relative = Path::new(trimmed);
    if relative.is_absolute() || trimmed.starts_with('~') {
        return Err(BadPath::Absolute);
    }
    let mut parts: Vec<OsString> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_owned()),
            Component::CurDir => {}
            // Folding `a/..` by name is right here because no name is ever a followed link.
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(BadPath::Escapes);
                }
            }
            Component::RootDir | Component::Prefix(_) => return Err(BadPath::Absolute),
        }
    }
    if parts.is_empty() {
        return Err(BadPath::Empty);
    }
    Ok(parts)
}

/// What kind of file a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Regular,
    Folder,
    Symlink,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl Kind {
    fn of(stat: &FileStat) -> Self {
        match SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFDIR => Self::Folder,
            SFlag::S_IFLNK => Self::Symlink,
            SFlag::S_IFIFO => Self::Fifo,
            SFlag::S_IFSOCK => Self::Socket,
            SFlag::S_IFCHR => Self::CharDevice,
            SFlag::S_IFBLK => Self::BlockDevice,
            _ => Self::Regular,
        }
    }

    /// The kind with its article, for messages: "a FIFO (named pipe)".
    pub(crate) fn described(self) -> &'static str {
        match self {
            Self::Regular => "a regular file",
            Self::Folder => "a folder",
            Self::Symlink => "a symbolic link",
            Self::Fifo => "a FIFO (named pipe)",
            Self::Socket => "a socket",
            Self::CharDevice => "a character device",
            Self::BlockDevice => "a block device",
        }
    }
}

/// What `stat` says about one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node {
    pub kind: Kind,
    pub device: u64,
    pub inode: u64,
    pub links: u64,
    pub size: u64,
    /// The permission bits (no set-id or sticky bit).
    pub permissions: u32,
    pub owner: u32,
    pub group: u32,
}

impl Node {
    fn from_stat(stat: &FileStat) -> Self {
        Self {
            kind: Kind::of(stat),
            device: stat.st_dev,
            inode: stat.st_ino,
            links: stat.st_nlink,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            permissions: stat.st_mode & 0o777,
            owner: stat.st_uid,
            group: stat.st_gid,
        }
    }
}

/// The entry `name` of `dir`, not following a link.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<Node> {
    let stat = fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
    Ok(Node::from_stat(&stat))
}

/// The file `fd` is open on.
pub(crate) fn stat_fd(fd: BorrowedFd<'_>) -> std::io::Result<Node> {
    Ok(Node::from_stat(&fstat(fd)?))
}

/// Where the link `name` in `dir` points, for messages (`?` when it cannot be read).
pub(crate) fn link_target(dir: BorrowedFd<'_>, name: &OsStr) -> String {
    nix::fcntl::readlinkat(dir, name).map_or_else(
        |_| "?".to_owned(),
        |target| target.to_string_lossy().into_owned(),
    )
}

/// Opens the folder the confinement starts from. Links in `path` itself are followed: it is the
/// user's choice of work dir, not the model's.
pub(crate) fn open_root(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(nix::fcntl::open(
        path,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// How a path is resolved below a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// One `openat2` call; the kernel refuses links and escapes.
    Openat2,
    /// One `openat` per name, each with `O_NOFOLLOW`.
    Walk,
}

/// Set once `openat2` turned out to be missing (old kernel) or filtered (seccomp).
static OPENAT2_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Opens `relative` (plain names only; empty is `dir` itself) below `dir` with `flags`, following
/// no symbolic link on the way or at the end. `O_NOFOLLOW` and `O_CLOEXEC` are always added.
/// A link anywhere fails with `ELOOP` (or `ENOTDIR` for a link where a folder must be).
pub(crate) fn open_beneath(
    dir: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlag,
) -> std::io::Result<OwnedFd> {
    if !OPENAT2_UNAVAILABLE.load(Ordering::Relaxed) {
        match open_with(Resolver::Openat2, dir, relative, flags) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
            }
            other => return other,
        }
    }
    open_with(Resolver::Walk, dir, relative, flags)
}

/// `open_beneath` with a chosen resolver (the tests run both).
pub(crate) fn open_with(
    resolver: Resolver,
    dir: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlag,
) -> std::io::Result<OwnedFd> {
    let names = plain_names(relative)?;
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match resolver {
        Resolver::Openat2 => {
            let path: &Path = if names.is_empty() {
                Path::new(".")
            } else {
                relative
            };
            let how = OpenHow::new().flags(flags).resolve(
                ResolveFlag::RESOLVE_BENEATH
                    | ResolveFlag::RESOLVE_NO_SYMLINKS
                    | ResolveFlag::RESOLVE_NO_MAGICLINKS,
            );
            // EAGAIN: a rename raced the lookup; the kernel asks for a retry.
            let mut tries = 0;
            loop {
                match openat2(dir, path, how) {
                    Err(Errno::EAGAIN) if tries < 8 => tries += 1,
                    result => return Ok(result?),
                }
            }
        }
        Resolver::Walk => {
            let Some((last, folders)) = names.split_last() else {
                return Ok(openat(dir, ".", flags, Mode::empty())?);
            };
            let folder_flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW;
            let mut current: Option<OwnedFd> = None;
            for name in folders {
                let at = current.as_ref().map_or(dir, AsFd::as_fd);
                let next = openat(at, *name, folder_flags | OFlag::O_CLOEXEC, Mode::empty())?;
                current = Some(next);
            }
            let at = current.as_ref().map_or(dir, AsFd::as_fd);
            Ok(openat(at, *last, flags, Mode::empty())?)
        }
    }
}

/// The names of `relative`, refusing anything but plain names (the walk relies on it; `openat2`
/// would refuse an escape by itself).
fn plain_names(relative: &Path) -> std::io::Result<Vec<&OsStr>> {
    relative
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) if !name.as_bytes().contains(&0) => Ok(name),
            _ => Err(std::io::Error::from(Errno::EXDEV)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn path_rules() {
        let ok = |p: &str| {
            components(p)
                .expect(p)
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        };
        assert_eq!(ok(" sub/dir/x.py "), "sub/dir/x.py");
        assert_eq!(ok("./a/./b"), "a/b");
        assert_eq!(ok("a/../b.py"), "b.py");
        assert_eq!(ok("a//b"), "a/b");
        assert_eq!(components(""), Err(BadPath::Empty));
        assert_eq!(components("  "), Err(BadPath::Empty));
        assert_eq!(components("."), Err(BadPath::Empty));
        assert_eq!(components("a/.."), Err(BadPath::Empty));
        assert_eq!(components("/etc/passwd"), Err(BadPath::Absolute));
        assert_eq!(components("~/x"), Err(BadPath::Absolute));
        assert_eq!(components("../x"), Err(BadPath::Escapes));
        assert_eq!(components("a/../../x"), Err(BadPath::Escapes));
        assert_eq!(components("a\0b"), Err(BadPath::Nul));
    }

    /// A work dir holding a folder, a file, links of every sort and a FIFO; and a folder outside.
    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let work = tempfile::tempdir().expect("work");
        let outside = tempfile::tempdir().expect("outside");
        let w = work.path();
        std::fs::create_dir_all(w.join("sub/deeper")).expect("dirs");
        std::fs::write(w.join("sub/deeper/file.txt"), "inside").expect("file");
        std::fs::write(outside.path().join("secret"), "outside").expect("secret");
        symlink(outside.path(), w.join("out-dir")).expect("dir link");
        symlink(outside.path().join("secret"), w.join("out-file")).expect("file link");
        symlink("sub", w.join("in-dir")).expect("inner dir link");
        symlink("sub/deeper/file.txt", w.join("in-file")).expect("inner file link");
        symlink("out-file", w.join("chain")).expect("two hops");
        symlink("in-dir", w.join("chain-dir")).expect("two hops to a folder");
        nix::unistd::mkfifo(&w.join("pipe"), Mode::from_bits_truncate(0o600)).expect("fifo");
        (work, outside)
    }

    #[test]
    fn both_resolvers_open_real_paths_and_refuse_every_link() {
        let (work, _outside) = tree();
        let root = open_root(work.path()).expect("root");
        for resolver in [Resolver::Openat2, Resolver::Walk] {
            let open =
                |p: &str, flags: OFlag| open_with(resolver, root.as_fd(), Path::new(p), flags);
            let read = OFlag::O_RDONLY | OFlag::O_NONBLOCK;
            let file = open("sub/deeper/file.txt", read).expect("a real path opens");
            assert_eq!(stat_fd(file.as_fd()).expect("stat").kind, Kind::Regular);
            let folder = open("sub", OFlag::O_RDONLY | OFlag::O_DIRECTORY).expect("folder");
            assert_eq!(stat_fd(folder.as_fd()).expect("stat").kind, Kind::Folder);
            let itself = open("", OFlag::O_RDONLY | OFlag::O_DIRECTORY).expect("the root");
            assert_eq!(stat_fd(itself.as_fd()).expect("stat").kind, Kind::Folder);
            for link in [
                "out-file",
                "out-dir/secret",
                "in-file",
                "in-dir/deeper/file.txt",
                "chain",
                "chain-dir/deeper/file.txt",
            ] {
                let err = open(link, read).expect_err(link);
                assert!(
                    matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
                    "{resolver:?} {link}: {err}"
                );
            }
            for escape in ["../x", "/etc/passwd", "sub/../../x"] {
                assert!(open(escape, read).is_err(), "{resolver:?} {escape}");
            }
            // A FIFO opens at once with O_NONBLOCK and says what it is.
            let pipe = open("pipe", read).expect("fifo");
            assert_eq!(stat_fd(pipe.as_fd()).expect("stat").kind, Kind::Fifo);
        }
    }

    #[test]
    fn stat_at_does_not_follow() {
        let (work, _outside) = tree();
        let root = open_root(work.path()).expect("root");
        let kind = |name: &str| stat_at(root.as_fd(), OsStr::new(name)).expect(name).kind;
        assert_eq!(kind("out-file"), Kind::Symlink);
        assert_eq!(kind("out-dir"), Kind::Symlink);
        assert_eq!(kind("sub"), Kind::Folder);
        assert_eq!(kind("pipe"), Kind::Fifo);
        assert_eq!(link_target(root.as_fd(), OsStr::new("chain")), "out-file");
        assert_eq!(Kind::Fifo.described(), "a FIFO (named pipe)");
    }
}
