//! A fake model server on loopback for end-to-end tests: OpenAI SSE and Ollama NDJSON, scripted
//! replies, injected faults, and a log of every request.
//!
//! Plain threads and blocking sockets, so it serves async client tests and tests that run the
//! real binary alike. Responses are close-delimited HTTP/1.1, so a cut connection looks exactly
//! like a server that died mid-reply. Nothing here sleeps to wait for the client: a stalling reply
//! waits until the client hangs up. Only the faults that emulate a server's pace (keep-alives, a
//! slow drip of tokens) space their writes, and every endless fault stops at a size or time bound
//! so a client that never hangs up fails its test instead of hanging the suite.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

/// How long a wait may last before the test fails instead of hanging the suite.
const FAILURE_BOUND: std::time::Duration = std::time::Duration::from_secs(120);

/// One scripted response to a chat request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A normal streamed reply. `reasoning` goes in the wire's separate reasoning field.
    Text {
        answer: String,
        reasoning: Option<String>,
    },
    /// An HTTP error with a body and an optional `Retry-After`.
    Status {
        code: u16,
        body: String,
        retry_after: Option<String>,
    },
    /// Streams `answer`, then closes the connection without finishing.
    CutAfter { answer: String },
    /// Streams `answer`, then sends a line that is not valid for the wire.
    Malformed { answer: String, line: String },
    /// Streams `answer`, then sends nothing until the client hangs up.
    Stall { answer: String },
    /// Streams `unit` again and again until the client hangs up (at most `limit` bytes).
    Repeat { unit: String, limit: usize },
    /// Sends exactly these body lines after the headers (for raw wire cases).
    Raw { lines: Vec<String> },
    /// Sends the headers, waits until `gate` is opened, then streams `answer` like `Text`: the
    /// client is held mid-request for as long as the test needs.
    Held { answer: String, gate: Gate },
    /// Opens a content line and never ends it: `x` after `x` with no line ending, until the
    /// client hangs up (at most `limit` bytes).
    EndlessLine { limit: usize },
    /// Streams distinct tokens (`t0 `, `t1 `, …: nothing repeats) until the client hangs up (at
    /// most `limit` tokens), never finishing.
    EndlessTokens { limit: usize },
    /// Streams `answer`, then a keep-alive comment (SSE `: keep-alive`, Ollama a blank line)
    /// every `every` until the client hangs up (at most `FAILURE_BOUND`).
    KeepAlive {
        answer: String,
        every: std::time::Duration,
    },
    /// Streams one distinct token every `every` until the client hangs up (at most
    /// `FAILURE_BOUND`): a live reply that never ends.
    Drip { every: std::time::Duration },
    /// Streams `answer`, then the first half of a content line, then closes the connection.
    CutMidLine { answer: String },
    /// Streams `answer` a piece every `every` (a model generating at a known pace), then
    /// finishes, reporting these token counts as the server's usage.
    Paced {
        answer: String,
        every: std::time::Duration,
        prompt_tokens: u64,
        completion_tokens: u64,
    },
}

/// Holds a `Reply::Held` until the test opens it.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets every reply held by this gate go on.
    pub fn open(&self) {
        let (open, changed) = &*self.0;
        *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        changed.notify_all();
    }

    /// Waits until the gate is open; the bound only turns a forgotten `open` into a failure.
    fn wait(&self) {
        let (open, changed) = &*self.0;
        let guard = open.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, timeout) = changed
            .wait_timeout_while(guard, FAILURE_BOUND, |open| !*open)
            .unwrap_or_else(|e| e.into_inner());
        assert!(*guard && !timeout.timed_out(), "the gate was never opened");
    }
}

impl Reply {
    pub fn text(answer: impl Into<String>) -> Self {
        Reply::Text {
            answer: answer.into(),
            reasoning: None,
        }
    }

