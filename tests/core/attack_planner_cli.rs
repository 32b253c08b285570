//! `seek -p` against a hostile plan (issue 16 attack).

use crate::fake_model;
use crate::support;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run_within, stderr};

/// A 12 KB plan reply (well under max_tokens) whose one step names 2000 junk needs: the parser
/// writes a note per need and `headless/plan.rs` prints every note as a line of stderr.
#[test]
fn a_plan_with_thousands_of_junk_needs_does_not_flood_stderr() {
    let sb = Sandbox::new();
    let junk: Vec<String> = (0..2000).map(|n| format!("\"x{n}\"")).collect();
    let reply = format!(
        "```json\n{{\"plan\": [{{\"agent\": \"casual\", \"id\": \"1\", \"need\": [{}], \"task\": \"say hi\"}}]}}\n```\n",
        junk.join(",")
    );
    let server = FakeModel::start(vec![Reply::text(reply), Reply::text("hi")]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--agent", "planner", "-p", "hi"]),
        std::time::Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = stderr(&out).lines().count();
    assert!(lines < 50, "{lines} lines of stderr");
}
