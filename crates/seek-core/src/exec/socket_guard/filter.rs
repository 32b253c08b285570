//! The seccomp program a block's processes run under, and its installation in the forked child.
//!
//! Owns the classic-BPF program (the architecture check, which socket system calls are refused,
//! and `connect` handed to the supervisor) and the raw calls made between `fork` and `exec`:
//! installing the program, passing its listener to seek, closing what the child must not keep.
//! The child half must not allocate; nothing here decides about addresses (`policy` does).

use std::os::fd::RawFd;
use std::sync::OnceLock;

use libc::{
    BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W,
    SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_USER_NOTIF,
    sock_filter,
};

/// The audit architecture of the system calls this build knows the numbers of. System calls made
/// through another ABI (32-bit `int 0x80` on x86_64, or arm32 compat on aarch64) carry another
/// value and have other numbers (and `socketcall`): the program kills such a process instead of
/// letting it connect unchecked.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00F3);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const AUDIT_ARCH: Option<u32> = None;

/// On x86_64, x32 system calls share the architecture value and set this bit in the number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32_SYSCALL_BIT: Option<u32> = None;

/// `struct seccomp_data` offsets: `nr`, `arch`, and the low 32 bits of an argument (the `int`
/// arguments checked here; the kernel ignores the high half of such a register).
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_low_word(index: u32) -> u32 {
    16 + 8 * index + if cfg!(target_endian = "big") { 4 } else { 0 }
}
/// `PRIO_PROCESS` (its libc type differs between targets).
const PRIO_PROCESS: u32 = 0;
const fn arg_high_word(index: u32) -> u32 {
    16 + 8 * index + if cfg!(target_endian = "big") { 0 } else { 4 }
}

/// The two programs seek can install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    /// `connect` waits for the supervisor; unix datagram sockets and io_uring are refused.
    Supervised,
    /// No supervisor (the kernel cannot notify): unix sockets cannot be created at all, except
    /// connected pairs (`socketpair` of stream or seqpacket sockets), which reach nobody.
    DenyUnix,
}

/// The program's instructions, built once per kind. `Err` names an internal inconsistency (a jump
/// too long for classic BPF), which makes the guard unavailable rather than wrong.
pub fn program(kind: Program) -> Result<&'static [sock_filter], &'static str> {
    static SUPERVISED: OnceLock<Result<Vec<sock_filter>, &'static str>> = OnceLock::new();
    static DENY_UNIX: OnceLock<Result<Vec<sock_filter>, &'static str>> = OnceLock::new();
    let cell = match kind {
        Program::Supervised => &SUPERVISED,
        Program::DenyUnix => &DENY_UNIX,
    };
    match cell.get_or_init(|| build(kind)) {
        Ok(program) => Ok(program),
        Err(why) => Err(why),
    }
}

/// Whether seek knows this architecture's system call numbers.
pub(crate) fn architecture_known() -> bool {
    AUDIT_ARCH.is_some()
}

