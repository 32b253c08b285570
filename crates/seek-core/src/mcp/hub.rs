//! The running MCP servers: started together, each on its own, so one that fails or dies leaves
//! the others working; every stdio server's process group ends with seek.
//!
//! Owns each server's life (`lifecycle`: start within the startup timeout, watch, end), the
//! public face (`Hub`: states, tools, calls bounded by the tool timeout and the caller's
//! cancellation) and the shutdown. A dead server is not restarted: its state says how it ended and
//! later calls get `NotRunning` (restarting seek starts it again). It must not parse blocks or
//! render results.

mod convert;
mod http;
mod lifecycle;
mod session;
mod stderr;
mod stdio;
mod stdout;

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{CallOutput, McpError, ServerState, ServerStatus, ToolInfo};
use crate::config::McpServer;

/// How long shutdown waits for servers to exit after SIGTERM before SIGKILL.
/// A failure's reason is cut to this many bytes (a server's message may be megabytes).
const MAX_REASON: usize = 1000;
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long a call that lost its server waits to learn how the server ended.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);

/// Every configured server, started.
pub struct Hub {
    slots: Vec<Arc<Slot>>,
    /// Cancelled by `shutdown` and `Drop`: every background task of the hub ends.
    stop: CancellationToken,
}

/// One configured server and everything known about it.
struct Slot {
    config: McpServer,
    inner: Mutex<Inner>,
    /// `true` once the server is no longer `Starting`.
    settled: watch::Sender<bool>,
    /// `true` once its lifecycle task has ended (the session closed, the process handled).
    finished: watch::Sender<bool>,
}

/// What changes during a server's life.
#[derive(Default)]
struct Inner {
    state: Option<ServerState>,
    tools: Arc<Vec<ToolInfo>>,
    handshake: session::Handshake,
    startup_ms: Option<u64>,
    /// The session's handle for calls, while ready.
    peer: Option<rmcp::Peer<rmcp::service::RoleClient>>,
    /// A stdio server's process: its group, exit, stderr and stdout notes.
    process: Option<lifecycle::Process>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("servers", &self.slots.len())
            .finish()
    }
}

impl Hub {
    /// Starts every enabled server in the background (on the current tokio runtime) and
    /// returns at once. `env_remove` are the credential variables servers do not inherit;
    /// `work_dir` is where a stdio server runs when its configuration names no `cwd`.
    pub fn start(
        servers: Vec<McpServer>,
        env_remove: Arc<Vec<OsString>>,
        work_dir: &Path,
    ) -> Arc<Hub> {
        let stop = CancellationToken::new();
        let runtime = tokio::runtime::Handle::try_current().ok();
        let slots: Vec<Arc<Slot>> = servers.into_iter().map(Slot::new).collect();
        for slot in &slots {
            if !slot.config.enabled {
                slot.settle(ServerState::Disabled);
                slot.finished.send_replace(true);
                continue;
            }
            let Some(runtime) = &runtime else {
                slot.settle(ServerState::Failed(
                    "seek started it outside its async runtime".to_owned(),
                ));
                slot.finished.send_replace(true);
                continue;
            };
            let context = lifecycle::Context {
                slot: Arc::clone(slot),
                env_remove: Arc::clone(&env_remove),
                work_dir: work_dir.to_owned(),
                stop: stop.clone(),
            };
            runtime.spawn(lifecycle::run(context));
        }
        Arc::new(Hub { slots, stop })
    }

    /// Waits until every server is ready or has failed (each bounded by its startup timeout).
    pub async fn ready(&self) {
        for slot in &self.slots {
            let mut settled = slot.settled.subscribe();
            let _ = settled.wait_for(|settled| *settled).await;
        }
    }

    /// Every configured server, in the configuration's order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.slots.iter().map(|slot| slot.status()).collect()
    }

    /// The tools of the ready servers, by server in the configuration's order.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let mut tools = Vec::new();
        for slot in &self.slots {
            let inner = slot.lock();
            if inner.state == Some(ServerState::Ready) {
                tools.extend(inner.tools.iter().cloned());
            }
        }
        tools
    }

    /// Calls `server`'s `tool` with `arguments`, bounded by the server's tool timeout; `cancel`
    /// ends the wait at once (and tells the server the request was cancelled).
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, McpError> {
        let slot = self
            .slots
            .iter()
            .find(|slot| slot.config.name == server)
            .ok_or_else(|| McpError::UnknownServer(server.to_owned()))?;
        let peer = slot.peer_for_call(cancel).await?;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let timeout = slot.config.tool_timeout;
        // Dropping the request (cancelled, timed out) makes rmcp send `notifications/cancelled`.
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(McpError::Cancelled),
            outcome = tokio::time::timeout(timeout, peer.call_tool(params)) => outcome,
        };
        let call_error = |message: String| McpError::Call {
            server: server.to_owned(),
            message: slot.clean(message),
        };
        match outcome {
            Err(_elapsed) => Err(McpError::Timeout {
                server: server.to_owned(),
                tool: tool.to_owned(),
                secs: timeout.as_secs_f64().ceil() as u64,
            }),
            Ok(Ok(result)) => Ok(convert::call_output(result)),
            // A stdio server's stream ended: it died, and how is worth the wait to say.
            Ok(Err(rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)))
                if slot.is_stdio() =>
            {
                let why = slot.wait_gone(cancel).await;
                Err(call_error(format!("it stopped during the call: {why}")))
            }
            Ok(Err(error)) => Err(call_error(session::describe_service_error(&error))),
        }
    }

    /// Ends every server: sessions closed, stdio servers' process groups sent SIGTERM, then
    /// SIGKILL for what is left after a short grace, and reaped.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        for slot in &self.slots {
            if let Some(group) = slot.lock().process.as_ref().map(|p| Arc::clone(&p.group)) {
                group.terminate();
            }
        }
        let deadline = tokio::time::Instant::now() + TERM_GRACE;
        for slot in &self.slots {
            let mut finished = slot.finished.subscribe();
            let _ = tokio::time::timeout_at(deadline, finished.wait_for(|done| *done)).await;
            let process = slot.lock().process.clone();
            if let Some(process) = process {
                let mut exit = process.exit.clone();
                let _ = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await;
                process.group.kill_and_wait(Duration::from_secs(1)).await;
            }
            slot.mark_stopped();
        }
    }
}

