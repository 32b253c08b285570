//! The agent's side of a new user's first hour, end to end against the fake model server:
//! token usage per round and per task (with and without the server's counts), the model list,
//! the user's own shell commands (`!cmd`) reaching the next request, `@path` attachments and
//! their bounds and refusals, and the records of a reply that was cut.

use crate::support;

use crate::fake_model;
use crate::runtime;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Gate, Reply};
use runtime::{send, submit, until, until_command_finished};
use seek::agent::{
    self, AgentHandle, AnswerFinish, BlockRecord, Command, Event, NotRun, Outcome, TurnUsage,
};
use seek::config::{Config, Env};
use seek::model_factory;
use seek::secrets::Masker;
use seek::session::Sessions;

fn config(server_url: &str, work: &std::path::Path) -> Arc<Config> {
    runtime::config(server_url, &work.join("work"), &work.join("data"), None)
}

fn start(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    runtime::spawn(config(&server.url(), work))
}

/// A runtime that keeps its sessions in `work`'s data dir.
fn start_saving(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    let config = config(&server.url(), work);
    let model = model_factory::connect(&config, &Env::default()).expect("model");
    let masker = Arc::new(Masker::new(Vec::<String>::new()));
    let sessions = Sessions::for_config(&config, masker, "fake");
    agent::spawn_with(config, model, Some(sessions))
}

async fn until_finished(handle: &mut AgentHandle) -> Vec<Event> {
    until(handle, |e| matches!(e, Event::TurnFinished { .. })).await
}

fn turn_usage(events: &[Event]) -> Option<TurnUsage> {
    events.iter().find_map(|e| match e {
        Event::TurnFinished { usage, .. } => Some(*usage),
        _ => None,
    })?
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// The contents of the user messages of chat request `i`.
fn user_messages(server: &FakeModel, i: usize) -> Vec<String> {
    server.chat_requests()[i].json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// OpenAI-style stream lines of `answer` ending with `finish`, and no usage record.
fn raw_reply(answer: &str, finish: &str) -> Reply {
    let mut lines: Vec<String> = answer
        .split_inclusive('\n')
        .map(|piece| {
            let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
            format!("data: {chunk}\n")
        })
        .collect();
    let end = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    lines.push(format!("data: {end}\n"));
    lines.push("data: [DONE]\n".to_owned());
    Reply::Raw { lines }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_round_reports_the_servers_counts_and_the_task_sums_them_without_wait_or_run_time() {
    let work = tempfile::tempdir().expect("tempdir");
    let gate = Gate::new();
    let server = FakeModel::start(vec![
        Reply::Held {
            answer: format!("Waiting.\n{}\n", fence("bash", "sleep 1; echo slept")),
            gate: gate.clone(),
        },
        Reply::text("It slept."),
    ]);
    server.set_context_length(4096);
    // A window this small alone would make the model (`fake`, no size in its name) a small one,
    // whose replies end at their block; the server says it is large.
    server.set_parameters(7_615_616_512);
    let mut handle = start(&server, work.path());
    submit(&handle, "sleep a second");
    server.wait_for_request();
    // The time before the first token is the server's, not the stream's.
    let held = Duration::from_millis(1_500);
    let holding = Instant::now();
    std::thread::sleep(held);
    gate.open();
    let events = until_finished(&mut handle).await;
    assert!(holding.elapsed() >= held);

    let rounds: Vec<(u32, agent::RoundUsage)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { round, usage } => Some((*round, *usage)),
            _ => None,
        })
        .collect();
    assert_eq!(rounds.len(), 2, "{events:?}");
    for (i, (round, usage)) in rounds.iter().enumerate() {
        assert_eq!(*round, i as u32 + 1);
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (11, 7));
        assert!(!usage.estimated);
        assert_eq!(usage.context_window, Some(4096));
        assert!(
            usage.streaming_ms < held.as_secs_f64() * 1000.0,
            "{usage:?}"
        );
        let complete = events
            .iter()
            .position(|e| matches!(e, Event::AnswerComplete { round: r, .. } if r == round));
        let reported = events
            .iter()
            .position(|e| matches!(e, Event::Usage { round: r, .. } if r == round));
        assert_eq!(
            reported,
            complete.map(|c| c + 1),
            "usage follows its answer"
        );
    }
    let total = turn_usage(&events).expect("the task's usage");
    assert_eq!(
        (
            total.prompt_tokens,
            total.completion_tokens,
            total.context_tokens
        ),
        (22, 14, 11)
    );
    assert_eq!(total.context_window, Some(4096));
    assert!(!total.estimated);
    // Neither the held start nor the block's second of sleep is streaming time.
    assert!(total.streaming_ms < 1_000.0, "{total:?}");
}

