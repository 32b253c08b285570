//! `seek serve`: AgenticSeek's HTTP API (and seek's own `/events` and `/sessions`) over the same
//! agent runtime the TUI and `-p` use, so AgenticSeek's front end and scripts switch to seek by
//! changing a port — safely: a token by default, loopback by default, and without a token only
//! loopback hosts and listed origins.
//!
//! This file starts and ends a server; `setup` decides its address and token, `access` guards
//! requests, `routes` answers them, `bridge` drives the agent, `board` keeps what the API shows,
//! `records` is AgenticSeek's JSON. It must not hold agent state of its own.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent;
use crate::cli::Exit;
use crate::config::Config;
use crate::llm::ChatModel;
use crate::session::Sessions;

pub mod access;
pub mod board;
pub mod bridge;
pub mod records;
pub mod routes;
pub mod setup;

pub use access::Access;
pub use setup::{ServeArgs, TokenChoice};

/// How long shutdown waits for open connections to finish their answers.
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// A running server.
pub struct Server {
    /// Where it listens (the port chosen when 0 was asked).
    pub addr: SocketAddr,
    bridge: Arc<bridge::Bridge>,
    shutdown: CancellationToken,
    serving: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Starts the agent runtime and serves the API on `listener`.
    pub fn start(
        config: Arc<Config>,
        model: Arc<dyn ChatModel>,
        sessions: Option<Sessions>,
        listener: TcpListener,
        access: Access,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let sessions_dir = routes::SessionsDir {
            data_dir: config.data_dir.clone(),
            work_dir: sessions.as_ref().map_or_else(
                || config.work_dir.value.display().to_string(),
                |s| s.work_dir.clone(),
            ),
        };
        let bridge = bridge::Bridge::start(agent::spawn_with(config, model, sessions));
        let shutdown = CancellationToken::new();
        let app = routes::router(
            routes::AppState {
                bridge: Arc::clone(&bridge),
                sessions: sessions_dir,
                shutdown: shutdown.clone(),
            },
            access,
        );
        let stopping = shutdown.clone();
        let serving = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopping.cancelled().await })
                .await
        });
        Ok(Self {
            addr,
            bridge,
            shutdown,
            serving,
        })
    }

    /// Ends the server: the running task is stopped and its processes killed, the session file
    /// closed, `/events` streams ended, and open connections given a moment to finish.
    pub async fn shutdown(self) {
        self.bridge.shutdown().await;
        self.shutdown.cancel();
        let _ = tokio::time::timeout(DRAIN_WAIT, self.serving).await;
    }
}

/// `seek serve` from the command line: decides the set-up, listens, prints where (and the
/// token, once), and serves until SIGINT or SIGTERM.
pub async fn run(
    config: Arc<Config>,
    model: Arc<dyn ChatModel>,
    sessions: Option<Sessions>,
    args: &ServeArgs,
    env_token: Option<&str>,
) -> std::io::Result<Exit> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut token_error = None;
    let plan = setup::plan(args, env_token, || {
        setup::generate_token().unwrap_or_else(|e| {
            token_error = Some(e);
            String::new()
        })
    });
    if let Some(e) = token_error {
        eprintln!(
            "seek: cannot make a token (the system's random source failed: {e}); set SEEK_API_TOKEN"
        );
        return Ok(Exit::Usage);
    }
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("seek: {e}");
            return Ok(Exit::Usage);
        }
    };
    // Signals are caught before anything starts, so none takes the default action meanwhile.
    let mut interrupts = signal(SignalKind::interrupt())?;
    let mut terminations = signal(SignalKind::terminate())?;
    let listener = match TcpListener::bind((plan.host, plan.port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!(
                "seek: cannot listen on {}: {e}{}",
                SocketAddr::from((plan.host, plan.port)),
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    " (another server uses the port: pick another with --port)"
                } else {
                    ""
                }
            );
            return Ok(Exit::Usage);
        }
    };
    let access = Access::new(
        plan.token.token().map(str::to_owned),
        config.serve.allowed_origins.value.clone(),
    );
    let server = Server::start(config, model, sessions, listener, access)?;
    announce(&plan, server.addr)?;
    tokio::select! {
        _ = interrupts.recv() => {}
        _ = terminations.recv() => {}
    }
    eprintln!("seek: stopping the server… (again to quit at once)");
    tokio::select! {
        () = server.shutdown() => Ok(Exit::Success),
        // A second signal: the user does not want to wait for a clean stop.
        _ = interrupts.recv() => Ok(Exit::Interrupted),
        _ = terminations.recv() => Ok(Exit::Interrupted),
    }
}

/// The first stdout line is `listening on http://ADDR` (scripts read the port from it); the
/// token follows once, when seek made it.
fn announce(plan: &setup::Plan, addr: SocketAddr) -> std::io::Result<()> {
    let url = format!("http://{addr}");
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {url}")?;
    match &plan.token {
        TokenChoice::Generated(token) => {
            writeln!(out, "token: {token}")?;
            writeln!(
                out,
                "try: curl -H 'Authorization: Bearer {token}' -d '{{\"query\": \"hello\"}}' {url}/query"
            )?;
        }
        TokenChoice::FromEnv(_) => {
            writeln!(out, "token: from SEEK_API_TOKEN")?;
        }
        TokenChoice::None => {
            writeln!(
                out,
                "no token: only this machine's clients (loopback Host, allowed Origin) are served"
            )?;
        }
    }
    out.flush()?;
    if plan.exposed {
        eprintln!(
            "seek: warning: serving on {addr}, not loopback: anyone who can reach it and has the token can run code on this machine; put it behind TLS"
        );
    }
    Ok(())
}
