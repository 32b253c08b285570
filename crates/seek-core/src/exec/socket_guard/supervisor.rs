//! The supervisor: answers every `connect` a block's processes make, by making it itself.
//!
//! Owns the notification loop (one thread per running block) and the answers (on up to
//! `MAX_ANSWERING` threads, so a connect that blocks never holds up the others; calls beyond that
//! wait their turn, as a slow connect would; an idle thread waits a moment for the next call
//! rather than ending, since starting one costs more than most answers). It never lets the caller's own call proceed
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`): the caller's memory could change between the check and
//! the kernel reading it again. It reads the address once, takes the caller's socket, and connects
//! that socket to what it checked. Every failure here fails closed: the caller's connect fails. It
//! must not decide what is allowed (`policy` does).

use std::collections::VecDeque;
use std::io::PipeReader;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::policy::{Destination, SocketPolicy};
use super::sys;
use super::target::Target;

/// Threads answering one block's calls at the same time, at most: a block cannot make seek start
/// threads without bound, only wait longer.
const MAX_ANSWERING: usize = 64;
/// An answering thread needs little: a few paths and a sockaddr.
const ANSWER_STACK: usize = 128 * 1024;
/// How long an idle answering thread waits for another call before it ends.
const IDLE_LINGER: Duration = Duration::from_millis(500);
/// `sizeof(struct sockaddr_storage)`: the kernel refuses longer addresses with `EINVAL`.
const MAX_ADDRESS: usize = 128;

/// What the answering threads share.
struct Shared {
    listener: OwnedFd,
    policy: SocketPolicy,
    work: Mutex<Work>,
    /// Wakes an idle thread when a call is queued, or all of them when the loop ends.
    wake: Condvar,
}

/// Calls received but not yet taken by a thread, and the threads' state.
#[derive(Default)]
struct Work {
    waiting: VecDeque<libc::seccomp_notif>,
    /// Threads alive (answering or idle).
    threads: usize,
    idle: usize,
    /// The loop has ended: idle threads end instead of waiting.
    ended: bool,
}

impl Shared {
    fn work(&self) -> MutexGuard<'_, Work> {
        // A panic while holding this lock leaves a plain queue and count intact: recover them.
        self.work.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs until `stop` is closed or no process uses the filter any more.
pub fn serve(listener: OwnedFd, stop: PipeReader, policy: SocketPolicy) {
    sys::block_signals();
    let shared = Arc::new(Shared {
        listener,
        policy,
        work: Mutex::new(Work::default()),
        wake: Condvar::new(),
    });
    loop {
        let mut fds = [
            libc::pollfd {
                fd: shared.listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a live array of two pollfds.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        if fds[1].revents != 0 {
            break;
        }
        if fds[0].revents & libc::POLLIN != 0 {
            match sys::receive_notification(shared.listener.as_fd()) {
                Ok(notification) => hand_over(&shared, notification),
                // The caller was interrupted or killed before its call was read.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EINTR)) => {}
                // Closing the listener makes every pending and later connect fail (ENOSYS).
                Err(_) => break,
            }
        } else if fds[0].revents != 0 {
            // POLLHUP: every process under the filter has ended.
            break;
        }
    }
    shared.work().ended = true;
    shared.wake.notify_all();
}

/// Queues `notification` and makes sure a thread will take it now: an idle one, or a new one
/// while there are more calls waiting than idle threads (up to the limit; beyond it, a busy thread
/// takes it when done).
fn hand_over(shared: &Arc<Shared>, notification: libc::seccomp_notif) {
    let mut work = shared.work();
    work.waiting.push_back(notification);
    if work.idle > 0 {
        shared.wake.notify_one();
    }
    if work.waiting.len() <= work.idle || work.threads >= MAX_ANSWERING {
        return;
    }
    work.threads += 1;
    drop(work);
    let answering = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("seek-connect".into())
        .stack_size(ANSWER_STACK)
        .spawn(move || answer_calls(&answering));
    if spawned.is_err() {
        let mut work = shared.work();
        work.threads -= 1;
        if work.threads == 0 {
            // Nobody will take it: fail this call rather than leave it waiting.
            work.waiting.retain(|queued| queued.id != notification.id);
            drop(work);
            let _ = sys::answer(shared.listener.as_fd(), notification.id, Err(libc::EAGAIN));
        }
    }
}

/// Answers queued calls; waits `IDLE_LINGER` for more when there are none, then ends.
fn answer_calls(shared: &Shared) {
    let mut work = shared.work();
    loop {
        if let Some(notification) = work.waiting.pop_front() {
            drop(work);
            if let Some(result) =
                decide_and_connect(&shared.listener, &shared.policy, &notification)
            {
                let _ = sys::answer(shared.listener.as_fd(), notification.id, result);
            }
            work = shared.work();
            continue;
        }
        if work.ended {
            break;
        }
        work.idle += 1;
        let (after, timeout) = shared
            .wake
            .wait_timeout(work, IDLE_LINGER)
            .unwrap_or_else(|e| e.into_inner());
        work = after;
        work.idle -= 1;
        if timeout.timed_out() && work.waiting.is_empty() {
            break;
        }
    }
    work.threads -= 1;
}

/// What the caller's `connect` returns; `None` when the caller is gone (nobody to answer).
fn decide_and_connect(
    listener: &OwnedFd,
    policy: &SocketPolicy,
    notification: &libc::seccomp_notif,
) -> Option<Result<(), i32>> {
    let target = Target::open(notification.pid);
    // Only now, with the handles open, does a valid id prove they belong to the caller.
    if !sys::still_waiting(listener.as_fd(), notification.id) {
        return None;
    }
    let Ok(target) = target else {
        return Some(Err(libc::EACCES));
    };
    Some(connect_for(&target, policy, &notification.data))
}

/// `connect(fd, address, length)` on the caller's behalf: `args` as the caller passed them.
fn connect_for(
    target: &Target,
    policy: &SocketPolicy,
    call: &libc::seccomp_data,
) -> Result<(), i32> {
    // The kernel reads `int fd` and `socklen_t addrlen`: the low 32 bits of those registers.
    let fd = call.args[0] as u32 as i32;
    let length = call.args[2] as u32;
    if length as i32 <= 1 || length as usize > MAX_ADDRESS {
        // Too short to hold a family (every family refuses it), negative, or too long.
        return Err(libc::EINVAL);
    }
    let mut address = [0u8; MAX_ADDRESS];
    let address = &mut address[..length as usize];
    target
        .read(call.args[1], address)
        .map_err(|_| libc::EFAULT)?;
    let socket = target.descriptor(fd).map_err(|e| match e.raw_os_error() {
        Some(libc::EBADF) => libc::EBADF,
        _ => libc::EACCES,
    })?;
    let domain = sys::socket_domain(socket.as_fd()).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOTSOCK) => libc::ENOTSOCK,
        _ => libc::EACCES,
    })?;
    let outcome = if domain == libc::AF_UNIX {
        // Decided by the socket's family, not by what the address claims to be.
        match policy.judge(target, address)? {
            Destination::AsGiven => sys::connect(socket.as_fd(), address),
            Destination::File(file) => {
                sys::connect(socket.as_fd(), &Destination::file_address(&file))
            }
        }
    } else {
        // Other families are not confined by the sandbox (a block may use the network); only
        // the browser's jail limits TCP, with Landlock, and it runs without this supervisor.
        sys::connect(socket.as_fd(), address)
    };
    outcome.map_err(|e| e.raw_os_error().unwrap_or(libc::ECONNREFUSED))
}
