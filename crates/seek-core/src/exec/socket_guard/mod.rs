//! Keeping blocks from reaching unconfined daemons through unix sockets.
//!
//! A block that can connect to the socket of tmux, screen, ssh-agent, the user's D-Bus or docker
//! can ask that daemon, which runs outside the sandbox, to do what the sandbox forbids. Landlock
//! before ABI 9 does not check connects, so every process of a block runs under a seccomp filter
//! (`filter`) that hands each `connect` to seek: the supervisor (`supervisor`) reads the address
//! once, judges it (`policy`: unix sockets only inside the sandbox's folders or listed in
//! `[exec] allow_sockets`), and makes the connect itself on the caller's own socket. Unix
//! datagram sockets (which can send to any address without connecting) and io_uring (whose
//! operations bypass seccomp) are refused outright.
//!
//! Owns the guard's life around one block: `prepare` (in seek, before `fork`),
//! `ChildHalf::apply_in_child` (between `fork` and `exec`), `ParentHalf::start` (after the spawn)
//! and `Supervisor::stop` (when the block has ended); and the one-time probe of what the kernel
//! offers. It must not confine files or privileges (`sandbox.rs` does).

mod filter;
mod policy;
mod supervisor;
mod sys;
mod target;

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::thread::JoinHandle;

pub use policy::{AllowedSocket, SocketPolicy};

/// What this kernel lets seek do about blocks' sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Every connect is checked; unix sockets outside the allowed places are refused.
    Supervised,
    /// Connects cannot be supervised (no seccomp user notification, no `pidfd_getfd`, no
    /// `/proc`, or seek already runs under a supervised filter): blocks cannot create unix
    /// sockets at all, which fails closed.
    DenyUnix { reason: String },
    /// No seccomp filter can be installed: blocks' sockets are not restricted.
    Unavailable { reason: String },
}

impl Support {
    /// What to tell the user once, when blocks are confined but their sockets are not
    /// supervised; `None` when they are.
    pub fn warning(&self) -> Option<String> {
        match self {
            Self::Supervised => None,
            Self::DenyUnix { reason } => Some(format!(
                "blocks' connections cannot be supervised here ({reason}): blocks cannot use unix sockets at all — see docs/safety.md"
            )),
            Self::Unavailable { reason } => Some(format!(
                "blocks' unix sockets cannot be restricted here ({reason}): a block can reach daemons such as tmux, ssh-agent or D-Bus — see docs/safety.md"
            )),
        }
    }
}

/// What the kernel offers, probed once (a short-lived thread installs the filter on itself).
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

fn probe() -> Support {
    if !filter::architecture_known() {
        return Support::Unavailable {
            reason: "seek does not know this processor architecture's system calls".into(),
        };
    }
    match install_on_probe_thread(filter::Program::Supervised) {
        Ok(()) => match callers_reachable() {
            Ok(()) => Support::Supervised,
            Err(why) => deny_unix(why),
        },
        Err(e) => deny_unix(format!("seccomp user notification: {e}")),
    }
}

fn deny_unix(reason: String) -> Support {
    match install_on_probe_thread(filter::Program::DenyUnix) {
        Ok(()) => Support::DenyUnix { reason },
        Err(e) => Support::Unavailable {
            reason: format!("seccomp filter: {e}"),
        },
    }
}

/// Installs `kind` (with a listener when supervised) on a thread made for it, which then ends:
/// a seccomp filter and `no_new_privs` belong to the thread, so seek itself stays unfiltered.
fn install_on_probe_thread(kind: filter::Program) -> io::Result<()> {
    let program = filter::program(kind).map_err(io::Error::other)?;
    let with_listener = kind == filter::Program::Supervised;
    std::thread::Builder::new()
        .name("seek-probe".into())
        .spawn(move || {
            // SAFETY: prctl with integer arguments, on this thread only.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(listener) = filter::install(program, with_listener)? {
                // SAFETY: the kernel just returned this descriptor; nothing else owns it.
                drop(unsafe { OwnedFd::from_raw_fd(listener) });
            }
            Ok(())
        })?
        .join()
        .map_err(|_| io::Error::other("the probe thread panicked"))?
}

