//! Model providers: a chat request in, a stream of answer and reasoning deltas out.
//!
//! Owns the `ChatModel` abstraction, the message and delta types, and building an HTTP client
//! from the configuration. It must not know about tools or the UI, nor the built-in engine's
//! provider above it (`crate::model_factory` chooses between the two). Failures are `LlmError` values, never
//! text pretending to be the model's answer.

mod body;
mod bounds;
mod client;
mod error;
mod ollama;
mod openai;
mod outbox;
mod repetition;
mod retry;
mod schema;
mod settings;
pub mod size;
mod url;
mod window;
mod wire;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use client::HttpChatModel;
pub use error::{LlmError, ModelRefused, ParametersUnknown};
pub use repetition::{Repetition, RepetitionGuard};
pub use retry::RetryPolicy;
pub use url::ServerUrl;

use crate::config::{Config, Env};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One chat message, as sent to the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

/// Sampling and size options sent with each request.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationOptions {
    pub max_tokens: u64,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    /// Sent to Ollama as `num_ctx`.
    pub context_window: u64,
}

impl GenerationOptions {
    pub(crate) fn from_config(config: &Config) -> Self {
        let m = &config.model_settings;
        Self {
            max_tokens: m.max_tokens.value,
            temperature: m.temperature.as_ref().map(|t| t.value),
            top_p: m.top_p.as_ref().map(|t| t.value),
            seed: m.seed.as_ref().map(|t| t.value),
            context_window: m.context_window.value,
        }
    }
}

/// A chat request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub options: GenerationOptions,
    /// Ask the server to constrain the reply to this JSON schema (Ollama's `format`, the
    /// OpenAI-compatible `response_format`), where it can; a server that refuses it is asked
    /// again without.
    pub json_schema: Option<serde_json::Value>,
    /// Where a provider that keeps what it has read of the conversation (the built-in engine's
    /// key/value caches) may save it and read it back when the session is resumed: beside the
    /// session file. Servers ignore it.
    pub prefix_file: Option<std::path::PathBuf>,
}

/// Conversations a provider that keeps what it has read (the built-in engine) may read ahead
/// while the user is idle (`ChatModel::warm_up`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmUp {
    /// Each the start of a request the next task may send: a system prompt and the
    /// conversation so far, rendered as that request renders them, without the new message.
    /// The likeliest first.
    pub conversations: Vec<Vec<Message>>,
    /// As in `ChatRequest`: where a resumed session's read prefixes are saved.
    pub prefix_file: Option<std::path::PathBuf>,
}

/// Token counts, when the server reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// Why a reply ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model finished.
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The repetition guard cut a looping reply.
    Repetition(Repetition),
    /// seek cut the reply once its first code block was complete.
    BlockComplete,
    /// Anything else the server said.
    Other(String),
}

/// The end of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub reason: FinishReason,
    pub usage: Option<Usage>,
}

/// A piece of a streamed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    Answer(String),
    Reasoning(String),
    /// A `</think>` arrived with no `<think>` before it: what was streamed as answer so far was
    /// reasoning (see `protocol::ThinkSplitter`).
    AnswerWasReasoning,
    /// The request failed before its first token and will be sent again after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    /// The model is being made ready before the reply starts (the built-in engine downloading,
    /// checking or loading a model file).
    Preparing(Preparing),
    /// The reply is complete; nothing follows.
    Done(Finish),
}

/// Progress of making a model ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preparing {
    /// `download`, `verify`, `load`, or `prompt` (computing a long prompt; the counts are
    /// tokens, not bytes).
    pub stage: &'static str,
    /// The model as the user named it.
    pub model: String,
    pub done_bytes: u64,
    pub total_bytes: Option<u64>,
    /// One line for a person: what, how far, how fast, how long left.
    pub message: String,
}

/// A streaming reply. Dropping it (or cancelling the token given to `ChatModel::stream`) closes
/// the connection at once.
#[derive(Debug)]
pub struct ChatStream {
    receiver: mpsc::Receiver<Result<Delta, LlmError>>,
    cancel: CancellationToken,
}

