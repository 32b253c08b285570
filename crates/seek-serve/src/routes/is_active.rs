//! `GET /is_active`: whether a task is running (AgenticSeek's `{"is_active": bool}`).
//!
//! It reads the board only; it must not start or stop anything.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{AppState, Endpoint};
use crate::records::ApiJson;

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/is_active",
    methods: || get(is_active),
};

async fn is_active(State(state): State<AppState>) -> Response {
    ApiJson(json!({"is_active": state.bridge.board().running()})).into_response()
}
