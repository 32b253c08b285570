//! The planner's runner under Stop at each phase and a huge step answer (issue 16 attack).

use crate::fake_model;
use crate::runtime;

use fake_model::{FakeModel, Gate, Reply};
use seek::agent::{AgentHandle, Command, Event, Outcome};
use seek::config::AgentName;
use seek::wire::StepStatus;
use std::time::{Duration, Instant};

fn plan_reply(steps: &[(&str, &str, &str)]) -> String {
    let items: Vec<String> = steps
        .iter()
        .map(|(agent, id, task)| {
            format!(r#"{{"agent": "{agent}", "id": "{id}", "need": [], "task": "{task}"}}"#)
        })
        .collect();
    format!("```json\n{{\"plan\": [{}]}}\n```\n", items.join(","))
}

fn start(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    runtime::spawn(runtime::config(
        &server.url(),
        work,
        &work.join("data"),
        None,
    ))
}

fn plan_task(handle: &AgentHandle, goal: &str) {
    runtime::send(
        handle,
        Command::Submit {
            prompt: goal.into(),
            agent: Some(AgentName::Planner),
            context: None,
        },
    );
}

async fn finished(handle: &mut AgentHandle) -> Vec<Event> {
    runtime::until(handle, |e| matches!(e, Event::TurnFinished { .. })).await
}

fn messages(request: &fake_model::Logged) -> Vec<(String, String)> {
    request.json()["messages"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap_or("").to_owned(),
                        m["content"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_the_plan_is_asked_ends_at_once_and_retry_asks_the_same() {
    let work = tempfile::tempdir().expect("tempdir");
    let gate = Gate::new();
    let one = plan_reply(&[("casual", "1", "greet")]);
    let server = FakeModel::start(vec![
        Reply::Held {
            answer: one.clone(),
            gate: gate.clone(),
        },
        Reply::text(one),
        Reply::text("Hi."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "greet me");
    server.wait_for_request();
    let at = Instant::now();
    runtime::send(&handle, Command::Stop);
    let events = finished(&mut handle).await;
    gate.open();
    assert!(at.elapsed() < Duration::from_secs(5), "{:?}", at.elapsed());
    let Some(Event::TurnFinished { outcome, plan, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(*outcome, Outcome::Stopped);
    assert!(plan.is_none(), "no plan was made: {plan:?}");
    assert!(!events.iter().any(|e| matches!(e, Event::Plan { .. })));

    runtime::send(&handle, Command::Retry);
    let events = finished(&mut handle).await;
    let Some(Event::TurnFinished { outcome, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(*outcome, Outcome::Done, "{events:?}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        messages(&requests[0]),
        messages(&requests[1]),
        "the retry asks as the first time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_replan_ends_at_once_and_skips_the_rest() {
    let work = tempfile::tempdir().expect("tempdir");
    let gate = Gate::new();
    let server = FakeModel::start(vec![
        // Step 1 is a web step: it fails without a model call, and the replan is asked.
        Reply::text(plan_reply(&[
            ("web", "1", "search it"),
            ("casual", "2", "say it"),
        ])),
        Reply::Held {
            answer: plan_reply(&[("casual", "2", "say it anyway")]),
            gate: gate.clone(),
        },
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "search and say");
    let mut events = runtime::until(&mut handle, |e| matches!(e, Event::StepFinished { .. })).await;
    server.wait_for_request(); // the plan
    server.wait_for_request(); // the replan
    let at = Instant::now();
    runtime::send(&handle, Command::Stop);
    events.extend(finished(&mut handle).await);
    gate.open();
    assert!(at.elapsed() < Duration::from_secs(5), "{:?}", at.elapsed());
    let Some(Event::TurnFinished {
        outcome,
        plan: Some(plan),
        ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*outcome, Outcome::Stopped);
    let statuses: Vec<StepStatus> = plan.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [StepStatus::Failed, StepStatus::Skipped]);
    assert!(!events.iter().any(|e| matches!(e, Event::Replanned { .. })));
    assert_eq!(server.chat_requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_step_answer_is_bounded_in_summary_and_in_the_planners_memory() {
    let work = tempfile::tempdir().expect("tempdir");
    let huge: String = (0..400)
        .map(|n| format!("w{n}-{} ", "x".repeat(30)))
        .collect();
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("casual", "1", "talk a lot"),
            ("casual", "2", "then more"),
        ])),
        Reply::text(huge.clone()),
        Reply::text(huge),
        Reply::text(plan_reply(&[("casual", "1", "short")])),
        Reply::text("ok"),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "talk");
    let events = finished(&mut handle).await;
    for e in &events {
        if let Event::StepFinished { summary, .. } = e {
            assert!(summary.chars().count() <= 200, "{}", summary.len());
        }
    }
    let Some(Event::TurnFinished {
        outcome, message, ..
    }) = events.last()
    else {
        unreachable!()
    };
    let errors: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Error { .. } | Event::Step { .. } if format!("{e:?}").contains("rror"))).take(3).collect();
    assert_eq!(*outcome, Outcome::Done, "{message:?} {errors:?}");
    // Step 2 got nothing of step 1 (no need); the follow-up plan request carries the note.
    plan_task(&handle, "again");
    let _ = finished(&mut handle).await;
    let requests = server.chat_requests();
    assert_eq!(
        requests.len(),
        5,
        "{:?}",
        requests
            .iter()
            .map(|r| r.last_user_message().chars().take(80).collect::<String>())
            .collect::<Vec<_>>()
    );
    let follow_up = messages(&requests[3]);
    let total: usize = follow_up.iter().skip(1).map(|(_, c)| c.len()).sum();
    assert!(
        total < 16 * 1024,
        "the follow-up carries {total} bytes of the last plan"
    );
}

/// A step whose reply runs past max_tokens (a verbose model, not a failing server) ends as
/// `ModelError`, and the runner treats every `ModelError` step as "the server failed": the whole
/// plan ends at once, with no replan, and `seek -p` exits with the model-server code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_runs_past_max_tokens_is_replanned_not_fatal() {
    let work = tempfile::tempdir().expect("tempdir");
    let endless: String = (0..40_000).map(|n| format!("w{n} ")).collect();
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("casual", "1", "talk"),
            ("casual", "2", "sum up"),
        ])),
        Reply::text(endless),
        Reply::text(plan_reply(&[("casual", "2", "say it briefly")])),
        Reply::text("Brief."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "talk");
    let events = finished(&mut handle).await;
    let Some(Event::TurnFinished {
        outcome, message, ..
    }) = events.last()
    else {
        unreachable!()
    };
    assert!(
        events.iter().any(|e| matches!(e, Event::Replanned { .. })),
        "no replan; the task ended {outcome:?}: {message:?}"
    );
}
