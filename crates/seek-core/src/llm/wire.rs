//! What differs between wire formats: the request body, the endpoints, and how a streamed line
//! becomes events. Everything else (retries, timeouts, cancellation) is shared by `client`.

use super::{ChatRequest, Usage};

/// One thing a streamed line said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WireEvent {
    Content(String),
    Reasoning(String),
    /// The reply's end record (finish reason and token counts); more lines may follow (usage).
    Finish {
        reason: Option<String>,
        usage: Option<Usage>,
    },
    /// The server reported an error inside the stream.
    Error(String),
    /// The stream is complete.
    Done,
}

/// A wire format.
pub(crate) trait WireFormat: Send + Sync {
    /// Path of the chat endpoint below the base URL.
    fn chat_path(&self) -> &'static str;
    /// Path of the model list below the base URL.
    fn models_path(&self) -> &'static str;
    /// The JSON body of a streaming chat request.
    fn body(&self, request: &ChatRequest, model: &str) -> serde_json::Value;
    /// A fresh decoder for one response.
    fn decoder(&self) -> Box<dyn LineDecoder>;
    /// Model names from the model-list response.
    fn model_names(&self, body: &serde_json::Value) -> Vec<String>;
    /// What to tell a user whose model the server does not have.
    fn not_found_hint(&self, model: &str) -> String;
    /// What to tell a user who cannot reach the server.
    fn unreachable_hint(&self) -> &'static str;
}

/// Turns complete lines of a response body into events.
pub(crate) trait LineDecoder: Send {
    /// Decodes one line (without its line ending). `Err` carries the reason a line is unreadable.
    fn line(&mut self, line: &str) -> Result<Vec<WireEvent>, String>;
}

/// Inserts the sampling options that are set into `target`, under the names the wire uses.
pub(crate) fn put_options(
    target: &mut serde_json::Map<String, serde_json::Value>,
    request: &ChatRequest,
    max_tokens_key: &str,
) {
    let o = &request.options;
    target.insert(max_tokens_key.into(), o.max_tokens.into());
    if let Some(t) = o.temperature {
        target.insert("temperature".into(), t.into());
    }
    if let Some(p) = o.top_p {
        target.insert("top_p".into(), p.into());
    }
    if let Some(s) = o.seed {
        target.insert("seed".into(), s.into());
    }
}
