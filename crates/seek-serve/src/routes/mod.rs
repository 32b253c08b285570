//! The endpoints: AgenticSeek's (`/health`, `/is_active`, `/query`, `/latest_answer`, `/stop`,
//! `/screenshot`, `/screenshots/*`) and seek's own (`/events`, `/sessions`). One file per
//! endpoint (or per pair that shares its work), each declaring its `Endpoint`: its path, its
//! methods and its handler, which turns a request into a call on the bridge and its answer into
//! JSON. This file lists them (`ENDPOINTS`) and builds the router with the layers every
//! endpoint shares.
//!
//! Adding an endpoint: its file here, its line in `ENDPOINTS`, its JSON (a record several parts
//! build goes in `records`), and its section in docs/api.md (a test holds it). It must not keep
//! state of its own.

mod events;
mod health;
mod is_active;
mod latest_answer;
mod query;
mod screenshot;
mod sessions;
mod stop;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use axum::{Router, middleware};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::access::{Access, guard};
use super::bridge::Bridge;
use super::records::ApiJson;

pub use health::API_VERSION;

/// Every endpoint, in the order docs/api.md lists AgenticSeek's, then seek's own.
pub(crate) const ENDPOINTS: &[&Endpoint] = &[
    &health::ENDPOINT,
    &is_active::ENDPOINT,
    &query::ENDPOINT,
    &latest_answer::ENDPOINT,
    &stop::ENDPOINT,
    &screenshot::SCREENSHOT,
    &screenshot::SCREENSHOTS,
    &events::ENDPOINT,
    &sessions::ENDPOINT,
];

/// One endpoint: its path (axum's syntax) and its methods with their handlers.
pub(crate) struct Endpoint {
    pub path: &'static str,
    pub methods: fn() -> MethodRouter<AppState>,
}

/// The largest request body read (a `/query` with a very long prompt is still far below it).
pub(crate) const BODY_LIMIT: usize = 1024 * 1024;

/// How long a request body may take to arrive once its headers have.
pub(crate) const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub bridge: Arc<Bridge>,
    pub sessions: SessionsDir,
    /// The latest page's screenshot, when the web agent has taken one.
    pub screenshot: std::path::PathBuf,
    /// Cancelled at shutdown: `/events` streams end.
    pub shutdown: CancellationToken,
}

/// Where `/sessions` lists from: the data dir and this work dir (canonical).
#[derive(Clone)]
pub struct SessionsDir {
    pub data_dir: std::path::PathBuf,
    pub work_dir: String,
}

/// The whole API, guarded by `access`.
pub fn router(state: AppState, access: Access) -> Router {
    ENDPOINTS
        .iter()
        .fold(Router::new(), |router, endpoint| {
            router.route(endpoint.path, (endpoint.methods)())
        })
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(access, guard))
        .with_state(state)
}

/// A JSON error body, `{"error": message}`, with `status`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, ApiJson(json!({"error": message.into()}))).into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such endpoint")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_has_its_own_path_and_its_section_in_the_api_doc() {
        let doc = include_str!("../../../../docs/api.md");
        let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("### `")).collect();
        let mut seen = std::collections::HashSet::new();
        for endpoint in ENDPOINTS {
            assert!(seen.insert(endpoint.path), "{} twice", endpoint.path);
            // A wildcard path is documented by the file it serves.
            let fixed = endpoint.path.split('{').next().unwrap_or(endpoint.path);
            assert!(
                headings.iter().any(|h| h.contains(&format!(" {fixed}"))),
                "docs/api.md has no section for {}",
                endpoint.path
            );
        }
    }
}