fn build(kind: Program) -> Result<Vec<sock_filter>, &'static str> {
    let arch = AUDIT_ARCH.ok_or("seek does not know this architecture's system calls")?;
    let mut a = Assembler::default();
    let (connect, socket, pair, unix_type, allow, eacces, eperm, kill) = (0, 1, 2, 3, 4, 5, 6, 7);
    let (prlimit, self_only, priority, io_priority, enosys) = (8, 9, 10, 11, 12);
    a.load(ARCH);
    a.jump(BPF_JEQ, arch, None, Some(kill));
    a.load(NR);
    if let Some(bit) = X32_SYSCALL_BIT {
        a.jump(BPF_JSET, bit, Some(kill), None);
    }
    a.jump(BPF_JEQ, nr(libc::SYS_connect), Some(connect), None);
    a.jump(BPF_JEQ, nr(libc::SYS_socket), Some(socket), None);
    a.jump(BPF_JEQ, nr(libc::SYS_socketpair), Some(pair), None);
    // io_uring's connect and sendmsg never pass through this filter.
    a.jump(BPF_JEQ, nr(libc::SYS_io_uring_setup), Some(eperm), None);
    // clone3 can place a child in any cgroup the user may write (CLONE_INTO_CGROUP), out of the
    // block's group; its arguments are a struct seccomp cannot read, so it is refused and libc
    // falls back to clone.
    a.jump(BPF_JEQ, nr(libc::SYS_clone3), Some(enosys), None);
    // Landlock's signal scope does not cover resource limits and scheduling: a block could lower
    // seek's limits (killing it), or starve it. Only the caller itself (pid 0) may be changed.
    a.jump(BPF_JEQ, nr(libc::SYS_prlimit64), Some(prlimit), None);
    for call in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
    ] {
        a.jump(BPF_JEQ, nr(call), Some(self_only), None);
    }
    a.jump(BPF_JEQ, nr(libc::SYS_setpriority), Some(priority), None);
    a.jump(BPF_JEQ, nr(libc::SYS_ioprio_set), Some(io_priority), None);
    a.ret(SECCOMP_RET_ALLOW);

    // prlimit64(pid, resource, new, old): reading anyone's limits is fine, setting only one's own.
    a.label(prlimit);
    a.load(arg_low_word(0));
    a.jump(BPF_JEQ, 0, Some(allow), None);
    a.load(arg_low_word(2));
    a.jump(BPF_JEQ, 0, None, Some(eperm));
    a.load(arg_high_word(2));
    a.jump(BPF_JEQ, 0, Some(allow), Some(eperm));

    a.label(self_only);
    a.load(arg_low_word(0));
    a.jump(BPF_JEQ, 0, Some(allow), Some(eperm));

    // setpriority(which, who, prio): PRIO_PROCESS of the caller only (PRIO_USER 0 is every
    // process of the user).
    a.label(priority);
    a.load(arg_low_word(0));
    a.jump(BPF_JEQ, PRIO_PROCESS, None, Some(eperm));
    a.load(arg_low_word(1));
    a.jump(BPF_JEQ, 0, Some(allow), Some(eperm));

    // ioprio_set(which, who, ioprio): IOPRIO_WHO_PROCESS (1) of the caller only.
    a.label(io_priority);
    a.load(arg_low_word(0));
    a.jump(BPF_JEQ, 1, None, Some(eperm));
    a.load(arg_low_word(1));
    a.jump(BPF_JEQ, 0, Some(allow), Some(eperm));

    a.label(enosys);
    a.ret(SECCOMP_RET_ERRNO | libc::ENOSYS as u32);

    a.label(connect);
    a.ret(match kind {
        Program::Supervised => SECCOMP_RET_USER_NOTIF,
        // Only sockets that reach nobody can be made: nothing to check.
        Program::DenyUnix => SECCOMP_RET_ALLOW,
    });

    // socket(AF_UNIX, …): a datagram socket could `sendto` any path or abstract name without
    // `connect`, so only stream and seqpacket sockets (which must connect first) are allowed.
    a.label(socket);
    a.load(arg_low_word(0));
    a.jump(BPF_JEQ, libc::AF_UNIX as u32, None, Some(allow));
    match kind {
        Program::Supervised => a.jump_always(unix_type),
        Program::DenyUnix => a.jump_always(eacces),
    }

    // socketpair(AF_UNIX, SOCK_DGRAM) would give the same unconnected-send ability.
    a.label(pair);
    a.load(arg_low_word(0));
    a.jump(BPF_JEQ, libc::AF_UNIX as u32, None, Some(allow));

    a.label(unix_type);
    a.load(arg_low_word(1));
    // SOCK_NONBLOCK and SOCK_CLOEXEC live above the type bits.
    a.and(0xf);
    a.jump(BPF_JEQ, libc::SOCK_STREAM as u32, Some(allow), None);
    a.jump(BPF_JEQ, libc::SOCK_SEQPACKET as u32, Some(allow), None);
    a.label(eacces);
    a.ret(SECCOMP_RET_ERRNO | libc::EACCES as u32);
    a.label(allow);
    a.ret(SECCOMP_RET_ALLOW);
    a.label(eperm);
    a.ret(SECCOMP_RET_ERRNO | libc::EPERM as u32);
    a.label(kill);
    a.ret(SECCOMP_RET_KILL_PROCESS);
    a.finish()
}

/// A system call number as the filter sees it (`seccomp_data.nr`, 32 bits).
fn nr(number: libc::c_long) -> u32 {
    number as u32
}

/// A few classic-BPF instructions with forward labels, resolved to relative jumps at the end.
#[derive(Default)]
struct Assembler {
    steps: Vec<Step>,
}

enum Step {
    Plain(sock_filter),
    /// Conditional jump: `None` falls through to the next instruction.
    Jump {
        op: u32,
        k: u32,
        yes: Option<usize>,
        no: Option<usize>,
    },
    Always(usize),
    Label(usize),
}

impl Assembler {
    fn load(&mut self, offset: u32) {
        self.plain(BPF_LD | BPF_W | BPF_ABS, offset);
    }

    fn and(&mut self, mask: u32) {
        self.plain(BPF_ALU | BPF_AND | BPF_K, mask);
    }

