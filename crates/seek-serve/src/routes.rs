//! The endpoints: AgenticSeek's (`/health`, `/is_active`, `/query`, `/latest_answer`, `/stop`,
//! `/screenshot`, `/screenshots/*`) and seek's own (`/events`, `/sessions`), each turning a
//! request into a call on the bridge and its answer into JSON.
//!
//! Bodies are read as bytes and parsed here, so any malformed body is a 400 that says what is
//! wrong, never a panic or an HTML page. It must not keep state of its own.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Router, middleware};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::json;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_util::sync::CancellationToken;

use super::access::{Access, guard};
use super::bridge::{Bridge, Query, StartError};
use super::records::{ApiJson, QueryResponse};

/// The largest request body read (a `/query` with a very long prompt is still far below it).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// How long a request body may take to arrive once its headers have.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// AgenticSeek's version string, which its `/health` reports and clients may check.
pub const API_VERSION: &str = "0.1.0";

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
    Router::new()
        .route("/health", get(health))
        .route("/is_active", get(is_active))
        .route("/query", post(query))
        .route("/latest_answer", get(latest_answer))
        .route("/stop", get(stop).post(stop))
        .route("/screenshot", get(screenshot))
        .route("/screenshots/{*path}", get(screenshots))
        .route("/events", get(events))
        .route("/sessions", get(sessions))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(access, guard))
        .with_state(state)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, ApiJson(json!({"error": message.into()}))).into_response()
}

async fn health() -> Response {
    ApiJson(json!({"status": "healthy", "version": API_VERSION})).into_response()
}

async fn is_active(State(state): State<AppState>) -> Response {
    ApiJson(json!({"is_active": state.bridge.board().running()})).into_response()
}

/// `/query`'s body: AgenticSeek's `QueryRequest` and seek's own optional fields.
#[derive(Debug, Deserialize)]
struct QueryRequest {
    query: String,
    /// Accepted for AgenticSeek's clients; seek does not speak.
    #[serde(default)]
    #[allow(dead_code)]
    tts_enabled: Option<bool>,
    /// seek's own: the agent for this task (as `--agent` takes it).
    #[serde(default)]
    agent: Option<String>,
    /// seek's own: continue this saved session (an id from `/sessions` or a prefix of one).
    #[serde(default)]
    session: Option<String>,
}

async fn query(State(state): State<AppState>, body: Body) -> Response {
    let read = tokio::time::timeout(BODY_READ_TIMEOUT, axum::body::to_bytes(body, BODY_LIMIT));
    let body = match read.await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) if is_too_large(&e) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than {} KiB", BODY_LIMIT / 1024),
            );
        }
        Ok(Err(e)) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the request body could not be read: {e}"),
            );
        }
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body took longer than {} s to arrive",
                    BODY_READ_TIMEOUT.as_secs()
                ),
            );
        }
    };
    let request: QueryRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body must be JSON like {{\"query\": \"your task\"}}: {e}"),
            );
        }
    };
    if request.query.trim().is_empty() {
        return error(StatusCode::BAD_REQUEST, "the query is empty");
    }
    let agent = match request
        .agent
        .as_deref()
        .map(crate::agents::parse)
        .transpose()
    {
        Ok(agent) => agent,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("agent: {e}")),
    };
    let started = state
        .bridge
        .run(Query {
            prompt: request.query,
            agent,
            session: request.session,
        })
        .await;
    match started {
        // The task's own ending, taken when it ended: a task begun since does not change it.
        Ok(ending) => {
            let status = if ending.outcome == Some(crate::wire::Outcome::ModelError) {
                StatusCode::BAD_GATEWAY
            } else {
                StatusCode::OK
            };
            (status, ApiJson(ending.response)).into_response()
        }
        Err(StartError::Busy) => (
            StatusCode::TOO_MANY_REQUESTS,
            ApiJson(QueryResponse::refused(uuid::Uuid::new_v4().to_string())),
        )
            .into_response(),
        Err(StartError::Session(why)) => error(StatusCode::NOT_FOUND, why),
        Err(StartError::Gone) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the agent runtime has ended (the server is stopping, or it failed: see its stderr)",
        ),
    }
}

/// Whether reading a body failed on `BODY_LIMIT` (axum's length-limit error, somewhere in the
/// error's chain).
fn is_too_large(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

async fn latest_answer(State(state): State<AppState>) -> Response {
    match state.bridge.board().latest() {
        Some(record) => ApiJson(record).into_response(),
        None => error(StatusCode::NOT_FOUND, "No agent available"),
    }
}

async fn stop(State(state): State<AppState>) -> Response {
    state.bridge.stop().await;
    ApiJson(json!({"status": "stopped"})).into_response()
}

/// The latest page the web agent read with Chromium, as a PNG (AgenticSeek's `/screenshot`).
async fn screenshot(State(state): State<AppState>) -> Response {
    match read_no_follow(&state.screenshot).await {
        Ok(png) => ([(header::CONTENT_TYPE, "image/png")], png).into_response(),
        Err(_) => error(StatusCode::NOT_FOUND, "No screenshot available"),
    }
}

/// Reads a file only if it is a plain file: a link put in its place is not followed, and a
/// FIFO is neither waited on nor read.
async fn read_no_follow(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .await?;
    if !file.metadata().await?.is_file() {
        return Err(std::io::Error::other("not a plain file"));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).await?;
    Ok(bytes)
}

/// AgenticSeek served its screenshots folder here; the front end asks for
/// `updated_screen.png`, the only file there is.
async fn screenshots(
    state: State<AppState>,
    axum::extract::Path(path): axum::extract::Path<String>,
) -> Response {
    if path == crate::web::read::SCREENSHOT_FILE {
        screenshot(state).await
    } else {
        error(StatusCode::NOT_FOUND, "No screenshot available")
    }
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such endpoint")
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_screenshot_is_read_only_from_a_plain_file() {
        let dir = tempfile::tempdir().expect("temp");
        let plain = dir.path().join("plain.png");
        std::fs::write(&plain, b"png").expect("write");
        assert_eq!(read_no_follow(&plain).await.expect("a file"), b"png");

        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"secret").expect("write");
        let link = dir.path().join("link.png");
        std::os::unix::fs::symlink(&secret, &link).expect("symlink");
        assert!(
            read_no_follow(&link).await.is_err(),
            "a link is not followed"
        );

        let fifo = dir.path().join("fifo.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let read = tokio::time::timeout(Duration::from_secs(10), read_no_follow(&fifo)).await;
        assert!(
            matches!(read, Ok(Err(_))),
            "a FIFO is refused at once, not waited on"
        );
    }
}
