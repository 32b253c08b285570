//! `seek serve` through the real binary, with a token: the JSON shape of every endpoint
//! (insta snapshots, with uids, durations, session ids and paths replaced by placeholders), the
//! bodies of every refusal, AgenticSeek's auth cases (its `test_api_auth.py`) adapted, the
//! generated token, and the start-up refusals.
//!
//! The front end's own requests (no token, its `Origin`) are in `serve_frontend_requests.rs`.

use crate::fake_model;
use crate::serve;
use crate::support;

use fake_model::{FakeModel, Gate, Reply};
use serde_json::Value;
use serve::{RawResponse, ServeProcess};
use support::{Sandbox, run_within, stderr, stdout};

/// A token as a user would set it in `SEEK_API_TOKEN` (long enough to be accepted).
const TOKEN: &str = "s3cret-token-0123456789";

/// The coder's first reply: one bash block; its second: the final answer.
const BLOCK_REPLY: &str = "I will list it.\n\n```bash\necho served-block-ran\n```\n";
const FINAL_ANSWER: &str = "The block printed served-block-ran.";

fn with_token(sandbox: &Sandbox, model: &FakeModel) -> ServeProcess {
    ServeProcess::start(sandbox, &model.url(), &[], &[("SEEK_API_TOKEN", TOKEN)])
}

/// The response as pretty JSON with what changes from run to run replaced: uids, durations,
/// session ids, times, and the sandbox's paths.
fn normalised(response: &RawResponse, sandbox: &Sandbox) -> String {
    let mut json = response.json();
    // The sandbox as given and as resolved (seek canonicalises its work dir).
    let given = sandbox.root.path().to_path_buf();
    let resolved = given.canonicalize().unwrap_or_else(|_| given.clone());
    for root in [resolved, given] {
        scrub(&mut json, None, &root.display().to_string());
    }
    format!(
        "status: {}\n{}",
        response.status,
        serde_json::to_string_pretty(&json).expect("pretty JSON")
    )
}

fn scrub(value: &mut Value, key: Option<&str>, root: &str) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                scrub(v, Some(k), root);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, key, root)),
        Value::String(text) => {
            let placeholder = match key {
                Some("uid") => Some("[uid]"),
                Some("session" | "current" | "id") => Some("[session]"),
                _ => None,
            };
            if let Some(placeholder) = placeholder {
                *text = placeholder.to_owned();
            } else {
                *text = text.replace(root, "[sandbox]");
            }
        }
        Value::Number(_) => {
            if matches!(key, Some("duration_ms" | "last_activity_ms")) {
                *value = Value::String("[varies]".into());
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

#[test]
fn every_endpoint_answers_in_agenticseeks_shapes() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text(BLOCK_REPLY), Reply::text(FINAL_ANSWER)]);
    let serve = with_token(&sandbox, &model);

    let health = serve.get("/health");
    insta::assert_snapshot!("health", normalised(&health, &sandbox));
    insta::assert_snapshot!(
        "is_active_idle",
        normalised(&serve.get("/is_active"), &sandbox)
    );
    insta::assert_snapshot!(
        "latest_answer_before_any_query",
        normalised(&serve.get("/latest_answer"), &sandbox)
    );
    insta::assert_snapshot!("stop_idle", normalised(&serve.get("/stop"), &sandbox));
    insta::assert_snapshot!(
        "stop_idle_post",
        normalised(&serve.request("POST", "/stop", &[], ""), &sandbox)
    );
    insta::assert_snapshot!(
        "screenshot",
        normalised(&serve.get("/screenshot"), &sandbox)
    );
    insta::assert_snapshot!(
        "unknown_path",
        normalised(&serve.get("/no/such/endpoint"), &sandbox)
    );
    insta::assert_snapshot!(
        "sessions_before_any_query",
        normalised(&serve.get("/sessions"), &sandbox)
    );

    let answer = serve.post_json(
        "/query",
        r#"{"query": "run the block", "tts_enabled": false}"#,
    );
    insta::assert_snapshot!("query_with_a_block", normalised(&answer, &sandbox));
    let latest = serve.get("/latest_answer");
    insta::assert_snapshot!(
        "latest_answer_after_the_query",
        normalised(&latest, &sandbox)
    );
    insta::assert_snapshot!(
        "is_active_after",
        normalised(&serve.get("/is_active"), &sandbox)
    );
    let sessions = serve.get("/sessions");
    insta::assert_snapshot!("sessions_after_a_query", normalised(&sessions, &sandbox));

    // What the placeholders hid, checked for what it must be.
    let (answer, latest, sessions) = (answer.json(), latest.json(), sessions.json());
    assert_eq!(
        answer["uid"], latest["uid"],
        "the same answer keeps its uid"
    );
    let session = answer["session"]
        .as_str()
        .expect("the query names its session");
    assert_eq!(sessions["current"], session);
    assert_eq!(sessions["sessions"][0]["id"], session);
    assert!(
        answer["blocks"]["0"]["duration_ms"]
            .as_f64()
            .expect("a duration")
            >= 0.0
    );
    assert_eq!(model.chat_requests().len(), 2, "one round per reply");
    serve.sigterm_and_wait();
}