    fn ret(&mut self, action: u32) {
        self.plain(BPF_RET | BPF_K, action);
    }

    fn plain(&mut self, code: u32, k: u32) {
        self.steps.push(Step::Plain(sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        }));
    }

    fn jump(&mut self, op: u32, k: u32, yes: Option<usize>, no: Option<usize>) {
        self.steps.push(Step::Jump { op, k, yes, no });
    }

    fn jump_always(&mut self, to: usize) {
        self.steps.push(Step::Always(to));
    }

    fn label(&mut self, label: usize) {
        self.steps.push(Step::Label(label));
    }

    fn finish(self) -> Result<Vec<sock_filter>, &'static str> {
        let mut positions = std::collections::HashMap::new();
        let mut count = 0usize;
        for step in &self.steps {
            match step {
                Step::Label(label) => {
                    positions.insert(*label, count);
                }
                _ => count += 1,
            }
        }
        let offset = |from: usize, to: Option<usize>| -> Result<u32, &'static str> {
            let Some(label) = to else { return Ok(0) };
            let target = *positions.get(&label).ok_or("a jump to a missing label")?;
            target
                .checked_sub(from + 1)
                .and_then(|d| u32::try_from(d).ok())
                .ok_or("a backward jump")
        };
        let mut out = Vec::with_capacity(count);
        for step in &self.steps {
            let at = out.len();
            match *step {
                Step::Label(_) => {}
                Step::Plain(insn) => out.push(insn),
                Step::Always(to) => out.push(sock_filter {
                    code: (BPF_JMP | libc::BPF_JA) as u16,
                    jt: 0,
                    jf: 0,
                    k: offset(at, Some(to))?,
                }),
                Step::Jump { op, k, yes, no } => {
                    let short = |d: u32| u8::try_from(d).map_err(|_| "a jump too long");
                    out.push(sock_filter {
                        code: (BPF_JMP | op | BPF_K) as u16,
                        jt: short(offset(at, yes)?)?,
                        jf: short(offset(at, no)?)?,
                        k,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// The raw `seccomp(SECCOMP_SET_MODE_FILTER)` call: installs `program` on the calling thread and
/// returns the listener fd when `with_listener`. Requires `no_new_privs` (or CAP_SYS_ADMIN).
/// Async-signal-safe: one system call on memory built before `fork`.
pub fn install(program: &[sock_filter], with_listener: bool) -> std::io::Result<Option<RawFd>> {
    let fprog = libc::sock_fprog {
        len: u16::try_from(program.len())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: program.as_ptr().cast_mut(),
    };
    let flags = if with_listener {
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
    } else {
        0
    };
    // SAFETY: `fprog` points at `program`, alive for the call; the kernel copies it.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if result < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(with_listener.then_some(result as RawFd))
}

/// Sends `fd` over the unix socket `channel` (`SCM_RIGHTS`, one byte of payload). Stack only, no
/// allocation: safe between `fork` and `exec`.
pub(crate) fn send_fd(channel: RawFd, fd: RawFd) -> std::io::Result<()> {
    /// Room for one `cmsghdr` and one `int`, aligned as `cmsghdr` requires.
    #[repr(C, align(8))]
    struct ControlBuffer([u8; 32]);
    let mut payload = [0u8; 1];
    let mut control = ControlBuffer([0; 32]);
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: all-zero is a valid msghdr; every pointer set below refers to live stack values,
    // and CMSG_SPACE(4) (24 on 64-bit, 16 on 32-bit) fits the 32-byte control buffer.
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        if libc::sendmsg(channel, &message, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The programs with the real kernel: each case installs a program on a thread of its own
    //! (seccomp filters and `no_new_privs` belong to the thread), makes real system calls there,
    //! and the thread ends with its filter.

    use super::*;

    fn on_filtered_thread<T: Send + 'static>(
        kind: Program,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        std::thread::spawn(move || {
            // SAFETY: prctl with integer arguments, on this thread only.
            let nnp = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
            assert_eq!(nnp, 0, "no_new_privs: {}", std::io::Error::last_os_error());
            let program = program(kind).expect("the program builds");
            // Without a listener, notified calls fail with ENOSYS: enough for these checks.
            install(program, false).expect("the kernel accepts the program");
            body()
        })
        .join()
        .expect("the filtered thread ends")
    }

    fn errno_of(result: libc::c_int) -> i32 {
        if result >= 0 {
            // SAFETY: closing the fd this test just received.
            unsafe { libc::close(result) };
            0
        } else {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
        }
    }

    fn socket(domain: i32, kind: i32) -> i32 {
        // SAFETY: plain integer arguments.
        errno_of(unsafe { libc::socket(domain, kind, 0) })
    }

    fn socketpair(kind: i32) -> i32 {
        let mut fds = [-1; 2];
        // SAFETY: `fds` has room for the two descriptors.
        let result = unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) };
        if result != 0 {
            return std::io::Error::last_os_error().raw_os_error().unwrap_or(-1);
        }
        // SAFETY: closing the pair this test just made.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        0
    }

    #[test]
    fn the_supervised_program_refuses_unix_datagrams_and_io_uring_only() {
        let seen = on_filtered_thread(Program::Supervised, || {
            let nonblocking_dgram = libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
            // SAFETY: io_uring_setup with zero entries and a null params pointer fails early
            // (EINVAL or EFAULT) when the filter lets it through.
            let uring = errno_of(unsafe {
                libc::syscall(libc::SYS_io_uring_setup, 0, std::ptr::null::<u8>()) as i32
            });
            [
                socket(libc::AF_UNIX, libc::SOCK_STREAM),
                socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC),
                socket(libc::AF_UNIX, libc::SOCK_DGRAM),
                socket(libc::AF_UNIX, nonblocking_dgram),
                // The kernel turns AF_UNIX SOCK_RAW into a datagram socket.
                socket(libc::AF_UNIX, libc::SOCK_RAW),
                socket(libc::AF_INET, libc::SOCK_DGRAM),
                socket(libc::AF_INET, libc::SOCK_STREAM),
                socketpair(libc::SOCK_STREAM),
                socketpair(libc::SOCK_DGRAM),
                uring,
            ]
        });
        let eacces = libc::EACCES;
        assert_eq!(&seen[..9], &[0, 0, eacces, eacces, eacces, 0, 0, 0, eacces]);
        assert_eq!(seen[9], libc::EPERM, "io_uring_setup");
    }

    #[test]
    fn the_fallback_program_refuses_every_unix_socket_but_stream_pairs() {
        let seen = on_filtered_thread(Program::DenyUnix, || {
            [
                socket(libc::AF_UNIX, libc::SOCK_STREAM),
                socket(libc::AF_UNIX, libc::SOCK_DGRAM),
                socket(libc::AF_INET, libc::SOCK_STREAM),
                socketpair(libc::SOCK_STREAM),
                socketpair(libc::SOCK_DGRAM),
            ]
        });
        assert_eq!(seen, [libc::EACCES, libc::EACCES, 0, 0, libc::EACCES]);
    }

    /// A block cannot put a listener of its own under seek's (it could answer its connects
    /// itself): the kernel allows one listener per filter chain. A filter without one that
    /// allows `connect` changes nothing: the strictest action of all filters wins.
    #[test]
    fn a_block_cannot_stack_its_own_listener_or_allow_connect_itself() {
        let (second_listener, after_allow_all) = std::thread::spawn(|| {
            // SAFETY: prctl with integer arguments, on this thread only.
            assert_eq!(
                unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
                0
            );
            let program = program(Program::Supervised).expect("the program builds");
            let listener = install(program, true)
                .expect("the kernel accepts the program")
                .expect("a listener");
            let second = install(program, true).err().and_then(|e| e.raw_os_error());
            let allow_all = [sock_filter {
                code: (BPF_RET | BPF_K) as u16,
                jt: 0,
                jf: 0,
                k: SECCOMP_RET_ALLOW,
            }];
            install(&allow_all, false).expect("a plain filter installs");
            // SAFETY: this thread owns the listener; closing it makes notified calls fail
            // (ENOSYS) instead of waiting for an answer nobody gives.
            unsafe { libc::close(listener) };
            let address = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a loopback port");
            let connect = std::net::TcpStream::connect(address)
                .err()
                .and_then(|e| e.raw_os_error());
            (second, connect)
        })
        .join()
        .expect("the filtered thread ends");
        assert_eq!(second_listener, Some(libc::EBUSY));
        assert_eq!(
            after_allow_all,
            Some(libc::ENOSYS),
            "connect was not notified"
        );
    }

    #[test]
    fn connect_waits_for_a_supervisor_and_fails_without_one() {
        let errno = on_filtered_thread(Program::Supervised, || {
            let address = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a loopback port");
            std::net::TcpStream::connect(address)
                .err()
                .and_then(|e| e.raw_os_error())
        });
        // No listener was asked for: the kernel answers a notified call with ENOSYS.
        assert_eq!(errno, Some(libc::ENOSYS));
    }
}
