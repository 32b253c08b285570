//! `auto` end to end through the real binary: the router's choice is a `routed` event right
//! after `turn_started`, the task runs with that agent, and a named agent is never routed.

#[path = "support/fake_model.rs"]
mod fake_model;
mod support;

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
