//! The HTTP client shared by both wire formats: sending, retrying before the first token,
//! timeouts, cancellation, reading the stream line by line, the think split and the repetition
//! guard.
//!
//! It must not know about tools or the UI; everything it learns goes out as `Delta`s or an
//! `LlmError` on the stream.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use crate::BoxFuture;

use super::error::{is_context_exceeded, reported_context, server_message, shorten};
use super::ollama::Ollama;
use super::openai::OpenAi;
use super::outbox::Outbox;
use super::retry::{RetryPolicy, parse_retry_after};
use super::wire::{WireEvent, WireFormat};
use super::{
    ChatModel, ChatRequest, ChatStream, Delta, Finish, FinishReason, LlmError, Repetition,
    RepetitionGuard, ServerUrl, Usage,
};
use crate::config::Wire;
use crate::protocol::{ThinkDelta, ThinkSplitter};

/// Everything a client needs, resolved from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: &'static str,
    pub wire: Wire,
    pub url: ServerUrl,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    pub context_window: u64,
}

/// A model behind an HTTP server (Ollama or OpenAI-compatible).
#[derive(Clone)]
pub struct HttpChatModel {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    client: Result<reqwest::Client, String>,
    wire: Box<dyn WireFormat>,
}

impl HttpChatModel {
    pub fn new(settings: Settings) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            // A redirect could carry the API key to another host; report it instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string());
        let wire: Box<dyn WireFormat> = match settings.wire {
            Wire::Ollama => Box::new(Ollama),
            Wire::OpenAi => Box::new(OpenAi),
        };
        Self {
            inner: Arc::new(Inner {
                settings,
                client,
                wire,
            }),
        }
    }

    /// Settings with defaults for everything a test does not care about.
    pub fn settings_for_tests(
        wire: Wire,
        url: ServerUrl,
        model: Option<String>,
        api_key: Option<String>,
        idle_timeout: Duration,
    ) -> Settings {
        Settings {
            provider: match wire {
                Wire::Ollama => "ollama",
                Wire::OpenAi => "llama.cpp",
            },
            wire,
            url,
            model,
            api_key,
            connect_timeout: Duration::from_secs(5),
            idle_timeout,
            retry: RetryPolicy::new(3),
            context_window: 8192,
        }
    }

    /// The same client with another retry policy (tests use short delays).
    pub fn with_retry(&self, retry: RetryPolicy) -> Self {
        let mut settings = self.inner.settings.clone();
        settings.retry = retry;
        Self::new(settings)
    }
}

impl ChatModel for HttpChatModel {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (tx, receiver) = mpsc::channel(64);
        let (stream, task_cancel) = ChatStream::new(receiver, &cancel);
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            if let Err(error) = inner.run(&request, &tx, &task_cancel).await {
                let _ = tx.send(Err(error)).await;
            }
        });
        stream
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, LlmError>> {
        Box::pin(self.inner.list_models())
    }

    fn describe(&self) -> String {
        let s = &self.inner.settings;
        format!(
            "{} @ {} {}",
            s.model.as_deref().unwrap_or("(no model)"),
            s.provider,
            s.url.base
        )
    }

    fn context_window(&self) -> BoxFuture<'_, Option<u64>> {
        Box::pin(async {
            let client = self.inner.client().ok()?;
            super::window::context_window(client, &self.inner.settings).await
        })
    }

    fn with_model(&self, model: &str) -> Arc<dyn ChatModel> {
        let mut settings = self.inner.settings.clone();
        settings.model = Some(model.to_owned());
        Arc::new(HttpChatModel::new(settings))
    }
}

/// How one attempt ended.
enum Attempt {
    Finished,
    /// Cancelled, or the stream's reader went away.
    Abandoned,
    Failed {
        error: LlmError,
        retryable: bool,
        retry_after: Option<Duration>,
    },
}

fn failed(error: LlmError, retryable: bool) -> Attempt {
    Attempt::Failed {
        error,
        retryable,
        retry_after: None,
    }
}

/// What ends an attempt while reading the stream.
enum Step {
    Done,
    Repeating(Repetition),
    Failed(Attempt),
}

