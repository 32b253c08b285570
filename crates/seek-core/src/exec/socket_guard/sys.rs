//! Safe wrappers over the raw system calls seek makes to supervise a block's connects: pidfds,
//! the seccomp notification ioctls, `O_PATH` opens relative to a directory, `connect` with raw
//! address bytes, and receiving a descriptor over a unix socket.
//!
//! Owns only the unsafe plumbing (each call checked, each error an `io::Error` carrying the
//! errno). It must not decide anything; it runs in seek, never in the forked child.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Turns a `-1` return into the errno as an `io::Error`.
fn check(result: libc::c_long) -> io::Result<libc::c_long> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// Takes ownership of a descriptor a system call just returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel returned this descriptor to us just now; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `pidfd_open(tid)`: a handle on that very thread (`PIDFD_THREAD`, Linux 6.9), or, where the
/// kernel is older, on the process when `tid` is its main thread.
pub(crate) fn pidfd_open(tid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain integer arguments.
    let thread = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, libc::PIDFD_THREAD) };
    let fd = if thread >= 0 {
        thread
    } else {
        // SAFETY: plain integer arguments.
        check(unsafe { libc::syscall(libc::SYS_pidfd_open, tid, 0u32) })?
    };
    owned(fd)
}

/// `pidfd_getfd`: the same open file description as `fd` in the process behind `pidfd`.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: plain integer arguments; the result is a new descriptor of ours (close-on-exec).
    let result =
        check(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) })?;
    owned(result)
}

/// `openat(dir, path, O_PATH | O_CLOEXEC | extra)`; `dir` `None` is the current directory (only
/// used with absolute paths).
pub(crate) fn open_path(
    dir: Option<BorrowedFd<'_>>,
    path: &CStr,
    extra: libc::c_int,
) -> io::Result<OwnedFd> {
    let dir = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `path` is NUL-terminated and alive for the call.
    let fd = unsafe { libc::openat(dir, path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | extra) };
    owned(check(fd.into())?)
}

/// `openat(dir, path, flags | O_CLOEXEC)` for a real (not `O_PATH`) open.
pub(crate) fn open_at(dir: BorrowedFd<'_>, path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated and alive for the call.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), path.as_ptr(), flags | libc::O_CLOEXEC) };
    owned(check(fd.into())?)
}

/// The (device, inode) and file type bits of an open descriptor.
pub(crate) fn identity(fd: BorrowedFd<'_>) -> io::Result<(u64, u64, u32)> {
    // SAFETY: all-zero is a valid `stat`; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live, writable stat buffer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) }.into())?;
    Ok((st.st_dev, st.st_ino, st.st_mode & libc::S_IFMT))
}

/// The address family of a socket (`SO_DOMAIN`).
pub(crate) fn socket_domain(socket: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    let mut domain: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `domain` and `len` are live and sized for an int option.
    check(
        unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_DOMAIN,
                (&mut domain as *mut libc::c_int).cast(),
                &mut len,
            )
        }
        .into(),
    )?;
    Ok(domain)
}

/// `connect(socket, address)` with the address as raw `sockaddr` bytes.
pub fn connect(socket: BorrowedFd<'_>, address: &[u8]) -> io::Result<()> {
    let len = libc::socklen_t::try_from(address.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: the kernel reads `len` bytes from `address`, which holds that many.
    check(unsafe { libc::connect(socket.as_raw_fd(), address.as_ptr().cast(), len) }.into())?;
    Ok(())
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: the next system call waiting for an answer.
pub(crate) fn receive_notification(listener: BorrowedFd<'_>) -> io::Result<libc::seccomp_notif> {
    // SAFETY: the kernel requires a zeroed buffer; all-zero is a valid seccomp_notif.
    let mut notification: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one seccomp_notif into the live buffer.
    check(
        unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut notification as *mut libc::seccomp_notif,
            )
        }
        .into(),
    )?;
    Ok(notification)
}

/// `SECCOMP_IOCTL_NOTIF_SEND`: the waiting call returns 0, or fails with `errno`. `ENOENT` means
/// the caller is gone or was interrupted by a signal (the answer no longer matters).
pub fn answer(listener: BorrowedFd<'_>, id: u64, result: Result<(), i32>) -> io::Result<()> {
    let mut response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: result.err().map_or(0, |errno| -errno),
        flags: 0,
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp from the live buffer.
    check(
        unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &mut response as *mut libc::seccomp_notif_resp,
            )
        }
        .into(),
    )?;
    Ok(())
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: whether the caller of notification `id` is still waiting (so
/// its thread id still names it, not a process that reused the number).
pub(crate) fn still_waiting(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64 from the live value.
    let result = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &mut id as *mut u64,
        )
    };
    result == 0
}

/// Receives one descriptor sent with `SCM_RIGHTS` over `channel`, without waiting.
pub(crate) fn receive_fd(channel: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    #[repr(C, align(8))]
    struct ControlBuffer([u8; 64]);
    let mut payload = [0u8; 1];
    let mut control = ControlBuffer([0; 64]);
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: all-zero is a valid msghdr; its pointers are set to live stack buffers below.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.0.as_mut_ptr().cast();
    message.msg_controllen = control.0.len() as _;
    // SAFETY: recvmsg writes into the buffers `message` points at.
    let received = check(unsafe {
        libc::recvmsg(
            channel.as_raw_fd(),
            &mut message,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    } as libc::c_long)?;
    if received == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the block's process closed the channel without sending its listener",
        ));
    }
    // SAFETY: the kernel filled `control` with `msg_controllen` bytes of well-formed headers;
    // CMSG_FIRSTHDR returns null when there is none.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
            || ((*header).cmsg_len as usize) < libc::CMSG_LEN(size_of::<RawFd>() as u32) as usize
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the block's process sent no descriptor",
            ));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
        owned(fd.into())
    }
}

/// Blocks every signal on the calling thread (its threads inherit the mask), so the supervisor's
/// blocking `connect`s are never interrupted and seek's signal handlers run elsewhere.
pub(crate) fn block_signals() {
    // SAFETY: a sigset filled by sigfillset, applied to this thread only.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    }
}
