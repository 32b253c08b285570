//! AgenticSeek's real React front end (its production build, unmodified) against `seek serve`,
//! in headless Chromium:
//! - under `--no-token` the page comes up online, a typed query is answered, and the Editor View
//!   shows the block seek ran, with no request refused on the way;
//! - while a block runs, the Editor View shows it (its tool, code and output so far), and after
//!   the page's Stop its status says `Stopped` (the page changes its status only with a new
//!   answer, so seek's `/latest_answer` gives one);
//! - without `--no-token` (a token required, which the page never sends) the page says what to
//!   do: `/latest_answer` answers its token-less polls with the fix, which the page shows as a
//!   message and a status, while its queries are still refused and the model is never asked.
//!
//! The build: `SEEK_FRONTEND_BUILD` names the front end's `build/` dir (`.ci/run` and
//! `scripts/frontend-check` make one from the sources vendored in
//! tests/fixtures/agentic-seek-front); without it the tests say why and pass. The build has the
//! placeholder backend URL baked in; the static server rewrites it in the JavaScript it serves
//! to seek's real address, so one build serves every port. The page is loaded as
//! `http://localhost:3000`, the origin seek allows by default (when that port is taken, another
//! one, allowed through `[serve] allowed_origins`).

use crate::support;

use crate::fake_model;
use crate::frontend;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use fantoccini::{Client, ClientBuilder, Locator};
use frontend::{
    Driver, FRONTEND_PORT, PLACEHOLDER, START_BOUND, SeekServe, StaticServer, bind_frontend_port,
    main_js_has_placeholder,
};
use serde_json::Value;
use support::Sandbox;

/// What the block prints: computed by the shell, so the text only appears if the block ran.
const MARKER: &str = "fe-marker-4711";
const BLOCK: &str = "echo fe-marker-$((4700+11))";

/// The model's final answer, as the page should show it.
const ANSWER: &str = "The marker line was printed by the shell";

/// A block that prints its marker, then runs until it is stopped.
const RUNNING_MARKER: &str = "fe-running-4712";
const RUNNING_BLOCK: &str = "echo fe-running-$((4700+12)); sleep 120; echo never";

/// How long the page may take to show what a stage waits for before the test fails.
const PAGE_BOUND: Duration = Duration::from_secs(120);

/// What a test does with the page once it is online.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// A query answered after one block.
    Answer,
    /// A query whose block runs until the page's Stop.
    StopWhileABlockRuns,
    /// seek wants a token, which the page never sends.
    NoToken,
}

/// The front end's build dir (`SEEK_FRONTEND_BUILD`, which scripts/test and
/// scripts/frontend-check set); the test fails and says how to build it when it is not set.
fn frontend_build() -> PathBuf {
    let build = PathBuf::from(std::env::var_os("SEEK_FRONTEND_BUILD").expect(
        "SEEK_FRONTEND_BUILD is not set: run scripts/test, or scripts/frontend-check, which \
         build AgenticSeek's front end (cached) and run this test with it",
    ));
    assert!(
        build.join("index.html").is_file(),
        "SEEK_FRONTEND_BUILD={} has no index.html: not a front-end build dir",
        build.display()
    );
    assert!(
        main_js_has_placeholder(&build),
        "no build/static/js/main.*.js of {} contains {PLACEHOLDER}: build it with \
         REACT_APP_BACKEND_URL={PLACEHOLDER}",
        build.display()
    );
    build
}

/// How a run went: the page's last state (or why it failed), seek's stderr, the model.
struct Run {
    page: Value,
    stderr: String,
    model: FakeModel,
}

