//! Running the real `seek serve` in end-to-end tests: `ServeProcess` starts it on `127.0.0.1:0`
//! in a sandbox, reads its port and token from its first stdout lines, sends requests, and ends
//! it with a signal; `raw_request` speaks HTTP/1.1 over a plain `TcpStream`, so a test controls
//! every byte (a forged `Host`, a browser's exact headers, a body larger than the cap).
//!
//! Plain threads and blocking sockets: usable from sync and async tests alike. Every wait has a
//! bound that only turns a hang into a failure; nothing sleeps to synchronise.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

// Declared beside `mod support;` in a test binary's root (its main.rs):
// `#[path = "../support/serve.rs"] mod serve;`.
use crate::support::Sandbox;

/// How long a start, a response or an exit may take before the test fails instead of hanging.
pub const BOUND: Duration = Duration::from_secs(120);

/// A `seek serve` process. Killed (SIGKILL) when dropped unless it was ended with a signal.
pub struct ServeProcess {
    /// The port it listens on (read from `listening on http://ADDR`).
    pub port: u16,
    /// The token requests must carry: the printed one, or `SEEK_API_TOKEN` when it came from
    /// there; `None` under `--no-token`.
    pub token: Option<String>,
    /// The announce lines it printed first (`listening on …`, then the token line).
    pub stdout_lines: Vec<String>,
    child: Option<Child>,
    /// The rest of stdout and all of stderr, collected by threads until the process ends.
    rest_of_stdout: Option<std::thread::JoinHandle<String>>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Stderr as read so far (the thread above appends to it).
    stderr_so_far: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

/// How a `ServeProcess` ended.
#[derive(Debug)]
pub struct Ended {
    pub status: ExitStatus,
    /// Stdout after the announce lines.
    pub stdout: String,
    pub stderr: String,
}

impl ServeProcess {
    /// Starts `seek <model flags for fake_url> serve --port 0 --yes <extra_args>` with `env`
    /// added to the sandbox's clean environment (e.g. `SEEK_API_TOKEN`), and waits until it
    /// listens. `--yes`, because a kernel without Landlock makes the default approval `ask`,
    /// which `seek serve` refuses. Panics, with its stderr, if it exits instead.
    pub fn start(
        sandbox: &Sandbox,
        fake_url: &str,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut args = vec!["serve", "--port", "0", "--yes"];
        args.extend_from_slice(extra_args);
        let mut child = sandbox
            .seek_at(fake_url, &args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn seek serve");
        let mut stderr_pipe = child.stderr.take().expect("stderr piped");
        let stderr_so_far = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stderr = std::thread::spawn({
            let so_far = std::sync::Arc::clone(&stderr_so_far);
            move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr_pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    so_far
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&chunk[..n]);
                }
                let all = so_far.lock().unwrap_or_else(|e| e.into_inner());
                String::from_utf8_lossy(&all).into_owned()
            }
        });
        let (lines_tx, lines) = mpsc::channel();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        let rest_of_stdout = std::thread::spawn(move || {
            // The first two lines go to the test as they come; the rest are kept until the end.
            for _ in 0..2 {
                let mut line = String::new();
                match stdout.read_line(&mut line) {
                    Ok(n) if n > 0 => {
                        let _ = lines_tx.send(line.trim_end().to_owned());
                    }
                    _ => return String::new(),
                }
            }
            read_all(stdout)
        });
        let mut process = Self {
            port: 0,
            token: None,
            stdout_lines: Vec::new(),
            child: Some(child),
            rest_of_stdout: Some(rest_of_stdout),
            stderr: Some(stderr),
            stderr_so_far,
        };
        for _ in 0..2 {
            match lines.recv_timeout(BOUND) {
                Ok(line) => process.stdout_lines.push(line),
                Err(_) => {
                    let ended = process.kill_and_wait();
                    panic!(
                        "seek serve did not announce itself ({:?}); it ended {:?}\nstderr: {}",
                        process.stdout_lines, ended.status, ended.stderr
                    );
                }
            }
        }
        process.port = port_of(&process.stdout_lines[0]);
        process.token = token_of(&process.stdout_lines[1], env);
        process
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it wrote on stderr so far.
    pub fn stderr_so_far(&self) -> String {
        let so_far = self.stderr_so_far.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&so_far).into_owned()
    }

    /// The child's pid (to signal it, or to look for its processes).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// A request with `Host: 127.0.0.1:PORT` (unless `headers` names one), the token as
    /// `Authorization: Bearer …` when the server has one, and `body` (with its length).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> RawResponse {
        let bearer = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if let Some(bearer) = &bearer
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            all.push(("Authorization", bearer));
        }
        request(self.port, method, path, &all, body)
    }

    /// `GET path` with the token.
    pub fn get(&self, path: &str) -> RawResponse {
        self.request("GET", path, &[], "")
    }

    /// `POST path` of a JSON body with the token.
    pub fn post_json(&self, path: &str, body: &str) -> RawResponse {
        self.request("POST", path, &[("Content-Type", "application/json")], body)
    }

    /// Sends SIGTERM and waits (bounded) until the process has ended.
    pub fn sigterm_and_wait(self) -> Ended {
        self.signal_and_wait(nix::sys::signal::Signal::SIGTERM)
    }

    /// Sends `signal` and waits (bounded) until the process has ended; a process still running
    /// after `BOUND` is killed and the test fails.
    pub fn signal_and_wait(mut self, signal: nix::sys::signal::Signal) -> Ended {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid()).expect("pid fits"));
        nix::sys::signal::kill(pid, signal).expect("signal seek serve");
        self.wait_bounded()
            .unwrap_or_else(|| panic!("seek serve did not exit within {BOUND:?} of {signal}"))
    }

    fn kill_and_wait(&mut self) -> Ended {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
        }
        self.wait_bounded().expect("a killed process ends")
    }

    /// Waits for the child and the threads reading its output; `None` if it is still running
    /// after `BOUND` (it is then killed).
    fn wait_bounded(&mut self) -> Option<Ended> {
        let mut child = self.child.take()?;
        let pid = child.id();
        let (done, exited) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(child.wait());
        });
        let status = match exited.recv_timeout(BOUND) {
            Ok(status) => status.expect("wait for seek serve"),
            Err(_) => {
                let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid fits"));
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                return None;
            }
        };
        let join = |handle: Option<std::thread::JoinHandle<String>>| {
            handle
                .map(|h| h.join().unwrap_or_default())
                .unwrap_or_default()
        };
        Some(Ended {
            status,
            stdout: join(self.rest_of_stdout.take()),
            stderr: join(self.stderr.take()),
        })
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The port in `listening on http://ADDR:PORT`.
fn port_of(line: &str) -> u16 {
    line.strip_prefix("listening on http://")
        .and_then(|addr| addr.rsplit_once(':'))
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("the first line names the address: {line:?}"))
}

