//! AgenticSeek's React front end against `seek serve --no-token`, request for request: the
//! paths, methods, bodies and headers its `App.js` makes a browser send (axios from
//! `http://localhost:3000` to `http://localhost:PORT`, no token), the answers it needs (status,
//! CORS headers, the fields it reads), and the same requests refused (403, no CORS header, the
//! model asked nothing) from a foreign `Origin` or with a `Host` that is not this machine (a
//! DNS-rebinding page). Against a server that wants a token, the page's poll is told what to do
//! and everything else is refused.
//!
//! Raw sockets throughout, so the `Host` and `Origin` are exactly what a browser would send.

use crate::fake_model;
use crate::serve;
use crate::support;

use fake_model::{FakeModel, Reply};
use serve::{RawResponse, ServeProcess};
use support::Sandbox;

/// Where the front end's pages come from (its dev server), the one default allowed origin.
const FRONT_END: &str = "http://localhost:3000";

const BLOCK_REPLY: &str = "Listing it.\n\n```bash\necho front-end-block-ran\n```\n";
const FINAL_ANSWER: &str = "The block printed front-end-block-ran.";

/// One request as Chromium sends it for the front end's axios calls: `Host` as the page's
/// `REACT_APP_BACKEND_URL` names it, the page's `Origin`, axios' `Accept`, no token.
struct Browser {
    port: u16,
    host: String,
    origin: String,
}

impl Browser {
    fn front_end(port: u16) -> Self {
        Self {
            port,
            host: format!("localhost:{port}"),
            origin: FRONT_END.into(),
        }
    }

    fn send(&self, method: &str, path: &str, extra: &[(&str, &str)], body: &str) -> RawResponse {
        let referer = format!("{}/", self.origin);
        let mut headers = vec![
            ("Host", self.host.as_str()),
            ("Accept", "application/json, text/plain, */*"),
            ("Origin", self.origin.as_str()),
            ("Referer", referer.as_str()),
            ("Sec-Fetch-Mode", "cors"),
            ("Sec-Fetch-Site", "same-site"),
            (
                "User-Agent",
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
            ),
        ];
        headers.extend_from_slice(extra);
        serve::request(self.port, method, path, &headers, body)
    }

    /// `checkHealth`: `axios.get(BACKEND_URL + "/health")`.
    fn health(&self) -> RawResponse {
        self.send("GET", "/health", &[], "")
    }

    /// `fetchLatestAnswer`.
    fn latest_answer(&self) -> RawResponse {
        self.send("GET", "/latest_answer", &[], "")
    }

    /// `handleStop`.
    fn stop(&self) -> RawResponse {
        self.send("GET", "/stop", &[], "")
    }

    /// `fetchScreenshot`, with its cache-busting timestamp.
    fn screenshot(&self) -> RawResponse {
        self.send(
            "GET",
            "/screenshots/updated_screen.png?timestamp=1733097600000",
            &[],
            "",
        )
    }

    /// The preflight Chromium sends before `handleSubmit`'s JSON POST.
    fn preflight_query(&self) -> RawResponse {
        self.send(
            "OPTIONS",
            "/query",
            &[
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "content-type"),
            ],
            "",
        )
    }

    /// `handleSubmit`: `axios.post(BACKEND_URL + "/query", {query, tts_enabled: false})`.
    fn query(&self, query: &str) -> RawResponse {
        let body = serde_json::json!({"query": query, "tts_enabled": false}).to_string();
        self.send(
            "POST",
            "/query",
            &[("Content-Type", "application/json")],
            &body,
        )
    }

    /// Every request the front end makes, in the order it makes them.
    fn all(&self) -> Vec<(&'static str, RawResponse)> {
        vec![
            ("GET /health", self.health()),
            ("GET /latest_answer", self.latest_answer()),
            ("GET /stop", self.stop()),
            ("GET /screenshots/updated_screen.png", self.screenshot()),
            ("OPTIONS /query", self.preflight_query()),
            ("POST /query", self.query("run the block")),
        ]
    }
}

fn no_token(sandbox: &Sandbox, model: &FakeModel) -> ServeProcess {
    let serve = ServeProcess::start(sandbox, &model.url(), &["--no-token"], &[]);
    assert_eq!(serve.token, None, "{:?}", serve.stdout_lines);
    serve
}

