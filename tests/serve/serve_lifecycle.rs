//! `seek serve`'s task lifecycle through the real binary on 127.0.0.1:0: one task at a time (429
//! while busy), `/stop` while a block runs, `/events` in order and in `--json`'s shape, a client
//! that disconnects mid-query (the task goes on: decided), and a model server that fails.
//! Restarts (sessions continued, SIGTERM/SIGINT) are in `serve_restarts.rs`; the server started
//! in-process in `serve_inprocess.rs`. The server process helper is
//! `support/serve_process.rs`.

use crate::support;

use crate::fake_model;
use crate::procs;

use crate::serve_process;

use std::io::Write;
use std::net::TcpStream;

use fake_model::{FakeModel, Gate, Reply};
use futures_util::StreamExt;
use serde_json::{Value, json};
use serve_process::{BOUND, Served, eventually, fence, marker, sleeping_block, take_uid};
use support::Sandbox;

#[tokio::test(flavor = "multi_thread")]
async fn a_second_query_while_one_runs_gets_429_with_agenticseeks_default_body() {
    let sb = Sandbox::new();
    let gate = Gate::new();
    let model = FakeModel::start(vec![Reply::Held {
        answer: "All done.".into(),
        gate: gate.clone(),
    }]);
    let served = Served::start(&sb, &model);
    let first = served.query(json!({"query": "take your time"}));
    tokio::task::block_in_place(|| model.wait_for_request());
    assert!(
        served.is_active().await,
        "a task runs while its reply is held"
    );

    let (code, mut refused) = served.post("/query", &json!({"query": "me too"})).await;
    assert_eq!(code, 429, "{refused}");
    take_uid(&mut refused);
    assert_eq!(
        refused,
        json!({"done": "false", "answer": "", "reasoning": "", "agent_name": "Unknown",
               "success": "false", "blocks": {}, "status": "Ready", "uid": "<uid>"})
    );
    assert!(
        served.is_active().await,
        "the refused query left the running one alone"
    );
    assert_eq!(
        model.chat_requests().len(),
        1,
        "the refused query never reached the model"
    );

    gate.open();
    let (code, answered) = first.await.expect("the first query's task");
    assert_eq!(code, 200, "{answered}");
    assert_eq!(answered["answer"], "All done.");
    assert_eq!(answered["success"], "True");
    assert_eq!(answered["status"], "Ready");
    assert!(!served.is_active().await);
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_while_a_block_runs_answers_once_the_task_ended_and_the_next_query_works() {
    let sb = Sandbox::new();
    let marker = marker(72);
    let model = FakeModel::start(vec![
        Reply::text(sleeping_block(&marker)),
        Reply::text("Nothing left to run."),
    ]);
    let served = Served::start(&sb, &model);
    let first = served.query(json!({"query": "wait a long time"}));
    eventually("the block's sleep runs", || async {
        !procs::processes_with(&marker, false).is_empty()
    })
    .await;

    // AgenticSeek's front end stops with a GET.
    let (code, stopped) = served.get("/stop").await;
    assert_eq!((code, stopped), (200, json!({"status": "stopped"})));
    // Checked at once, without waiting: `/stop` answers only after the task has ended.
    assert!(
        !served.is_active().await,
        "the task ended before /stop answered"
    );
    let left = procs::processes_with(&marker, false);
    assert!(
        left.is_empty(),
        "the block's processes outlived /stop: {left:?}"
    );
    let (code, latest) = served.get("/latest_answer").await;
    assert_eq!(code, 200);
    assert_eq!(latest["done"], "true");
    assert_eq!(latest["status"], "Stopped");
    assert_eq!(latest["success"], false);

    let (code, answered) = first.await.expect("the first query's task");
    assert_eq!(code, 200, "{answered}");
    assert_eq!(answered["status"], "Stopped");
    assert_eq!(answered["success"], "False");
    assert_eq!(answered["outcome"], "stopped");
    assert_eq!(answered["blocks"]["0"]["stopped"], true, "{answered}");

    // AgenticSeek never reset its stop flag; seek does: the next task runs to its end.
    let (code, next) = served.post("/query", &json!({"query": "and now?"})).await;
    assert_eq!(code, 200, "{next}");
    assert_eq!(next["answer"], "Nothing left to run.");
    assert_eq!(next["success"], "True");
    assert_eq!(next["status"], "Ready");
}

/// One server-sent event: its id, its type and its data.
type Sent = (u64, String, Value);

/// Reads `/events` until an event of type `last` (included).
async fn events_until<B: AsRef<[u8]>>(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<B>> + Unpin),
    last: &str,
) -> Vec<Sent> {
    let mut text = String::new();
    let mut sent = Vec::new();
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        // Whole events only: each ends with a blank line.
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            let (mut id, mut kind, mut data) = (None, None, None);
            for line in event.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.parse::<u64>().expect("a numeric id"));
                } else if let Some(v) = line.strip_prefix("event: ") {
                    kind = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str::<Value>(v).expect("data is JSON"));
                }
            }
            // Keep-alive comments carry none of them.
            let (Some(id), Some(kind), Some(data)) = (id, kind, data) else {
                continue;
            };
            let done = kind == last;
            sent.push((id, kind, data));
            if done {
                return sent;
            }
        }
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| panic!("no {last} event within {BOUND:?}: {sent:?}"))
            .unwrap_or_else(|| panic!("/events ended before {last}: {sent:?}"))
            .expect("/events reads");
        text.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

