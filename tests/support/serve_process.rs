//! A `seek serve` for the lifecycle tests: `serve::ServeProcess` started with a known token
//! against the fake model, and requests with that token through an async HTTP client (the tests
//! act while a query runs). Also the small waits and scripts those tests share.
//!
//! Declared by path (`#[path]`) in `tests/serve/main.rs`, beside `support`, `fake_model` and
//! `serve`, which it uses; for `serve_lifecycle` and `serve_restarts`.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::fake_model::FakeModel;
use crate::serve::ServeProcess;
use crate::support::Sandbox;

/// The token the server is started with (from `SEEK_API_TOKEN`).
pub const TOKEN: &str = "lifecycle-test-token-0123456789";

/// The longest any awaited condition may take before the test fails instead of hanging.
pub const BOUND: Duration = Duration::from_secs(60);

/// How often a condition is looked at again while waiting for it.
const POLL: Duration = Duration::from_millis(20);

/// A running `seek serve`; killed when dropped, if still running.
pub struct Served {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    process: Option<ServeProcess>,
    /// Its stderr once it has ended.
    ended_stderr: String,
}

impl Served {
    /// `seek serve --port 0 --yes` in `sb` against `model`, once it listens.
    pub fn start(sb: &Sandbox, model: &FakeModel) -> Self {
        let process = ServeProcess::start(sb, &model.url(), &[], &[("SEEK_API_TOKEN", TOKEN)]);
        let client = seek::tls::client_builder()
            .timeout(BOUND)
            .build()
            .expect("client");
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], process.port)),
            client,
            process: Some(process),
            ended_stderr: String::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.process
            .as_ref()
            .map_or_else(|| self.ended_stderr.clone(), ServeProcess::stderr_so_far)
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
        let ended = self
            .process
            .take()
            .expect("running")
            .signal_and_wait(signal);
        self.ended_stderr = ended.stderr;
        ended.status
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
