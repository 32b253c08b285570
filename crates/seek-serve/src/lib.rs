//! `seek serve`: AgenticSeek's HTTP API (and seek's own `/events` and `/sessions`) over the same
//! agent runtime the TUI and `-p` use, so AgenticSeek's front end and scripts switch to seek by
//! changing a port — safely: a token by default, loopback by default, and without a token only
//! loopback hosts and listed origins.
//!
//! This file starts and ends a server; `setup` decides its address and token, `access` guards
//! requests, `routes` answers them, `bridge` drives the agent, `board` keeps what the API shows
//! (`running`: the block that runs now), `records` is AgenticSeek's JSON, `listen` accepts
//! connections and `slots` decides which give up their place. It must not hold agent state of
//! its own.

// The floors below, under the paths this crate has always used for them (`crate::agent`, …).
use seek_core::{agent, agents, config, llm, session, terminal_safe, web, wire};

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::llm::ChatModel;
use crate::session::Sessions;
use crate::wire::Exit;

pub mod access;
pub mod board;
pub(crate) mod bridge;
pub mod listen;
pub mod records;
pub mod routes;
pub mod running;
pub mod setup;
pub(crate) mod slots;

pub use access::Access;
pub use setup::{ServeArgs, TokenChoice};

/// Writes a line to stderr; a closed stderr is ignored (`eprintln!` would panic), so nothing a
/// client of the process does to its pipes stops the server.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// A running server.
pub struct Server {
    /// Where it listens (the port chosen when 0 was asked).
    pub addr: SocketAddr,
    bridge: Arc<bridge::Bridge>,
    shutdown: CancellationToken,
    serving: JoinHandle<()>,
    _screenshots: tempfile::TempDir,
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
        Self::start_with(
            config,
            model,
            sessions,
            listener,
            access,
            listen::Limits::default(),
        )
    }

    /// `start` with other connection limits (tests use short ones).
    pub fn start_with(
        config: Arc<Config>,
        model: Arc<dyn ChatModel>,
        sessions: Option<Sessions>,
        listener: TcpListener,
        access: Access,
        limits: listen::Limits,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let sessions_dir = routes::SessionsDir {
            data_dir: config.data_dir.clone(),
            work_dir: sessions.as_ref().map_or_else(
                || config.work_dir.value.display().to_string(),
                |s| s.work_dir.clone(),
            ),
        };
        // The web agent keeps the latest page's screenshot here for `/screenshot`; removed with
        // the server.
        let screenshots = tempfile::Builder::new()
            .prefix("seek-screenshots-")
            .tempdir()?;
        let mut config = Config::clone(&config);
        config.web.screenshots = Some(screenshots.path().to_path_buf());
        let screenshot_file = screenshots.path().join(crate::web::read::SCREENSHOT_FILE);
        let bridge = bridge::Bridge::start(agent::spawn_with(Arc::new(config), model, sessions));
        let shutdown = CancellationToken::new();
        let app = routes::router(
            routes::AppState {
                bridge: Arc::clone(&bridge),
                sessions: sessions_dir,
                screenshot: screenshot_file,
                shutdown: shutdown.clone(),
            },
            access,
        );
        let stopping = shutdown.clone();
        let serving = tokio::spawn(listen::serve(listener, app, limits, stopping));
        Ok(Self {
            addr,
            bridge,
            shutdown,
            serving,
            _screenshots: screenshots,
        })
    }

    /// Ends the server: the running task is stopped and its processes killed, the session file
    /// closed, `/events` streams ended, and open connections given a moment to finish.
    pub async fn shutdown(self) {
        self.bridge.shutdown().await;
        self.shutdown.cancel();
        // `listen::serve` bounds its own wait for open connections.
        let _ = self.serving.await;
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
    let plan = setup::plan(args, env_token, setup::generate_token);
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => {
            say!("seek: {e}");
            return Ok(Exit::Usage);
        }
    };
    // Signals are caught before anything starts, so none takes the default action meanwhile.
    let mut interrupts = signal(SignalKind::interrupt())?;
    let mut terminations = signal(SignalKind::terminate())?;
    let listener = match TcpListener::bind((plan.host, plan.port)).await {
        Ok(listener) => listener,
        Err(e) => {
            say!(
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
    announce(&plan, server.addr);
    tokio::select! {
        _ = interrupts.recv() => {}
        _ = terminations.recv() => {}
    }
    say!("seek: stopping the server… (again to quit at once)");
    tokio::select! {
        () = server.shutdown() => Ok(Exit::Success),
        // A second signal: the user does not want to wait for a clean stop.
        _ = interrupts.recv() => Ok(Exit::Interrupted),
        _ = terminations.recv() => Ok(Exit::Interrupted),
    }
}

/// The first stdout line is `listening on http://ADDR` (scripts read the port from it); the
/// token follows once, when seek made it. A closed or failing stdout is not a reason to stop
/// serving (a script that read the port may close the pipe), so write errors are ignored.
fn announce(plan: &setup::Plan, addr: SocketAddr) {
    let url = format!("http://{addr}");
    let mut lines = vec![format!("listening on {url}")];
    match &plan.token {
        TokenChoice::Generated(token) => {
            lines.push(format!("token: {token}"));
            lines.push(format!(
                "try: curl -H 'Authorization: Bearer {token}' -d '{{\"query\": \"hello\"}}' {url}/query"
            ));
        }
        TokenChoice::FromEnv(_) => lines.push("token: from SEEK_API_TOKEN".into()),
        TokenChoice::None => lines.push(
            "no token: only this machine's clients (loopback Host, allowed Origin) are served"
                .into(),
        ),
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    let _ = out.flush();
    if plan.exposed {
        say!(
            "seek: warning: serving on {addr}, not loopback: anyone who can reach it and has the token can run code on this machine; put it behind TLS"
        );
    }
}
