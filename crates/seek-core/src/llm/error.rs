//! Provider failures as values: every one names the URL that was tried and what to do.
//!
//! Owns the error type and the extraction of a server's own message from an error body. It must
//! not retry or decide policy (`client` does).

/// Why `ChatModel::check_model` refused a model before switching to it (`/model NAME`): the
/// provider's own reason, shown to the user as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ModelRefused {
    pub reason: String,
}

/// Why `ChatModel::parameters` has no parameter count (for the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParametersUnknown {
    #[error("this provider does not report it")]
    NotReported,
    #[error("the model file is not downloaded yet")]
    NotDownloaded,
    #[error("the model file's tensors cannot be read")]
    Unreadable,
    /// The request or the reading failed: its own reason.
    #[error("{0}")]
    Failed(String),
}

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the model server at {url}: {reason}{hint}")]
    Unreachable {
        url: String,
        reason: String,
        hint: String,
    },
    #[error("model {model} is not on {url}; {hint}")]
    ModelNotFound {
        model: String,
        url: String,
        hint: String,
    },
    #[error(
        "the conversation no longer fits the model's context window ({window} tokens) at {url}: {message}. Set context_window to the server's real size, or start a new session"
    )]
    ContextExceeded {
        url: String,
        window: u64,
        message: String,
    },
    #[error("the model server at {url} answered HTTP {status}: {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
    },
    #[error(
        "the model server at {url} sent no content for {secs} s (stream_idle_timeout_secs; keep-alive lines do not count): the reply was abandoned"
    )]
    IdleTimeout { url: String, secs: u64 },
    #[error(
        "the reply took longer than {secs} s (reply_timeout_secs) at {url}: stopped; raise reply_timeout_secs for a model this slow"
    )]
    ReplyTimeout { url: String, secs: u64 },
    #[error(
        "the model server at {url} sent a line longer than {limit} (stream_max_line_mib): stopped reading; no streamed event is that long, so the server or something between is broken"
    )]
    LineTooLong { url: String, limit: String },
    #[error(
        "the reply passed max_tokens ({max_tokens}) at {url}: {received} arrived and the server had not finished: stopped; raise max_tokens if the model needs longer replies"
    )]
    PastMaxTokens {
        url: String,
        max_tokens: u64,
        received: String,
    },
    /// The built-in engine failed (the message names the model file and what to do).
    #[error("{message}")]
    Engine { message: String },
    #[error("the model server at {url} sent a line seek cannot read: {line}")]
    Malformed { url: String, line: String },
    #[error("the connection to {url} broke before the reply finished: {reason}")]
    StreamCut { url: String, reason: String },
    #[error("the model server at {url} reported an error: {message}")]
    Server { url: String, message: String },
    #[error(
        "no model is configured for {provider}: pass --model, set SEEK_MODEL or `model = \"…\"` (`seek models` lists the server's models)"
    )]
    NoModel { provider: String },
    #[error("the API key variable {var} is not set: export {var}=… (needed by {provider})")]
    MissingKey { var: String, provider: String },
}

/// The server's own message from an error body: `{"error": "…"}`, `{"error": {"message": "…"}}`,
/// `{"message": "…"}`, or the body itself, shortened.
pub(crate) fn server_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let error = v.get("error").unwrap_or(v);
        error
            .as_str()
            .or_else(|| error.get("message").and_then(|m| m.as_str()))
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    shorten(&text, 500)
}

/// At most `max` characters, with an ellipsis when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The context size a server reports in an error body (llama.cpp's `n_ctx`), if any.
pub(crate) fn reported_context(body: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = v.get("error").unwrap_or(&v);
    error.get("n_ctx").and_then(serde_json::Value::as_u64)
}

/// Whether an error message says the prompt is larger than the context window.
pub(crate) fn is_context_exceeded(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("context")
        && (m.contains("exceed")
            || m.contains("too long")
            || m.contains("maximum")
            || m.contains("length"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages_are_extracted() {
        assert_eq!(
            server_message(r#"{"error":"model \"x\" not found, try pulling it first"}"#),
            "model \"x\" not found, try pulling it first"
        );
        assert_eq!(
            server_message(r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            server_message("<html>502 Bad Gateway</html>\n"),
            "<html>502 Bad Gateway</html>"
        );
        assert_eq!(shorten(&"é".repeat(600), 500).chars().count(), 501);
    }

    #[test]
    fn context_errors_are_recognised() {
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert!(is_context_exceeded(&server_message(llama)));
        assert_eq!(reported_context(llama), Some(8192));
        assert!(is_context_exceeded(
            "This model's maximum context length is 128000 tokens"
        ));
        assert!(!is_context_exceeded("Rate limit reached"));
    }
}
