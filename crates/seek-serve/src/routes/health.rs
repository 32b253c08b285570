//! `GET /health` (open): that the server answers, and AgenticSeek's API version.
//!
//! It must not touch the agent runtime: a health check never waits on a task.

use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::Endpoint;
use crate::records::ApiJson;

/// AgenticSeek's version string, which its `/health` reports and clients may check.
pub const API_VERSION: &str = "0.1.0";

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/health",
    methods: || get(health),
};

async fn health() -> Response {
    ApiJson(json!({"status": "healthy", "version": API_VERSION})).into_response()
}