impl Drop for Hub {
    /// seek may end through any path: no server process outlives the hub.
    fn drop(&mut self) {
        self.stop.cancel();
        for slot in &self.slots {
            if let Some(process) = &slot.lock().process {
                process.group.kill();
            }
        }
    }
}

impl Slot {
    fn new(config: McpServer) -> Arc<Slot> {
        Arc::new(Slot {
            config,
            inner: Mutex::new(Inner {
                state: Some(ServerState::Starting),
                ..Inner::default()
            }),
            settled: watch::Sender::new(false),
            finished: watch::Sender::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every update leaves `Inner` whole: a panic elsewhere cannot have broken it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn state(&self) -> ServerState {
        self.lock().state.clone().unwrap_or(ServerState::Starting)
    }

    /// A reason as the hub keeps, shows and hands to the model: terminal-safe, bounded, and
    /// with the secrets of an HTTP server's URL masked (HTTP clients quote the URL, query
    /// tokens included, in their errors; servers' own messages may be anything).
    fn clean(&self, why: String) -> String {
        let mut why = crate::terminal_safe::terminal_safe(&why).into_owned();
        if let crate::config::McpTransport::Http { url, .. } = &self.config.transport {
            for secret in crate::secrets::url_secrets(url) {
                if !secret.is_empty() {
                    why = why.replace(&secret, "***");
                }
            }
        }
        stderr::shorten(&why, MAX_REASON)
    }

    /// Leaves `Starting` for `state`.
    fn settle(&self, state: ServerState) {
        {
            let mut inner = self.lock();
            if state != ServerState::Ready {
                inner.peer = None;
            }
            inner.state = Some(state);
        }
        self.settled.send_replace(true);
    }

    /// After shutdown: a server that was running is now stopped.
    fn mark_stopped(&self) {
        let mut inner = self.lock();
        inner.peer = None;
        if matches!(
            inner.state,
            Some(ServerState::Ready | ServerState::Starting)
        ) {
            inner.state = Some(ServerState::Exited("stopped by seek".to_owned()));
        }
        drop(inner);
        self.settled.send_replace(true);
    }

    fn status(&self) -> ServerStatus {
        let inner = self.lock();
        let state = inner.state.clone().unwrap_or(ServerState::Starting);
        let tools = if state == ServerState::Ready {
            inner.tools.to_vec()
        } else {
            Vec::new()
        };
        ServerStatus {
            name: self.config.name.clone(),
            transport: self.config.describe_transport(),
            state,
            tools,
            protocol_version: inner.handshake.protocol_version.clone(),
            server_info: inner.handshake.server_info.clone(),
            startup_ms: inner.startup_ms,
        }
    }

    fn is_stdio(&self) -> bool {
        matches!(
            self.config.transport,
            crate::config::McpTransport::Stdio { .. }
        )
    }

    /// The session to call through: waits for a server still starting (bounded by its startup
    /// timeout), refuses one that is not running.
    async fn peer_for_call(
        &self,
        cancel: &CancellationToken,
    ) -> Result<rmcp::Peer<rmcp::service::RoleClient>, McpError> {
        let mut settled = self.settled.subscribe();
        let bound = self.config.startup_timeout + Duration::from_secs(1);
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(McpError::Cancelled),
            _ = tokio::time::timeout(bound, settled.wait_for(|settled| *settled)) => {}
        }
        let inner = self.lock();
        match (&inner.state, &inner.peer) {
            (Some(ServerState::Ready), Some(peer)) => Ok(peer.clone()),
            (state, _) => Err(McpError::NotRunning {
                server: self.config.name.clone(),
                why: match state {
                    Some(ServerState::Failed(why) | ServerState::Exited(why)) => why.clone(),
                    Some(ServerState::Disabled) => "it is disabled (enabled = false)".to_owned(),
                    _ => "it has not finished starting".to_owned(),
                },
            }),
        }
    }

    /// Waits (bounded) until the lifecycle task has recorded how the server ended, and says it.
    async fn wait_gone(&self, cancel: &CancellationToken) -> String {
        let mut finished = self.finished.subscribe();
        tokio::select! {
            () = cancel.cancelled() => {}
            _ = tokio::time::timeout(EXIT_REPORT_WAIT, finished.wait_for(|done| *done)) => {}
        }
        match self.state() {
            ServerState::Exited(why) | ServerState::Failed(why) => why,
            _ => "the connection closed".to_owned(),
        }
    }
}
