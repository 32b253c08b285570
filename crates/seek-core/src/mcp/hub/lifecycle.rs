//! One server's life, as a background task: start (spawn or connect, initialize, list tools)
//! within the startup timeout, then watch the session and the process until either ends, and
//! record how.
//!
//! Owns the state transitions `Starting → Ready | Failed` and `Ready → Exited`, and the words
//! that explain them. It must not answer calls (the hub does) nor run shutdown's grace (the hub
//! does: on `stop` this task only closes the session).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::session::{self, Session};
use super::stderr::Tail;
use super::stdio;
use super::stdout::{self, Notes};
use super::{ServerState, Slot};
use crate::config::McpTransport;
use crate::exec::HelperGroup as Group;

/// How long a server that closed its side is given to exit, so the message can carry its status.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(1);
/// How long stderr may stay open after the exit, so its last line can be quoted.
const STDERR_CLOSE_WAIT: Duration = Duration::from_millis(500);
/// How long closing a session may take.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// What the task needs.
pub(super) struct Context {
    pub slot: Arc<Slot>,
    pub env_remove: Arc<Vec<OsString>>,
    pub work_dir: PathBuf,
    pub stop: CancellationToken,
}

/// A stdio server's process, as the hub keeps it.
#[derive(Clone)]
pub(super) struct Process {
    pub group: Arc<Group>,
    pub exit: watch::Receiver<Option<ExitStatus>>,
    pub tail: Tail,
    pub notes: Arc<Mutex<Notes>>,
}

/// Where the start is, to say what did not finish in time.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Phase {
    Spawn,
    Initialize,
    ListTools,
}

impl Phase {
    fn load(cell: &AtomicU8) -> Phase {
        match cell.load(Ordering::Relaxed) {
            0 => Phase::Spawn,
            1 => Phase::Initialize,
            _ => Phase::ListTools,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Phase::Spawn => "start",
            Phase::Initialize => "answer initialize",
            Phase::ListTools => "list its tools",
        }
    }
}

/// The server's whole life.
pub(super) async fn run(context: Context) {
    let slot = &context.slot;
    let started = Instant::now();
    let phase = AtomicU8::new(Phase::Spawn as u8);
    let timeout = slot.config.startup_timeout;
    let outcome = tokio::select! {
        biased;
        () = context.stop.cancelled() => None,
        outcome = tokio::time::timeout(timeout, start(&context, &phase)) => Some(outcome),
    };
    let session = match outcome {
        None => {
            // seek is shutting down: a server that never became ready just ends.
            kill_process(slot);
            finish(slot, "seek stopped before it was ready".to_owned());
            return;
        }
        Some(Ok(Ok(session))) => session,
        Some(Ok(Err(why))) => {
            let why = explain(slot, why, true).await;
            kill_process(slot);
            finish(slot, why);
            return;
        }
        Some(Err(_elapsed)) => {
            let secs = timeout.as_secs_f64();
            let what = Phase::load(&phase).what();
            let why = explain(slot, format!("it did not {what} within {secs} s"), false).await;
            kill_process(slot);
            finish(slot, why);
            return;
        }
    };
    let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    slot.lock().startup_ms = Some(elapsed);
    slot.settle(ServerState::Ready);
    tracing::info!(
        "mcp[{}] ready in {elapsed} ms: {} tool(s)",
        slot.config.name,
        slot.lock().tools.len()
    );
    watch_session(&context, session).await;
    slot.finished.send_replace(true);
}

/// Spawns or connects, initializes and lists the tools; on success the slot holds the peer,
/// the handshake and the tools (still `Starting`).
async fn start(context: &Context, phase: &AtomicU8) -> Result<Session, String> {
    let slot = &context.slot;
    let session = match &slot.config.transport {
        McpTransport::Stdio { command, args, cwd } => {
            let cwd = cwd.clone().unwrap_or_else(|| context.work_dir.clone());
            let spawned = stdio::spawn(&stdio::Launch {
                command,
                args,
                cwd: &cwd,
                env_remove: &context.env_remove,
                env: &slot.config.env,
            })?;
            let tail = super::stderr::drain(&slot.config.name, spawned.stderr);
            let (stdout, notes) = stdout::Bounded::new(spawned.stdout);
            slot.lock().process = Some(Process {
                group: spawned.group,
                exit: spawned.exit,
                tail,
                notes,
            });
            // rmcp's own bound stays as a backstop, above the one `Bounded` enforces.
            let transport = AsyncRwTransport::new_client(stdout, spawned.stdin)
                .with_max_line_length(stdout::MAX_MESSAGE_BYTES + 64 * 1024);
            phase.store(Phase::Initialize as u8, Ordering::Relaxed);
            session::connect(&slot.config.name, transport).await?
        }
        McpTransport::Http {
            url,
            bearer_token_env_var,
        } => {
            let transport = super::http::transport(url, bearer_token_env_var.as_deref())?;
            phase.store(Phase::Initialize as u8, Ordering::Relaxed);
            session::connect(&slot.config.name, transport).await?
        }
    };
    phase.store(Phase::ListTools as u8, Ordering::Relaxed);
    let handshake = session::handshake(session.peer());
    let listed = session::list_tools(&slot.config.name, session.peer()).await?;
    for dropped in &listed.dropped {
        tracing::warn!("mcp[{}] {dropped}", slot.config.name);
    }
    let mut inner = slot.lock();
    inner.handshake = handshake;
    inner.tools = Arc::new(listed.tools);
    inner.peer = Some(session.peer().clone());
    drop(inner);
    Ok(session)
}

