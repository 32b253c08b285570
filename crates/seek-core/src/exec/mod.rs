//! The process runner every tool uses.
//!
//! Owns spawning a block's process: its own process group and session, stdin from `/dev/null`,
//! cwd = the work dir, stdout and stderr through one pipe (so they interleave in arrival order),
//! output streamed in chunks and captured head-and-tail, a timeout, an idle timeout (`idle`),
//! cancellation, and killing every process the block started when it ends. It must not know about models or tools: it runs
//! a program and reports what happened.

mod capture;
mod carve;
pub mod cgroup;
mod helper;
pub mod idle;
pub mod instance;
pub mod jail;
mod reaper;
pub mod sandbox;
pub mod socket_guard;

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use capture::Output;
pub use helper::{HelperGroup, die_with_parent, group_alive};
pub use reaper::{TOKEN_VAR, hold_group_apart, release_group};

/// How long processes get between SIGTERM and SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_millis(300);
/// How long to keep draining the pipe after every process of the block is gone.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
const READ_SIZE: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Variables added to (or replacing) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    /// End the run as stuck after this long without output or CPU use (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Bytes of output kept (head and tail).
    pub output_limit: usize,
    /// Confinement (`None`: runs with seek's own rights).
    pub sandbox: Option<std::sync::Arc<sandbox::Sandbox>>,
    /// Inherited variables the program must not see (credentials).
    pub env_remove: Vec<OsString>,
    /// Processes and memory the block may use.
    pub limits: cgroup::Limits,
}