/// Files one classified piece of content; returns a loop the guard found in answer text.
fn classify(delta: ThinkDelta, reply: &mut Reply, outbox: &mut Outbox) -> Option<Repetition> {
    match delta {
        ThinkDelta::Answer(text) => {
            let repetition = reply.guard.push(&text);
            outbox.push(Delta::Answer(text));
            repetition
        }
        ThinkDelta::Reasoning(text) => {
            outbox.push(Delta::Reasoning(text));
            None
        }
        ThinkDelta::AnswerWasReasoning => {
            outbox.push(Delta::AnswerWasReasoning);
            None
        }
    }
}

/// Per-response state.
struct Reply {
    splitter: ThinkSplitter,
    guard: RepetitionGuard,
    /// Any token arrived (no retry after that).
    streamed: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

type Sender = mpsc::Sender<Result<Delta, LlmError>>;

impl Inner {
    fn client(&self) -> Result<&reqwest::Client, LlmError> {
        self.client.as_ref().map_err(|e| LlmError::Unreachable {
            url: self.settings.url.base.clone(),
            reason: format!("cannot set up the HTTP client: {e}"),
            hint: String::new(),
        })
    }

    fn model(&self) -> Result<String, LlmError> {
        self.settings
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| LlmError::NoModel {
                provider: self.settings.provider.to_owned(),
            })
    }

