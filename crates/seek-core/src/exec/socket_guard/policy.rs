//! Which unix socket addresses a block may connect to.
//!
//! Owns the rule: a pathname socket whose real location (after every link) is inside one of the
//! sandbox's own folders (the work dir, the private temp dir, seek's cache dir) or at or under an
//! `[exec] allow_sockets` entry; an abstract socket only when listed as `@name`. Owns parsing those
//! entries and a `sockaddr_un`. It must not make the connect (the supervisor does) or read the
//! caller's memory.

use std::ffi::CString;
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::sys;
use super::target::{FileView, Target};

/// `offsetof(struct sockaddr_un, sun_path)`.
const SUN_PATH_OFFSET: usize = 2;
/// `sizeof(struct sockaddr_un)`.
const SOCKADDR_UN_LEN: usize = SUN_PATH_OFFSET + 108;

/// A socket blocks may reach although it is outside the sandbox's folders: `[exec] allow_sockets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedSocket {
    /// A socket file, or a folder whose sockets (at any depth) are allowed. Absolute; links in it
    /// are resolved when a block connects.
    Path(PathBuf),
    /// An abstract socket's name, written `@name`.
    Abstract(Vec<u8>),
}

impl std::str::FromStr for AllowedSocket {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(name) = s.strip_prefix('@') {
            if name.is_empty() {
                return Err("an abstract socket needs a name after `@`".into());
            }
            if name.len() > SOCKADDR_UN_LEN - SUN_PATH_OFFSET - 1 {
                return Err("an abstract socket name has at most 107 bytes".into());
            }
            return Ok(Self::Abstract(name.as_bytes().to_vec()));
        }
        let path = Path::new(s);
        if !path.is_absolute() {
            return Err(
                "expected an absolute path to a socket or a folder of sockets, or @name for an abstract socket"
                    .into(),
            );
        }
        Ok(Self::Path(path.to_owned()))
    }
}

impl fmt::Display for AllowedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(path) => write!(f, "{}", path.display()),
            Self::Abstract(name) => write!(f, "@{}", String::from_utf8_lossy(name)),
        }
    }
}

/// The rule for one block.
#[derive(Debug, Clone)]
pub struct SocketPolicy {
    /// Canonical folders whose sockets blocks may reach.
    roots: Vec<PathBuf>,
    allowed: Vec<AllowedSocket>,
}

impl SocketPolicy {
    /// `roots` are the sandbox's own folders; one that does not exist (or cannot be resolved)
    /// allows nothing.
    pub fn new(roots: impl IntoIterator<Item = PathBuf>, allowed: &[AllowedSocket]) -> Self {
        Self {
            roots: roots
                .into_iter()
                .filter_map(|root| std::fs::canonicalize(root).ok())
                .collect(),
            allowed: allowed.to_vec(),
        }
    }

    fn allows_abstract(&self, name: &[u8]) -> bool {
        self.allowed
            .iter()
            .any(|a| matches!(a, AllowedSocket::Abstract(n) if n == name))
    }

    /// Whether a socket really at `location` (canonical) may be reached. Entries are resolved
    /// now, not when the block started: a socket listed before its daemon created it counts.
    fn allows_location(&self, location: &Path) -> bool {
        self.roots.iter().any(|root| location.starts_with(root))
            || self.allowed.iter().any(|a| match a {
                AllowedSocket::Path(entry) => {
                    std::fs::canonicalize(entry).is_ok_and(|entry| location.starts_with(entry))
                }
                AllowedSocket::Abstract(_) => false,
            })
    }

    /// Judges a unix address read from the caller. `Ok` is what the supervisor connects to; `Err`
    /// is the errno the caller gets.
    pub(super) fn judge(&self, target: &Target, address: &[u8]) -> Result<Destination, i32> {
        match UnixAddress::parse(address)? {
            UnixAddress::Abstract(name) if self.allows_abstract(name) => Ok(Destination::AsGiven),
            UnixAddress::Abstract(_) => Err(libc::EACCES),
            UnixAddress::Pathname(path) => self.open_pathname(target, path).map(Destination::File),
        }
    }

    /// Opens the socket file `path` names as the caller would (following links, relative paths
    /// from its cwd) and checks where that file really is.
    fn open_pathname(&self, target: &Target, path: &[u8]) -> Result<OwnedFd, i32> {
        let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EACCES);
        // A block cannot mount under Landlock, but one that made its own mount namespace or
        // chroot would see other files at the same paths: its pathname connects are refused.
        let theirs = target.file_view().map_err(|_| libc::EACCES)?;
        if FileView::ours() != Some(theirs) {
            return Err(libc::EACCES);
        }
        // `parse` cut the path at its first NUL: there is none inside.
        let c_path = CString::new(path).map_err(|_| libc::EINVAL)?;
        let file = if path.first() == Some(&b'/') {
            sys::open_path(None, &c_path, 0)
        } else {
            let cwd = target.cwd().map_err(errno)?;
            sys::open_path(Some(cwd.as_fd()), &c_path, 0)
        }
        .map_err(errno)?;
        let (device, inode, kind) = sys::identity(file.as_fd()).map_err(errno)?;
        if kind != libc::S_IFSOCK {
            // What connect says for a path that is not a socket.
            return Err(libc::ECONNREFUSED);
        }
        let location = real_location(&file).ok_or(libc::EACCES)?;
        // The name the kernel gives the file must lead back to the same file from seek's own
        // root: this refuses files of other mount trees, over-mounted folders and names made
        // stale by a rename, whose printed path would mislead the check below.
        let c_location = CString::new(location.as_os_str().as_bytes()).map_err(|_| libc::EACCES)?;
        let again =
            sys::open_path(None, &c_location, libc::O_NOFOLLOW).map_err(|_| libc::EACCES)?;
        let (device_again, inode_again, _) = sys::identity(again.as_fd()).map_err(errno)?;
        if (device_again, inode_again) != (device, inode) {
            return Err(libc::EACCES);
        }
        if !self.allows_location(&location) {
            return Err(libc::EACCES);
        }
        Ok(file)
    }
}

