//! `POST /query`: runs a task and answers with its ending as AgenticSeek's `QueryResponse`
//! (`records`), or why it did not start (busy: 429; an unknown session: 404).
//!
//! The body is read as bytes and parsed here, so a malformed, oversized or slow body is a
//! status that says what is wrong, never a panic or an HTML page. It must not keep state of
//! its own: the bridge runs the task.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;

use super::{AppState, BODY_LIMIT, BODY_READ_TIMEOUT, Endpoint, error};
use crate::bridge::{Query, StartError};
use crate::records::{ApiJson, QueryResponse};

pub(crate) const ENDPOINT: Endpoint = Endpoint {
    path: "/query",
    methods: || post(query),
};

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
