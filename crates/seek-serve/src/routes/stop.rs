//! `GET /stop` (also `POST`): stops the running task, if any (`{"status": "stopped"}`).
//!
//! It asks the bridge to stop; it must not wait for the task's own ending to answer.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{AppState, Endpoint};
use crate::records::ApiJson;

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/stop",
    methods: || get(stop).post(stop),
};

async fn stop(State(state): State<AppState>) -> Response {
    state.bridge.stop().await;
    ApiJson(json!({"status": "stopped"})).into_response()
}