/// The response carries the CORS headers a page at the front end's origin needs to read it.
fn readable_by_the_front_end(what: &str, response: &RawResponse) {
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some(FRONT_END),
        "{what}: {response:?}"
    );
    assert!(
        response
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("vary") && v.contains("Origin")),
        "{what}: a cache must not serve it to another origin: {response:?}"
    );
}

#[test]
fn the_front_ends_requests_get_the_answers_it_reads() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text(BLOCK_REPLY), Reply::text(FINAL_ANSWER)]);
    let serve = no_token(&sandbox, &model);
    let browser = Browser::front_end(serve.port);

    // The poll before any query: online, nothing to show yet, no screenshot.
    let health = browser.health();
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.json()["status"], "healthy");
    readable_by_the_front_end("health", &health);
    let latest = browser.latest_answer();
    assert_eq!(latest.status, 404, "{latest:?}");
    readable_by_the_front_end("latest_answer", &latest);
    let screenshot = browser.screenshot();
    assert_eq!(screenshot.status, 404, "{screenshot:?}");
    assert_eq!(screenshot.json()["error"], "No screenshot available");
    readable_by_the_front_end("screenshot", &screenshot);
    let stop = browser.stop();
    assert_eq!(stop.status, 200, "{stop:?}");
    assert_eq!(stop.json(), serde_json::json!({"status": "stopped"}));
    readable_by_the_front_end("stop", &stop);

    // Submitting: the preflight passes without a token, then the POST runs the task.
    let preflight = browser.preflight_query();
    assert_eq!(preflight.status, 204, "{preflight:?}");
    readable_by_the_front_end("preflight", &preflight);
    let allowed = |name: &str| {
        preflight
            .header(name)
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    assert!(
        allowed("access-control-allow-methods").contains("post"),
        "{preflight:?}"
    );
    assert!(
        allowed("access-control-allow-headers").contains("content-type"),
        "{preflight:?}"
    );
    let answer = browser.query("run the block");
    assert_eq!(answer.status, 200, "{answer:?}");
    readable_by_the_front_end("query", &answer);
    let data = answer.json();
    // `updateData` and the message list read these; `blocks` is shown per block.
    assert_eq!(data["answer"], FINAL_ANSWER);
    assert!(data["reasoning"].is_string(), "{data}");
    assert!(
        data["agent_name"].as_str().is_some_and(|a| !a.is_empty()),
        "{data}"
    );
    assert_eq!(data["status"], "Ready");
    assert_eq!(data["done"], "true");
    assert!(
        data["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "{data}"
    );
    let block = &data["blocks"]["0"];
    assert_eq!(block["tool_type"], "bash", "{data}");
    assert_eq!(
        block["block"].as_str().map(str::trim),
        Some("echo front-end-block-ran")
    );
    assert!(
        block["feedback"]
            .as_str()
            .is_some_and(|f| f.contains("front-end-block-ran")),
        "{data}"
    );
    assert_eq!(block["success"], true, "{data}");

    // The next poll shows the same answer (same uid: the front end does not add it twice).
    let latest = browser.latest_answer();
    assert_eq!(latest.status, 200, "{latest:?}");
    readable_by_the_front_end("latest_answer after", &latest);
    let polled = latest.json();
    for field in [
        "answer",
        "reasoning",
        "agent_name",
        "status",
        "uid",
        "blocks",
    ] {
        assert_eq!(polled[field], data[field], "{field}");
    }
    assert_eq!(polled["done"], "true");
    assert_eq!(polled["success"], true, "a bool here, as AgenticSeek's");
    assert_eq!(model.chat_requests().len(), 2);
    serve.sigterm_and_wait();
}

/// Every one of the front end's requests from `browser` is refused with 403 JSON and no CORS
/// header, and reaches neither the agent nor the model.
fn all_refused(browser: &Browser, serve: &ServeProcess, model: &FakeModel) {
    for (what, response) in browser.all() {
        assert_eq!(response.status, 403, "{what}: {response:?}");
        assert!(response.json()["error"].is_string(), "{what}: {response:?}");
        assert_eq!(
            response.header("access-control-allow-origin"),
            None,
            "{what}: {response:?}"
        );
    }
    assert!(
        model.chat_requests().is_empty(),
        "the model was asked: {:?}",
        model.chat_requests()
    );
    // Nothing ran: the board is as it was before any query.
    let local = Browser::front_end(serve.port);
    assert_eq!(local.latest_answer().status, 404);
    assert_eq!(
        local.send("GET", "/is_active", &[], "").json()["is_active"],
        false
    );
}

#[test]
fn a_page_from_another_origin_is_refused() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text(FINAL_ANSWER)]);
    let serve = no_token(&sandbox, &model);
    for origin in [
        "http://evil.example",
        "http://localhost:3001",
        "https://localhost:3000",
        "null",
    ] {
        let browser = Browser {
            origin: origin.into(),
            ..Browser::front_end(serve.port)
        };
        all_refused(&browser, &serve, &model);
    }
    serve.sigterm_and_wait();
}

