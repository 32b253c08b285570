//! seek's own HTTP proxy for the headless browser, so that every request the browser sends —
//! a page, each redirect hop, a subresource, a script's fetch, a websocket — meets the URL
//! policy (`web::policy`). It listens on `127.0.0.1:<random port>`, serves only processes of
//! the browser's process group (`peer`), resolves each name itself and connects to an address
//! it checked (no second lookup, so a name cannot rebind between check and connect), and
//! answers 403 naming the reason otherwise. `CONNECT host:port` is tunnelled (https, wss);
//! `GET http://…` in absolute form is forwarded in origin form over a fresh connection to the
//! pinned address, closed after its response (the browser's connection to the proxy stays
//! open across hosts; nothing is pooled on the origin side, so a connection never serves a
//! host it was not checked for). Dropping the proxy stops it and every connection it holds.
//!
//! Owns sockets and the HTTP/1.1 plumbing; it must not decide what a URL may reach (`policy`
//! and `target` do) and must not know the browser driver.

mod forward;
mod peer;
mod target;
mod tunnel;

use std::collections::VecDeque;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::web::policy::{UrlPolicy, UrlRefused};

/// Connections open at once; the next waits in the listen backlog.
pub const MAX_CONNECTIONS: usize = 256;
/// The largest request head (request line and headers) read from the browser: larger is 431.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The header of every refusal's 403, holding the proxy's secret token (the reader finds refused
/// documents by it: for plain `http` the browser shows the proxy's answer as the page). Origins'
/// copies are removed, and one inside an `https` tunnel lacks the token.
pub(crate) const REFUSAL_HEADER: &str = "x-seek-refused";
/// Refusals kept for `refused()`; older ones are dropped.
const MAX_REFUSALS: usize = 256;
/// After a failed `accept` (out of file descriptors, …), the pause before the next try, so the
/// loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Which local processes may use the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerFilter {
    /// Every connection (tests only: any local process could reach trusted hosts through it).
    Any,
    /// Only connections from processes of this process group (the browser's); on systems
    /// other than Linux nothing can be checked and every connection is refused.
    ProcessGroup(i32),
    /// Only the process group named later by `PolicyProxy::allow_group` (the browser needs the
    /// proxy's port before it starts); until then, nobody.
    GroupNamedLater,
}

/// Resolves names for the proxy. The system resolver by default; tests give a fake one.
pub trait Resolver: Send + Sync {
    /// The addresses of `host` (a name, never an address literal).
    fn lookup(&self, host: String, port: u16) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// `getaddrinfo`, through tokio.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup(&self, host: String, port: u16) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), port)).await?;
            Ok(found.map(|addr| addr.ip()).collect())
        })
    }
}

/// Limits and the resolver.
#[derive(Clone)]
pub struct ProxySettings {
    /// Resolving a name and connecting to it, together (`[web] timeout_secs` fits).
    pub connect_timeout: Duration,
    /// A tunnel with no byte either way, a browser connection sending no request, an origin
    /// sending no response head: closed after this long.
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub resolver: Arc<dyn Resolver>,
}

impl Default for ProxySettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            max_connections: MAX_CONNECTIONS,
            resolver: Arc::new(SystemResolver),
        }
    }
}

impl fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxySettings")
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

/// The proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("the browser's proxy could not listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
}

/// Why the policy refused a request. The texts are what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefusalReason {
    /// The scheme, or an address or `localhost` written in the URL.
    #[error(transparent)]
    Url(#[from] UrlRefused),
    /// A name whose every address is loopback or private.
    #[error(
        "{url} is refused: {host} resolves only to loopback or private addresses ({addresses}), which pages may not lead to (set [web] allow_private = true to allow it)"
    )]
    Resolved {
        url: String,
        host: String,
        addresses: String,
    },
    /// A request to the proxy itself.
    #[error("{url} is refused: it is seek's own proxy")]
    Loop { url: String },
}

/// One refused request: what it named (`host:port` for `CONNECT`, else the URL) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub target: String,
    pub reason: RefusalReason,
}

/// What the connections share.
struct Shared {
    policy: Arc<UrlPolicy>,
    settings: ProxySettings,
    /// The listening address, never a target.
    own: SocketAddr,
    refusals: Mutex<VecDeque<Refusal>>,
    shutdown: CancellationToken,
    /// For `PeerFilter::GroupNamedLater`: the group served (0: none yet).
    named_group: std::sync::atomic::AtomicI32,
    /// Random, per proxy: the value of its refusal header.
    token: String,
}

impl Shared {
    fn refuse(&self, target: &str, reason: RefusalReason) {
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        if refusals.len() >= MAX_REFUSALS {
            refusals.pop_front();
        }
        refusals.push_back(Refusal {
            target: target.to_owned(),
            reason,
        });
    }
}