impl ChatStream {
    /// A stream fed by `receiver`, for `ChatModel` implementations. Returns the token the
    /// producer must watch: a child of `parent`, cancelled when the caller cancels `parent` or
    /// drops the stream (dropping never cancels `parent` itself).
    pub fn new(
        receiver: mpsc::Receiver<Result<Delta, LlmError>>,
        parent: &CancellationToken,
    ) -> (Self, CancellationToken) {
        let cancel = parent.child_token();
        let stream = Self {
            receiver,
            cancel: cancel.clone(),
        };
        (stream, cancel)
    }

    /// The next delta; `None` after `Done` or an error.
    pub async fn next(&mut self) -> Option<Result<Delta, LlmError>> {
        self.receiver.recv().await
    }

    /// Reads the whole reply. On an error, the text that did arrive is returned with it.
    pub async fn collect(mut self) -> Result<Completion, (LlmError, Completion)> {
        let mut done = Completion::default();
        while let Some(item) = self.next().await {
            match item {
                Ok(Delta::Answer(a)) => done.answer.push_str(&a),
                Ok(Delta::Reasoning(r)) => done.reasoning.push_str(&r),
                Ok(Delta::AnswerWasReasoning) => {
                    done.reasoning
                        .insert_str(0, &std::mem::take(&mut done.answer));
                }
                Ok(Delta::Retrying { .. }) => done.retries += 1,
                Ok(Delta::Preparing(_)) => {}
                Ok(Delta::Done(finish)) => {
                    done.finish = Some(finish);
                    return Ok(done);
                }
                Err(e) => return Err((e, done)),
            }
        }
        Ok(done)
    }
}

impl Drop for ChatStream {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A whole reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub answer: String,
    pub reasoning: String,
    pub finish: Option<Finish>,
    pub retries: u32,
}

/// A chat model behind some server.
pub trait ChatModel: Send + Sync {
    /// Starts a streaming reply. Errors arrive in the stream.
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream;

    /// Lists the server's models.
    fn list_models(&self) -> client::BoxFuture<'_, Result<Vec<String>, LlmError>>;

    /// `model @ provider base-url`, for status lines and logs.
    fn describe(&self) -> String;

    /// The same server and settings with another model (`/model NAME`).
    fn with_model(&self, model: &str) -> std::sync::Arc<dyn ChatModel>;

    /// Whether `model` can be used here, checked before switching to it (`/model NAME`): a
    /// name the provider cannot know of is an error message now rather than at the next task.
    /// Servers are asked nothing (they answer at the next task).
    fn check_model(&self, model: &str) -> Result<(), ModelRefused> {
        let _ = model;
        Ok(())
    }

    /// The model's context window in tokens, if the server says (best effort: `None` when it
    /// cannot or will not).
    fn context_window(&self) -> client::BoxFuture<'_, Option<u64>> {
        Box::pin(async { None })
    }

    /// The model's parameter count, if the server (or the model file) says, or why not (for the
    /// log). Best effort and unbounded in time: the caller bounds it.
    fn parameters(
        &self,
    ) -> client::BoxFuture<'_, Result<crate::config::model_size::Reported, ParametersUnknown>> {
        Box::pin(async { Err(ParametersUnknown::NotReported) })
    }

    /// Whether a request whose last message is the assistant's is continued: the reply is the
    /// rest of that message, not a new one. Only where that is certain (the built-in engine);
    /// an HTTP server may answer such a request with a whole new message.
    fn continues_answer(&self) -> bool {
        false
    }

    /// Reads `warm`'s conversations ahead, in idle time, so that a request starting with one
    /// of them computes only what follows. Returns at once; a request sent later is never
    /// delayed by more than a moment. Servers do nothing (a server's prompt cache fills with
    /// the requests themselves).
    fn warm_up(&self, warm: WarmUp) {
        let _ = warm;
    }

    /// Whether [`ChatModel::warm_up`] does anything, so that the agent renders nothing ahead
    /// for a model that would drop it (every server). False unless overridden.
    fn reads_ahead(&self) -> bool {
        false
    }
}

