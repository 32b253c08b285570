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

use nix::sys::signal::Signal;

use crate::exec::HelperGroup as Group;
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
