//! Finding and killing every process a block started, daemons included.
//!
//! Owns the process-tree sweep: a block's processes are those in its control group (where one
//! could be made), its process group or session, those that inherited its `SEEK_BLOCK_ID` token,
//! and orphans re-parented to seek (seek makes
//! itself a child subreaper on Linux, so a double-forked daemon lands here instead of at init).
//! It must not read output or decide success.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use super::cgroup::BlockGroup;

/// The environment variable carrying a block's token to every descendant.
pub const TOKEN_VAR: &str = "SEEK_BLOCK_ID";

/// Main processes of blocks currently running in this process. Orphans re-parented to seek are
/// attributed to a block only if they are not one of these.
static LIVE_CHILDREN: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Process groups seek runs beside blocks (the MCP servers'): their processes are never a
/// block's, even when one is re-parented to seek after a block started.
static APART_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Keeps the processes of group `pgid` out of every block's sweep until `release_group`.
pub fn hold_group_apart(pgid: i32) {
    let mut groups = APART_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    groups.push(pgid);
}

/// Ends `hold_group_apart(pgid)` (the group is gone).
pub fn release_group(pgid: i32) {
    let mut groups = APART_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(at) = groups.iter().position(|&g| g == pgid) {
        groups.swap_remove(at);
    }
}

fn held_apart() -> Vec<i32> {
    APART_GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Holds the registry while a child is spawned and registered, or while a sweep decides.
pub fn registry() -> MutexGuard<'static, Vec<i32>> {
    // A panic while holding this lock leaves a plain Vec<i32> intact: recover it.
    LIVE_CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes seek a child subreaper (Linux), once per process.
pub(crate) fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        {
            // Failure only loses the catch for double-forked daemons; group and token still work.
            let _ = nix::sys::prctl::set_child_subreaper(true);
        }
    });
}

/// One process seen in `/proc`.
#[derive(Debug, Clone, Copy)]
struct ProcInfo {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    start_ticks: u64,
    zombie: bool,
}

