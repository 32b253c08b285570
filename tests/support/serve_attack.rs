//! The harness of the attack tests on `seek serve` (`attack_serve.rs`, `attack_serve_abuse.rs`):
//! the real binary on 127.0.0.1:0 against the fake model server, and raw HTTP/1.1 over a
//! `TcpStream`, so a test can send what no well-behaved client would (a forged or doubled `Host`,
//! odd `Authorization` headers, absolute-form targets, bodies streamed past the cap).
//!
//! Every wait is bounded: a server that hangs fails its test instead of hanging the suite.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::fake_model::{FakeModel, Reply};
use crate::support::Sandbox;

/// How long one request or the server's start or stop may take before the test fails.
pub const BOUND: Duration = Duration::from_secs(60);

/// A running `seek serve` and what it runs against.
pub struct Served {
    pub sandbox: Sandbox,
    pub model: FakeModel,
    pub addr: SocketAddr,
    /// The token requests must carry (`None` under `--no-token`).
    pub token: Option<String>,
    child: Option<Child>,
}

/// Starts `seek serve --port 0 --yes FLAGS` with `env` added, against a fake model that answers
/// `replies`, and reads its address (and generated token) from its first stdout lines.
pub fn serve(replies: Vec<Reply>, flags: &[&str], env: &[(&str, &str)]) -> Served {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(replies);
    let mut args = vec!["serve", "--port", "0", "--yes"];
    args.extend_from_slice(flags);
    let mut cmd = sandbox.seek_at(&model.url(), &args);
    cmd.envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn seek serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    lines.read_line(&mut first).expect("read the first line");
    let Some(addr) = first.trim().strip_prefix("listening on http://") else {
        let _ = child.kill();
        let out = child.wait_with_output().expect("seek's output");
        panic!(
            "seek serve did not start: {first:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let addr: SocketAddr = addr.parse().expect("an address");
    let mut second = String::new();
    lines.read_line(&mut second).expect("read the second line");
    let token = match second.trim().strip_prefix("token: ") {
        Some("from SEEK_API_TOKEN") => env
            .iter()
            .find(|(k, _)| *k == "SEEK_API_TOKEN")
            .map(|(_, v)| (*v).to_owned()),
        Some(generated) => Some(generated.to_owned()),
        None => None,
    };
    // The rest of stdout (a curl example) is read away so the pipe never fills.
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    Served {
        sandbox,
        model,
        addr,
        token,
        child: Some(child),
    }
}

impl Served {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
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
        let child = self.child.take().expect("running");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(child.wait_with_output());
        });
        match ended.recv_timeout(BOUND) {
            Ok(out) => String::from_utf8_lossy(&out.expect("seek's output").stderr).into_owned(),
            Err(_) => {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                panic!("seek serve did not stop within {BOUND:?}");
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
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

/// A response read off the wire (`status` 0: the server closed without answering).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// A response header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
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

/// Sends `bytes` as they are and reads the answer until the server closes the connection.
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    // The server may answer and close before all is written (a refused body): not an error.
    let _ = stream.write_all(bytes);
    read_answer(&mut stream)
}

/// Reads one response until the server closes the connection.
pub fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut received = Vec::new();
    let _ = stream.read_to_end(&mut received);
    parse(&received)
}

fn parse(received: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(received).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        head: head.to_owned(),
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// A model reply that runs `command` as one bash block.
pub fn block(command: &str) -> Reply {
    Reply::text(format!("Running it.\n```bash\n{command}\n```\n"))
}
