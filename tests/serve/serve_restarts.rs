//! `seek serve` across process lives, through the real binary on 127.0.0.1:0: a session listed
//! by `/sessions` and continued by a restarted server (`"session"` in `/query`), an unknown
//! session refused without holding the board, and SIGTERM/SIGINT while a block runs (exit 0 at
//! once, the block's processes gone, the session file whole and resumable).

use crate::support;

use crate::fake_model;
use crate::procs;

use crate::serve_process;

use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use serve_process::{Served, eventually, marker, sleeping_block};
use support::Sandbox;

/// How soon after a signal the server must have exited (it stops one task and closes a file).
const PROMPTLY: Duration = Duration::from_secs(10);

/// Whether the model's latest chat request carries `text` in one of its messages.
fn last_context_has(model: &FakeModel, text: &str) -> bool {
    let requests = model.chat_requests();
    let last = requests.last().expect("a chat request");
    last.json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .any(|m| m["content"].as_str().is_some_and(|c| c.contains(text)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listed_session_is_continued_by_a_restarted_server_and_an_unknown_one_is_404() {
    let sb = Sandbox::new();
    let model = FakeModel::start(vec![
        Reply::text("Noted: the word is PELICAN."),
        Reply::text("You said PELICAN."),
        Reply::text("Fresh start."),
    ]);
    let mut served = Served::start(&sb, &model);
    let (code, first) = served
        .post("/query", &json!({"query": "remember the word pelican"}))
        .await;
    assert_eq!(code, 200, "{first}");
    let session = first["session"]
        .as_str()
        .expect("the query names its session")
        .to_owned();
    // The session file is written beside the answer, not before it: a `/sessions` at once may
    // not list it yet (seen about once in twenty runs), so the listing is awaited.
    eventually("/sessions lists the session just answered", || async {
        let (_, listing) = served.get("/sessions").await;
        listing["sessions"][0]["id"] == session.as_str()
    })
    .await;
    let (code, listing) = served.get("/sessions").await;
    assert_eq!(code, 200, "{listing}");
    assert_eq!(listing["current"], session.as_str());
    let listed = listing["sessions"].as_array().expect("a list");
    assert_eq!(listed.len(), 1, "{listing}");
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(listed[0]["first_prompt"], "remember the word pelican");
    assert_eq!(served.end_with(Signal::SIGTERM).code(), Some(0));

    // A new process over the same data dir.
    let served = Served::start(&sb, &model);
    let (_, listing) = served.get("/sessions").await;
    assert_eq!(listing["current"], Value::Null, "nothing resumed yet");
    assert_eq!(listing["sessions"][0]["id"], session.as_str());
    let (code, continued) = served
        .post(
            "/query",
            &json!({"query": "which word was it?", "session": session}),
        )
        .await;
    assert_eq!(code, 200, "{continued}\n{}", served.stderr());
    assert_eq!(continued["answer"], "You said PELICAN.");
    assert_eq!(continued["session"], session.as_str());
    assert!(
        last_context_has(&model, "remember the word pelican")
            && last_context_has(&model, "Noted: the word is PELICAN."),
        "the earlier task is in the model's context: {:?}",
        model.chat_requests().last().map(|r| r.json())
    );

    let (code, refused) = served
        .post(
            "/query",
            &json!({"query": "hm", "session": "20000101-nosuch"}),
        )
        .await;
    assert_eq!(code, 404, "{refused}");
    assert!(refused["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert!(!served.is_active().await, "the refused query holds nothing");
    let requests_before = model.chat_requests().len();
    let (code, next) = served.post("/query", &json!({"query": "start over"})).await;
    assert_eq!(code, 200, "{next}");
    assert_eq!(next["answer"], "Fresh start.");
    assert_eq!(model.chat_requests().len(), requests_before + 1);
}

/// The session files of the sandbox's data dir.
fn session_files(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    let dir = sb.path("data/seek/sessions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

async fn a_signal_while_a_block_runs_ends_all_cleanly(signal: Signal, base: u32) {
    let sb = Sandbox::new();
    let marker = marker(base);
    let model = FakeModel::start(vec![
        Reply::text(sleeping_block(&marker)),
        Reply::text("Carried on."),
    ]);
    let mut served = Served::start(&sb, &model);
    let pending = served.query(json!({"query": "sleep for a long time"}));
    eventually("the block's sleep runs", || async {
        !procs::processes_with(&marker, false).is_empty()
    })
    .await;

    let signalled = Instant::now();
    let status = tokio::task::block_in_place(|| served.end_with(signal));
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(0), "{status:?}\n{}", served.stderr());
    assert!(took < PROMPTLY, "{signal} took {took:?}");
    let left = procs::processes_with(&marker, false);
    assert!(left.is_empty(), "the block outlived seek serve: {left:?}");
    // The pending query was answered or cut; either way it is over.
    let _ = pending.await;

    let files = session_files(&sb);
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).expect("the session file");
    assert!(text.ends_with('\n'), "the last record is whole: {text}");
    let records: Vec<seek::session::Record> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: a record: {line}")))
        .collect();
    assert!(
        matches!(records.first(), Some(seek::session::Record::Header { .. })),
        "{text}"
    );
    assert!(
        text.contains("sleep for a long time"),
        "the task is saved: {text}"
    );

    let id = files[0]
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("an id")
        .to_owned();
    let served = Served::start(&sb, &model);
    let (code, continued) = served
        .post("/query", &json!({"query": "carry on", "session": id}))
        .await;
    assert_eq!(code, 200, "{continued}\n{}", served.stderr());
    assert_eq!(continued["answer"], "Carried on.");
    assert_eq!(continued["session"], id.as_str());
    assert!(
        last_context_has(&model, "sleep for a long time"),
        "the interrupted task is in the resumed context"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_while_a_block_runs_exits_0_with_the_block_killed_and_the_session_whole() {
    a_signal_while_a_block_runs_ends_all_cleanly(Signal::SIGTERM, 61).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_while_a_block_runs_exits_0_with_the_block_killed_and_the_session_whole() {
    a_signal_while_a_block_runs_ends_all_cleanly(Signal::SIGINT, 62).await;
}
