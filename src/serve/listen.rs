//! The accept loop: HTTP/1.1 connections served by hyper with a header-read timeout (a client
//! that sends nothing, half a request, or stays idle between requests for `HEADER_READ_TIMEOUT`
//! is disconnected) and at most `MAX_CONNECTIONS` open at once (the next waits in the listen
//! backlog), so no client can hold the server's sockets or memory without end. On shutdown it
//! stops accepting and lets open connections finish their answers, for a bounded time.
//!
//! It must not know what the endpoints are (`routes` does).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Connections open at once. Each `/events` subscriber holds one for as long as it listens.
pub const MAX_CONNECTIONS: usize = 512;
/// How long a connection may take to send a request's headers, counted from when the server
/// starts waiting for them (so also while a kept-alive connection sits idle).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest request head (request line and headers) read.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// After a failed `accept` (out of file descriptors, …), the pause before the next try, so
/// the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long shutdown waits for open connections to finish their answers.
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// How many connections may be open and how long one may stay silent.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: MAX_CONNECTIONS,
            header_read_timeout: HEADER_READ_TIMEOUT,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => break,
            permit = Arc::clone(&permits).acquire_owned() => permit,
        };
        // The semaphore is never closed; a closed one would mean no more connections.
        let Ok(permit) = permit else { break };
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN_WAIT, graceful.shutdown()).await;
}
