//! The JSON bodies of AgenticSeek's API (`api.py`, `sources/schemas.py`), field for field and type
//! for type, so its front end and its users' scripts read seek's answers unchanged.
//!
//! AgenticSeek's quirks are kept where a client could depend on them: `/query`'s `done` and
//! `success` are strings (`"true"`, `"True"`/`"False"`), `/latest_answer`'s `success` is a bool.
//! seek adds fields of its own after AgenticSeek's (`outcome`, `session`); it never renames or
//! retypes one. Plain data: it must not know how the server runs.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::wire::{BlockRecord, Outcome};

/// `/query`'s answer (`QueryResponse`): every field a string except `blocks`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResponse {
    pub done: String,
    pub answer: String,
    pub reasoning: String,
    pub agent_name: String,
    pub success: String,
    pub blocks: Map<String, Value>,
    pub status: String,
    pub uid: String,
    /// seek's own: how the task ended (`done`, `gave_up`, `stopped`, …); absent in the 429 body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// seek's own: the session the task was saved in (pass it as `"session"` to continue it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl QueryResponse {
    /// AgenticSeek's body of a refused query (its 429): nothing done yet.
    pub fn refused(uid: String) -> Self {
        Self {
            done: "false".into(),
            answer: String::new(),
            reasoning: String::new(),
            agent_name: "Unknown".into(),
            success: "false".into(),
            blocks: Map::new(),
            status: "Ready".into(),
            uid,
            outcome: None,
            session: None,
        }
    }
}

/// `/latest_answer`'s record: `done` a string, `success` a bool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatestAnswer {
    pub done: String,
    pub answer: String,
    pub reasoning: String,
    pub agent_name: String,
    pub success: bool,
    pub blocks: Map<String, Value>,
    pub status: String,
    pub uid: String,
    /// seek's own: the task's outcome once it ended (`null` while it runs).
    pub outcome: Option<Outcome>,
    pub session: Option<String>,
}

impl LatestAnswer {
    /// What a page that sends no token is shown instead of a `401`, when seek serve wants one.
    /// AgenticSeek's front end shows no server message when a request fails (only its own
    /// "Failed to process query."), but it shows each new `/latest_answer` answer as a message
    /// and its `status` under the chat: so the answer says what to do. No task's data is in it.
    pub(crate) fn token_needed() -> Self {
        Self {
            done: "true".into(),
            answer: TOKEN_NEEDED.into(),
            reasoning: String::new(),
            agent_name: "seek".into(),
            success: false,
            blocks: Map::new(),
            status: status::TOKEN_REQUIRED.into(),
            // One fixed uid: the same message, however often it is polled.
            uid: "token-required".into(),
            outcome: None,
            session: None,
        }
    }
}

/// The message a page without a token is shown (`LatestAnswer::token_needed`).
pub(crate) const TOKEN_NEEDED: &str = "This page sends no token, and this seek serve requires one, so every query is refused (401). To use this page, restart the server as `seek serve --no-token` (it then serves only pages and clients on this machine: loopback Host, an origin in [serve] allowed_origins).";

/// A JSON body written as `--json` writes its lines: every control character, DEL and the C1
/// controls escaped, so a model's or a page's text cannot reach a terminal that prints the
/// body as it is.
pub(crate) struct ApiJson<T>(pub T);

impl<T: Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        match crate::terminal_safe::json_line(&self.0) {
            Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "application/json")],
                serde_json::json!({"error": format!("the answer could not be written as JSON: {e}")})
                    .to_string(),
            )
                .into_response(),
        }
    }
}

/// `True`/`False`, as Python's `str(bool)` writes it (AgenticSeek's `/query` `success`).
pub(crate) fn python_bool(value: bool) -> String {
    if value { "True" } else { "False" }.to_owned()
}

/// `{"0": record, "1": record, …}`: each block as AgenticSeek's `executorResult.jsonify()`
/// (`block`, `feedback`, `success`, `tool_type`) with seek's record fields beside them
/// (`round`, `index`, `exit_code`, `output`, …).
pub(crate) fn blocks_json(blocks: &[BlockRecord]) -> Map<String, Value> {
    blocks
        .iter()
        .enumerate()
        .map(|(i, block)| {
            // A record is strings, numbers and bools: it always encodes.
            let value = serde_json::to_value(block).unwrap_or(Value::Null);
            (i.to_string(), value)
        })
        .collect()
}

/// The `status` words of AgenticSeek's agents (`get_status_message`).
pub mod status {
    pub(crate) const THINKING: &str = "Thinking...";
    pub(crate) const EXECUTING: &str = "Executing code...";
    pub(crate) const CORRECTING: &str = "Correcting code...";
    pub(crate) const SEARCHING: &str = "Searching...";
    pub(crate) const NAVIGATING: &str = "Navigating...";
    pub(crate) const FILLING_FORM: &str = "Filling web form...";
    pub(crate) const PLANNING: &str = "Making a plan...";
    pub(crate) const STARTING_AGENTS: &str = "Starting agents...";
    pub(crate) const UPDATING_PLAN: &str = "Updating plan...";
    pub const READY: &str = "Ready";
    pub(crate) const STOPPED: &str = "Stopped";
    /// seek's own: a page without a token polls a server that wants one.
    pub(crate) const TOKEN_REQUIRED: &str = "Token required";
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_refused_query_is_agenticseeks_default_response() {
        let body = serde_json::to_value(QueryResponse::refused("u".into())).expect("json");
        assert_eq!(
            body,
            json!({"done": "false", "answer": "", "reasoning": "", "agent_name": "Unknown",
                   "success": "false", "blocks": {}, "status": "Ready", "uid": "u"})
        );
    }

    #[test]
    fn blocks_are_keyed_by_position_with_agenticseeks_four_fields() {
        let block = BlockRecord {
            round: 1,
            index: 0,
            tool_type: "bash".into(),
            block: "echo hi\n".into(),
            save_path: None,
            feedback: "[success] hi".into(),
            success: true,
            exit_code: Some(0),
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 1.5,
            output: "hi\n".into(),
            not_run: None,
        };
        let map = blocks_json(&[block.clone(), block]);
        assert_eq!(map.len(), 2);
        let first = &map["0"];
        assert_eq!(first["block"], "echo hi\n");
        assert_eq!(first["feedback"], "[success] hi");
        assert_eq!(first["success"], true);
        assert_eq!(first["tool_type"], "bash");
        assert_eq!(first["exit_code"], 0);
        assert!(map.contains_key("1"));
    }

    #[test]
    fn success_is_written_as_python_writes_a_bool() {
        assert_eq!(python_bool(true), "True");
        assert_eq!(python_bool(false), "False");
    }
}