impl RunRequest {
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            timeout: Duration::from_secs(300),
            idle_timeout: None,
            output_limit: 64 * 1024,
            sandbox: None,
            env_remove: Vec::new(),
            limits: cgroup::Limits::default(),
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Ends the run as stuck after `limit` without output or CPU use (`None`: never).
    pub fn idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.idle_timeout = limit;
        self
    }

    pub fn output_limit(mut self, limit: usize) -> Self {
        self.output_limit = limit;
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    Exited {
        code: i32,
    },
    Signaled {
        signal: i32,
    },
    TimedOut {
        after_secs: u64,
    },
    /// Ended as stuck: no output and no CPU use for `after_secs`.
    Idle {
        after_secs: u64,
    },
    Stopped,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResult {
    pub ending: Ending,
    pub duration: Duration,
    /// Captured output (head and tail), decoded lossily.
    pub output: String,
    /// Bytes the block printed in all.
    pub bytes_seen: u64,
    /// Whether output was omitted from the middle.
    pub truncated: bool,
}

impl RunResult {
    /// Exit status 0, not timed out, not stopped. Nothing else: no keyword scanning.
    pub fn success(&self) -> bool {
        self.ending == Ending::Exited { code: 0 }
    }

    pub fn exit_code(&self) -> Option<i32> {
        match self.ending {
            Ending::Exited { code } => Some(code),
            _ => None,
        }
    }

    /// Why the run failed, in words for the model and the user; `None` on success.
    pub fn failure_reason(&self) -> Option<String> {
        match self.ending {
            Ending::Exited { code: 0 } => None,
            Ending::Exited { code } => Some(format!("exit code {code}")),
            Ending::Signaled { signal } => Some(format!(
                "killed by signal {signal} ({})",
                signal_name(signal)
            )),
            Ending::TimedOut { after_secs } => Some(format!("timed out after {after_secs} s")),
            Ending::Idle { after_secs } => Some(format!(
                "no output and no CPU use for {after_secs} s: it was probably waiting for input, and was ended as stuck. Blocks have no terminal and their input is empty: give a program its input in the code (arguments, a file, a pipe or a here-document), and do not start servers or watchers that wait forever"
            )),
            Ending::Stopped => Some("stopped by the user".to_owned()),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    nix::sys::signal::Signal::try_from(signal).map_or("unknown signal", |s| s.as_str())
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("`{program}` was not found on PATH")]
    NotFound { program: String },
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the work dir {} does not exist", path.display())]
    NoWorkDir { path: PathBuf },
}

/// Runs `request`, calling `on_output` with each piece of output text as it arrives, until the
/// program ends, the timeout passes, or `cancel` fires. When it returns, no process the run
/// started is left.
///
/// The order of the steps is what keeps the block contained; each step is named below, and none
/// may move: the cgroup and the confinement are made before the spawn (the child joins them in
/// `pre_exec`), the socket supervisor starts only once the child exists (its connects wait for
/// it), and every process is killed before the main one is waited for and the pipe drained.
pub async fn run(
    request: &RunRequest,
    cancel: &CancellationToken,
    on_output: impl FnMut(&str),
) -> Result<RunResult, ExecError> {
    let program = request.program.to_string_lossy().into_owned();
    let spawn_error = |source| ExecError::Spawn {
        program: program.clone(),
        source,
    };
    if !request.cwd.is_dir() {
        return Err(ExecError::NoWorkDir {
            path: request.cwd.clone(),
        });
    }
    reaper::become_subreaper();
    let token = format!("{}-{}", std::process::id(), next_run_number());
    let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
    let writer_for_stderr = writer.try_clone().map_err(spawn_error)?;

    let mut confinement = match &request.sandbox {
        Some(sandbox) => Some(sandbox.prepare().map_err(spawn_error)?),
        None => None,
    };
    cgroup::prepare(&request.limits);
    let group = std::sync::Arc::new(cgroup::BlockGroup::create(request.limits));
    let socket_supervisor = confinement
        .as_mut()
        .and_then(sandbox::Prepared::take_socket_supervisor);
    let mut command = block_command(request, &token, writer, writer_for_stderr);
    join_in_child(&mut command, std::sync::Arc::clone(&group), confinement);

    let started = Instant::now();
    let (child, leader) = spawn_registered(&mut command, &program)?;
    // The parent's copies of the write end were moved into `command`; drop them now so EOF
    // arrives once the block's processes close theirs.
    drop(command);
    // An unconfirmed group stays with the tree: its v1 limits may still hold the block.
    let in_group = group.confirm(leader);
    let idle = request.idle_timeout.map(|limit| {
        let source = match group.v2_dir().filter(|_| in_group) {
            Some(dir) => idle::CpuSource::Cgroup(dir.to_path_buf()),
            None => idle::CpuSource::Processes { leader },
        };
        idle::IdleWatch::new(limit, source)
    });
    let tree = reaper::BlockTree::new(leader, token, Some(group));
    // If this future is dropped mid-run (its task aborted), still leave no process behind.
    let guard = KillOnDrop(Some(tree.clone()));
    // Until it answers, the block's connects wait; if it cannot start, the block is ended
    // (by `guard`, as this returns).
    let sockets = start_socket_supervisor(socket_supervisor).map_err(spawn_error)?;
    let pipe =
        tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()).map_err(spawn_error)?;

    let mut running = Running {
        child,
        pipe,
        output: Output::new(request.output_limit, on_output),
    };
    let stop = running.until_end(request.timeout, idle, cancel).await;
    // The block's main process ended or must end: kill whatever it leaves behind (background
    // jobs, daemons), then collect its status and the last of the output.
    disarm(guard);
    sweep(tree, sockets).await;
    let (status, ended) = match stop {
        Stop::Exited(status) => (status, None),
        Stop::Ended(ending) => (running.child.wait().await, Some(ending)),
    };
    unregister(leader);
    running.drain().await;
    let Running { mut output, .. } = running;
    output.flush();
    // A timeout or a stop says more than the status of a process seek killed itself.
    let ending = match ended {
        Some(ending) => ending,
        None => ending_of(status, &mut output),
    };
    Ok(output.into_result(ending, started.elapsed()))
}

/// The block's command: its arguments, environment (credentials removed, the sandbox's and the
/// request's variables, the run's token), work dir, and one pipe for stdout and stderr.
fn block_command(
    request: &RunRequest,
    token: &str,
    stdout: std::io::PipeWriter,
    stderr: std::io::PipeWriter,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&request.program);
    for name in &request.env_remove {
        command.env_remove(name);
    }
    if let Some(sandbox) = &request.sandbox {
        command.envs(sandbox.child_env());
    }
    command
        .args(&request.args)
        .current_dir(&request.cwd)
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .env(TOKEN_VAR, token)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true);
    command
}