/// Serves the build, starts `seek serve` (with `--no-token` unless the scenario is `NoToken`)
/// against a fake model giving `replies`, and drives the page through `scenario`. Panics with
/// the page's state and seek's stderr when the page does not get there.
fn run(build: PathBuf, replies: Vec<Reply>, scenario: Scenario) -> Run {
    let started = Instant::now();
    let sb = Sandbox::new();
    let model = FakeModel::start(replies);

    // The page's server first: its port decides the origin seek must allow.
    let (listener, port) = bind_frontend_port();
    let origin = format!("http://localhost:{port}");
    if port != FRONTEND_PORT {
        eprintln!("port {FRONTEND_PORT} is taken: the page is served on {port}, allowed in config");
        sb.write_config(&format!("[serve]\nallowed_origins = [\"{origin}\"]\n"));
    }

    let mut seek = SeekServe::start(&sb, &model.url(), scenario != Scenario::NoToken);
    eprintln!(
        "seek serve: {} (started in {:?})",
        seek.url,
        started.elapsed()
    );
    let backend = seek.url.clone();
    let served = StaticServer::start(listener, build, backend.clone());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let outcome = runtime.block_on(drive_page(&origin, scenario));
    let stderr = seek.stop();
    eprintln!("seek serve's stderr:\n{stderr}");
    eprintln!(
        "static server: {} requests, {} rewritten to {backend}",
        served.count(),
        served.rewritten()
    );
    let page = match outcome {
        Ok(page) => page,
        Err(failure) => panic!("{failure}\nseek serve's stderr:\n{stderr}"),
    };
    eprintln!("the page's requests: {}", page["log"]);
    eprintln!("the whole check took {:?}", started.elapsed());
    Run {
        page,
        stderr,
        model,
    }
}

