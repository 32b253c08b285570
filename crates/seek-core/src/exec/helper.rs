//! Long-lived helpers seek starts outside blocks (MCP servers, the web agent's browser driver):
//! they get SIGKILL when seek dies, run in a process group of their own held apart from block
//! sweeps, and are ended whole (their children too) exactly once.
//!
//! It must not decide when a helper ends (its owner does).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Arranges for the child of `command` to get SIGKILL when seek dies (Linux). `what` names the
/// child in the error when seek died while it started.
pub fn die_with_parent(command: &mut tokio::process::Command, what: &'static str) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure runs in the forked child before exec and makes only
        // async-signal-safe system calls (prctl, getppid); it allocates nothing on success, and
        // its error is built only when seek is already gone.
        unsafe {
            command.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)?;
                // seek may have died between the fork and the prctl: then no signal will come.
                if std::os::unix::process::parent_id() != parent {
                    return Err(std::io::Error::other(format!(
                        "seek exited while {what} started"
                    )));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (command, what);
}

/// A helper's process group (its leader's pid), ended exactly once.
#[derive(Debug)]
pub struct HelperGroup {
    pgid: i32,
    /// Set once the group has been SIGKILLed: its id may be reused after that, so it is never
    /// signalled again.
    ended: AtomicBool,
}

impl Drop for HelperGroup {
    fn drop(&mut self) {
        // A helper never outlives its owner: killed without waiting (a no-op once ended).
        self.kill();
        super::release_group(self.pgid);
    }
}

impl HelperGroup {
    pub fn new(pgid: i32) -> Self {
        // A block's sweep takes orphans re-parented to seek for the block's own: a helper's
        // processes must never be swept with a block (seek is a child subreaper).
        super::hold_group_apart(pgid);
        Self {
            pgid,
            ended: AtomicBool::new(false),
        }
    }

    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Asks every process of the group to end (no-op once ended).
    pub fn terminate(&self) {
        if !self.ended.load(Ordering::Acquire) {
            let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGTERM);
        }
    }

    /// Kills every process of the group now, once. Synchronous and cheap: `Drop` calls it.
    pub fn kill(&self) {
        if !self.ended.swap(true, Ordering::AcqRel) {
            let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        }
    }

    /// Kills the group, then waits (bounded) until none of its processes is alive, reaping those
    /// re-parented to seek (seek is a child subreaper when it runs blocks).
    pub async fn kill_and_wait(&self, within: Duration) {
        let signal_again = !self.ended.load(Ordering::Acquire);
        self.kill();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let alive = self.live_members();
            if alive.is_empty() || tokio::time::Instant::now() >= deadline {
                return;
            }
            if signal_again {
                // A member that forked after the first SIGKILL was sent is still in the group.
                let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
            }
            // Polling /proc is the only way to see grandchildren go; the deadline bounds it.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Live processes of the group; zombies re-parented to seek are reaped on the way.
    pub(crate) fn live_members(&self) -> Vec<i32> {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let mut alive = Vec::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return alive;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Some(stat) = ProcStat::read(pid) else {
                continue;
            };
            if stat.pgrp != self.pgid {
                continue;
            }
            if !stat.zombie {
                alive.push(pid);
            } else if stat.ppid == me && pid != self.pgid {
                // The leader is tokio's to reap; an orphan that landed on seek is ours.
                let _ = nix::sys::wait::waitpid(
                    Pid::from_raw(pid),
                    Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                );
            }
        }
        alive
    }
}

/// Whether any process of group `pgid` is still alive (zombies not counted).
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse().ok())
            .and_then(ProcStat::read)
            .is_some_and(|stat| stat.pgrp == pgid && !stat.zombie)
    })
}

/// The fields of `/proc/PID/stat` the group sweep needs.
struct ProcStat {
    ppid: i32,
    pgrp: i32,
    zombie: bool,
}

impl ProcStat {
    fn read(pid: i32) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name is in parentheses and may contain anything; fields follow the last ')'.
        let rest = stat.get(stat.rfind(')')? + 2..)?;
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        Some(Self {
            ppid,
            pgrp,
            zombie: state == "Z" || state == "X",
        })
    }
}