/// What the child does between fork and exec: a session of its own, death with seek, the
/// block's cgroup, then the confinement (last: it may forbid what the steps before need).
fn join_in_child(
    command: &mut tokio::process::Command,
    group: std::sync::Arc<cgroup::BlockGroup>,
    confinement: Option<sandbox::Prepared>,
) {
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (setsid, prctl, write, setrlimit, capset, landlock_restrict_self, seccomp,
    // sendmsg, close); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            #[cfg(target_os = "linux")]
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            group.apply_in_child();
            if let Some(confinement) = &confinement {
                confinement.apply_in_child()?;
            }
            Ok(())
        });
    }
}

/// Spawns the block with the registry of live leaders held, so a signal handler sweeping the
/// registry never misses a child that exists.
fn spawn_registered(
    command: &mut tokio::process::Command,
    program: &str,
) -> Result<(tokio::process::Child, i32), ExecError> {
    let mut live = reaper::registry();
    let child = command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ExecError::NotFound {
            program: program.to_owned(),
        },
        _ => ExecError::Spawn {
            program: program.to_owned(),
            source,
        },
    })?;
    // The pid is present until the child is awaited, which has not happened yet.
    let leader = child.id().map_or(0, |id| id as i32);
    live.push(leader);
    Ok((child, leader))
}

/// Starts answering the block's connects (`None`: no socket guard for this block).
fn start_socket_supervisor(
    half: Option<socket_guard::ParentHalf>,
) -> std::io::Result<Option<socket_guard::Supervisor>> {
    half.map(socket_guard::ParentHalf::start)
        .transpose()
        .map_err(|e| std::io::Error::new(e.kind(), format!("the socket supervisor: {e}")))
}

/// The run's end is handled here from now on: the drop guard must not kill a second time.
fn disarm(mut guard: KillOnDrop) {
    guard.0 = None;
}

/// Kills every process of the block (SIGTERM, the grace, SIGKILL) and stops its socket
/// supervisor, off the runtime: the grace is a blocking wait.
async fn sweep(tree: reaper::BlockTree, sockets: Option<socket_guard::Supervisor>) {
    let _ = tokio::task::spawn_blocking(move || {
        tree.kill_all(KILL_GRACE);
        if let Some(sockets) = sockets {
            sockets.stop();
        }
    })
    .await;
}

/// Why the wait for the block ended.
#[derive(Debug)]
enum Stop {
    /// The main process exited (or waiting for it failed).
    Exited(std::io::Result<std::process::ExitStatus>),
    /// The timeout passed or the user stopped the block; the main process may still run.
    Ended(Ending),
}

/// The spawned block: its main process, its output pipe, and what it printed so far.
struct Running<F> {
    child: tokio::process::Child,
    pipe: tokio::net::unix::pipe::Receiver,
    output: Output<F>,
}