/// An event without what differs between two runs of the same task (times).
fn comparable(event: &Value) -> Value {
    let mut event = event.clone();
    scrub(&mut event);
    event
}

/// Streamed pieces joined: how a reply or an output is cut into events depends on the pace of
/// the sockets, not on the task, so two runs may cut the same text differently.
fn joined(events: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for event in events {
        let piece = event["type"] == "answer_delta" || event["type"] == "block_output";
        if let Some(last) = out.last_mut()
            && piece
            && last["type"] == event["type"]
            && last["round"] == event["round"]
            && last["index"] == event["index"]
        {
            let text = format!(
                "{}{}",
                last["text"].as_str().unwrap_or_default(),
                event["text"].as_str().unwrap_or_default()
            );
            last["text"] = Value::from(text);
            continue;
        }
        out.push(event);
    }
    out
}

fn scrub(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key.ends_with("_ms") || key == "usage" {
                    *v = json!("<varies>");
                } else {
                    scrub(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn events_come_in_order_with_rising_ids_as_seek_p_json_prints_them() {
    let script = || {
        vec![
            Reply::text(format!(
                "Listing.\n{}\n",
                fence("bash", "echo hello-events")
            )),
            Reply::text("Listed."),
        ]
    };
    let sb = Sandbox::new();
    let model = FakeModel::start(script());
    let served = Served::start(&sb, &model);
    let response = served
        .client
        .get(served.url("/events"))
        .bearer_auth(serve_process::TOKEN)
        .send()
        .await
        .expect("GET /events");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "server-sent events"
    );
    // The subscription is in place once the headers arrived: no event of the task is missed.
    let mut stream = response.bytes_stream();
    let (code, answered) = served
        .post("/query", &json!({"query": "list things"}))
        .await;
    assert_eq!(code, 200, "{answered}");
    let sent = events_until(&mut stream, "turn_finished").await;

    let ids: Vec<u64> = sent.iter().map(|(id, _, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids rise: {ids:?}");
    for (_, kind, data) in &sent {
        assert_eq!(
            data["type"],
            kind.as_str(),
            "the event name is the data's type"
        );
    }
    let kinds: Vec<&str> = sent.iter().map(|(_, kind, _)| kind.as_str()).collect();
    let position = |kind: &str| {
        kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
    };
    let order = [
        "turn_started",
        "answer_complete",
        "block_started",
        "block_output",
        "block_finished",
        "turn_finished",
    ];
    let positions: Vec<usize> = order.iter().map(|kind| position(kind)).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "{order:?} in that order: {kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "turn_started").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"turn_finished"));
    let output = &sent[position("block_output")].2;
    assert!(
        output.to_string().contains("hello-events"),
        "the block's output is streamed: {output}"
    );

    // The same task under `seek -p --json` prints the same objects (its extra last line,
    // `done`, aside), so a client reads either with one parser.
    let headless_model = FakeModel::start(script());
    let out = support::run_within(
        &mut sb.seek_at(
            &headless_model.url(),
            &["--yes", "--json", "-p", "list things"],
        ),
        BOUND,
    );
    assert!(out.status.success(), "{}", support::stderr(&out));
    let printed: Vec<Value> = support::stdout(&out)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .filter(|event: &Value| event["type"] != "done")
        .collect();
    let turn = |events: Vec<Value>| -> Vec<Value> {
        // From the task's start: a session's own events (its id and file) differ by design.
        let start = events
            .iter()
            .position(|e| e["type"] == "turn_started")
            .expect("a turn_started");
        joined(events[start..].iter().map(comparable).collect())
    };
    let streamed = turn(sent.iter().map(|(_, _, data)| data.clone()).collect());
    assert_eq!(streamed, turn(printed));
}

/// The kernel's state of the loopback TCP socket from `local` to `remote`, as `/proc/net/tcp`
/// lists it (`None`: gone).
fn tcp_state(local: u16, remote: u16) -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let port = |addr: &str| {
            addr.rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok())
        };
        (port(fields[1]) == Some(local) && port(fields[2]) == Some(remote))
            .then(|| fields[3].to_owned())
    })
}

