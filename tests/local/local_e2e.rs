//! The end-to-end check of the built-in engine: `seek -p … --json` on a fresh HOME with
//! no provider configured anywhere runs the task on the real default model, which it fetches
//! first (from a loopback mirror: `[local] offline` keeps the internet out), saying once which
//! model it runs. And `--model ./x.gguf`, a relative path, runs that file.
//!
//! Only what is deterministic is asserted: the events' order and shape, the JSON contract, the
//! session file, the model in the cache, no block run (`--approval never`). What a 135M model
//! answers is not (greedy decoding makes it repeatable; `tests/local/local_engine.rs` checks that).
//! The real file: `SEEK_TEST_GGUF`, else `~/.cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf`.

use crate::file_server;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use file_server::{FileServer, Serve};
use support::{Sandbox, run_within, stderr, stdout};

const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// A debug build decodes the 135M model at a few dozen tokens a second; a task of at most
/// `max_tokens` per round takes well under a minute.
const BOUND: Duration = Duration::from_secs(600);

fn real_model() -> PathBuf {
    let path = std::env::var_os("SEEK_TEST_GGUF")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/seek-dev").join(FILE))
        })
        .expect("SEEK_TEST_GGUF or HOME");
    assert!(
        path.is_file(),
        "the test needs the default model at {}: run `seek pull smollm2-135m` and set SEEK_TEST_GGUF to the path it prints",
        path.display()
    );
    path
}

/// A fresh home whose only configuration is greedy decoding, short replies and a mirror;
/// no provider, no model, no base URL.
fn fresh_home(mirror: &str, max_tokens: u32) -> Sandbox {
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "temperature = 0\nseed = 7\nmax_tokens = {max_tokens}\n\n[local]\nmirror = {mirror:?}\noffline = true\n"
    ));
    sb
}

fn seek_p(sb: &Sandbox, args: &[&str]) -> Output {
    let mut cmd = sb.seek();
    cmd.env("SEEK_CACHE_DIR", sb.path("cache"))
        .env("XDG_CACHE_HOME", sb.path("xdg-cache"))
        .args(["--approval", "never", "--json"])
        .arg("--work-dir")
        .arg(sb.path("work"))
        .args(args);
    run_within(&mut cmd, BOUND)
}

/// Every stdout line is a JSON object with a string `type`, the last one `done`.
fn events(out: &Output) -> Vec<serde_json::Value> {
    let events: Vec<serde_json::Value> = stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for e in &events {
        assert!(
            e.is_object() && e["type"].is_string(),
            "an event without a type: {e}"
        );
    }
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some("done".into()),
        "the last line is done: {}",
        stdout(out)
    );
    events
}

fn types(events: &[serde_json::Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

/// `wanted` appear in `have` in this order (others may come between).
fn assert_in_order(have: &[&str], wanted: &[&str]) {
    let mut rest = have.iter();
    for w in wanted {
        assert!(
            rest.any(|h| h == w),
            "{w} missing or out of order in {have:?}"
        );
    }
}

/// The task ran to an answer: exit 0 or 1 (a small model may give up), the round's answer,
/// no block run, and the session file holds the prompt and the answer.
fn assert_task_ran(out: &Output, events: &[serde_json::Value], prompt: &str) {
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}: {}\n{}",
        out.status,
        stderr(out),
        stdout(out)
    );
    let done = events.last().expect("done");
    assert!(
        matches!(
            done["outcome"].as_str(),
            Some("done" | "gave_up" | "round_limit")
        ),
        "{done}"
    );
    let answer = events
        .iter()
        .find(|e| e["type"] == "answer_complete")
        .and_then(|e| e["answer"].as_str())
        .expect("an answer");
    assert!(!answer.trim().is_empty(), "the model answered something");
    for block in events.iter().filter(|e| e["type"] == "block_finished") {
        assert!(
            block["exit_code"].is_null() && block["success"] == false,
            "--approval never shows blocks and runs none: {block}"
        );
    }
    assert!(
        !types(events).contains(&"block_started"),
        "no block started"
    );
    let session = events
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["path"].as_str())
        .map(PathBuf::from)
        .expect("session_started names the session file");
    let saved = std::fs::read_to_string(&session)
        .unwrap_or_else(|e| panic!("the session file {} ({e})", session.display()));
    let records: Vec<serde_json::Value> = saved
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("a session line ({e}): {l}")))
        .collect();
    let saved_event = |kind: &str| {
        records
            .iter()
            .find(|r| r["event"]["type"] == kind)
            .unwrap_or_else(|| panic!("the session holds {kind}: {saved}"))
    };
    assert_eq!(saved_event("turn_started")["event"]["prompt"], prompt);
    assert_eq!(saved_event("answer_complete")["event"]["answer"], answer);
    saved_event("turn_finished");
}

