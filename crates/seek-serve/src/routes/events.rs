//! `GET /events` (seek's own): the runtime's event stream as server-sent events, each with its
//! sequence number as id and its kind as event name; a client that falls behind gets a
//! `lagged` event saying how many it missed. The stream ends at shutdown.
//!
//! It only relays what the bridge publishes; it must not filter or reword events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{KeepAlive, Sse};
use axum::routing::get;
use futures_util::Stream;
use serde_json::json;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::{AppState, Endpoint};

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/events",
    methods: || get(events),
};

async fn events(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<axum::response::sse::Event, Infallible>>> {
    use futures_util::StreamExt;
    let stream = BroadcastStream::new(state.bridge.subscribe())
        .map(|next| {
            Ok(match next {
                Ok(published) => axum::response::sse::Event::default()
                    .id(published.seq.to_string())
                    .event(published.kind.as_str())
                    .data(published.json.as_str()),
                Err(BroadcastStreamRecvError::Lagged(missed)) => {
                    axum::response::sse::Event::default()
                        .event("lagged")
                        .data(json!({"type": "lagged", "missed": missed}).to_string())
                }
            })
        })
        // At shutdown the stream ends, so the connection can close.
        .take_until(state.shutdown.cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