#[test]
fn every_refusal_is_json_that_says_why() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![]);
    let serve = with_token(&sandbox, &model);

    let malformed = serve.post_json("/query", r#"{"query": "unclosed"#);
    insta::assert_snapshot!("query_malformed_json", normalised(&malformed, &sandbox));
    let missing = serve.post_json("/query", r#"{"tts_enabled": false}"#);
    insta::assert_snapshot!("query_without_query", normalised(&missing, &sandbox));
    let empty = serve.post_json("/query", r#"{"query": "  \n "}"#);
    insta::assert_snapshot!("query_empty", normalised(&empty, &sandbox));
    let not_json = serve.request("POST", "/query", &[("Content-Type", "text/plain")], "hello");
    insta::assert_snapshot!("query_not_json", normalised(&not_json, &sandbox));

    // Twice the cap: refused whole, with JSON, not a reset connection or a panic.
    let big = format!(r#"{{"query": "{}"}}"#, "x".repeat(2 * 1024 * 1024));
    let too_large = serve.post_json("/query", &big);
    insta::assert_snapshot!("query_of_2_mb", normalised(&too_large, &sandbox));

    let foreign = serve.request(
        "GET",
        "/is_active",
        &[("Origin", "http://evil.example")],
        "",
    );
    insta::assert_snapshot!("origin_not_allowed", normalised(&foreign, &sandbox));
    assert_eq!(foreign.header("access-control-allow-origin"), None);

    let no_token = serve::request(serve.port, "GET", "/is_active", &[], "");
    insta::assert_snapshot!("token_missing", normalised(&no_token, &sandbox));
    assert_eq!(no_token.header("www-authenticate"), Some("Bearer"));

    // None of them reached the model, and the server still serves.
    assert!(
        model.chat_requests().is_empty(),
        "{:?}",
        model.chat_requests()
    );
    assert_eq!(serve.get("/is_active").json()["is_active"], false);
    serve.sigterm_and_wait();
}

#[test]
fn a_query_while_another_runs_gets_agenticseeks_429() {
    let sandbox = Sandbox::new();
    let gate = Gate::new();
    let model = FakeModel::start(vec![Reply::Held {
        answer: FINAL_ANSWER.into(),
        gate: gate.clone(),
    }]);
    let serve = with_token(&sandbox, &model);
    let (port, bearer) = (serve.port, format!("Bearer {TOKEN}"));
    let first = std::thread::spawn(move || {
        serve::request(
            port,
            "POST",
            "/query",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            r#"{"query": "take your time"}"#,
        )
    });
    // The model has the first task's request: the task runs until the gate opens.
    model.wait_for_request();
    let busy = serve.post_json("/query", r#"{"query": "and this too"}"#);
    insta::assert_snapshot!("query_while_busy", normalised(&busy, &sandbox));
    assert_eq!(serve.get("/is_active").json()["is_active"], true);
    gate.open();
    let first = first.join().expect("the first query's thread");
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.json()["answer"], FINAL_ANSWER);
    assert_eq!(
        model.chat_requests().len(),
        1,
        "the refused query asked nothing"
    );
    serve.sigterm_and_wait();
}

/// AgenticSeek's `test_api_auth.py`, adapted: its token guarded `/query` only; seek's guards
/// every endpoint but `/health`, so each case is tried on a read and on `/query`.
#[test]
fn agenticseeks_auth_cases() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![Reply::text(FINAL_ANSWER)]);
    let serve = with_token(&sandbox, &model);
    let query = r#"{"query": "hello"}"#;
    let json = ("Content-Type", "application/json");
    let refused = [
        ("no header", None),
        ("the token without Bearer", Some(TOKEN.to_owned())),
        ("a wrong token", Some("Bearer wrong".to_owned())),
        ("bearer in lower case", Some(format!("bearer {TOKEN}"))),
        (
            "a prefix of the token",
            Some(format!("Bearer {}", &TOKEN[..10])),
        ),
        ("the token and more", Some(format!("Bearer {TOKEN}x"))),
    ];
    for (case, authorization) in &refused {
        let mut headers = vec![json];
        if let Some(value) = authorization {
            headers.push(("Authorization", value));
        }
        for (method, path, body) in [("GET", "/is_active", ""), ("POST", "/query", query)] {
            let response = serve::request(serve.port, method, path, &headers, body);
            assert_eq!(
                response.status, 401,
                "{case}: {method} {path}: {response:?}"
            );
            assert_eq!(
                response.header("www-authenticate"),
                Some("Bearer"),
                "{case}"
            );
            assert!(response.json()["error"].is_string(), "{case}: {response:?}");
        }
    }
    assert!(
        model.chat_requests().is_empty(),
        "no refused query reached the model"
    );

    let open = serve::request(serve.port, "GET", "/health", &[], "");
    assert_eq!(open.status, 200, "/health needs no token: {open:?}");
    let right = serve.post_json("/query", query);
    assert_eq!(right.status, 200, "{right:?}");
    assert_eq!(right.json()["answer"], FINAL_ANSWER);
    serve.sigterm_and_wait();
}

#[test]
fn without_seek_api_token_a_generated_token_is_printed_once_and_works() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![]);
    let serve = ServeProcess::start(&sandbox, &model.url(), &[], &[]);
    let token = serve.token.clone().expect("a token line");
    assert_eq!(token.len(), 64, "{:?}", serve.stdout_lines);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");

    let with = |value: &str| {
        serve::request(
            serve.port,
            "GET",
            "/is_active",
            &[("Authorization", value)],
            "",
        )
    };
    assert_eq!(with(&format!("Bearer {token}")).status, 200);
    let other: String = token
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    assert_eq!(with(&format!("Bearer {other}")).status, 401);
    assert_eq!(with(&format!("Bearer {TOKEN}")).status, 401);

    let ended = serve.sigterm_and_wait();
    assert!(ended.status.success(), "{ended:?}");
    // Shown once at start: the token line (read by `start`) and the curl example after it (the
    // rest of stdout); never again, and never on stderr.
    assert_eq!(ended.stdout.matches(&token).count(), 1, "{}", ended.stdout);
    assert!(!ended.stderr.contains(&token), "{}", ended.stderr);
}