fn preparing<'a>(events: &'a [serde_json::Value], stage: &str) -> Vec<&'a serde_json::Value> {
    events
        .iter()
        .filter(|e| e["type"] == "model_preparing" && e["stage"] == stage)
        .collect()
}

#[test]
fn a_fresh_home_with_no_provider_runs_a_task_on_the_default_model() {
    let bytes = std::fs::read(real_model()).expect("read the model");
    let server = FileServer::start();
    let path = format!("/m/{FILE}");
    server.put(&path, Arc::new(bytes), Serve::Normally);
    let sb = fresh_home(&server.url("m"), 200);
    let prompt = "Print the numbers 1 to 3 with a bash command.";

    let out = seek_p(&sb, &["-p", prompt]);
    let events = events(&out);
    assert_task_ran(&out, &events, prompt);
    assert_in_order(
        &types(&events),
        &[
            "session_started",
            "turn_started",
            "model_preparing",
            "answer_complete",
            "turn_finished",
            "done",
        ],
    );
    assert!(!preparing(&events, "download").is_empty(), "it downloaded");
    let load = preparing(&events, "load");
    assert_eq!(load.len(), 1, "loaded once: {events:?}");
    assert_eq!(load[0]["model"], "smollm2-135m");
    assert_eq!(
        server.requests_for(&path).len(),
        1,
        "{:?}",
        server.requests()
    );
    let models = sb.path("cache/models");
    assert!(models.join(FILE).is_file() && !models.join(format!("{FILE}.part")).exists());
    let err = stderr(&out);
    assert!(
        err.contains("no model server is configured, so seek runs smollm2-135m itself")
            && err.contains("/model qwen2.5-coder-1.5b"),
        "the first use says which model runs and how to choose another: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        std::fs::read_dir(sb.path("work")).map_or(true, |mut d| d.next().is_none()),
        "nothing was written in the work dir"
    );
}

#[test]
fn a_relative_gguf_path_runs_that_file() {
    let sb = fresh_home("http://127.0.0.1:9/", 24);
    let dir = sb.path("cwd/models");
    std::fs::create_dir_all(&dir).expect("mkdir");
    link_or_copy(&real_model(), &dir.join("smol.gguf"));
    let prompt = "Say hello.";

    let out = seek_p(
        &sb,
        &[
            "--model",
            "./models/smol.gguf",
            "--agent",
            "casual",
            "-p",
            prompt,
        ],
    );
    let events = events(&out);
    assert_task_ran(&out, &events, prompt);
    let load = preparing(&events, "load");
    assert_eq!(load.len(), 1, "{events:?}");
    assert_eq!(load[0]["model"], "./models/smol.gguf");
    assert!(
        preparing(&events, "download").is_empty(),
        "a file is not downloaded"
    );
    let err = stderr(&out);
    assert!(
        !err.contains("no model server is configured"),
        "a model was named: no first-use notice: {err}"
    );
    assert!(
        !sb.path("cache/models").exists(),
        "a named file needs nothing in the cache"
    );
}

/// A hard link when the file is on the same file system (no 98 MB copy), a copy otherwise.
fn link_or_copy(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).expect("copy the model");
    }
}
