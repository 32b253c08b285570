//! `GET /latest_answer`: the latest task's answer as AgenticSeek's record
//! (`records::LatestAnswer`, kept by the board), or a 404 before any.
//!
//! It reads the board only; it must not start or stop anything.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{AppState, Endpoint, error};
use crate::records::ApiJson;

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/latest_answer",
    methods: || get(latest_answer),
};

async fn latest_answer(State(state): State<AppState>) -> Response {
    match state.bridge.board().latest() {
        Some(record) => ApiJson(record).into_response(),
        None => error(StatusCode::NOT_FOUND, "No agent available"),
    }
}
