//! The agent runtime through its command/event channel, as the TUI will drive it: retry, stop,
//! and commands that arrive at the wrong time.

use crate::fake_model;
use crate::runtime;

use fake_model::{FakeModel, Gate, Reply};
use seek::agent::{AgentHandle, ApprovalDecision, Command, Event, Outcome};

fn start(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    start_with(server, work, None)
}

fn start_with(server: &FakeModel, work: &std::path::Path, approval: Option<&str>) -> AgentHandle {
    runtime::spawn(runtime::config(
        &server.url(),
        work,
        &work.join("data"),
        approval,
    ))
}

async fn until_finished(handle: &mut AgentHandle) -> (Outcome, Vec<Event>) {
    let mut seen = Vec::new();
    while let Some(event) = handle.events.recv().await {
        if let Event::TurnFinished { outcome, .. } = &event {
            let outcome = *outcome;
            seen.push(event);
            return (outcome, seen);
        }
        seen.push(event);
    }
    panic!("the agent stopped without finishing the turn: {seen:?}");
}

fn submit(handle: &AgentHandle, prompt: &str) {
    handle
        .commands
        .send(Command::Submit {
            prompt: prompt.into(),
            agent: None,
            context: None,
        })
        .expect("agent alive");
}

#[tokio::test]
async fn retry_forgets_the_last_turn_and_asks_again() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let mut handle = start(&server, work.path());
    submit(&handle, "hello");
    assert_eq!(until_finished(&mut handle).await.0, Outcome::Done);
    handle.commands.send(Command::Retry).expect("alive");
    let (outcome, events) = until_finished(&mut handle).await;
    assert_eq!(outcome, Outcome::Done);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnStarted { prompt, .. } if prompt == "hello"))
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let contents: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents.len(),
        2,
        "system prompt and the prompt, without the first answer: {contents:?}"
    );
    assert_eq!(contents[1], "hello");
}

#[tokio::test]
async fn a_follow_up_sees_the_previous_exchange() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("Paris."), Reply::text("About 2 million.")]);
    let mut handle = start(&server, work.path());
    submit(&handle, "capital of France?");
    until_finished(&mut handle).await;
    submit(&handle, "population?");
    until_finished(&mut handle).await;
    let messages = server.chat_requests()[1].json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let contents: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        &contents[1..],
        ["capital of France?", "Paris.", "population?"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_streaming_turn_and_the_next_one_works() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::Stall {
            answer: "thinking hard".into(),
        },
        Reply::text("fresh start"),
    ]);
    let mut handle = start(&server, work.path());
    submit(&handle, "slow one");
    // Wait for streamed text, then stop.
    while let Some(event) = handle.events.recv().await {
        if matches!(event, Event::AnswerDelta { .. }) {
            break;
        }
    }
    submit(&handle, "too early");
    handle.commands.send(Command::Stop).expect("alive");
    let (outcome, events) = until_finished(&mut handle).await;
    assert_eq!(outcome, Outcome::Stopped);
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Error { message } if message.contains("a task is running"))
        ),
        "a submit during a turn is refused: {events:?}"
    );
    server.wait_for_hangup();
    submit(&handle, "again");
    let (outcome, events) = until_finished(&mut handle).await;
    assert_eq!(outcome, Outcome::Done);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnFinished { answer, .. } if answer == "fresh start"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_is_heard_while_the_server_is_asked_for_its_context_window() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("after the probe")]);
    let gate = Gate::new();
    server.hold_window_reports(gate.clone());
    let mut handle = start(&server, work.path());
    submit(&handle, "first");
    // The turn is waiting for the server's window report, which the gate holds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.all_requests().iter().any(|r| r.path == "/props") {
        assert!(
            std::time::Instant::now() < deadline,
            "the window probe never reached the server"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    handle.commands.send(Command::Stop).expect("alive");
    let (outcome, events) = until_finished(&mut handle).await;
    assert_eq!(outcome, Outcome::Stopped);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnFinished { rounds: 0, .. })),
        "stopped before its first round, while the probe was held: {events:?}"
    );
    assert!(server.chat_requests().is_empty(), "no reply was asked for");
    gate.open();
    submit(&handle, "second");
    let (outcome, events) = until_finished(&mut handle).await;
    assert_eq!(outcome, Outcome::Done);
    assert!(
        events.iter().any(
            |e| matches!(e, Event::TurnFinished { answer, .. } if answer == "after the probe")
        )
    );
}

#[tokio::test]
async fn retry_with_nothing_to_retry_is_an_error_event() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![]);
    let mut handle = start(&server, work.path());
    handle.commands.send(Command::Retry).expect("alive");
    let event = handle.events.recv().await.expect("an event");
    assert!(matches!(event, Event::Error { message } if message.contains("no task to retry")));
}

/// The next event, within a bounded wait.
async fn next_event(handle: &mut AgentHandle) -> Event {
    tokio::time::timeout(std::time::Duration::from_secs(30), handle.events.recv())
        .await
        .expect("an event within 30 s")
        .expect("the agent is alive")
}

#[tokio::test]
async fn only_the_answer_with_the_questions_id_settles_an_approval() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text("Saying it.\n```bash\necho ran-it\n```\n"),
        Reply::text("Made."),
    ]);
    let mut handle = start_with(&server, work.path(), Some("ask"));
    let answer = |id, decision| Command::Approve { id, decision };
    // Before any question, an answer settles nothing (and is not kept for the next one).
    handle
        .commands
        .send(answer(1, ApprovalDecision::Decline))
        .expect("alive");
    assert!(
        matches!(next_event(&mut handle).await, Event::Error { message } if message.contains("no block is waiting")),
    );
    submit(&handle, "say it");
    let id = loop {
        if let Event::ApprovalRequested { id, tool, .. } = next_event(&mut handle).await {
            assert_eq!(tool, "bash");
            break id;
        }
    };
    handle
        .commands
        .send(answer(id + 1, ApprovalDecision::Decline))
        .expect("alive");
    let refused = next_event(&mut handle).await;
    assert!(
        matches!(&refused, Event::Error { message } if message.contains(&format!("approval {id})"))),
        "another id is refused and names the question waiting: {refused:?}"
    );
    handle
        .commands
        .send(answer(id, ApprovalDecision::Run))
        .expect("alive");
    let (outcome, events) = until_finished(&mut handle).await;
    assert_eq!(outcome, Outcome::Done);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::BlockFinished { record } if record.output == "ran-it\n")),
        "{events:?}"
    );
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::BlockStarted { .. }))
        .count();
    assert_eq!(started, 1, "the block ran once, after the right answer");
    // A second answer to a settled question is too late.
    handle
        .commands
        .send(answer(id, ApprovalDecision::Run))
        .expect("alive");
    assert!(
        matches!(next_event(&mut handle).await, Event::Error { message } if message.contains(&format!("approval {id} came too late"))),
    );
}
