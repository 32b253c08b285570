//! Who holds the server's connection places, and who gives one up when they are all taken.
//!
//! A connection is *authenticated* once a request on it has shown the token (under
//! `--no-token`: once a request on it has passed the `Host` and `Origin` checks, since then
//! anyone who passes them may use the whole API). Until then it is *unauthenticated*, and such a
//! connection cannot hold a place a token holder needs:
//! - it is answered once and closed after that answer (`access` adds `Connection: close`), so
//!   keep-alive polling without the token (`GET /health` every few seconds) holds no place
//!   between its requests;
//! - while it has not sent a whole request head, it is closed when every place is taken and
//!   another client connects (the oldest such connection first), so connections that send
//!   nothing, or half a head, cannot keep a token holder out.
//!
//! An authenticated connection is never closed to make room. `listen` owns the places and asks
//! here whom to close; `access` says when a request authenticated its connection. This file must
//! not know the endpoints or how the token is checked.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// No whole request head yet, no token: closed first when a place is needed.
const FRESH: u8 = 0;
/// A request of an unauthenticated connection is being answered: its connection closes after it.
const ANSWERING: u8 = 1;
/// A request on it has shown the token: it keeps its place.
const AUTHENTICATED: u8 = 2;
/// Closed to make room.
const EVICTED: u8 = 3;

/// One connection's standing, shared by the accept loop and the requests it carries (which find
/// it in their extensions).
#[derive(Debug)]
pub(crate) struct Slot {
    /// Its place in accept order (the oldest is evicted first).
    order: u64,
    /// `FRESH`, `ANSWERING`, `AUTHENTICATED` or `EVICTED`; changed only by compare-and-swap, so
    /// a connection whose request has begun is never evicted and an evicted one never
    /// authenticates.
    state: AtomicU8,
    evicted: CancellationToken,
}

impl Slot {
    /// A request head arrived on this connection.
    pub(crate) fn request_started(&self) {
        let _ = self
            .state
            .compare_exchange(FRESH, ANSWERING, Ordering::AcqRel, Ordering::Acquire);
    }

    /// A request on this connection showed the token: it keeps its place and stays open.
    pub fn authenticate(&self) {
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                (state != EVICTED).then_some(AUTHENTICATED)
            });
    }

    /// Whether a request on this connection has shown the token.
    pub fn authenticated(&self) -> bool {
        self.state.load(Ordering::Acquire) == AUTHENTICATED
    }

    /// Resolves when the connection was closed to make room.
    pub fn evicted(&self) -> WaitForCancellationFuture<'_> {
        self.evicted.cancelled()
    }

    /// Evicts it if it is still fresh; whether it was.
    fn evict(&self) -> bool {
        let evicted = self
            .state
            .compare_exchange(FRESH, EVICTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if evicted {
            self.evicted.cancel();
        }
        evicted
    }
}

/// The open connections, in accept order.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    open: Mutex<BTreeMap<u64, Arc<Slot>>>,
    next: AtomicU64,
}

impl Slots {
    /// A new connection's slot, fresh and registered.
    pub fn open(&self) -> Arc<Slot> {
        let order = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            order,
            state: AtomicU8::new(FRESH),
            evicted: CancellationToken::new(),
        });
        self.lock().insert(order, Arc::clone(&slot));
        slot
    }

    /// The connection of `slot` has ended.
    pub fn close(&self, slot: &Slot) {
        self.lock().remove(&slot.order);
    }

    /// Closes the oldest connection that is unauthenticated and has not sent a whole request
    /// head; whether there was one.
    pub(crate) fn evict_oldest_fresh(&self) -> bool {
        self.lock().values().any(|slot| slot.evict())
    }

    /// Closes every connection that is unauthenticated and has not sent a whole request head
    /// (at shutdown: no answer is owed to them, so none is waited for).
    pub(crate) fn evict_all_fresh(&self) {
        for slot in self.lock().values() {
            slot.evict();
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Slot>>> {
        // Only inserts, removals and reads run under it: a panic cannot leave it torn.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_fresh_connection_is_evicted_first() {
        let slots = Slots::default();
        let (a, b, c) = (slots.open(), slots.open(), slots.open());
        assert!(slots.evict_oldest_fresh());
        assert!(a.evicted.is_cancelled());
        assert!(!b.evicted.is_cancelled() && !c.evicted.is_cancelled());
        assert!(slots.evict_oldest_fresh());
        assert!(b.evicted.is_cancelled());
    }

    #[test]
    fn authenticated_and_answering_connections_are_never_evicted() {
        let slots = Slots::default();
        let (authenticated, answering) = (slots.open(), slots.open());
        authenticated.request_started();
        authenticated.authenticate();
        answering.request_started();
        assert!(authenticated.authenticated());
        assert!(!answering.authenticated());
        assert!(!slots.evict_oldest_fresh(), "nothing to evict");
        let fresh = slots.open();
        assert!(slots.evict_oldest_fresh());
        assert!(fresh.evicted.is_cancelled());
        assert!(!authenticated.evicted.is_cancelled() && !answering.evicted.is_cancelled());
    }

    #[test]
    fn at_shutdown_every_fresh_connection_is_closed_and_no_other() {
        let slots = Slots::default();
        let (fresh, answering, authenticated, other) =
            (slots.open(), slots.open(), slots.open(), slots.open());
        answering.request_started();
        authenticated.request_started();
        authenticated.authenticate();
        slots.evict_all_fresh();
        assert!(fresh.evicted.is_cancelled() && other.evicted.is_cancelled());
        assert!(!answering.evicted.is_cancelled() && !authenticated.evicted.is_cancelled());
    }

    #[test]
    fn an_evicted_connection_never_authenticates_and_a_closed_one_is_forgotten() {
        let slots = Slots::default();
        let slot = slots.open();
        assert!(slot.evict());
        slot.request_started();
        slot.authenticate();
        assert!(!slot.authenticated());
        slots.close(&slot);
        assert!(slots.lock().is_empty());
        assert!(!slots.evict_oldest_fresh());
    }
}