/// How the running session ended.
enum End {
    Stop,
    Closed,
    Exited(ExitStatus),
}

/// Waits until seek stops, the session closes or the process exits; records an ending that was
/// not seek's doing.
async fn watch_session(context: &Context, session: Session) {
    let slot = &context.slot;
    let service = session.cancellation_token();
    let exit = slot.lock().process.as_ref().map(|p| p.exit.clone());
    let mut ended = std::pin::pin!(session.waiting());
    let end = tokio::select! {
        biased;
        () = context.stop.cancelled() => End::Stop,
        _ = &mut ended => End::Closed,
        status = exited(exit) => End::Exited(status),
    };
    if !matches!(end, End::Closed) {
        service.cancel();
        let _ = tokio::time::timeout(CLOSE_WAIT, ended).await;
    }
    let why = match end {
        // The hub's shutdown (or drop) ends the process and says so.
        End::Stop => return,
        End::Closed => explain(slot, "it closed the connection".to_owned(), true).await,
        End::Exited(status) => {
            let base = stdio::describe_status(&status);
            explain(slot, base, true).await
        }
    };
    kill_process(slot);
    let why = slot.clean(why);
    tracing::warn!("mcp[{}] {why}", slot.config.name);
    let mut inner = slot.lock();
    inner.peer = None;
    inner.state = Some(ServerState::Exited(why));
}

/// Resolves with the exit status; never, for a server without a process.
async fn exited(exit: Option<watch::Receiver<Option<ExitStatus>>>) -> ExitStatus {
    let Some(mut exit) = exit else {
        return std::future::pending().await;
    };
    let status = exit
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|status| *status);
    match status {
        Some(status) => status,
        // The reaper went away without a status (the runtime is ending): nothing to report.
        None => std::future::pending().await,
    }
}

/// `base`, with what the process tells: its exit status and last stderr line (waiting a moment
/// for them when `wait_for_exit`), and what it wrote on stdout that is not the protocol.
async fn explain(slot: &Slot, base: String, wait_for_exit: bool) -> String {
    let Some(process) = slot.lock().process.clone() else {
        return base;
    };
    let mut exit = process.exit.clone();
    if wait_for_exit {
        let _ = tokio::time::timeout(EXIT_STATUS_WAIT, exit.wait_for(Option::is_some)).await;
    }
    let status = *exit.borrow();
    let mut why = match status {
        Some(status) => {
            process.tail.wait_closed(STDERR_CLOSE_WAIT).await;
            // The exit is what explains a closed connection; other failures keep their words.
            let described = stdio::describe_status(&status);
            let mut why = if base == described || closed_by_exit(&base) {
                described
            } else {
                format!("{base}; it {described}")
            };
            if let Some(line) = process.tail.last_line() {
                why = format!("{why}: {line}");
            }
            why
        }
        None => match process.tail.last_line() {
            Some(line) => format!("{base} (its last stderr line: {line})"),
            None => base,
        },
    };
    let notes = process.notes.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(note) = notes.explain() {
        why = format!("{why} ({note})");
    }
    why
}

/// Failures that only say the other side went away: the exit status says it better.
fn closed_by_exit(base: &str) -> bool {
    [
        "it closed the connection",
        "initialize failed",
        "could not send",
    ]
    .iter()
    .any(|start| base.starts_with(start))
}

fn kill_process(slot: &Slot) {
    if let Some(process) = &slot.lock().process {
        process.group.kill();
    }
}

/// Ends the start as a failure, logged.
fn finish(slot: &Slot, why: String) {
    let why = slot.clean(why);
    tracing::warn!("mcp[{}] failed to start: {why}", slot.config.name);
    slot.settle(ServerState::Failed(why));
    slot.finished.send_replace(true);
}