/// TIME_WAIT, in `/proc/net/tcp`'s hex.
const TIME_WAIT: &str = "06";

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_disconnects_mid_query_leaves_its_task_to_run_to_its_end() {
    let sb = Sandbox::new();
    let marker = marker(74);
    // The block waits for the test's word (a file), so it surely outlives the client.
    let block = format!(
        "Waiting.\n{}\n",
        fence(
            "bash",
            &format!(
                "echo waiting-{marker}; until [ -e release ]; do sleep 0.05; done; echo released"
            )
        )
    );
    let model = FakeModel::start(vec![
        Reply::text(block),
        Reply::text("Released and finished."),
        Reply::text("Still here."),
    ]);
    let served = Served::start(&sb, &model);
    let body = json!({"query": "wait for the word"}).to_string();
    let mut client = TcpStream::connect(served.addr).expect("connect");
    write!(
        client,
        "POST /query HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        served.addr,
        serve_process::TOKEN,
        body.len()
    )
    .expect("send the query");
    eventually("the block runs", || async {
        !procs::processes_with(&format!("waiting-{marker}"), false).is_empty()
    })
    .await;
    let local = client.local_addr().expect("client address").port();
    drop(client);
    // The server has seen the client go when it closed its side too: our socket then waits in
    // TIME_WAIT (or is gone). Only then is "the task goes on" a finding.
    eventually("the server closes the abandoned connection", || async {
        tcp_state(local, served.addr.port()).is_none_or(|state| state == TIME_WAIT)
    })
    .await;
    assert!(
        served.is_active().await,
        "the task belongs to the agent, not to the request"
    );

    std::fs::write(sb.path("work/release"), "").expect("release the block");
    eventually("the task ends", || async { !served.is_active().await }).await;
    let (code, latest) = served.get("/latest_answer").await;
    assert_eq!(code, 200);
    assert_eq!(latest["done"], "true");
    assert_eq!(latest["answer"], "Released and finished.");
    assert_eq!(latest["success"], true);
    assert_eq!(latest["status"], "Ready");
    let block = &latest["blocks"]["0"];
    assert_eq!(block["tool_type"], "bash");
    assert_eq!(block["success"], true);
    assert!(
        block["output"]
            .as_str()
            .is_some_and(|o| o.contains("released")),
        "{block}"
    );
    assert!(procs::processes_with(&format!("waiting-{marker}"), false).is_empty());

    let (code, next) = served
        .post("/query", &json!({"query": "still there?"}))
        .await;
    assert_eq!(code, 200, "{next}");
    assert_eq!(next["answer"], "Still here.");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_model_server_is_a_502_in_agenticseeks_words_and_serving_goes_on() {
    let sb = Sandbox::new();
    // One retry keeps the test short; the first try and the retry both fail.
    sb.write_config("max_retries = 1\n");
    let failure = r#"{"error":"the GPU caught fire"}"#;
    let model = FakeModel::start(vec![
        Reply::status(500, failure),
        Reply::status(500, failure),
        Reply::text("Back on my feet."),
    ]);
    let served = Served::start(&sb, &model);
    let (code, failed) = served.post("/query", &json!({"query": "try it"})).await;
    assert_eq!(code, 502, "{failed}");
    assert!(
        failed["answer"]
            .as_str()
            .is_some_and(|a| a.starts_with("An error occurred:")),
        "{failed}"
    );
    assert_eq!(failed["success"], "False");
    assert_eq!(failed["done"], "true");
    assert_eq!(failed["outcome"], "model_error");
    assert_eq!(model.chat_requests().len(), 2, "the try and its one retry");
    assert!(!served.is_active().await);

    let (code, health) = served.get("/health").await;
    assert_eq!((code, health["status"].clone()), (200, json!("healthy")));
    let (code, next) = served.post("/query", &json!({"query": "again"})).await;
    assert_eq!(code, 200, "{next}");
    assert_eq!(next["answer"], "Back on my feet.");
    assert_eq!(next["success"], "True");
}
