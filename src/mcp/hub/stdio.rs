//! A stdio MCP server as seek's own child: spawned in a process group of its own that dies with
//! seek, watched until it exits, and ended whole (its children too).
//!
//! Owns the spawn (environment, cwd, pipes), the exit watch and the process group's signals. It
//! must not speak the protocol: the child's stdin and stdout go to rmcp's transport, its stderr
//! to `stderr::drain`.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

/// A spawned server: its pipes, its group, and how its exit is announced.
pub(super) struct Spawned {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    pub group: std::sync::Arc<Group>,
    /// `Some(status)` once the leader has exited and been reaped.
    pub exit: watch::Receiver<Option<ExitStatus>>,
}

/// What to start.
pub(super) struct Launch<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env_remove: &'a [OsString],
    pub env: &'a [(String, String)],
}

/// Spawns the server and a task that reaps it. Must run on a runtime worker thread (an async
/// task), never on a `spawn_blocking` thread: the kernel's parent-death signal follows the thread
/// that forked, and blocking threads end when idle.
pub(super) fn spawn(launch: &Launch<'_>) -> Result<Spawned, String> {
    let mut command = tokio::process::Command::new(launch.command);
    for name in launch.env_remove {
        command.env_remove(name);
    }
    command
        .args(launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: seek signals the server and everything it started in one call, and a
        // Ctrl+C meant for seek's terminal does not reach it.
        .process_group(0)
        .kill_on_drop(true);
    crate::exec::die_with_parent(&mut command, "the server");
    let mut child = command.spawn().map_err(|e| spawn_error(launch, &e))?;
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        // `id()` is `None` only once the child has been reaped, which cannot have happened yet.
        return Err(format!(
            "`{}` exited before it could be watched",
            launch.command
        ));
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // All three were asked for as pipes just above.
        return Err(format!("`{}` started without its pipes", launch.command));
    };
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(reap(child, exit_tx));
    Ok(Spawned {
        stdin,
        stdout,
        stderr,
        group: std::sync::Arc::new(Group::new(pid)),
        exit,
    })
}

fn spawn_error(launch: &Launch<'_>, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound if !launch.cwd.is_dir() => format!(
            "its working directory {} does not exist",
            launch.cwd.display()
        ),
        std::io::ErrorKind::NotFound => format!(
            "`{}` was not found (is it installed and on PATH?)",
            launch.command
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("`{}` could not be run: permission denied", launch.command)
        }
        _ => format!("`{}` could not be started: {error}", launch.command),
    }
}

/// Waits for the leader's exit (which reaps it) and announces it.
async fn reap(mut child: Child, exit: watch::Sender<Option<ExitStatus>>) {
    let status = match child.wait().await {
        Ok(status) => status,
        // Waiting failed (it should not): say it ended without a status rather than never.
        Err(_) => ExitStatus::from_raw(0xff << 8),
    };
    exit.send_replace(Some(status));
}

/// "exited with status 1", "was killed by signal 9 (SIGKILL)".
pub(super) fn describe_status(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(signal) => match Signal::try_from(signal) {
            Ok(named) => format!("was killed by signal {signal} ({named})"),
            Err(_) => format!("was killed by signal {signal}"),
        },
        None => "exited".to_owned(),
    }
}

/// A server's process group (its leader's pid), ended exactly once.
#[derive(Debug)]
pub(super) struct Group {
    pgid: i32,
    /// Set once the group has been SIGKILLed: its id may be reused after that, so it is never
    /// signalled again.
    ended: AtomicBool,
}

impl Drop for Group {
    fn drop(&mut self) {
        crate::exec::release_group(self.pgid);
    }
}

impl Group {
    fn new(pgid: i32) -> Self {
        // A block's sweep takes orphans re-parented to seek for the block's own: a server's
        // processes must never be swept with a block (seek is a child subreaper).
        crate::exec::hold_group_apart(pgid);
        Self {
            pgid,
            ended: AtomicBool::new(false),
        }
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
    fn live_members(&self) -> Vec<i32> {
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