    pub fn status(code: u16, body: impl Into<String>) -> Self {
        Reply::Status {
            code,
            body: body.into(),
            retry_after: None,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Logged {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The request's messages as (role, content); empty if it has none.
    pub fn messages(&self) -> Vec<(String, String)> {
        self.json()["messages"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|m| {
                        let text = |key: &str| m[key].as_str().unwrap_or_default().to_owned();
                        (text("role"), text("content"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The content of the request's last `user` message (the feedback, after a round); empty if
    /// there is none.
    pub fn last_user_message(&self) -> String {
        self.json()["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user").cloned())
            .and_then(|m| m["content"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

struct State {
    replies: VecDeque<Reply>,
    log: Vec<Logged>,
    models: Vec<String>,
    /// What `/api/show` and `/props` report as the context window (`None`: 404).
    context_length: Option<u64>,
    /// Holds every context-window report until the test opens it.
    window_gate: Option<Gate>,
    /// The model's parameter count as the server reports it (`None`: it does not): Ollama's
    /// `/api/show`, and llama-server's `/v1/models`, which then lists one model as llama-server
    /// does.
    parameters: Option<u64>,
    /// Every request about the model (`/v1/models`, `/api/v1/models`, `/api/show`, `/props`) is
    /// answered 404.
    refuse_model_info: bool,
}

/// The running server. It stops when dropped (its listener thread ends with the test process).
pub struct FakeModel {
    pub port: u16,
    state: Arc<Mutex<State>>,
    hangups: Arc<Mutex<mpsc::Receiver<()>>>,
    arrivals: Arc<Mutex<mpsc::Receiver<()>>>,
}

impl FakeModel {
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            log: Vec::new(),
            models: vec!["fake-coder:7b".into(), "fake-chat:1b".into()],
            context_length: None,
            window_gate: None,
            parameters: None,
            refuse_model_info: false,
        }));
        let (hangup_tx, hangup_rx) = mpsc::channel();
        let (arrival_tx, arrival_rx) = mpsc::channel();
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&shared);
                let hangup = hangup_tx.clone();
                let arrival = arrival_tx.clone();
                std::thread::spawn(move || serve(stream, &state, &hangup, &arrival));
            }
        });
        Self {
            port,
            state,
            hangups: Arc::new(Mutex::new(hangup_rx)),
            arrivals: Arc::new(Mutex::new(arrival_rx)),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Makes the server report a context window of `n` tokens.
    pub fn set_context_length(&self, n: u64) {
        self.lock().context_length = Some(n);
    }

    /// Makes the server report `n` parameters for its model, as llama-server and Ollama do.
    pub fn set_parameters(&self, n: u64) {
        self.lock().parameters = Some(n);
    }

    /// Makes the server answer 404 to every request about its model (its list included).
    pub fn refuse_model_info(&self) {
        self.lock().refuse_model_info = true;
    }

    /// Holds each `/api/show` and `/props` answer until `gate` opens: a server slow to say its
    /// context window.
    pub fn hold_window_reports(&self, gate: Gate) {
        self.lock().window_gate = Some(gate);
    }

    pub fn push(&self, reply: Reply) {
        self.lock().replies.push_back(reply);
    }

    /// Chat requests received so far (model-list requests excluded).
    pub fn chat_requests(&self) -> Vec<Logged> {
        self.lock()
            .log
            .iter()
            .filter(|r| r.method == "POST" && r.path != "/api/show")
            .cloned()
            .collect()
    }

    pub fn all_requests(&self) -> Vec<Logged> {
        self.lock().log.clone()
    }

    /// Blocks until a client hung up on a stalling or endless reply. The bound only turns a
    /// bug into a failure instead of a hung suite; it is not how the test synchronises.
    pub fn wait_for_hangup(&self) {
        let rx = self.hangups.lock().unwrap_or_else(|e| e.into_inner());
        rx.recv_timeout(FAILURE_BOUND)
            .expect("the client hangs up within the failure bound");
    }

    /// Blocks until the next chat request has arrived (and its scripted reply has started).
    pub fn wait_for_request(&self) {
        let rx = self.arrivals.lock().unwrap_or_else(|e| e.into_inner());
        rx.recv_timeout(FAILURE_BOUND)
            .expect("a request arrives within the failure bound");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn read_request(stream: &TcpStream) -> Option<Logged> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Logged {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(
    mut stream: TcpStream,
    state: &Mutex<State>,
    hangup: &mpsc::Sender<()>,
    arrival: &mpsc::Sender<()>,
) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    lock().log.push(request.clone());
    let ollama = request.path.starts_with("/api/");
    let about_model = matches!(
        request.path.as_str(),
        "/api/show" | "/props" | "/v1/models" | "/api/v1/models"
    );
    if about_model && lock().refuse_model_info {
        let _ = respond(
            &mut stream,
            404,
            "application/json",
            &[],
            r#"{"error":"not found"}"#,
        );
        return;
    }
    // The model's context window, as Ollama (`/api/show`) and llama.cpp (`/props`) report it,
    // and Ollama's parameter count.
    if request.path == "/api/show" || request.path == "/props" {
        let gate = lock().window_gate.clone();
        if let Some(gate) = gate {
            gate.wait();
        }
        let (window, parameters) = {
            let state = lock();
            (state.context_length, state.parameters)
        };
        let body = match (window, parameters) {
            (window, Some(n)) if ollama => {
                let mut info = serde_json::json!({"general.architecture": "llama", "general.parameter_count": n});
                if let Some(window) = window {
                    info["llama.context_length"] = window.into();
                }
                serde_json::json!({
                    "details": {"format": "gguf", "family": "llama", "parameter_size": size_label(n), "quantization_level": "Q8_0"},
                    "model_info": info,
                })
            }
            (Some(n), _) if ollama => {
                serde_json::json!({"model_info": {"llama.context_length": n}})
            }
            (Some(n), _) => serde_json::json!({"default_generation_settings": {"n_ctx": n}}),
            (None, _) => {
                let _ = respond(
                    &mut stream,
                    404,
                    "application/json",
                    &[],
                    r#"{"error":"not found"}"#,
                );
                return;
            }
        };
        let _ = respond(&mut stream, 200, "application/json", &[], &body.to_string());
        return;
    }
    if request.method == "GET" {
        let (models, parameters) = {
            let state = lock();
            (state.models.clone(), state.parameters)
        };
        let body = if let (Some(n), false) = (parameters, ollama) {
            // llama-server serves one model, whatever name a request gives.
            let file = "smollm2-135m-instruct-q8_0.gguf";
            serde_json::json!({
                "models": [{"name": file, "model": file}],
                "object": "list",
                "data": [{"id": file, "object": "model", "created": 1_735_689_600, "owned_by": "llamacpp",
                          "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576, "n_params": n, "size": n}}],
            })
        } else if ollama {
            serde_json::json!({"models": models.iter().map(|m| serde_json::json!({"name": m})).collect::<Vec<_>>()})
        } else {
            serde_json::json!({"object": "list", "data": models.iter().map(|m| serde_json::json!({"id": m, "object": "model"})).collect::<Vec<_>>()})
        };
        let _ = respond(&mut stream, 200, "application/json", &[], &body.to_string());
        return;
    }
    let reply = lock()
        .replies
        .pop_front()
        .unwrap_or_else(|| Reply::status(500, r#"{"error":"fake model: no scripted reply left"}"#));
    let _ = arrival.send(());
    let wire = if ollama { Wire::Ollama } else { Wire::OpenAi };
    let content_type = if ollama {
        "application/x-ndjson"
    } else {
        "text/event-stream"
    };
    match reply {
        Reply::Status {
            code,
            body,
            retry_after,
        } => {
            let extra: Vec<(&str, String)> = retry_after
                .map(|v| ("Retry-After", v))
                .into_iter()
                .collect();
            let _ = respond(&mut stream, code, "application/json", &extra, &body);
        }
        Reply::Text { answer, reasoning } => {
            if start_stream(&mut stream, content_type).is_err() {
                return;
            }
            if let Some(r) = reasoning {
                for piece in pieces(&r) {
                    let _ = write_line(&mut stream, &wire.reasoning(piece));
                }
            }
            for piece in pieces(&answer) {
                let _ = write_line(&mut stream, &wire.content(piece));
            }
            for line in wire.finish() {
                let _ = write_line(&mut stream, &line);
            }
        }
        Reply::CutAfter { answer } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                }
            }
        }
        Reply::Malformed { answer, line } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                }
                let _ = write_line(&mut stream, &line);
            }
        }
        Reply::Stall { answer } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                }
                // Block until the client closes its end: read returns 0 (or fails).
                let mut sink = [0u8; 64];
                while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            }
            // Also when the client hung up before the reply even started.
            let _ = hangup.send(());
        }
        Reply::Repeat { unit, limit } => {
            if start_stream(&mut stream, content_type).is_ok() {
                let mut sent = 0;
                while sent < limit && write_line(&mut stream, &wire.content(&unit)).is_ok() {
                    sent += unit.len();
                }
            }
            let _ = hangup.send(());
        }
        Reply::Paced {
            answer,
            every,
            prompt_tokens,
            completion_tokens,
        } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                    std::thread::sleep(every);
                }
                for line in wire.finish_with(prompt_tokens, completion_tokens) {
                    let _ = write_line(&mut stream, &line);
                }
            }
        }
        Reply::Held { answer, gate } => {
            if start_stream(&mut stream, content_type).is_ok() {
                gate.wait();
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                }
                for line in wire.finish() {
                    let _ = write_line(&mut stream, &line);
                }
            }
        }
        Reply::Raw { lines } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for line in lines {
                    let _ = write_line(&mut stream, &line);
                }
            }
        }
        Reply::EndlessLine { limit } => {
            if start_stream(&mut stream, content_type).is_ok() {
                let line = wire.content("x");
                // The line up to its content's opening quote, then `x` for ever.
                let open = &line[..line.find("\"x\"").map_or(0, |i| i + 1)];
                let block = vec![b'x'; 64 * 1024];
                let mut sent = open.len();
                let mut alive = stream.write_all(open.as_bytes()).is_ok();
                while alive && sent < limit {
                    alive = stream.write_all(&block).is_ok();
                    sent += block.len();
                }
            }
            let _ = hangup.send(());
        }
        Reply::EndlessTokens { limit } => {
            if start_stream(&mut stream, content_type).is_ok() {
                // Many lines per write, so the server is faster than any client.
                let mut batch = String::new();
                for token in 0..limit {
                    batch.push_str(&wire.content(&format!("t{token} ")));
                    batch.push('\n');
                    if batch.len() > 32 * 1024 {
                        if stream.write_all(batch.as_bytes()).is_err() {
                            break;
                        }
                        batch.clear();
                    }
                }
            }
            let _ = hangup.send(());
        }
        Reply::KeepAlive { answer, every } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                }
                let started = std::time::Instant::now();
                while started.elapsed() < FAILURE_BOUND
                    && write_line(&mut stream, wire.keep_alive()).is_ok()
                {
                    std::thread::sleep(every);
                }
            }
            let _ = hangup.send(());
        }
        Reply::Drip { every } => {
            if start_stream(&mut stream, content_type).is_ok() {
                let started = std::time::Instant::now();
                let mut token = 0u64;
                while started.elapsed() < FAILURE_BOUND
                    && write_line(&mut stream, &wire.content(&format!("d{token} "))).is_ok()
                {
                    token += 1;
                    std::thread::sleep(every);
                }
            }
            let _ = hangup.send(());
        }
        Reply::CutMidLine { answer } => {
            if start_stream(&mut stream, content_type).is_ok() {
                for piece in pieces(&answer) {
                    let _ = write_line(&mut stream, &wire.content(piece));
                }
                let line = wire.content("the rest of the reply");
                let _ = stream.write_all(&line.as_bytes()[..line.len() / 2]);
            }
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

#[derive(Clone, Copy)]
enum Wire {
    Ollama,
    OpenAi,
}

impl Wire {
    fn content(self, text: &str) -> String {
        match self {
            Wire::Ollama => serde_json::json!({"model": "fake", "message": {"role": "assistant", "content": text}, "done": false}).to_string(),
            Wire::OpenAi => format!("data: {}\n", serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})),
        }
    }

    fn reasoning(self, text: &str) -> String {
        match self {
            Wire::Ollama => serde_json::json!({"model": "fake", "message": {"role": "assistant", "content": "", "thinking": text}, "done": false}).to_string(),
            Wire::OpenAi => format!("data: {}\n", serde_json::json!({"choices": [{"index": 0, "delta": {"reasoning_content": text}, "finish_reason": null}]})),
        }
    }

    /// A line that carries nothing, as servers send to keep a connection open.
    fn keep_alive(self) -> &'static str {
        match self {
            Wire::Ollama => "",
            Wire::OpenAi => ": keep-alive\n",
        }
    }

    fn finish(self) -> Vec<String> {
        self.finish_with(11, 7)
    }

    /// The reply's last lines, reporting `prompt` and `completion` tokens.
    fn finish_with(self, prompt: u64, completion: u64) -> Vec<String> {
        match self {
            Wire::Ollama => vec![serde_json::json!({"model": "fake", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": prompt, "eval_count": completion}).to_string()],
            Wire::OpenAi => vec![
                format!("data: {}\n", serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                format!("data: {}\n", serde_json::json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})),
                "data: [DONE]\n".to_owned(),
            ],
        }
    }
}

/// Ollama's label for a parameter count: `135M`, `7.6B`.
fn size_label(n: u64) -> String {
    if n >= 1_000_000_000 {
        format!("{:.1}B", n as f64 / 1e9)
    } else {
        format!("{}M", (n as f64 / 1e6).round())
    }
}

/// Splits text into small pieces the way a model streams tokens (every 5 characters).
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count > 0 && count % 5 == 0 {
            out.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn start_stream(stream: &mut TcpStream, content_type: &str) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()
}

fn write_line(stream: &mut TcpStream, line: &str) -> std::io::Result<()> {
    stream.write_all(line.as_bytes())?;
    stream.write_all(b"\n")?;
    stream.flush()
}

fn respond(
    stream: &mut TcpStream,
    code: u16,
    content_type: &str,
    extra: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    write!(
        stream,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    )?;
    for (k, v) in extra {
        write!(stream, "{k}: {v}\r\n")?;
    }
    write!(stream, "\r\n{body}")?;
    stream.flush()
}
