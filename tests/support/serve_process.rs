//! A `seek serve` process for the lifecycle tests: started on 127.0.0.1:0 with a known token
//! against the fake model, its address read from its first stdout line, requests with that
//! token, and its end by a signal (bounded). Also the small waits and scripts those tests share.
//!
//! Included by path (`#[path]`) from `serve_lifecycle.rs` and `serve_restarts.rs`, after `support`
//! and `fake_model`, which they declare first.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::fake_model::FakeModel;
use crate::support::Sandbox;

/// The token the server is started with (from `SEEK_API_TOKEN`).
pub const TOKEN: &str = "lifecycle-test-token-0123456789";

/// The longest any awaited condition may take before the test fails instead of hanging.
pub const BOUND: Duration = Duration::from_secs(60);

/// How often a condition is looked at again while waiting for it.
const POLL: Duration = Duration::from_millis(20);

/// Numbers the stderr files of the servers one test process starts.
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A running `seek serve`; killed when dropped, if still running.
pub struct Served {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    child: Child,
    stderr: std::path::PathBuf,
}

impl Served {
    /// `seek serve --port 0 --yes` in `sb` against `model`, once it listens.
    pub fn start(sb: &Sandbox, model: &FakeModel) -> Self {
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let stderr = sb.path(&format!("serve-{n}.stderr"));
        let mut child = sb
            .seek_at(&model.url(), &["serve", "--port", "0", "--yes"])
            .env("SEEK_API_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn seek serve");
        let stdout = child.stdout.take().expect("stdout");
        let (first_line, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = first_line.send(lines.next().and_then(Result::ok));
            // The rest is drained so seek never blocks on a full pipe.
            lines.for_each(drop);
        });
        let line = read.recv_timeout(BOUND).ok().flatten();
        let addr = line
            .as_deref()
            .and_then(|l| l.strip_prefix("listening on http://"))
            .and_then(|a| a.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "seek serve did not say where it listens: {line:?}\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        };
        let client = reqwest::Client::builder()
            .timeout(BOUND)
            .build()
            .expect("client");
        Self {
            addr,
            client,
            child,
            stderr,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        answer(
            self.client
                .get(self.url(path))
                .bearer_auth(TOKEN)
                .send()
                .await,
        )
        .await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        answer(
            self.client
                .post(self.url(path))
                .bearer_auth(TOKEN)
                .json(body)
                .send()
                .await,
        )
        .await
    }

    /// A `/query` sent in a task of its own, so the test acts while it runs.
    pub fn query(&self, body: Value) -> tokio::task::JoinHandle<(u16, Value)> {
        let request = self
            .client
            .post(self.url("/query"))
            .bearer_auth(TOKEN)
            .json(&body);
        tokio::spawn(async move { answer(request.send().await).await })
    }

    pub async fn is_active(&self) -> bool {
        let (code, body) = self.get("/is_active").await;
        assert_eq!(code, 200, "{body}");
        body["is_active"].as_bool().expect("is_active is a bool")
    }

    /// Sends `signal` and waits (bounded) for the process to exit.
    pub fn end_with(&mut self, signal: Signal) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
        nix::sys::signal::kill(pid, signal).expect("signal seek serve");
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for seek serve") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "seek serve did not exit within {BOUND:?} of {signal}:\n{}",
                self.stderr()
            );
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A response's status and JSON body (`Null` when the body is not JSON).
async fn answer(response: reqwest::Result<reqwest::Response>) -> (u16, Value) {
    let response = response.expect("the request is answered");
    let code = response.status().as_u16();
    let text = response.text().await.expect("the body");
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Waits until `check` holds, looking again every few milliseconds; fails after `BOUND`.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + BOUND;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// A number no other test (of this or another process) puts in a command line: `base` and this
/// process's id.
pub fn marker(base: u32) -> String {
    format!("{base}{:08}", std::process::id())
}

pub fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// A reply whose bash block prints and then sleeps `marker` seconds (found by that number).
pub fn sleeping_block(marker: &str) -> String {
    format!(
        "Waiting.\n{}\n",
        fence("bash", &format!("echo started; sleep {marker}"))
    )
}

/// Replaces a body's `uid` (random) with `<uid>`, after checking it is a non-empty string.
pub fn take_uid(body: &mut Value) {
    assert!(
        body["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "a uid: {body}"
    );
    body["uid"] = Value::from("<uid>");
}