fn read_stat(pid: i32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain anything; fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    Some(ProcInfo {
        pid,
        zombie: fields.first()? == &"Z",
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

fn has_token(pid: i32, token: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{TOKEN_VAR}={token}");
    environ
        .split(|&b| b == 0)
        .any(|entry| entry == wanted.as_bytes())
}

/// A running block's identity, for sweeps.
#[derive(Debug, Clone)]
pub(crate) struct BlockTree {
    /// The main child's pid, which is also its process group and session id.
    pub leader: i32,
    pub token: String,
    /// The main child's start time in clock ticks: nothing older can belong to the block.
    pub start_ticks: u64,
    /// The block's control groups, where they could be made: membership no process can leave.
    pub group: Option<Arc<BlockGroup>>,
}

impl BlockTree {
    pub fn new(leader: i32, token: String, group: Option<Arc<BlockGroup>>) -> Self {
        let start_ticks = read_stat(leader).map_or(0, |p| p.start_ticks);
        Self {
            leader,
            token,
            start_ticks,
            group,
        }
    }

    /// Live processes of the block (zombies are reaped when they are ours, and skipped).
    fn members(&self, exclude_leader: bool) -> Vec<i32> {
        let me = std::process::id() as i32;
        // A block starts in a session of its own, and no process can join a group or a
        // session not its own: nothing in seek's own process group or session is a block's
        // (the children seek starts without a session of their own: an editor, a helper or a
        // test's server in a group of its own). The session matters for a helper just spawned:
        // it is seek's child, in a new group not yet held apart, and a sweep deciding in that
        // moment would otherwise take it for an orphan of the block.
        let own_group = nix::unistd::getpgrp().as_raw();
        let own_session = nix::unistd::getsid(None).map_or(-1, |s| s.as_raw());
        let Some(pids) = proc_pids() else {
            return Vec::new();
        };
        let group: Vec<i32> = self.group.as_ref().map(|g| g.members()).unwrap_or_default();
        let apart = held_apart();
        let live = registry();
        let mut found: Vec<i32> = group
            .iter()
            .copied()
            .filter(|&pid| pid != me && !(exclude_leader && pid == self.leader))
            .collect();
        for pid in pids {
            if pid == me || (exclude_leader && pid == self.leader) || group.contains(&pid) {
                continue;
            }
            let Some(info) = read_stat(pid) else { continue };
            // An MCP server (or its child) is never a block's; a block's own group always is,
            // even if an ended server's group id was reused for it.
            if info.pgrp != self.leader
                && (apart.contains(&info.pgrp)
                    || info.pgrp == own_group
                    || info.session == own_session)
            {
                continue;
            }
            let ours = info.pgrp == self.leader
                || info.session == self.leader
                || (info.start_ticks >= self.start_ticks
                    && ((info.ppid == me && !live.contains(&pid)) || has_token(pid, &self.token)));
            if !ours {
                continue;
            }
            if info.zombie {
                reap_if_ours(&info, me);
            } else {
                found.push(pid);
            }
        }
        found
    }

    /// Kills every process of the block: SIGTERM, then SIGKILL after `grace`, until none is left.
    /// The leader itself is left to its owner (tokio reaps it); it is signalled like the rest.
    pub(crate) fn kill_all(&self, grace: Duration) {
        let mut signalled: HashSet<i32> = HashSet::new();
        let deadline = Instant::now() + grace;
        // Signal the group first: that reaches everything that did not leave it in one call.
        let _ = nix::sys::signal::killpg(Pid::from_raw(self.leader), Signal::SIGTERM);
        loop {
            let members = self.members(true);
            let leader_alive = read_stat(self.leader).is_some_and(|p| !p.zombie);
            if members.is_empty() && !leader_alive {
                return;
            }
            let hard = Instant::now() >= deadline;
            let signal = if hard {
                Signal::SIGKILL
            } else {
                Signal::SIGTERM
            };
            if hard {
                if let Some(group) = &self.group {
                    group.kill();
                }
                let _ = nix::sys::signal::killpg(Pid::from_raw(self.leader), Signal::SIGKILL);
                if leader_alive {
                    let _ = kill(Pid::from_raw(self.leader), Signal::SIGKILL);
                }
            }
            for pid in members {
                // SIGTERM once per process; SIGKILL on every pass once the grace is over.
                if hard || signalled.insert(pid) {
                    let _ = kill(Pid::from_raw(pid), signal);
                }
            }
            if !leader_alive && hard {
                // Only descendants remain and they have been SIGKILLed; give the kernel a moment.
                std::thread::sleep(Duration::from_millis(2));
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
            if Instant::now() > deadline + Duration::from_secs(5) {
                // Something is unkillable (a process in uninterruptible sleep): stop trying.
                return;
            }
        }
    }
}

/// Reaps a zombie that was re-parented to seek, so no `<defunct>` entry outlives its block.
fn reap_if_ours(info: &ProcInfo, me: i32) {
    if info.ppid == me {
        let _ = waitpid(Pid::from_raw(info.pid), Some(WaitPidFlag::WNOHANG));
    }
}

/// The processes `/proc` lists now (`None` when it cannot be listed). A process that ends while
/// the caller reads it is simply not found there.
pub(super) fn proc_pids() -> Option<impl Iterator<Item = i32>> {
    let entries = std::fs::read_dir(Path::new("/proc")).ok()?;
    Some(entries.flatten().filter_map(|entry| {
        entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    /// `sleep 30`, in a session of its own when `session`, else in a group of its own in this
    /// process's session.
    fn sleeper(session: bool) -> Child {
        let mut command = Command::new("sleep");
        command.arg("30");
        if session {
            // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent's.
            unsafe {
                command.pre_exec(|| {
                    nix::unistd::setsid()
                        .map(|_| ())
                        .map_err(std::io::Error::from)
                })
            };
        } else {
            command.process_group(0);
        }
        command.spawn().expect("sleep starts")
    }

    #[test]
    fn a_child_in_seeks_session_is_never_a_blocks_but_an_escaped_one_is() {
        let mut leader = sleeper(true);
        let block = BlockTree::new(leader.id() as i32, "no-token".into(), None);
        // Started after the block, a child of this process, in a group of its own and not held
        // apart: a helper in the moment after its spawn.
        let mut helper = sleeper(false);
        // Started after the block in a session of its own, a child of this process: what a
        // daemon that left the block's session looks like once re-parented here.
        let mut escaped = sleeper(true);
        let members = block.members(true);
        for child in [&mut leader, &mut helper, &mut escaped] {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(!members.contains(&(helper.id() as i32)), "{members:?}");
        assert!(members.contains(&(escaped.id() as i32)), "{members:?}");
    }
}
