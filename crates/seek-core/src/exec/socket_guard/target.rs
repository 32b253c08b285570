//! A thread of a block waiting in `connect`, as the supervisor sees it: handles on its `/proc`
//! entry, its memory and its descriptors, taken once and checked to still be that thread.
//!
//! Owns reading the caller's arguments and reaching its socket and its view of the file system.
//! It must not decide whether the connect is allowed (`policy` does).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

use super::sys;

pub struct Target {
    /// `/proc/<tid>`: lookups through it fail once the thread is gone, never reach another.
    proc_dir: OwnedFd,
    pidfd: OwnedFd,
    memory: File,
}

impl Target {
    /// Opens the handles for thread `tid` (as the supervisor's pid namespace numbers it). The
    /// caller must then check the notification is still valid: only that proves `tid` was not
    /// reused by another process between the notification and these opens.
    pub fn open(tid: u32) -> io::Result<Self> {
        let tid = libc::pid_t::try_from(tid)
            .ok()
            .filter(|&t| t > 0)
            // 0: the caller is in a pid namespace seek cannot see.
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        let path = CString::new(format!("/proc/{tid}"))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let proc_dir = sys::open_path(None, &path, libc::O_DIRECTORY)?;
        let memory = sys::open_at(proc_dir.as_fd(), c"mem", libc::O_RDONLY)?;
        Ok(Self {
            pidfd: sys::pidfd_open(tid)?,
            memory: File::from(memory),
            proc_dir,
        })
    }

    /// Copies `buf.len()` bytes from the caller's memory at `address`, once.
    pub fn read(&self, address: u64, buf: &mut [u8]) -> io::Result<()> {
        self.memory.read_exact_at(buf, address)
    }

    /// The caller's descriptor `fd`: the same open file description (connecting it connects
    /// theirs).
    pub(crate) fn descriptor(&self, fd: RawFd) -> io::Result<OwnedFd> {
        sys::pidfd_getfd(self.pidfd.as_fd(), fd)
    }

    /// The caller's current directory, where its relative socket paths start.
    pub fn cwd(&self) -> io::Result<OwnedFd> {
        sys::open_path(Some(self.proc_dir.as_fd()), c"cwd", libc::O_DIRECTORY)
    }

    /// The mount namespace and root the caller resolves paths in.
    pub(crate) fn file_view(&self) -> io::Result<FileView> {
        let identity = |name: &std::ffi::CStr| {
            sys::open_path(Some(self.proc_dir.as_fd()), name, 0)
                .and_then(|fd| sys::identity(fd.as_fd()))
                .map(|(device, inode, _)| (device, inode))
        };
        Ok(FileView {
            mounts: identity(c"ns/mnt")?,
            root: identity(c"root")?,
        })
    }
}

/// Where a process resolves paths: its mount namespace and its root, as (device, inode). Two
/// processes with the same view see the same file at the same path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileView {
    mounts: (u64, u64),
    root: (u64, u64),
}

impl FileView {
    /// Seek's own view, read once (seek never changes its mount namespace or root); `None` if
    /// `/proc` could not tell.
    pub fn ours() -> Option<Self> {
        static OURS: std::sync::OnceLock<Option<FileView>> = std::sync::OnceLock::new();
        *OURS.get_or_init(|| Self::read_ours().ok())
    }

    fn read_ours() -> io::Result<Self> {
        let identity = |path: &std::ffi::CStr| {
            sys::open_path(None, path, 0)
                .and_then(|fd| sys::identity(fd.as_fd()))
                .map(|(device, inode, _)| (device, inode))
        };
        Ok(Self {
            mounts: identity(c"/proc/self/ns/mnt")?,
            root: identity(c"/")?,
        })
    }
}