/// The page's requests whose method and URL contain `what`, with their statuses.
fn requests(page: &Value, what: &str) -> Vec<u64> {
    page["log"]
        .as_array()
        .map(|log| {
            log.iter()
                .filter(|r| r["req"].as_str().is_some_and(|s| s.contains(what)))
                .filter_map(|r| r["status"].as_u64())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn agenticseek_frontend_answers_through_seek_serve() {
    let build = frontend_build();
    let run = run(
        build,
        vec![
            Reply::text(format!("I'll print the marker.\n```bash\n{BLOCK}\n```\n")),
            Reply::text(format!("{ANSWER}.")),
        ],
        Scenario::Answer,
    );
    let refused = refused(&run.page);
    assert!(
        refused.is_empty(),
        "requests refused or blocked (status 0 is a CORS refusal or a dropped connection): \
         {refused:?}\nseek serve's stderr:\n{}",
        run.stderr
    );
    assert_eq!(
        requests(&run.page, "/query").len(),
        1,
        "one POST /query was made: {}",
        run.page["log"]
    );
    assert!(
        !run.stderr.to_lowercase().contains("refus"),
        "seek serve refused something:\n{}",
        run.stderr
    );
    assert!(
        run.model.chat_requests().len() >= 2,
        "the model was asked for the block and for the answer"
    );
}

#[test]
fn the_running_block_shows_in_the_editor_view_and_stop_ends_on_stopped() {
    let build = frontend_build();
    let run = run(
        build,
        vec![Reply::text(format!(
            "I'll run it.\n```bash\n{RUNNING_BLOCK}\n```\n"
        ))],
        Scenario::StopWhileABlockRuns,
    );
    let refused = refused(&run.page);
    assert!(refused.is_empty(), "requests refused: {refused:?}");
    assert_eq!(requests(&run.page, "/stop"), [200], "{}", run.page["log"]);
    assert_eq!(requests(&run.page, "/query"), [200], "{}", run.page["log"]);
    assert_eq!(
        run.model.chat_requests().len(),
        1,
        "stopped: the model was not asked again"
    );
}

#[test]
fn without_no_token_the_page_says_what_to_do_and_runs_nothing() {
    let build = frontend_build();
    let run = run(
        build,
        vec![Reply::text(format!("```bash\n{BLOCK}\n```\n"))],
        Scenario::NoToken,
    );
    assert_eq!(
        requests(&run.page, "POST"),
        [401],
        "the page's query was refused for want of a token: {}",
        run.page["log"]
    );
    assert!(
        requests(&run.page, "/latest_answer")
            .iter()
            .all(|s| *s == 200),
        "the page's polls were answered (with what to do): {}",
        run.page["log"]
    );
    assert!(
        run.model.chat_requests().is_empty(),
        "a request without the token ran something"
    );
}

/// The page's requests that were refused: 401 or 403, or status 0 (the browser's CORS check
/// failed, or the connection was dropped).
fn refused(state: &Value) -> Vec<Value> {
    state["log"]
        .as_array()
        .map(|log| {
            log.iter()
                .filter(|r| matches!(r["status"].as_u64(), Some(0 | 401 | 403)))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Records every XMLHttpRequest's end (axios uses them in a browser): method, URL, status.
const XHR_LOG: &str = r#"
if (!window.__seekLog) {
  window.__seekLog = [];
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.__seekReq = method + " " + url;
    return open.apply(this, arguments);
  };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function () {
    this.addEventListener("loadend", () =>
      window.__seekLog.push({ req: this.__seekReq, status: this.status }));
    return send.apply(this, arguments);
  };
}
return true;
"#;

/// The page's state, read in one round trip: `status` is the line under the chat (the page's
/// `status`, shown while online), `tools` the Editor View's `Tool: …` lines.
const PAGE_STATE: &str = r#"
const texts = (sel) => Array.from(document.querySelectorAll(sel)).map((e) => e.innerText);
const status = document.querySelector(".loading-animation");
return {
  online: !!document.querySelector(".status-indicator.online"),
  status: status ? status.innerText : "",
  user: texts(".user-message .message-content"),
  agent: texts(".agent-message .message-content"),
  tools: texts(".blocks .block .block-tool"),
  blocks: texts(".blocks .block pre"),
  feedback: texts(".blocks .block .block-feedback"),
  success: texts(".blocks .block .block-success"),
  errors: texts(".error-message, .content .error"),
  log: window.__seekLog || [],
};
"#;

/// Whether `state[key]` has an entry containing `text`.
fn has(state: &Value, key: &str, text: &str) -> bool {
    state[key].as_array().is_some_and(|v| {
        v.iter()
            .any(|t| t.as_str().is_some_and(|t| t.contains(text)))
    })
}

/// Loads the page and runs `scenario` on it. Returns the page's last state.
async fn drive_page(origin: &str, scenario: Scenario) -> Result<Value, String> {
    let driver = Driver::start();
    let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    builder.capabilities(driver.capabilities());
    let client = tokio::time::timeout(
        START_BOUND,
        builder.connect(&format!("http://127.0.0.1:{}", driver.port)),
    )
    .await
    .map_err(|_| "chromium did not start within the bound".to_owned())?
    .map_err(|e| format!("chromium did not start: {e}"))?;
    let outcome = use_page(&client, origin, scenario).await;
    let _ = client.close().await;
    drop(driver);
    outcome
}

fn fail(what: &str, e: fantoccini::error::CmdError) -> String {
    format!("{what}: {e}")
}

async fn use_page(client: &Client, origin: &str, scenario: Scenario) -> Result<Value, String> {
    client
        .goto(&format!("{origin}/"))
        .await
        .map_err(|e| fail("load the page", e))?;
    client
        .execute(XHR_LOG, vec![])
        .await
        .map_err(|e| fail("install the request log", e))?;
    let strict = scenario != Scenario::NoToken;

    // The health check runs every 3 s: the page says "Online" once one got through CORS.
    let state = wait_for(client, "the page shows the backend online", strict, |s| {
        s["online"] == true
    })
    .await?;
    eprintln!("online: {state}");
    match scenario {
        Scenario::Answer => answer(client).await,
        Scenario::StopWhileABlockRuns => stop_while_a_block_runs(client).await,
        Scenario::NoToken => no_token(client).await,
    }
}

/// Types `query` and clicks send.
async fn ask(client: &Client, query: &str) -> Result<(), String> {
    let input = client
        .find(Locator::Css(".input-form input[type=text]"))
        .await
        .map_err(|e| fail("find the query input", e))?;
    input
        .send_keys(query)
        .await
        .map_err(|e| fail("type the query", e))?;
    client
        .find(Locator::Css(".input-form button[type=submit]"))
        .await
        .map_err(|e| fail("find the send button", e))?
        .click()
        .await
        .map_err(|e| fail("click send", e))?;
    Ok(())
}

async fn answer(client: &Client) -> Result<Value, String> {
    ask(client, "print the marker with the shell").await?;
    let asked = Instant::now();
    let state = wait_for(client, "the answer and the block are shown", true, |s| {
        has(s, "agent", ANSWER) && has(s, "blocks", BLOCK) && has(s, "feedback", MARKER)
    })
    .await?;
    eprintln!("answered in {:?}: {state}", asked.elapsed());
    if state["success"].as_array().map_or(0, Vec::len) == 0 {
        return Err(format!("the block is not shown as a success: {state}"));
    }
    if !state["user"]
        .as_array()
        .is_some_and(|v| v.iter().any(|t| t == "print the marker with the shell"))
    {
        return Err(format!("the user's message is not shown: {state}"));
    }
    Ok(state)
}

async fn stop_while_a_block_runs(client: &Client) -> Result<Value, String> {
    ask(client, "run the long job").await?;
    // The Editor View shows the block while it runs: its tool, its code, its output so far.
    let state = wait_for(client, "the running block is shown", true, |s| {
        has(s, "tools", "Tool: bash")
            && has(s, "blocks", RUNNING_BLOCK)
            && has(s, "feedback", "[running]")
            && has(s, "feedback", RUNNING_MARKER)
    })
    .await?;
    eprintln!("running: {state}");
    client
        .find(Locator::Css(".input-form .stop-button"))
        .await
        .map_err(|e| fail("find the stop button", e))?
        .click()
        .await
        .map_err(|e| fail("click stop", e))?;
    let stopped = Instant::now();
    // The page sets "Requesting stop..." once /stop answered; the next new answer replaces it.
    let state = wait_for(client, "the page says Stopped", true, |s| {
        s["status"] == "Stopped" && has(s, "agent", "Stopped task 1.")
    })
    .await?;
    eprintln!("stopped in {:?}: {state}", stopped.elapsed());
    if has(&state, "feedback", "never") {
        return Err(format!("the block ran on after the stop: {state}"));
    }
    Ok(state)
}

async fn no_token(client: &Client) -> Result<Value, String> {
    // Before any query, the page's polls already bring what to do.
    let hint =
        |s: &Value| has(s, "agent", "seek serve --no-token") && s["status"] == "Token required";
    let state = wait_for(client, "the page says a token is needed", false, hint).await?;
    eprintln!("told: {state}");
    ask(client, "print the marker with the shell").await?;
    // The page's own error for the refused query; the hint stays beside it.
    let state = wait_for(client, "the refused query is shown", false, |s| {
        s["errors"].as_array().is_some_and(|v| !v.is_empty())
    })
    .await?;
    if !hint(&state) {
        return Err(format!("the hint is gone after the query: {state}"));
    }
    Ok(state)
}

/// Polls the page's state until `done` holds; fails with the last state after `PAGE_BOUND`, or,
/// when `strict`, at once when a request was refused or the page shows an error.
async fn wait_for(
    client: &Client,
    what: &str,
    strict: bool,
    done: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let deadline = Instant::now() + PAGE_BOUND;
    loop {
        let state = client
            .execute(PAGE_STATE, vec![])
            .await
            .map_err(|e| format!("read the page's state: {e}"))?;
        if done(&state) {
            return Ok(state);
        }
        if strict && !refused(&state).is_empty() {
            return Err(format!(
                "waiting until {what}, a request was refused: {state}"
            ));
        }
        if strict && state["errors"].as_array().is_some_and(|v| !v.is_empty()) {
            return Err(format!(
                "waiting until {what}, the page shows errors: {state}"
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{what}: not within {PAGE_BOUND:?}; the page: {state}"
            ));
        }
        // The poll's pace, not a synchronisation: the condition above decides.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
