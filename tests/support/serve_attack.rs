//! The harness of the attack tests on `seek serve` (`attack_serve.rs`, `attack_serve_abuse.rs`):
//! the real binary (`serve::ServeProcess`) against the fake model server, and raw HTTP/1.1 with
//! exactly the headers a test gives (`serve::raw_bytes`), so a test can send what no well-behaved
//! client would (a forged or doubled `Host`, odd `Authorization` headers, absolute-form targets,
//! bodies streamed past the cap).
//!
//! Every wait is bounded: a server that hangs fails its test instead of hanging the suite.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::fake_model::{FakeModel, Reply};
use crate::serve::{RawResponse, ServeProcess, raw_bytes, read_response};
use crate::support::Sandbox;

/// How long one request or the server's start or stop may take before the test fails.
pub const BOUND: Duration = Duration::from_secs(60);

/// A response read off the wire (`status` 0: the server closed without answering).
pub type Answer = RawResponse;

/// A running `seek serve` and what it runs against (the process first: it ends before its
/// sandbox goes).
pub struct Served {
    process: Option<ServeProcess>,
    pub addr: SocketAddr,
    /// The token requests must carry (`None` under `--no-token`).
    pub token: Option<String>,
    pub model: FakeModel,
    pub sandbox: Sandbox,
}

/// Starts `seek serve --port 0 --yes FLAGS` with `env` added, against a fake model that answers
/// `replies`.
pub fn serve(replies: Vec<Reply>, flags: &[&str], env: &[(&str, &str)]) -> Served {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(replies);
    let process = ServeProcess::start(&sandbox, &model.url(), flags, env);
    Served {
        addr: SocketAddr::from(([127, 0, 0, 1], process.port)),
        token: process.token.clone(),
        process: Some(process),
        model,
        sandbox,
    }
}

impl Served {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.as_ref().expect("running").pid()
    }

    /// `Host: 127.0.0.1:PORT`, as a local client sends it.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// The headers of a well-behaved local client: its `Host` and, with a token, the token.
    pub fn client_headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![("Host".to_owned(), self.host())];
        if let Some(token) = &self.token {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        headers
    }

    /// A request as a well-behaved local client sends it, with `extra` headers after its own.
    pub fn send(&self, method: &str, path: &str, extra: &[(&str, &str)], body: &[u8]) -> Answer {
        let mut headers = self.client_headers();
        headers.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        request(self.addr, method, path, &refs, body)
    }

    pub fn get(&self, path: &str) -> Answer {
        self.send("GET", path, &[], b"")
    }

    pub fn query(&self, body: &serde_json::Value) -> Answer {
        self.send(
            "POST",
            "/query",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
    }

    /// Whether a task runs, as `/is_active` says.
    pub fn active(&self) -> bool {
        let answer = self.get("/is_active");
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.json()["is_active"]
            .as_bool()
            .expect("is_active is a bool")
    }

    /// The chat requests that reached the model: a refused request must add none.
    pub fn model_calls(&self) -> usize {
        self.model.chat_requests().len()
    }

    /// Every file under the sandbox's data dir (the log, the session files), as text.
    pub fn data_files(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        walk(&self.sandbox.path("data"), &mut found);
        found
    }

    /// Stops the server with SIGTERM and returns its stderr; it must exit within the bound.
    pub fn stop(mut self) -> String {
        self.process
            .take()
            .expect("running")
            .sigterm_and_wait()
            .stderr
    }
}

fn walk(dir: &std::path::Path, found: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, found);
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
}

/// `METHOD TARGET HTTP/1.1`, exactly `headers` (nothing added but `Connection: close` and, with
/// a body, its `Content-Length`), then the body; reads the answer to the end.
pub fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut bytes = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for (name, value) in headers {
        bytes.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"Connection: close\r\n");
    if !body.is_empty() {
        bytes.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(body);
    raw(addr, &bytes)
}

/// Sends `bytes` as they are and reads the answer.
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> Answer {
    raw_bytes(addr.port(), bytes)
}

/// Reads one response from a connection the test wrote to itself.
pub fn read_answer(stream: &mut TcpStream) -> Answer {
    read_response(&mut std::io::BufReader::new(stream))
}

/// A model reply that runs `command` as one bash block.
pub fn block(command: &str) -> Reply {
    Reply::text(format!("Running it.\n```bash\n{command}\n```\n"))
}
