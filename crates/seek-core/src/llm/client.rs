//! The HTTP client shared by both wire formats: sending, retrying before the first token,
//! timeouts (idle: no content; total: the reply deadline), cancellation, reading the stream line
//! by line within the line limit, `max_tokens` enforced, the think split and the repetition guard.
//!
//! It must not know about tools or the UI; everything it learns goes out as `Delta`s or an
//! `LlmError` on the stream.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::BoxFuture;

use super::body::read_body;
use super::bounds::{MAX_BODY_BYTES, TokenMeter};
use super::error::{is_context_exceeded, reported_context, server_message, shorten};
use super::ollama::Ollama;
use super::openai::OpenAi;
use super::outbox::Outbox;
use super::retry::{RetryPolicy, parse_retry_after};
use super::schema::SchemaSupport;
pub use super::settings::Settings;
use super::wire::{WireEvent, WireFormat};
use super::{
    ChatModel, ChatRequest, ChatStream, Delta, Finish, FinishReason, LlmError, ParametersUnknown,
    Repetition, RepetitionGuard, ServerUrl, Usage,
};
use crate::config::Wire;
use crate::protocol::{ThinkDelta, ThinkSplitter};

/// A model behind an HTTP server (Ollama or OpenAI-compatible).
#[derive(Clone)]
pub struct HttpChatModel {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    client: Result<reqwest::Client, String>,
    wire: Box<dyn WireFormat>,
    /// Whether the server refused a JSON schema once (then no request carries one again).
    schema: SchemaSupport,
}