/// Whether seek can reach a caller's socket and memory: `pidfd_getfd` (Linux 5.6) and `/proc`.
fn callers_reachable() -> Result<(), String> {
    let pid = libc::pid_t::try_from(std::process::id()).map_err(|e| e.to_string())?;
    let pidfd = sys::pidfd_open(pid).map_err(|e| format!("pidfd_open: {e}"))?;
    sys::pidfd_getfd(pidfd.as_fd(), pidfd.as_raw_fd()).map_err(|e| format!("pidfd_getfd: {e}"))?;
    std::fs::File::open("/proc/self/mem").map_err(|e| format!("/proc/self/mem: {e}"))?;
    std::fs::metadata("/proc/self/ns/mnt").map_err(|e| format!("/proc/self/ns/mnt: {e}"))?;
    Ok(())
}

/// The half applied in the forked child.
pub struct ChildHalf {
    program: &'static [libc::sock_filter],
    /// Where the listener goes (supervised only). Close-on-exec: the block never holds it.
    channel: Option<UnixStream>,
}

/// The half kept in seek, started once the child has been spawned.
pub struct ParentHalf {
    channel: UnixStream,
    policy: SocketPolicy,
}

/// Builds both halves for one block, as this kernel allows (see `support`). `(None, None)` where
/// no filter can be installed.
pub fn prepare(policy: SocketPolicy) -> io::Result<(Option<ChildHalf>, Option<ParentHalf>)> {
    let kind = match support() {
        Support::Supervised => filter::Program::Supervised,
        Support::DenyUnix { .. } => filter::Program::DenyUnix,
        Support::Unavailable { .. } => return Ok((None, None)),
    };
    let program = filter::program(kind).map_err(io::Error::other)?;
    if kind == filter::Program::DenyUnix {
        return Ok((
            Some(ChildHalf {
                program,
                channel: None,
            }),
            None,
        ));
    }
    let (ours, theirs) = UnixStream::pair()?;
    Ok((
        Some(ChildHalf {
            program,
            channel: Some(theirs),
        }),
        Some(ParentHalf {
            channel: ours,
            policy,
        }),
    ))
}

impl ChildHalf {
    /// Installs the filter on the calling process and sends its listener to seek. Call in the
    /// forked child, after `no_new_privs`, as the last step before `exec` (the block must run
    /// under it from its first instruction). No allocation: safe between `fork` and `exec`.
    pub fn apply_in_child(&self) -> io::Result<()> {
        let listener = filter::install(self.program, self.channel.is_some())?;
        if let (Some(channel), Some(listener)) = (&self.channel, listener) {
            let sent = filter::send_fd(channel.as_raw_fd(), listener);
            // The block must not keep its own listener: it could answer its own connects.
            // SAFETY: the kernel returned this descriptor to this process just now.
            unsafe { libc::close(listener) };
            sent?;
        }
        Ok(())
    }
}

impl ParentHalf {
    /// Receives the listener the child sent (the spawn has returned, so it was sent) and starts
    /// answering. Without this, the block's connects fail (`ENOSYS`) once this half is dropped.
    pub fn start(self) -> io::Result<Supervisor> {
        let listener = sys::receive_fd(self.channel.as_fd())?;
        let (stop_reader, stop_writer) = std::io::pipe()?;
        let policy = self.policy;
        let thread = std::thread::Builder::new()
            .name("seek-sockets".into())
            .spawn(move || supervisor::serve(listener, stop_reader, policy))?;
        Ok(Supervisor {
            stop: Some(stop_writer),
            thread: Some(thread),
        })
    }
}

/// A running supervisor. Dropping it tells it to stop without waiting; `stop` waits.
pub struct Supervisor {
    stop: Option<std::io::PipeWriter>,
    thread: Option<JoinHandle<()>>,
}

impl Supervisor {
    /// Stops answering (a process of the block still alive would see its connects fail) and waits
    /// for the loop to end; connects being made finish on their own threads.
    pub fn stop(mut self) {
        self.stop = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // Closing the pipe's write end wakes the loop, which then ends.
        self.stop = None;
    }
}