    async fn run(
        &self,
        request: &ChatRequest,
        tx: &Sender,
        cancel: &CancellationToken,
    ) -> Result<(), LlmError> {
        let model = self.model()?;
        let body = self.wire.body(request, &model);
        let url = self.settings.url.endpoint(self.wire.chat_path());
        let mut retries = 0;
        loop {
            match self.attempt(&url, &body, &model, tx, cancel).await {
                Attempt::Finished | Attempt::Abandoned => return Ok(()),
                Attempt::Failed {
                    error,
                    retryable,
                    retry_after,
                } => {
                    if !retryable || retries >= self.settings.retry.max_retries {
                        return Err(error);
                    }
                    retries += 1;
                    let delay = self.settings.retry.delay(retries, retry_after);
                    let notice = Delta::Retrying {
                        attempt: retries,
                        delay,
                        reason: error.to_string(),
                    };
                    if tx.send(Ok(notice)).await.is_err() {
                        return Ok(());
                    }
                    tokio::select! {
                        () = cancel.cancelled() => return Ok(()),
                        () = tx.closed() => return Ok(()),
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    async fn attempt(
        &self,
        url: &str,
        body: &serde_json::Value,
        model: &str,
        tx: &Sender,
        cancel: &CancellationToken,
    ) -> Attempt {
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return failed(e, false),
        };
        let mut builder = client.post(url).json(body);
        if let Some(key) = &self.settings.api_key {
            builder = builder.bearer_auth(key);
        }
        let idle = self.settings.idle_timeout;
        let sent = tokio::select! {
            () = cancel.cancelled() => return Attempt::Abandoned,
            () = tx.closed() => return Attempt::Abandoned,
            sent = tokio::time::timeout(idle, builder.send()) => sent,
        };
        let mut response = match sent {
            Err(_) => return failed(self.idle_timeout(url), false),
            Ok(Err(e)) => return failed(self.unreachable(url, &e), true),
            Ok(Ok(response)) => response,
        };
        if !response.status().is_success() {
            return self.http_failure(url, model, response).await;
        }

        let mut decoder = self.wire.decoder();
        let mut reply = Reply {
            splitter: ThinkSplitter::default(),
            guard: RepetitionGuard::default(),
            streamed: false,
            finish_reason: None,
            usage: None,
        };
        let mut buffer: Vec<u8> = Vec::new();
        let mut scanned = 0;
        loop {
            let chunk = tokio::select! {
                () = cancel.cancelled() => return Attempt::Abandoned,
                () = tx.closed() => return Attempt::Abandoned,
                chunk = tokio::time::timeout(idle, response.chunk()) => chunk,
            };
            let mut outbox = Outbox::default();
            let step = match chunk {
                Err(_) => Some(Step::Failed(failed(self.idle_timeout(url), false))),
                Ok(Err(e)) => Some(Step::Failed(self.cut(
                    url,
                    &reply,
                    &e.without_url().to_string(),
                ))),
                Ok(Ok(Some(bytes))) => {
                    buffer.extend_from_slice(&bytes);
                    // Every complete line of this network chunk, then one send of what they said:
                    // a chunk costs one hand-off to the reader, however many tokens it carries.
                    let mut consumed = 0;
                    let mut step = None;
                    while let Some(offset) = memchr::memchr(b'\n', &buffer[scanned..]) {
                        let line_end = scanned + offset;
                        let line = String::from_utf8_lossy(&buffer[consumed..line_end]);
                        step = self.decode_line(url, &line, &mut *decoder, &mut reply, &mut outbox);
                        consumed = line_end + 1;
                        scanned = consumed;
                        if step.is_some() {
                            break;
                        }
                    }
                    buffer.drain(..consumed);
                    scanned = buffer.len();
                    step
                }
                Ok(Ok(None)) => {
                    // The last line may lack its line ending.
                    let line = String::from_utf8_lossy(&buffer).into_owned();
                    buffer.clear();
                    let step = self.decode_line(url, &line, &mut *decoder, &mut reply, &mut outbox);
                    Some(step.unwrap_or_else(|| {
                        if reply.finish_reason.is_some() || reply.usage.is_some() {
                            // Some servers end with a finish record and close without `[DONE]`.
                            Step::Done
                        } else {
                            Step::Failed(self.cut(
                                url,
                                &reply,
                                "the server closed the stream before the reply finished",
                            ))
                        }
                    }))
                }
            };
            // Text that arrived goes out before whatever ends the attempt.
            if !outbox.send(tx).await {
                return Attempt::Abandoned;
            }
            match step {
                None => {}
                Some(Step::Done) => return self.finish(&mut reply, tx).await,
                Some(Step::Failed(attempt)) => return attempt,
                Some(Step::Repeating(repetition)) => {
                    let finish = Finish {
                        reason: FinishReason::Repetition(repetition),
                        usage: reply.usage,
                    };
                    // Returning drops the response, which closes the connection: the server
                    // stops generating.
                    let _ = tx.send(Ok(Delta::Done(finish))).await;
                    return Attempt::Finished;
                }
            }
        }
    }

    /// Decodes one line into the outbox; `Some` when the line ends the attempt.
    fn decode_line(
        &self,
        url: &str,
        line: &str,
        decoder: &mut dyn super::wire::LineDecoder,
        reply: &mut Reply,
        outbox: &mut Outbox,
    ) -> Option<Step> {
        let events = match decoder.line(line) {
            Ok(events) => events,
            Err(_) => {
                return Some(Step::Failed(failed(
                    LlmError::Malformed {
                        url: url.to_owned(),
                        line: shorten(line.trim(), 200),
                    },
                    false,
                )));
            }
        };
        for event in events {
            match event {
                WireEvent::Content(text) => {
                    reply.streamed = true;
                    for delta in reply.splitter.push(&text) {
                        if let Some(repetition) = classify(delta, reply, outbox) {
                            return Some(Step::Repeating(repetition));
                        }
                    }
                }
                WireEvent::Reasoning(text) => {
                    reply.streamed = true;
                    outbox.push(Delta::Reasoning(text));
                }
                WireEvent::Finish { reason, usage } => {
                    reply.finish_reason = reason.or(reply.finish_reason.take());
                    reply.usage = usage.or(reply.usage);
                }
                WireEvent::Error(message) => {
                    let error = if is_context_exceeded(&message) {
                        LlmError::ContextExceeded {
                            url: url.to_owned(),
                            window: self.settings.context_window,
                            message,
                        }
                    } else {
                        LlmError::Server {
                            url: url.to_owned(),
                            message: shorten(&message, 500),
                        }
                    };
                    return Some(Step::Failed(failed(error, !reply.streamed)));
                }
                WireEvent::Done => return Some(Step::Done),
            }
        }
        None
    }

    async fn finish(&self, reply: &mut Reply, tx: &Sender) -> Attempt {
        let mut outbox = Outbox::default();
        let mut repetition = None;
        for delta in reply.splitter.finish() {
            repetition = repetition.or(classify(delta, reply, &mut outbox));
        }
        if !outbox.send(tx).await {
            return Attempt::Abandoned;
        }
        let reason = match (repetition, reply.finish_reason.as_deref()) {
            (Some(r), _) => FinishReason::Repetition(r),
            (None, None | Some("stop" | "eos" | "end_turn")) => FinishReason::Stop,
            (None, Some("length" | "max_tokens")) => FinishReason::Length,
            (None, Some(other)) => FinishReason::Other(other.to_owned()),
        };
        let finish = Finish {
            reason,
            usage: reply.usage,
        };
        let _ = tx.send(Ok(Delta::Done(finish))).await;
        Attempt::Finished
    }

    fn cut(&self, url: &str, reply: &Reply, reason: &str) -> Attempt {
        // Before the first token nothing is lost by asking again; after it, the partial answer
        // stands and the cut is reported.
        failed(
            LlmError::StreamCut {
                url: url.to_owned(),
                reason: reason.to_owned(),
            },
            !reply.streamed,
        )
    }

    fn idle_timeout(&self, url: &str) -> LlmError {
        LlmError::IdleTimeout {
            url: url.to_owned(),
            secs: self.settings.idle_timeout.as_secs(),
        }
    }

    fn unreachable(&self, url: &str, error: &reqwest::Error) -> LlmError {
        let reason = if error.is_timeout()
            || error.is_connect() && root_cause(error).contains("timed out")
        {
            format!(
                "no connection within {} s",
                self.settings.connect_timeout.as_secs()
            )
        } else {
            root_cause(error)
        };
        LlmError::Unreachable {
            url: url.to_owned(),
            reason,
            hint: self.wire.unreachable_hint().to_owned(),
        }
    }

    async fn http_failure(&self, url: &str, model: &str, response: reqwest::Response) -> Attempt {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = tokio::time::timeout(self.settings.idle_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let message = server_message(&body);
        let code = status.as_u16();
        let error = if code == 404
            && (message.to_ascii_lowercase().contains("model")
                || self.settings.wire == Wire::Ollama && body.contains("not found"))
        {
            LlmError::ModelNotFound {
                model: model.to_owned(),
                url: self.settings.url.base.clone(),
                hint: self.wire.not_found_hint(model),
            }
        } else if matches!(code, 400 | 413 | 422 | 500) && is_context_exceeded(&message) {
            LlmError::ContextExceeded {
                url: url.to_owned(),
                window: reported_context(&body).unwrap_or(self.settings.context_window),
                message,
            }
        } else {
            let message = match code {
                401 | 403 => format!("{message} (check the API key and api_key_env)"),
                404 => format!("{message} (is the base URL right? seek tried {url})"),
                300..=399 => format!(
                    "{message} (seek does not follow redirects; set base_url to the final address)"
                ),
                _ => message,
            };
            LlmError::Http {
                url: url.to_owned(),
                status: code,
                message,
            }
        };
        Attempt::Failed {
            error,
            retryable: code == 429 || status.is_server_error(),
            retry_after,
        }
    }

    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let url = self.settings.url.endpoint(self.wire.models_path());
        let mut builder = self.client()?.get(&url);
        if let Some(key) = &self.settings.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = tokio::time::timeout(self.settings.idle_timeout, builder.send())
            .await
            .map_err(|_| self.idle_timeout(&url))?
            .map_err(|e| self.unreachable(&url, &e))?;
        if !response.status().is_success() {
            return match self.http_failure(&url, "", response).await {
                Attempt::Failed { error, .. } => Err(error),
                _ => Ok(Vec::new()),
            };
        }
        let body = response.text().await.map_err(|e| LlmError::StreamCut {
            url: url.clone(),
            reason: e.without_url().to_string(),
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&body).map_err(|_| LlmError::Malformed {
                url: url.clone(),
                line: shorten(body.trim(), 200),
            })?;
        Ok(self.wire.model_names(&value))
    }
}

/// The innermost cause of an error (`Connection refused (os error 111)`), which is what a user
/// can act on.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
