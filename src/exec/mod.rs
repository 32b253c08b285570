//! The process runner every tool uses.
//!
//! Owns spawning a block's process: its own process group and session, stdin from `/dev/null`,
//! cwd = the work dir, stdout and stderr through one pipe (so they interleave in arrival order),
//! output streamed in chunks and captured head-and-tail, a timeout, cancellation, and killing
//! every process the block started when it ends. It must not know about models or tools: it runs
//! a program and reports what happened.

mod capture;
mod carve;
pub mod cgroup;
pub mod instance;
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

pub use capture::{HeadTail, Utf8Stream};
pub use reaper::TOKEN_VAR;

/// How long processes get between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(300);
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

    pub fn output_limit(mut self, limit: usize) -> Self {
        self.output_limit = limit;
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    Exited { code: i32 },
    Signaled { signal: i32 },
    TimedOut { after_secs: u64 },
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
pub async fn run(
    request: &RunRequest,
    cancel: &CancellationToken,
    mut on_output: impl FnMut(&str),
) -> Result<RunResult, ExecError> {
    let program = request.program.to_string_lossy().into_owned();
    if !request.cwd.is_dir() {
        return Err(ExecError::NoWorkDir {
            path: request.cwd.clone(),
        });
    }
    reaper::become_subreaper();
    let token = format!("{}-{}", std::process::id(), next_run_number());
    let (reader, writer) = std::io::pipe().map_err(|source| ExecError::Spawn {
        program: program.clone(),
        source,
    })?;
    let writer_for_stderr = writer.try_clone().map_err(|source| ExecError::Spawn {
        program: program.clone(),
        source,
    })?;

    let mut confinement = match &request.sandbox {
        Some(sandbox) => Some(sandbox.prepare().map_err(|source| ExecError::Spawn {
            program: program.clone(),
            source,
        })?),
        None => None,
    };
    cgroup::prepare(&request.limits);
    let group = std::sync::Arc::new(cgroup::BlockGroup::create(request.limits));
    let group_in_child = std::sync::Arc::clone(&group);
    let socket_supervisor = confinement
        .as_mut()
        .and_then(sandbox::Prepared::take_socket_supervisor);
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
        .env(TOKEN_VAR, &token)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_for_stderr))
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (setsid, prctl, write, setrlimit, capset, landlock_restrict_self, seccomp,
    // sendmsg, close); it
    // allocates nothing.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            #[cfg(target_os = "linux")]
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            group_in_child.apply_in_child();
            if let Some(confinement) = &confinement {
                confinement.apply_in_child()?;
            }
            Ok(())
        });
    }

    let started = Instant::now();
    let (mut child, leader) = {
        let mut live = reaper::registry();
        let child = command.spawn().map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ExecError::NotFound {
                program: program.clone(),
            },
            _ => ExecError::Spawn {
                program: program.clone(),
                source,
            },
        })?;
        // The pid is present until the child is awaited, which has not happened yet.
        let leader = child.id().map_or(0, |id| id as i32);
        live.push(leader);
        (child, leader)
    };
    // The parent's copies of the write end were moved into `command`; drop them now so EOF
    // arrives once the block's processes close theirs.
    drop(command);
    // An unconfirmed group stays with the tree: its v1 limits may still hold the block.
    group.confirm(leader);
    let tree = reaper::BlockTree::new(leader, token, Some(group));
    // If this future is dropped mid-run (its task aborted), still leave no process behind.
    let mut guard = KillOnDrop(Some(tree.clone()));
    // Until it answers, the block's connects wait; if it cannot start, the block is ended.
    let sockets = match socket_supervisor.map(socket_guard::ParentHalf::start) {
        Some(Ok(supervisor)) => Some(supervisor),
        Some(Err(e)) => {
            return Err(ExecError::Spawn {
                program: program.clone(),
                source: std::io::Error::new(e.kind(), format!("the socket supervisor: {e}")),
            });
        }
        None => None,
    };
    let mut pipe =
        tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()).map_err(|source| {
            ExecError::Spawn {
                program: program.clone(),
                source,
            }
        })?;

    let mut capture = HeadTail::new(request.output_limit);
    let mut decoder = Utf8Stream::default();
    let mut buf = vec![0u8; READ_SIZE];
    let deadline = tokio::time::sleep(request.timeout);
    tokio::pin!(deadline);
    let mut status = None;
    let mut ending = None;
    let mut pipe_open = true;

    while status.is_none() && ending.is_none() {
        tokio::select! {
            read = pipe.read(&mut buf), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => {
                    capture.push(&buf[..n]);
                    on_output(&decoder.decode(&buf[..n]));
                }
            },
            exited = child.wait() => status = Some(exited),
            () = &mut deadline => ending = Some(Ending::TimedOut { after_secs: request.timeout.as_secs() }),
            () = cancel.cancelled() => ending = Some(Ending::Stopped),
        }
    }

    // The block's main process ended or must end: kill whatever it leaves behind (background
    // jobs, daemons), then collect its status and the last of the output.
    guard.0 = None;
    let sweep = tree.clone();
    let _ = tokio::task::spawn_blocking(move || {
        sweep.kill_all(KILL_GRACE);
        if let Some(sockets) = sockets {
            sockets.stop();
        }
    })
    .await;
    let status = match status {
        Some(status) => status,
        None => child.wait().await,
    };
    unregister(leader);
    let drain_until = tokio::time::Instant::now() + DRAIN_LIMIT;
    while pipe_open {
        match tokio::time::timeout_at(drain_until, pipe.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                capture.push(&buf[..n]);
                on_output(&decoder.decode(&buf[..n]));
            }
            _ => pipe_open = false,
        }
    }
    let rest = decoder.finish();
    if !rest.is_empty() {
        on_output(&rest);
    }

    let ending = ending.unwrap_or_else(|| match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => Ending::Exited { code },
            (None, Some(signal)) => Ending::Signaled { signal },
            (None, None) => Ending::Exited { code: -1 },
        },
        Err(_) => Ending::Exited { code: -1 },
    });
    Ok(RunResult {
        ending,
        duration: started.elapsed(),
        output: capture.render(),
        bytes_seen: capture.seen(),
        truncated: capture.omitted() > 0,
    })
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