/// Builds the configured server's HTTP client. The API key is read from the environment now and is
/// only ever sent as a bearer header to the configured base URL: whenever its variable is set,
/// and required only when that URL is the preset's own cloud service (a local server behind a
/// cloud preset's wire, such as an OpenAI-compatible one on loopback, needs none).
pub(crate) fn connect_http(config: &Config, env: &Env) -> Result<HttpChatModel, LlmError> {
    let preset = config.provider.value;
    let url = ServerUrl::normalise(&config.base_url.value, preset.wire);
    let api_key = match &config.api_key_env.value {
        Some(var) => match env.get(var) {
            Some(key) => Some(key.to_owned()),
            None if needs_key(preset, &url) => {
                return Err(LlmError::MissingKey {
                    var: var.clone(),
                    provider: preset.name.to_owned(),
                });
            }
            None => None,
        },
        None => None,
    };
    let m = &config.model_settings;
    Ok(HttpChatModel::new(settings::Settings {
        provider: preset.name,
        wire: preset.wire,
        url,
        model: config.model.value.clone(),
        api_key,
        connect_timeout: Duration::from_secs(m.connect_timeout_secs.value),
        idle_timeout: Duration::from_secs(m.stream_idle_timeout_secs.value),
        reply_timeout: Duration::from_secs(m.reply_timeout_secs.value),
        max_line_bytes: usize::try_from(m.stream_max_line_mib.value << 20).unwrap_or(usize::MAX),
        retry: RetryPolicy::new(u32::try_from(m.max_retries.value).unwrap_or(3)),
        context_window: m.context_window.value,
    }))
}

/// Whether `url` is the cloud service of a preset that names a key variable.
fn needs_key(preset: &crate::config::Preset, url: &ServerUrl) -> bool {
    preset.api_key_env.is_some()
        && ServerUrl::normalise(preset.base_url, preset.wire).host() == url.host()
}

/// How a reply ended (`None`: the stream just ended), as the wire says it.
pub(crate) fn answer_finish(reason: Option<&FinishReason>) -> crate::wire::AnswerFinish {
    match reason {
        None | Some(FinishReason::Stop) => crate::wire::AnswerFinish::Stop,
        Some(FinishReason::Length) => crate::wire::AnswerFinish::Length,
        Some(FinishReason::Repetition(_)) => crate::wire::AnswerFinish::Repetition,
        Some(FinishReason::BlockComplete) => crate::wire::AnswerFinish::Block,
        Some(FinishReason::Other(other)) => crate::wire::AnswerFinish::Other(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::providers::PRESETS;

    #[test]
    fn a_key_is_required_only_by_the_presets_own_cloud_address() {
        for preset in PRESETS {
            let needs = |raw: &str| needs_key(preset, &ServerUrl::normalise(raw, preset.wire));
            assert_eq!(
                needs(preset.base_url),
                preset.api_key_env.is_some(),
                "{}",
                preset.name
            );
            let host = ServerUrl::normalise(preset.base_url, preset.wire).host();
            assert_eq!(
                needs(&host),
                preset.api_key_env.is_some(),
                "{}",
                preset.name
            );
            for elsewhere in [
                "http://127.0.0.1:8080/v1",
                "localhost:1234",
                "https://proxy.example.com/v1",
            ] {
                assert!(!needs(elsewhere), "{} at {elsewhere}", preset.name);
            }
        }
    }

    #[test]
    fn a_finish_reason_is_the_wires_answer_finish() {
        use crate::wire::AnswerFinish;
        assert_eq!(answer_finish(None), AnswerFinish::Stop);
        let cut = FinishReason::Repetition(Repetition {
            unit_len: 4,
            span: 400,
        });
        assert_eq!(answer_finish(Some(&cut)), AnswerFinish::Repetition);
    }
}
