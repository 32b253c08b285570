//! `GET /sessions` (seek's own): the saved sessions of this work dir, newest first, and the
//! one the server is on (`{"sessions": [...], "current": id or null}`).
//!
//! It lists from the session store off the async threads; it must not open or change a
//! session.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{AppState, Endpoint, error};
use crate::records::ApiJson;

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/sessions",
    methods: || get(sessions),
};

async fn sessions(State(state): State<AppState>) -> Response {
    let dir = state.sessions.clone();
    let listed = tokio::task::spawn_blocking(move || {
        crate::session::list(&dir.data_dir).map(|listing| {
            listing
                .only_in(&dir.work_dir)
                .sessions
                .iter()
                .map(crate::session::Summary::entry)
                .collect::<Vec<_>>()
        })
    })
    .await;
    let current = state.bridge.board().session().map(str::to_owned);
    match listed {
        Ok(Ok(sessions)) => {
            ApiJson(json!({"sessions": sessions, "current": current})).into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("listing sessions failed: {e}"),
        ),
    }
}