#[tokio::test]
async fn without_the_servers_counts_usage_is_estimated() {
    let work = tempfile::tempdir().expect("tempdir");
    let answer = "An answer of exactly forty-two bytes here.";
    assert_eq!(answer.len(), 42);
    let server = FakeModel::start(vec![raw_reply(answer, "stop")]);
    let mut handle = start(&server, work.path());
    submit(&handle, "say something");
    let events = until_finished(&mut handle).await;
    let total = turn_usage(&events).expect("usage");
    assert!(total.estimated);
    assert_eq!(total.completion_tokens, 14, "42 bytes at three a token");
    assert!(
        total.prompt_tokens > 100,
        "the system prompt counts: {total:?}"
    );
    assert_eq!(total.context_tokens, total.prompt_tokens);
}

#[tokio::test]
async fn a_task_that_never_reached_the_model_has_no_usage() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::status(400, r#"{"error":"bad request"}"#)]);
    let mut handle = start(&server, work.path());
    submit(&handle, "hello");
    let events = until_finished(&mut handle).await;
    assert!(!events.iter().any(|e| matches!(e, Event::Usage { .. })));
    assert_eq!(turn_usage(&events), None);
}

#[test]
fn the_json_done_line_carries_the_tasks_usage() {
    let sb = support::Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Hello.")]);
    let out = support::run(&mut sb.seek_at(&server.url(), &["--json", "-p", "hi"]));
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let lines: Vec<serde_json::Value> = support::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let usage_line = lines
        .iter()
        .find(|l| l["type"] == "usage")
        .expect("a usage event");
    assert_eq!(usage_line["round"], 1);
    assert_eq!(usage_line["prompt_tokens"], 11);
    let done = lines.last().expect("lines");
    assert_eq!(done["type"], "done");
    let usage = &done["usage"];
    assert_eq!(usage["prompt_tokens"], 11, "{done}");
    assert_eq!(usage["completion_tokens"], 7);
    assert_eq!(usage["context_tokens"], 11);
    assert_eq!(usage["estimated"], false);
    assert!(usage["streaming_ms"].as_f64().is_some_and(|ms| ms >= 0.0));
}

