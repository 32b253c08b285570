//! Headless stderr when the model server fails, through the real binary: each distinct error is
//! shown once (with how many times it was tried), and a connection refused on this machine is
//! not retried at all.

use crate::support;

use crate::fake_model;

use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr};

/// Exit code for a failing model server.
const MODEL_SERVER_FAILED: i32 = 3;

/// A loopback port nothing listens on: one the kernel just handed out, closed again.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn a_closed_loopback_port_fails_at_once_with_one_error_line() {
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let started = Instant::now();
    let out = run_within(
        &mut sb.seek_at(&url, &["-p", "hello"]),
        Duration::from_secs(60),
    );
    let elapsed = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(MODEL_SERVER_FAILED), "{err}");
    assert!(
        elapsed < Duration::from_secs(1),
        "no retries: ended in {elapsed:?}\n{err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("cannot reach")).collect();
    assert_eq!(errors.len(), 1, "one error line:\n{err}");
    assert!(
        errors[0].starts_with("seek: error: cannot reach the model server at http://127.0.0.1:"),
        "{err}"
    );
    assert!(errors[0].contains("Connection refused"), "{err}");
    assert!(!err.contains("retrying"), "{err}");
}

#[test]
fn a_retried_error_is_shown_once_with_the_number_of_tries() {
    let sb = Sandbox::new();
    sb.write_config("max_retries = 2\n");
    let busy = || Reply::Status {
        code: 503,
        body: r#"{"error":"the server is busy"}"#.into(),
        // No wait between the tries: the test does not sleep through a backoff.
        retry_after: Some("0".into()),
    };
    let server = FakeModel::start(vec![busy(), busy(), busy()]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["-p", "hello"]),
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(MODEL_SERVER_FAILED), "{err}");
    assert_eq!(server.chat_requests().len(), 3, "tried three times");
    let full: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("the server is busy"))
        .collect();
    assert_eq!(full.len(), 1, "the error once:\n{err}");
    assert!(full[0].starts_with("seek: error: "), "{err}");
    assert!(full[0].ends_with("(tried 3 times)"), "{err}");
    let retries: Vec<&str> = err.lines().filter(|l| l.contains("retrying")).collect();
    assert_eq!(retries.len(), 2, "{err}");
    assert!(
        retries[0].contains("answered HTTP 503") && retries[1] == "seek: retrying (2) in 0.0 s",
        "{err}"
    );
}

#[test]
fn other_failures_on_this_machine_are_still_retried() {
    // Only a refused connection is final: a server that answers with an error once and then
    // replies is retried, and no error is left on stderr.
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::Status {
            code: 502,
            body: "bad gateway".into(),
            retry_after: Some("0".into()),
        },
        Reply::text("Hello."),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["-p", "hello"]),
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(server.chat_requests().len(), 2);
    assert_eq!(
        err.lines().filter(|l| l.contains("retrying")).count(),
        1,
        "{err}"
    );
    assert!(!err.contains("error:"), "{err}");
}