impl HttpChatModel {
    pub fn new(settings: Settings) -> Self {
        let client = crate::tls::client_builder()
            .connect_timeout(settings.connect_timeout)
            // A redirect could carry the API key to another host; report it instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string());
        let wire: Box<dyn WireFormat> = match settings.wire {
            Wire::Ollama => Box::new(Ollama),
            // `model_factory::connect` gives the in-process wire to the built-in engine, never to HTTP.
            Wire::OpenAi | Wire::InProcess => Box::new(OpenAi),
        };
        Self {
            inner: Arc::new(Inner {
                settings,
                client,
                wire,
                schema: SchemaSupport::default(),
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
                Wire::OpenAi | Wire::InProcess => "llama.cpp",
            },
            wire,
            url,
            model,
            api_key,
            connect_timeout: Duration::from_secs(5),
            idle_timeout,
            reply_timeout: Duration::from_secs(crate::config::DEFAULT_REPLY_TIMEOUT_SECS),
            max_line_bytes: usize::try_from(crate::config::DEFAULT_STREAM_MAX_LINE_MIB << 20)
                .unwrap_or(usize::MAX),
            retry: RetryPolicy::new(3),
            context_window: 8192,
        }
    }

    /// The same client with other stream bounds (tests use small ones).
    pub fn with_bounds(&self, reply_timeout: Duration, max_line_bytes: usize) -> Self {
        let mut settings = self.inner.settings.clone();
        settings.reply_timeout = reply_timeout;
        settings.max_line_bytes = max_line_bytes;
        Self::new(settings)
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

    fn parameters(
        &self,
    ) -> BoxFuture<'_, Result<crate::config::model_size::Reported, ParametersUnknown>> {
        Box::pin(async {
            let client = self
                .inner
                .client()
                .map_err(|e| ParametersUnknown::Failed(e.to_string()))?;
            super::size::parameters(client, &self.inner.settings)
                .await
                .map_err(ParametersUnknown::Failed)
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
    meter: TokenMeter,
    /// Any token arrived (no retry after that).
    streamed: bool,
    /// When the server last said something (a line with an event); keep-alives do not count.
    last_content: Instant,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

/// One request as every attempt sends it.
struct Call<'a> {
    url: &'a str,
    body: &'a serde_json::Value,
    model: &'a str,
    max_tokens: u64,
    /// The reply deadline (`reply_timeout` from the first send).
    deadline: Instant,
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
        let mut carries_schema = self.schema.carries(request);
        let mut body = super::schema::body(&*self.wire, request, &model, carries_schema);
        let url = self.settings.url.endpoint(self.wire.chat_path());
        let deadline = Instant::now() + self.settings.reply_timeout;
        let mut retries = 0;
        loop {
            let call = Call {
                url: &url,
                body: &body,
                model: &model,
                max_tokens: request.options.max_tokens,
                deadline,
            };
            match self.attempt(&call, tx, cancel).await {
                Attempt::Finished | Attempt::Abandoned => return Ok(()),
                Attempt::Failed {
                    error,
                    retryable,
                    retry_after,
                } => {
                    // A server that refuses the schema is asked once more without it, at once
                    // (not a retry: nothing failed that waiting would mend), and never again with
                    // one.
                    if carries_schema && super::schema::is_refusal(&error) {
                        self.schema.remember_refusal();
                        carries_schema = false;
                        body = super::schema::body(&*self.wire, request, &model, false);
                        continue;
                    }
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
                        () = tokio::time::sleep_until(deadline) => {
                            return Err(self.reply_timeout(&url));
                        }
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    async fn attempt(&self, call: &Call<'_>, tx: &Sender, cancel: &CancellationToken) -> Attempt {
        let url = call.url;
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return failed(e, false),
        };
        let mut builder = client.post(url).json(call.body);
        if let Some(key) = &self.settings.api_key {
            builder = builder.bearer_auth(key);
        }
        let idle = self.settings.idle_timeout;
        let wake = (Instant::now() + idle).min(call.deadline);
        let sent = tokio::select! {
            () = cancel.cancelled() => return Attempt::Abandoned,
            () = tx.closed() => return Attempt::Abandoned,
            sent = tokio::time::timeout_at(wake, builder.send()) => sent,
        };
        let mut response = match sent {
            Err(_) => return failed(self.timed_out(url, call.deadline), false),
            Ok(Err(e)) => {
                let retry = super::retry::connect_failure_is_retryable(url, &e);
                return failed(self.unreachable(url, &e), retry);
            }
            Ok(Ok(response)) => response,
        };
        if !response.status().is_success() {
            return self.http_failure(url, call.model, response).await;
        }

        let mut decoder = self.wire.decoder();
        let mut reply = Reply {
            splitter: ThinkSplitter::default(),
            guard: RepetitionGuard::default(),
            meter: TokenMeter::new(call.max_tokens),
            streamed: false,
            last_content: Instant::now(),
            finish_reason: None,
            usage: None,
        };
        let max_line = self.settings.max_line_bytes;
        let mut buffer: Vec<u8> = Vec::new();
        let mut scanned = 0;
        loop {
            // Idle is measured from the last content, so lines that carry nothing (keep-alive
            // comments, blank lines) cannot hold the reply open; nothing passes the deadline.
            let wake = (reply.last_content + idle).min(call.deadline);
            let chunk = tokio::select! {
                () = cancel.cancelled() => return Attempt::Abandoned,
                () = tx.closed() => return Attempt::Abandoned,
                chunk = tokio::time::timeout_at(wake, response.chunk()) => chunk,
            };
            let mut outbox = Outbox::default();
            let step = match chunk {
                Err(_) => Some(Step::Failed(failed(
                    self.timed_out(url, call.deadline),
                    false,
                ))),
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
                        if line_end - consumed > max_line {
                            step = Some(Step::Failed(self.line_too_long(url)));
                            break;
                        }
                        let line = String::from_utf8_lossy(&buffer[consumed..line_end]);
                        step = self.decode_line(
                            url,
                            &line,
                            false,
                            &mut *decoder,
                            &mut reply,
                            &mut outbox,
                        );
                        consumed = line_end + 1;
                        scanned = consumed;
                        if step.is_some() {
                            break;
                        }
                    }
                    buffer.drain(..consumed);
                    scanned = buffer.len();
                    // A line still without its end: refused as soon as it is too long, so a
                    // server that never ends a line cannot grow this buffer without bound.
                    if step.is_none() && buffer.len() > max_line {
                        step = Some(Step::Failed(self.line_too_long(url)));
                    }
                    step
                }
                Ok(Ok(None)) => {
                    // The last line may lack its line ending; one that does not read is a line
                    // the connection cut short, not a line the server meant.
                    let line = String::from_utf8_lossy(&buffer).into_owned();
                    buffer.clear();
                    let step =
                        self.decode_line(url, &line, true, &mut *decoder, &mut reply, &mut outbox);
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

    /// Decodes one line into the outbox; `Some` when the line ends the attempt. `after_close`:
    /// the text after the last line ending, found when the server closed the stream — a complete
    /// line is read as any other, but one that does not read is a line the connection cut short,
    /// not a line the server meant.
    fn decode_line(
        &self,
        url: &str,
        line: &str,
        after_close: bool,
        decoder: &mut dyn super::wire::LineDecoder,
        reply: &mut Reply,
        outbox: &mut Outbox,
    ) -> Option<Step> {
        match decoder.line(line) {
            Ok(events) => self.file_events(url, events, reply, outbox),
            Err(_) if after_close => Some(Step::Failed(self.cut(
                url,
                reply,
                "the stream ended in the middle of a line",
            ))),
            Err(_) => Some(Step::Failed(failed(
                LlmError::Malformed {
                    url: url.to_owned(),
                    line: shorten(line.trim(), 200),
                },
                false,
            ))),
        }
    }

    /// Files what one line said; `Some` when it ends the attempt.
    fn file_events(
        &self,
        url: &str,
        events: Vec<WireEvent>,
        reply: &mut Reply,
        outbox: &mut Outbox,
    ) -> Option<Step> {
        if !events.is_empty() {
            reply.last_content = Instant::now();
        }
        for event in events {
            match event {
                WireEvent::Content(text) => {
                    reply.streamed = true;
                    if let Err(step) = self.meter(url, reply, &text) {
                        return Some(step);
                    }
                    for delta in reply.splitter.push(&text) {
                        if let Some(repetition) = classify(delta, reply, outbox) {
                            return Some(Step::Repeating(repetition));
                        }
                    }
                }
                WireEvent::Reasoning(text) => {
                    reply.streamed = true;
                    if let Err(step) = self.meter(url, reply, &text) {
                        return Some(step);
                    }
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

    /// Counts streamed text against `max_tokens`; the step that stops a reply past it.
    fn meter(&self, url: &str, reply: &mut Reply, text: &str) -> Result<(), Step> {
        reply.meter.count(text).map_err(|overrun| {
            Step::Failed(failed(
                LlmError::PastMaxTokens {
                    url: url.to_owned(),
                    max_tokens: overrun.max_tokens,
                    received: overrun.describe(),
                },
                false,
            ))
        })
    }

    fn line_too_long(&self, url: &str) -> Attempt {
        failed(
            LlmError::LineTooLong {
                url: url.to_owned(),
                limit: super::bounds::size(self.settings.max_line_bytes as u64),
            },
            false,
        )
    }

    /// A wait that ended without news: the reply deadline if it has passed, else the idle limit.
    fn timed_out(&self, url: &str, deadline: Instant) -> LlmError {
        if Instant::now() >= deadline {
            self.reply_timeout(url)
        } else {
            self.idle_timeout(url)
        }
    }

    fn reply_timeout(&self, url: &str) -> LlmError {
        LlmError::ReplyTimeout {
            url: url.to_owned(),
            secs: self.settings.reply_timeout.as_secs(),
        }
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
        // Only the start of an error body is ever shown; a server that sends an endless one is
        // not read further.
        let body = tokio::time::timeout(
            self.settings.idle_timeout,
            read_body(response, ERROR_BODY_BYTES),
        )
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
        let body = tokio::time::timeout(
            self.settings.idle_timeout,
            read_body(response, MAX_BODY_BYTES),
        )
        .await
        .map_err(|_| self.idle_timeout(&url))?
        .map_err(|e| LlmError::StreamCut {
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

/// Bytes of an error body read: enough for any server's message and its JSON around it.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// The innermost cause of an error (`Connection refused (os error 111)`), which is what a user
/// can act on.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