#[test]
fn start_up_refuses_unsafe_or_impossible_set_ups_with_exit_2() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![]);
    let bound = std::time::Duration::from_secs(60);
    let cases: [(&str, &[&str], Option<&str>, &str); 4] = [
        (
            "--no-token off loopback",
            &[
                "serve",
                "--yes",
                "--port",
                "0",
                "--no-token",
                "--host",
                "0.0.0.0",
            ],
            None,
            "--no-token",
        ),
        (
            "approval ask without --yes",
            &["serve", "--port", "0", "--approval", "ask"],
            Some(TOKEN),
            "--yes",
        ),
        (
            "a short SEEK_API_TOKEN",
            &["serve", "--yes", "--port", "0"],
            Some("short"),
            "SEEK_API_TOKEN",
        ),
        (
            "a host that is not an IP address",
            &["serve", "--yes", "--port", "0", "--host", "example.com"],
            Some(TOKEN),
            "--host",
        ),
    ];
    for (case, args, token, named) in cases {
        let mut command = sandbox.seek_at(&model.url(), args);
        if let Some(token) = token {
            command.env("SEEK_API_TOKEN", token);
        }
        let out = run_within(&mut command, bound);
        assert_eq!(out.status.code(), Some(2), "{case}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(named),
            "{case}: the message names {named}: {}",
            stderr(&out)
        );
        assert!(
            !stdout(&out).contains("listening"),
            "{case}: {}",
            stdout(&out)
        );
    }
    assert!(model.chat_requests().is_empty());
}

#[test]
fn another_host_with_a_token_serves_with_a_warning() {
    let sandbox = Sandbox::new();
    let model = FakeModel::start(vec![]);
    let serve = ServeProcess::start(
        &sandbox,
        &model.url(),
        &["--host", "0.0.0.0"],
        &[("SEEK_API_TOKEN", TOKEN)],
    );
    assert!(
        serve.stdout_lines[0].starts_with("listening on http://0.0.0.0:"),
        "{:?}",
        serve.stdout_lines
    );
    // Every interface includes loopback; the token is still required there.
    assert_eq!(serve.get("/is_active").status, 200);
    assert_eq!(
        serve::request(serve.port, "GET", "/is_active", &[], "").status,
        401
    );
    let ended = serve.sigterm_and_wait();
    assert!(ended.status.success(), "{ended:?}");
    assert!(
        ended.stderr.contains("warning: serving on 0.0.0.0:")
            && ended.stderr.contains("not loopback"),
        "{}",
        ended.stderr
    );
}