/// The running proxy. Dropping it stops it: the listener closes and every connection and
/// tunnel it holds ends.
pub struct PolicyProxy {
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl PolicyProxy {
    /// Binds `127.0.0.1:0` and serves until dropped, with the default settings.
    pub async fn start(policy: Arc<UrlPolicy>, peers: PeerFilter) -> Result<Self, ProxyError> {
        Self::start_with(policy, peers, ProxySettings::default()).await
    }

    /// Binds `127.0.0.1:0` and serves until dropped.
    pub async fn start_with(
        policy: Arc<UrlPolicy>,
        peers: PeerFilter,
        settings: ProxySettings,
    ) -> Result<Self, ProxyError> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(ProxyError::Bind)?;
        let own = listener.local_addr().map_err(ProxyError::Bind)?;
        let shared = Arc::new(Shared {
            policy,
            own,
            refusals: Mutex::new(VecDeque::new()),
            shutdown: CancellationToken::new(),
            settings,
            named_group: std::sync::atomic::AtomicI32::new(0),
            token: uuid::Uuid::new_v4().simple().to_string(),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared), peers));
        Ok(Self { shared, accept })
    }

    /// Where it listens: the browser gets `--proxy-server=http://ADDRESS`.
    pub fn address(&self) -> SocketAddr {
        self.shared.own
    }

    /// With `PeerFilter::GroupNamedLater`: serves process group `pgid` from now on (once; a
    /// later call changes nothing).
    pub(crate) fn allow_group(&self, pgid: i32) {
        let _ = self.shared.named_group.compare_exchange(
            0,
            pgid,
            std::sync::atomic::Ordering::AcqRel,
            std::sync::atomic::Ordering::Acquire,
        );
    }

    /// The value of this proxy's refusal header (`REFUSAL_HEADER`).
    pub(crate) fn refusal_token(&self) -> &str {
        &self.shared.token
    }

    /// Why the latest refusal of a request to `host` was made, in the model's words.
    pub(crate) fn refusal_for(&self, host: &str) -> Option<String> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let names = |target: &str| {
            let rest = target.split_once("://").map_or(target, |(_, rest)| rest);
            let authority = rest.split('/').next().unwrap_or(rest);
            let name = authority
                .rsplit_once(':')
                .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
                .map_or(authority, |(name, _)| name);
            name.trim_start_matches('[')
                .trim_end_matches(']')
                .eq_ignore_ascii_case(host)
        };
        self.refused()
            .into_iter()
            .rev()
            .find(|refusal| names(&refusal.target))
            .map(|refusal| refusal.reason.to_string())
    }

    /// The requests refused so far (the latest `MAX_REFUSALS`), oldest first.
    pub fn refused(&self) -> Vec<Refusal> {
        let refusals = self
            .shared
            .refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        refusals.iter().cloned().collect()
    }
}

impl Drop for PolicyProxy {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        self.accept.abort();
    }
}

impl fmt::Debug for PolicyProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyProxy")
            .field("address", &self.shared.own)
            .finish_non_exhaustive()
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, peers: PeerFilter) {
    let cap = shared
        .settings
        .max_connections
        .clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(cap));
    loop {
        let permit = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            permit = Arc::clone(&permits).acquire_owned() => permit,
        };
        // The semaphore is never closed; a closed one would mean no more connections.
        let Ok(permit) = permit else { return };
        let (stream, peer) = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let stop = shared.shutdown.clone();
            tokio::select! {
                () = stop.cancelled() => {}
                () = connection(stream, peer, peers, shared, permit) => {}
            }
        });
    }
}

/// Serves one browser connection: its requests, then the tunnel it turned into, if any.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    peers: PeerFilter,
    shared: Arc<Shared>,
    permit: OwnedSemaphorePermit,
) {
    let group = match peers {
        PeerFilter::Any => None,
        PeerFilter::ProcessGroup(pgid) => Some(pgid),
        PeerFilter::GroupNamedLater => {
            match shared
                .named_group
                .load(std::sync::atomic::Ordering::Acquire)
            {
                0 => return,
                pgid => Some(pgid),
            }
        }
    };
    if let Some(pgid) = group {
        let Ok(local) = stream.local_addr() else {
            return;
        };
        let check = tokio::task::spawn_blocking(move || peer::in_process_group(peer, local, pgid));
        if !matches!(check.await, Ok(true)) {
            return;
        }
    }
    let _ = stream.set_nodelay(true);
    // Held until the tunnel below ends; each origin connection holds a clone too.
    let permit = Arc::new(permit);
    let _held = Arc::clone(&permit);
    let pending = forward::PendingTunnel::default();
    let service = {
        let shared = Arc::clone(&shared);
        let pending = pending.clone();
        hyper::service::service_fn(move |request| {
            forward::handle(
                Arc::clone(&shared),
                pending.clone(),
                Arc::clone(&permit),
                request,
            )
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(shared.settings.idle_timeout)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(true);
    let served = http
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if served.is_ok()
        && let Some(tunnel) = pending.take()
    {
        tunnel.run(shared.settings.idle_timeout).await;
    }
}
