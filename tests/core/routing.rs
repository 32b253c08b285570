//! `auto` end to end through the real binary: the router's choice is a `routed` event right
//! after `turn_started`, the task runs with that agent, and a named agent is never routed.

use crate::fake_model;
use crate::support;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr, stdout};

const BOUND: std::time::Duration = std::time::Duration::from_secs(120);

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn auto_routes_a_greeting_to_casual_and_says_so() {
    let sb = Sandbox::new();
    // Code in a casual answer is never run: the greeting really went to casual.
    let server = FakeModel::start(vec![Reply::text(
        "Hello!\n```bash\ntouch routed-marker\n```\n",
    )]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "auto", "--json", "-p", "hello there"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let started = lines
        .iter()
        .position(|l| l["type"] == "turn_started")
        .expect("turn_started");
    assert_eq!(lines[started]["agent"], "casual");
    let routed = &lines[started + 1];
    assert_eq!(routed["type"], "routed", "{lines:?}");
    assert_eq!(routed["agent"], "casual");
    let confidence = routed["confidence"].as_f64().expect("a number");
    assert!((0.0..=1.0).contains(&confidence), "{confidence}");
    assert!(!routed["reason"].as_str().unwrap_or("").is_empty());
    let done = lines.last().expect("done");
    assert_eq!(done["agent"], "casual");
    assert_eq!(done["blocks"], serde_json::json!([]));
    assert!(!sb.path("work").join("routed-marker").exists());
}

#[test]
fn a_named_agent_is_not_routed() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Hello!")]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "casual", "--json", "-p", "hello there"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!json_lines(&out).iter().any(|l| l["type"] == "routed"));
}

/// Issue 39: the router's line said `→ coder · 1.00 · words: a, that`. It says why in plain
/// words, with the confidence only when the router was unsure; `--json` keeps `reason` and adds
/// `why`.
#[test]
fn the_routers_line_says_why_in_plain_words() {
    let sb = Sandbox::new();
    let prompt = "write a python script that prints the first ten prime numbers";
    let server = FakeModel::start(vec![Reply::text("Done, no code needed.")]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--agent", "auto", "-p", prompt]),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("seek: →"))
        .unwrap_or_else(|| panic!("a router line: {err}"));
    assert_eq!(line, "seek: → coder (asks to write or run code)", "{err}");

    let server = FakeModel::start(vec![Reply::text("Done, no code needed.")]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--agent", "auto", "--json", "-p", prompt]),
        BOUND,
    );
    let lines = json_lines(&out);
    let routed = lines
        .iter()
        .find(|l| l["type"] == "routed")
        .expect("routed");
    assert_eq!(routed["why"], "asks to write or run code");
    assert!(
        routed["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("words: "),
        "the classifier's evidence is kept: {routed}"
    );
    assert!(
        routed["confidence"].as_f64().unwrap_or(0.0) >= 0.6,
        "{routed}"
    );
}

/// Issue 39: "count the lines in notes.txt" went to the file agent, which cannot run python;
/// the block was shown as plain code and the task ended `done`. It is reported as not run,
/// with what to do, and the task fails (exit 1) because nothing it needed ran.
#[test]
fn code_the_agent_cannot_run_is_reported_and_the_task_is_not_done() {
    let sb = Sandbox::new();
    let reply = "Counting.\n```python\nprint(len(open('notes.txt').readlines()))\n```\n";
    let server = FakeModel::start(vec![Reply::text(reply), Reply::text("3 lines.")]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "file", "-p", "count the lines in notes.txt"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let said = "seek: not run: the file agent cannot run python blocks, so that code was not run: ask again with the coder agent (`--agent coder`)";
    assert_eq!(err.matches(said).count(), 1, "said once: {err}");
    assert!(!err.contains("/agent coder"), "the -p way only: {err}");
    assert_eq!(server.chat_requests().len(), 1, "the task ended there");

    let server = FakeModel::start(vec![Reply::text(reply)]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &[
                "--agent",
                "file",
                "--json",
                "-p",
                "count the lines in notes.txt",
            ],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = json_lines(&out);
    let event = lines
        .iter()
        .find(|l| l["type"] == "blocks_agent_cannot_run")
        .unwrap_or_else(|| panic!("the event: {lines:?}"));
    assert_eq!(event["agent"], "file");
    assert_eq!(event["tools"], serde_json::json!(["python"]));
    assert_eq!(event["can_run"], "coder");
    let done = lines.last().expect("done");
    assert_eq!(done["outcome"], "gave_up", "{done}");
    assert!(
        done["message"]
            .as_str()
            .unwrap_or("")
            .contains("`/agent coder`, or `--agent coder` with -p"),
        "{done}"
    );
}