impl<F: FnMut(&str)> Running<F> {
    /// Reads output until the main process exits, the timeout passes, `idle` finds the block
    /// stuck, or `cancel` fires.
    async fn until_end(
        &mut self,
        timeout: Duration,
        mut idle: Option<idle::IdleWatch>,
        cancel: &CancellationToken,
    ) -> Stop {
        let mut buf = vec![0u8; READ_SIZE];
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let period = idle
            .as_ref()
            .map_or(Duration::from_secs(3600), idle::IdleWatch::period);
        let mut sample = tokio::time::interval(period);
        sample.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                read = self.pipe.read(&mut buf), if self.output.pipe_open => {
                    if let Some(idle) = idle.as_mut() {
                        idle.output_seen();
                    }
                    self.output.take_read(read, &buf);
                }
                exited = self.child.wait() => return Stop::Exited(exited),
                () = &mut deadline => return Stop::Ended(Ending::TimedOut { after_secs: timeout.as_secs() }),
                () = cancel.cancelled() => return Stop::Ended(Ending::Stopped),
                _ = sample.tick(), if idle.is_some() => {
                    // Reading /proc or cpu.stat is a few small reads of kernel memory: cheap
                    // enough for the runtime's thread at this pace.
                    if let Some(watch) = idle.as_mut()
                        && watch.stuck()
                    {
                        let after_secs = watch.limit().as_secs();
                        return Stop::Ended(Ending::Idle { after_secs });
                    }
                }
            }
        }
    }

    /// Reads what is left in the pipe once every process is gone, for at most `DRAIN_LIMIT`
    /// (a descendant that escaped the sweep may hold the write end open).
    async fn drain(&mut self) {
        let mut buf = vec![0u8; READ_SIZE];
        let drain_until = tokio::time::Instant::now() + DRAIN_LIMIT;
        while self.output.pipe_open {
            match tokio::time::timeout_at(drain_until, self.pipe.read(&mut buf)).await {
                Ok(read) => self.output.take_read(read, &buf),
                Err(_elapsed) => self.output.pipe_open = false,
            }
        }
    }
}

/// How the main process ended. A status that cannot be read is reported in the output (and
/// the log), and the run counts as failed with exit code −1: nothing is known of how it ended.
fn ending_of<F: FnMut(&str)>(
    status: std::io::Result<std::process::ExitStatus>,
    output: &mut Output<F>,
) -> Ending {
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => Ending::Exited { code },
            (None, Some(signal)) => Ending::Signaled { signal },
            (None, None) => Ending::Exited { code: -1 },
        },
        Err(e) => {
            output.note(&format!(
                "the block's exit status could not be read ({e}); it is counted as failed"
            ));
            Ending::Exited { code: -1 }
        }
    }
}

/// Kills a block's processes from a plain thread if the run future is dropped before it finished.
struct KillOnDrop(Option<reaper::BlockTree>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(tree) = self.0.take() {
            std::thread::spawn(move || {
                tree.kill_all(KILL_GRACE);
                unregister(tree.leader);
            });
        }
    }
}

fn unregister(leader: i32) {
    reaper::registry().retain(|&pid| pid != leader);
}

fn next_run_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collecting(seen: &mut String) -> Output<impl FnMut(&str) + '_> {
        Output::new(1024, move |text: &str| seen.push_str(text))
    }

    #[test]
    fn a_wait_error_is_reported_and_counted_as_a_failure() {
        let mut seen = String::new();
        let mut output = collecting(&mut seen);
        output.take_read(Ok(7), b"partial");
        let ending = ending_of(
            Err(std::io::Error::from_raw_os_error(nix::libc::ECHILD)),
            &mut output,
        );
        assert_eq!(ending, Ending::Exited { code: -1 });
        let result = output.into_result(ending, Duration::ZERO);
        assert!(!result.success());
        assert!(
            result
                .output
                .contains("partial\n[seek: the block's exit status could not be read ("),
            "{}",
            result.output
        );
        assert!(seen.contains("it is counted as failed]"), "{seen}");
    }

    #[test]
    fn exit_statuses_become_endings() {
        use std::os::unix::process::ExitStatusExt;
        let mut seen = String::new();
        let mut output = collecting(&mut seen);
        let exited = std::process::ExitStatus::from_raw(3 << 8);
        let killed = std::process::ExitStatus::from_raw(9);
        assert_eq!(
            ending_of(Ok(exited), &mut output),
            Ending::Exited { code: 3 }
        );
        assert_eq!(
            ending_of(Ok(killed), &mut output),
            Ending::Signaled { signal: 9 }
        );
        let result = output.into_result(Ending::Stopped, Duration::ZERO);
        assert_eq!(result.output, "", "nothing is noted for a readable status");
    }
}