#[tokio::test]
async fn the_model_list_is_the_servers_and_a_failure_is_its_error() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(Vec::new());
    let mut handle = start(&server, work.path());
    send(&handle, Command::ListModels);
    let events = until(&mut handle, |e| matches!(e, Event::ModelList { .. })).await;
    assert_eq!(events.len(), 1, "nothing else: {events:?}");
    let Some(Event::ModelList {
        current,
        models,
        error,
    }) = events.last()
    else {
        unreachable!()
    };
    assert_eq!(current, "fake");
    let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["fake-coder:7b", "fake-chat:1b"]);
    assert_eq!(error, &None);

    // A server that is not there: one answer with the error, no error event.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let config = config(&url, work.path());
    let model = model_factory::connect(&config, &Env::default()).expect("model");
    let mut handle = agent::spawn(config, model);
    send(&handle, Command::ListModels);
    let events = until(&mut handle, |e| matches!(e, Event::ModelList { .. })).await;
    assert_eq!(events.len(), 1, "no error event before it: {events:?}");
    let Some(Event::ModelList { models, error, .. }) = events.last() else {
        unreachable!()
    };
    assert!(models.is_empty());
    assert!(error.as_deref().is_some_and(|e| !e.is_empty()), "{error:?}");
    assert!(handle.events.try_recv().is_err(), "and nothing after it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_command_is_shown_as_round_zero_and_reaches_the_next_request() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("It failed with 3.")]);
    let mut handle = start(&server, work.path());
    send(
        &handle,
        Command::Shell {
            command: "echo from-the-user; pwd; exit 3".into(),
        },
    );
    let (events, record) = until_command_finished(&mut handle).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TurnStarted { .. } | Event::Status { .. })),
        "a command is not a task: {events:?}"
    );
    assert!(matches!(
        &events[0],
        Event::BlockStarted { round: 0, index: 0, tool, .. } if tool == "bash"
    ));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::BlockOutput { round: 0, index: 0, text } if text.contains("from-the-user")))
    );
    assert_eq!(record.exit_code, Some(3));
    assert!(
        record
            .output
            .contains(&work.path().join("work").display().to_string())
    );

    send(
        &handle,
        Command::Shell {
            command: "echo second".into(),
        },
    );
    let (_, second) = until_command_finished(&mut handle).await;
    assert_eq!(second.index, 1, "the user's commands are counted");

    submit(&handle, "why did it fail?");
    until_finished(&mut handle).await;
    let users = user_messages(&server, 0);
    assert_eq!(users.len(), 1, "the notes and the prompt go as one message");
    let sent = &users[0];
    let first = sent
        .find("from-the-user")
        .expect("the first command's output");
    let second = sent.find("second").expect("the second command's output");
    let prompt = sent.find("why did it fail?").expect("the prompt");
    assert!(first < second && second < prompt, "{sent}");
    assert!(sent.contains("exited with code 3"), "{sent}");
    assert!(sent.contains("echo from-the-user; pwd; exit 3"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_can_be_stopped_and_waits_for_no_task() {
    let work = tempfile::tempdir().expect("tempdir");
    let gate = Gate::new();
    let server = FakeModel::start(vec![Reply::Held {
        answer: "done".into(),
        gate: gate.clone(),
    }]);
    let mut handle = start(&server, work.path());
    send(
        &handle,
        Command::Shell {
            command: "echo started; sleep 60".into(),
        },
    );
    until(
        &mut handle,
        |e| matches!(e, Event::BlockOutput { text, .. } if text.contains("started")),
    )
    .await;
    submit(&handle, "too early");
    let refused = until(&mut handle, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(refused.last(), Some(Event::Error { message }) if message.contains("a command is running"))
    );
    let stopping = Instant::now();
    send(&handle, Command::Stop);
    let (_, record) = until_command_finished(&mut handle).await;
    assert!(record.stopped, "{record:?}");
    assert!(stopping.elapsed() < Duration::from_secs(10));

    // A command while a task runs is refused.
    submit(&handle, "a task");
    server.wait_for_request();
    send(
        &handle,
        Command::Shell {
            command: "echo no".into(),
        },
    );
    let refused = until(&mut handle, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(refused.last(), Some(Event::Error { message }) if message.contains("a task is running")),
        "{refused:?}"
    );
    gate.open();
    let events = until_finished(&mut handle).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::BlockStarted { round: 0, .. }))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_keeps_the_users_command_for_the_next_task() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("I see the marker.")]);
    let mut handle = start_saving(&server, work.path());
    send(
        &handle,
        Command::Shell {
            command: "echo resumable-marker".into(),
        },
    );
    until_command_finished(&mut handle).await;
    send(&handle, Command::Shutdown);
    handle.task.await.expect("clean end");

    let mut handle = start_saving(&server, work.path());
    send(&handle, Command::Resume { id: None });
    until(&mut handle, |e| matches!(e, Event::Resumed { .. })).await;
    send(
        &handle,
        Command::Shell {
            command: "true".into(),
        },
    );
    let (_, record) = until_command_finished(&mut handle).await;
    assert_eq!(record.index, 1, "numbering goes on in the resumed session");
    submit(&handle, "what did I run?");
    until_finished(&mut handle).await;
    let sent = user_messages(&server, 0).join("\n");
    assert!(sent.contains("resumable-marker"), "{sent}");
}

#[tokio::test]
async fn an_attached_files_content_reaches_the_model_and_a_retry_keeps_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("A list."), Reply::text("Again.")]);
    let mut handle = start(&server, work.path());
    let file = work.path().join("work/notes.md");
    std::fs::write(&file, "- buy milk\n- attached-marker\n").expect("write");
    submit(&handle, "summarise @notes.md, thanks @everyone");
    let events = until_finished(&mut handle).await;
    let started = events
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { prompt, .. } if prompt == "summarise @notes.md, thanks @everyone"))
        .expect("the prompt as typed");
    // Under `auto`, the router's choice comes first.
    let next = started + 1 + usize::from(matches!(events[started + 1], Event::Routed { .. }));
    let Event::Attached { files } = &events[next] else {
        panic!("Attached follows TurnStarted (and Routed): {events:?}");
    };
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "notes.md");
    assert_eq!(files[0].bytes, 29);
    assert!(!events.iter().any(|e| matches!(e, Event::Error { .. })));
    let sent = user_messages(&server, 0).join("\n");
    assert!(
        sent.starts_with("summarise @notes.md, thanks @everyone\n\n"),
        "{sent}"
    );
    assert!(
        sent.contains("Attached file `notes.md`:\n```\n- buy milk\n- attached-marker\n```"),
        "{sent}"
    );

    std::fs::remove_file(&file).expect("remove");
    send(&handle, Command::Retry);
    let events = until_finished(&mut handle).await;
    assert!(events.iter().any(|e| matches!(e, Event::Attached { .. })));
    let resent = user_messages(&server, 1).join("\n");
    assert_eq!(resent, sent, "the retry sends the same attachment");
}