/// Where the supervisor connects the caller's socket.
pub(super) enum Destination {
    /// The caller's own address bytes (an allowed abstract name).
    AsGiven,
    /// This socket file (opened `O_PATH`), reached through `/proc/self/fd/N`: exactly the file
    /// that was checked, whatever happens to its path afterwards.
    File(OwnedFd),
}

impl Destination {
    /// The `sockaddr_un` bytes naming `file` through seek's own descriptor table.
    pub(super) fn file_address(file: &OwnedFd) -> Vec<u8> {
        use std::os::fd::AsRawFd;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        let mut address = Vec::with_capacity(SUN_PATH_OFFSET + path.len() + 1);
        address.extend_from_slice(&(libc::AF_UNIX as libc::sa_family_t).to_ne_bytes());
        address.extend_from_slice(path.as_bytes());
        address.push(0);
        address
    }
}

/// A parsed `sockaddr_un`, with the kernel's own validation (`unix_validate_addr`).
#[derive(Debug, PartialEq, Eq)]
enum UnixAddress<'a> {
    Pathname(&'a [u8]),
    Abstract(&'a [u8]),
}

impl<'a> UnixAddress<'a> {
    fn parse(address: &'a [u8]) -> Result<Self, i32> {
        if address.len() <= SUN_PATH_OFFSET || address.len() > SOCKADDR_UN_LEN {
            return Err(libc::EINVAL);
        }
        let family = u16::from_ne_bytes([address[0], address[1]]);
        if libc::c_int::from(family) != libc::AF_UNIX {
            return Err(libc::EINVAL);
        }
        let sun_path = &address[SUN_PATH_OFFSET..];
        match sun_path.split_first() {
            Some((0, name)) => Ok(Self::Abstract(name)),
            // The kernel ends a pathname at the first NUL (or at the length given).
            _ => Ok(Self::Pathname(
                sun_path.split(|&b| b == 0).next().unwrap_or(sun_path),
            )),
        }
    }
}

/// The path the kernel gives an open file (`/proc/self/fd/N`), if it is an absolute path (files
/// outside seek's root read as "(unreachable)/…"). Checked by opening it again.
fn real_location(file: &OwnedFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let link = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    link.is_absolute().then_some(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(sun_path: &[u8]) -> Vec<u8> {
        let mut a = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(sun_path);
        a
    }

    #[test]
    fn addresses_are_read_as_the_kernel_reads_them() {
        assert_eq!(
            UnixAddress::parse(&address(b"/run/x.sock\0garbage")),
            Ok(UnixAddress::Pathname(b"/run/x.sock"))
        );
        assert_eq!(
            UnixAddress::parse(&address(b"rel")),
            Ok(UnixAddress::Pathname(b"rel"))
        );
        assert_eq!(
            UnixAddress::parse(&address(b"\0tmux\0x")),
            Ok(UnixAddress::Abstract(b"tmux\0x"))
        );
        assert_eq!(UnixAddress::parse(&address(b"")), Err(libc::EINVAL));
        assert_eq!(
            UnixAddress::parse(&address(&[b'a'; 109])),
            Err(libc::EINVAL)
        );
        let mut inet = address(b"/x");
        inet[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        assert_eq!(UnixAddress::parse(&inet), Err(libc::EINVAL));
    }

    #[test]
    fn allow_list_entries_parse_or_say_what_is_expected() {
        assert_eq!(
            "/run/x.sock".parse(),
            Ok(AllowedSocket::Path("/run/x.sock".into()))
        );
        assert_eq!(
            "@dbus".parse(),
            Ok(AllowedSocket::Abstract(b"dbus".to_vec()))
        );
        assert_eq!(
            AllowedSocket::Abstract(b"dbus".to_vec()).to_string(),
            "@dbus"
        );
        let relative = "run/x.sock".parse::<AllowedSocket>().unwrap_err();
        assert!(relative.contains("absolute path"), "{relative}");
        assert!("@".parse::<AllowedSocket>().unwrap_err().contains("name"));
    }

    #[test]
    fn locations_inside_a_root_or_an_entry_are_allowed_and_nothing_else() {
        let dir = tempfile::tempdir().expect("temp dir");
        let work = dir.path().join("work");
        let listed = dir.path().join("listed");
        std::fs::create_dir_all(&work).expect("work");
        std::fs::create_dir_all(listed.join("sub")).expect("listed");
        let canonical = std::fs::canonicalize(dir.path()).expect("canonical");
        let policy = SocketPolicy::new(
            [work, dir.path().join("missing")],
            &[
                AllowedSocket::Path(listed),
                AllowedSocket::Abstract(b"ok".to_vec()),
            ],
        );
        assert!(policy.allows_location(&canonical.join("work/a.sock")));
        assert!(policy.allows_location(&canonical.join("listed/sub/b.sock")));
        assert!(!policy.allows_location(&canonical.join("workshop/a.sock")));
        assert!(!policy.allows_location(&canonical.join("elsewhere.sock")));
        assert!(!policy.allows_location(&canonical.join("missing/a.sock")));
        assert!(policy.allows_abstract(b"ok"));
        assert!(!policy.allows_abstract(b"ok2"));
    }
}
