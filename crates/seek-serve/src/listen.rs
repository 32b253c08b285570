//! The accept loop: HTTP/1.1 connections served by hyper with a header-read timeout (a client
//! that sends nothing, half a request, or stays idle between requests for `HEADER_READ_TIMEOUT`
//! is disconnected), request heads of at most `MAX_HEAD_BYTES` (431 beyond), and at most
//! `MAX_CONNECTIONS` open at once, so no client can hold the server's sockets or memory without
//! end. When every place is taken, the next connection closes the oldest one that has neither
//! shown the token nor sent a whole request head (`slots`), or waits for a place if there is
//! none. On shutdown it stops accepting, closes the connections that have not sent a whole
//! request head, and lets the others finish their answers, for a bounded time.
//!
//! It must not know what the endpoints are (`routes` does) nor how a request authenticates
//! (`access` does, and marks the request's `Slot`, found in its extensions).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::slots::Slots;

/// Connections open at once. Each `/events` subscriber holds one for as long as it listens.
pub const MAX_CONNECTIONS: usize = 512;
/// How long a connection may take to send a request's headers, counted from when the server
/// starts waiting for them (so also while a kept-alive connection sits idle).
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest request head (request line, headers and the blank line ending them) served;
/// one byte more is answered `431` and the connection closed.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
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
    let slots = Arc::new(Slots::default());
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    // `max_header_size` counts the head exactly (hyper's read buffer may read past
    // `max_buf_size`, so that alone let longer heads through); the buffer cap stays as a bound on
    // what one read may hold.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_HEAD_BYTES);
    loop {
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
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // Every place is taken: a connection that has shown nothing gives its up (none:
                // this one waits for a place, and the ones behind it in the listen backlog).
                slots.evict_oldest_fresh();
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    permit = Arc::clone(&permits).acquire_owned() => match permit {
                        Ok(permit) => permit,
                        // The semaphore is never closed; a closed one would mean no more
                        // connections.
                        Err(_) => break,
                    },
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let slot = slots.open();
        let service = {
            let router = TowerToHyperService::new(app.clone());
            let slot = Arc::clone(&slot);
            hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(Arc::clone(&slot));
                hyper::service::Service::call(&router, request)
            })
        };
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        let slots = Arc::clone(&slots);
        tokio::spawn(async move {
            tokio::select! {
                _ = connection => {}
                // Closed to make room: dropping the connection closes its socket.
                () = slot.evicted() => {}
            }
            slots.close(&slot);
            drop(permit);
        });
    }
    drop(listener);
    // Connections that sent nothing, or only part of a request head, are owed no answer: they
    // are closed now rather than waited for (a client holding half a head kept the server from
    // exiting for the whole drain).
    slots.evict_all_fresh();
    let _ = tokio::time::timeout(DRAIN_WAIT, graceful.shutdown()).await;
}