#[tokio::test]
async fn attachments_are_bounded_and_fifos_and_devices_are_refused_at_once() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("Read.")]);
    let mut handle = start(&server, work.path());
    let dir = work.path().join("work");
    std::fs::write(dir.join("big.log"), "0123456789\n".repeat(10_000)).expect("write");
    nix::unistd::mkfifo(&dir.join("pipe"), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let began = Instant::now();
    submit(
        &handle,
        "look at @big.log @pipe @/dev/zero @/proc/self/status",
    );
    let events = until_finished(&mut handle).await;
    assert!(began.elapsed() < Duration::from_secs(20), "nothing waited");
    let files = events
        .iter()
        .find_map(|e| match e {
            Event::Attached { files } => Some(files.clone()),
            _ => None,
        })
        .expect("attached");
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    assert!(total <= 32 * 1024, "{files:?}");
    assert!(files[0].truncated && files[0].path == "big.log");
    let refusal = events
        .iter()
        .find_map(|e| match e {
            Event::Error { message } => Some(message.clone()),
            _ => None,
        })
        .expect("the refusals are told");
    assert!(refusal.contains("pipe: not a regular file"), "{refusal}");
    assert!(
        refusal.contains("/dev/zero: not a regular file"),
        "{refusal}"
    );
    let sent = user_messages(&server, 0).join("\n");
    assert!(sent.len() < 40 * 1024, "{} bytes sent", sent.len());
    assert!(
        sent.contains("only its first"),
        "the model is told it was cut"
    );
}

#[tokio::test]
async fn the_blocks_of_a_repeating_reply_are_not_run_and_say_why() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::Repeat {
            unit: format!("Again:\n{}\n", fence("bash", "touch ran-it")),
            limit: 10 << 20,
        },
        Reply::text("Sorry, done."),
    ]);
    let mut handle = start(&server, work.path());
    submit(&handle, "loop");
    let events = until_finished(&mut handle).await;
    let blocks = events
        .iter()
        .find_map(|e| match e {
            Event::AnswerComplete {
                finish: AnswerFinish::Repetition,
                blocks,
                ..
            } => Some(*blocks),
            _ => None,
        })
        .expect("a reply cut for repeating itself");
    assert!(blocks > 0);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::BlockStarted { .. }))
    );
    let cut: Vec<&BlockRecord> = events
        .iter()
        .filter_map(|e| match e {
            Event::BlockFinished { record } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(cut.len(), blocks, "every parsed block is finished");
    assert!(
        cut.iter()
            .all(|r| r.not_run == Some(NotRun::ReplyCut) && r.skipped)
    );
    assert!(!work.path().join("work/ran-it").exists());
    assert!(
        !events.iter().any(|e| matches!(e, Event::Error { .. })),
        "a cut is no error"
    );
    let Some(Event::TurnFinished {
        blocks: records,
        outcome,
        ..
    }) = events.last()
    else {
        unreachable!()
    };
    // None of its blocks ran, let alone worked: a coder task so ended gave up.
    assert_eq!(*outcome, Outcome::GaveUp);
    assert_eq!(records.len(), blocks);
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(feedback.contains("kept repeating"), "{feedback}");
    assert!(feedback.contains("was run") || feedback.contains("was not run"));
}

#[tokio::test]
async fn a_reply_cut_at_max_tokens_runs_its_whole_blocks_but_not_the_unclosed_one() {
    let work = tempfile::tempdir().expect("tempdir");
    let answer = format!(
        "First:\n{}\nThen:\n```bash\ntouch second\n",
        fence("bash", "touch first")
    );
    let server = FakeModel::start(vec![
        raw_reply(&answer, "length"),
        Reply::text("Done in two."),
    ]);
    let mut handle = start(&server, work.path());
    submit(&handle, "two files");
    let events = until_finished(&mut handle).await;
    assert!(events.iter().any(|e| matches!(
        e,
        Event::AnswerComplete {
            finish: AnswerFinish::Length,
            blocks: 2,
            ..
        }
    )));
    let records: Vec<&BlockRecord> = events
        .iter()
        .filter_map(|e| match e {
            Event::BlockFinished { record } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records[0].success && records[0].not_run.is_none());
    assert_eq!(records[1].not_run, Some(NotRun::ReplyCut));
    assert!(work.path().join("work/first").exists());
    assert!(!work.path().join("work/second").exists());
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(feedback.contains("token limit"), "{feedback}");
}