#[test]
fn a_host_that_is_not_this_machine_is_refused() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text(FINAL_ANSWER)]);
    let serve = no_token(&sandbox, &model);
    let port = serve.port;
    // A DNS-rebinding page: its own origin, and its name (now pointing at 127.0.0.1) as Host.
    let rebinding = Browser {
        port,
        host: format!("evil.example:{port}"),
        origin: format!("http://evil.example:{port}"),
    };
    all_refused(&rebinding, &serve, &model);
    // Even with the allowed Origin (a page cannot forge it, a script can): Host alone refuses.
    for host in [
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("10.0.0.1:{port}"),
    ] {
        let browser = Browser {
            host,
            ..Browser::front_end(port)
        };
        all_refused(&browser, &serve, &model);
    }
    let refused = serve::raw_request(
        port,
        &format!(
            "GET /latest_answer HTTP/1.1\r\nHost: evil.example:{port}\r\nConnection: close\r\n\r\n"
        ),
    );
    let body = refused.json();
    insta::assert_snapshot!(
        "host_not_loopback",
        format!(
            "status: {}\n{}",
            refused.status,
            serde_json::to_string_pretty(&body)
                .expect("pretty JSON")
                .replace(&port.to_string(), "[port]")
        )
    );
    serve.sigterm_and_wait();
}

#[test]
fn a_request_without_host_is_refused_without_a_token() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![]);
    let serve = no_token(&sandbox, &model);
    // HTTP/1.0 allows no Host at all; without a token, no Host is no proof of a local client.
    let response = serve::raw_request(
        serve.port,
        "GET /is_active HTTP/1.0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.status, 403, "{response:?}");
    serve.sigterm_and_wait();
}

#[test]
fn the_front_end_against_a_server_with_a_token_is_told_what_to_do_and_runs_nothing() {
    // A user who starts `seek serve` without `--no-token` and opens the front end: every call
    // but `/health`, the preflight and the page's poll is refused (401 JSON), and no task runs.
    // The poll (`/latest_answer` from the page, no Authorization at all) is answered with what
    // to do, as a message the page shows: it shows nothing of a refusal's body.
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text(FINAL_ANSWER)]);
    let serve = ServeProcess::start(
        &sandbox,
        &model.url(),
        &[],
        &[("SEEK_API_TOKEN", "s3cret-token-0123456789")],
    );
    let browser = Browser::front_end(serve.port);
    assert_eq!(browser.health().status, 200);
    assert_eq!(browser.preflight_query().status, 204);
    for (what, response) in [
        ("stop", browser.stop()),
        ("query", browser.query("run the block")),
        (
            "latest_answer with a wrong token",
            browser.send(
                "GET",
                "/latest_answer",
                &[("Authorization", "Bearer wrong-token-0123456789")],
                "",
            ),
        ),
    ] {
        assert_eq!(response.status, 401, "{what}: {response:?}");
        assert!(response.json()["error"].is_string(), "{what}: {response:?}");
    }
    let told = browser.latest_answer();
    assert_eq!(told.status, 200, "{told:?}");
    readable_by_the_front_end("latest_answer without a token", &told);
    let body = told.json();
    assert_eq!(body["status"], "Token required", "{body}");
    assert!(
        body["answer"]
            .as_str()
            .is_some_and(|a| a.contains("seek serve --no-token")),
        "{body}"
    );
    assert_eq!(
        body["blocks"],
        serde_json::json!({}),
        "no task's data: {body}"
    );
    assert_eq!(
        body["uid"],
        browser.latest_answer().json()["uid"],
        "one message"
    );
    // A script (no Origin) is refused as before.
    let script = serve::request(
        serve.port,
        "GET",
        "/latest_answer",
        &[("Host", &format!("127.0.0.1:{}", serve.port))],
        "",
    );
    assert_eq!(script.status, 401, "{script:?}");
    assert!(model.chat_requests().is_empty());
    serve.sigterm_and_wait();
}