/// The token a client must send, from the second announce line.
fn token_of(line: &str, env: &[(&str, &str)]) -> Option<String> {
    match line.strip_prefix("token: ") {
        Some("from SEEK_API_TOKEN") => env
            .iter()
            .find(|(k, _)| *k == "SEEK_API_TOKEN")
            .map(|(_, v)| (*v).to_owned()),
        Some(token) => Some(token.to_owned()),
        None => None,
    }
}

fn read_all(mut from: impl Read) -> String {
    let mut bytes = Vec::new();
    let _ = from.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One HTTP response as read off the socket.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    /// In the order sent; names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (chunked bodies decoded), as text.
    pub body: String,
    /// The same body, byte for byte (an image).
    pub bytes: Vec<u8>,
}

impl RawResponse {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics with the body if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("the body is not JSON ({e}): {:?}", self.body))
    }
}

/// `method path` with `headers`, `Content-Length` of `body` (when there is one or the method is
/// POST), `Connection: close`, and `Host: 127.0.0.1:PORT` unless `headers` names a `Host`.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> RawResponse {
    let mut text = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("Connection: close\r\n\r\n");
    text.push_str(body);
    raw_request(port, &text)
}

/// Sends `text` exactly as given to `127.0.0.1:port` and reads one response. The request is
/// written by a thread of its own, so a server that answers before reading all of a large body
/// (a 413) is heard instead of blocking the write.
pub fn raw_request(port: u16, text: &str) -> RawResponse {
    raw_bytes(port, text.as_bytes())
}

/// `raw_request` of any bytes (a header that is not UTF-8, a NUL).
pub fn raw_bytes(port: u16, bytes: &[u8]) -> RawResponse {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to seek serve");
    stream.set_read_timeout(Some(BOUND)).expect("read timeout");
    let mut writer = stream.try_clone().expect("clone the stream");
    let bytes = bytes.to_vec();
    let written = std::thread::spawn(move || {
        // The server may close after an early answer: a failed write is not the test's failure.
        let _ = writer.write_all(&bytes);
        let _ = writer.flush();
    });
    let response = read_response(&mut BufReader::new(&stream));
    let _ = stream.shutdown(Shutdown::Both);
    let _ = written.join();
    response
}

/// Reads one response: the status line, the headers, and the body by `Content-Length`, by
/// chunks, or to the end of the stream.
pub fn read_response(reader: &mut impl BufRead) -> RawResponse {
    let mut status_line = String::new();
    let _ = reader.read_line(&mut status_line);
    if status_line.is_empty() {
        // Closed (or timed out) without a word: status 0, as a client sees it.
        return RawResponse {
            status: 0,
            headers: Vec::new(),
            body: String::new(),
            bytes: Vec::new(),
        };
    }
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("a header line: {line:?}"));
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut response = RawResponse {
        status,
        headers,
        body: String::new(),
        bytes: Vec::new(),
    };
    let mut body = Vec::new();
    if let Some(length) = response.header("content-length") {
        let length: u64 = length.parse().expect("a numeric Content-Length");
        // Up to the length: a HEAD answer announces a length and sends no body.
        let _ = reader.by_ref().take(length).read_to_end(&mut body);
    } else if response
        .header("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).expect("read a chunk size");
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .expect("a hex chunk size");
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).expect("read a chunk");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if status != 204 && status != 304 {
        let _ = reader.read_to_end(&mut body);
    }
    response.body = String::from_utf8_lossy(&body).into_owned();
    response.bytes = body;
    response
}
