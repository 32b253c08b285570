//! The task's final answer through the real binary against the fake model server: never a bare
//! `block:N` nor seek's own feedback echoed by the model — plain `-p`'s stdout, `--json`'s
//! `done.answer` and `seek serve`'s `/latest_answer` alike — a coder task none of whose blocks
//! succeeded exits 1, and the answer does not depend on how the reply's stream ended.

use crate::support;

use crate::fake_model;
use crate::serve;

use std::process::Output;

use fake_model::{FakeModel, Reply};
use serve::ServeProcess;
use support::{Sandbox, stderr, stdout};

/// `-p`'s exit code for a task that failed.
const TASK_FAILED: i32 = 1;

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// `seek -p PROMPT` (plus `extra`) as a small model, run to its end.
fn run_small(sb: &Sandbox, replies: Vec<Reply>, prompt: &str, extra: &[&str]) -> Output {
    let server = FakeModel::start(replies);
    let mut args = extra.to_vec();
    args.extend(["-p", prompt]);
    let mut cmd = sb.seek_at(&server.url(), &args);
    cmd.env("SEEK_MODEL_SIZE", "small");
    support::run(&mut cmd)
}

fn done_line(out: &Output) -> serde_json::Value {
    stdout(out)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["type"] == "done")
        .unwrap_or_else(|| panic!("a done line:\n{}", stdout(out)))
}

/// A small model that sends its block again after it ran: the task ends, the block's output
/// being the answer.
fn resent_block() -> Vec<Reply> {
    let echo = fence("bash", "echo hello");
    vec![Reply::text(echo.clone()), Reply::text(echo)]
}

#[test]
fn a_resent_block_s_output_is_the_answer_not_its_placeholder() {
    let sb = Sandbox::new();
    let out = run_small(&sb, resent_block(), "print hello with bash", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Ran `echo hello`:\nhello\n");

    let sb = Sandbox::new();
    let out = run_small(&sb, resent_block(), "print hello with bash", &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done = done_line(&out);
    assert_eq!(done["answer"], "Ran `echo hello`:\nhello", "{done}");
    assert_eq!(done["outcome"], "done");
}

#[test]
fn seeks_echoed_feedback_is_not_the_answer() {
    let sb = Sandbox::new();
    let task = "print y with python";
    // What seek tells a small model after the failure, sent back as the model's own reply.
    let echoed = format!(
        "[failure] Error in execution:\nNameError: name 'y' is not defined\nThe task: {task}\nFix the code and send the whole corrected block again.\n"
    );
    let replies = vec![
        Reply::text(fence("python", "print(y)")),
        Reply::text(echoed.clone()),
        Reply::text(echoed),
    ];
    let out = run_small(&sb, replies, task, &[]);
    let (said, err) = (stdout(&out), stderr(&out));
    assert!(!said.contains("The task:"), "{said}");
    assert!(!said.contains("Fix the code"), "{said}");
    assert!(!said.contains("[failure]"), "{said}");
    assert!(
        said.starts_with("`print(y)` failed (exit 1):\n") && said.contains("NameError"),
        "the failed block's result is the answer: {said}"
    );
    assert_eq!(out.status.code(), Some(TASK_FAILED), "{err}");
    assert!(err.contains("no block of the task succeeded"), "{err}");
}

#[test]
fn a_coder_task_whose_only_block_always_fails_exits_1() {
    // A large model: the block fails, is resent (and refused), then the model says it is done.
    let sb = Sandbox::new();
    let failing = fence("bash", "ls no-such-file-here");
    let server = FakeModel::start(vec![
        Reply::text(format!("Listing.\n{failing}\n")),
        Reply::text(format!("Again.\n{failing}\n")),
        Reply::text("The file is listed."),
    ]);
    let out = support::run(&mut sb.seek_at(&server.url(), &["--json", "-p", "list it"]));
    assert_eq!(out.status.code(), Some(TASK_FAILED), "{}", stderr(&out));
    let done = done_line(&out);
    assert_eq!(done["outcome"], "gave_up", "{done}");
    assert_eq!(done["success"], false);
    assert_eq!(
        done["answer"], "The file is listed.",
        "the model's words stay its answer"
    );
    let message = done["message"].as_str().unwrap_or_default();
    assert!(
        message
            .starts_with("no block of the task succeeded (2 tried); the last error: bash block:")
            && message.contains("no-such-file-here"),
        "{message}"
    );

    // A block that worked once is a done task.
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!("Listing.\n{failing}\n")),
        Reply::text(fence("python", "print('found')")),
    ]);
    let out = support::run(&mut sb.seek_at(&server.url(), &["-p", "list it"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_same_run_prints_the_same_bytes_however_its_stream_ended() {
    // The model stops right at the closing fence, or writes its line ending first (where a
    // small model's reply is cut): the same answer either way.
    let ended = |tail: &str| {
        let echo = format!("{}{tail}", fence("bash", "echo same"));
        vec![Reply::text(echo.clone()), Reply::text(echo)]
    };
    let mut plain = Vec::new();
    let mut answers = Vec::new();
    for tail in ["", "\n", "", "\n\n"] {
        let sb = Sandbox::new();
        plain.push(run_small(&sb, ended(tail), "print same with bash", &[]).stdout);
        let sb = Sandbox::new();
        let out = run_small(&sb, ended(tail), "print same with bash", &["--json"]);
        answers.push(done_line(&out)["answer"].clone());
    }
    assert_eq!(
        String::from_utf8_lossy(&plain[0]),
        "Ran `echo same`:\nsame\n"
    );
    assert!(plain.iter().all(|p| *p == plain[0]), "{plain:?}");
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");

    // A large model's prose answer after it read the output, ended either way, too.
    let mut finals = Vec::new();
    for tail in ["", "\n", "\n\n"] {
        let sb = Sandbox::new();
        let server = FakeModel::start(vec![
            Reply::text(format!("Printing.\n{}", fence("bash", "echo 7"))),
            Reply::text(format!("It printed 7.{tail}")),
        ]);
        let out = support::run(&mut sb.seek_at(&server.url(), &["--json", "-p", "print 7"]));
        finals.push(done_line(&out)["answer"].clone());
    }
    assert!(finals.iter().all(|a| *a == "It printed 7."), "{finals:?}");
}

#[test]
fn serve_s_latest_answer_is_the_same_final_answer() {
    let sb = Sandbox::new();
    let model = FakeModel::start(resent_block());
    let token = "s3cret-token-0123456789";
    let serve = ServeProcess::start(
        &sb,
        &model.url(),
        &[],
        &[("SEEK_API_TOKEN", token), ("SEEK_MODEL_SIZE", "small")],
    );
    let answer = serve.post_json(
        "/query",
        r#"{"query": "print hello with bash", "tts_enabled": false}"#,
    );
    assert_eq!(answer.json()["answer"], "Ran `echo hello`:\nhello");
    let latest = serve.get("/latest_answer").json();
    assert_eq!(latest["answer"], "Ran `echo hello`:\nhello", "{latest}");
    serve.sigterm_and_wait();
}
