//! The planner end to end against the fake model server: a plan's steps run in order with the
//! results they need, a failed step is replanned once, a plan that never parses fails clearly,
//! Stop reaches a running step's process, and `--json` carries the plan's events. The fake
//! server's request log is the measure of model calls (n + 1 for a plan of n steps).

use crate::fake_model;
use crate::procs;
use crate::runtime;
use crate::support;

use std::sync::Arc;

use fake_model::{FakeModel, Reply};
use seek::agent::{AgentHandle, Command, Event, Outcome};
use seek::config::AgentName;
use seek::wire::{PlanStep, StepStatus};
use support::{Sandbox, run_within, stderr, stdout};

const BOUND: std::time::Duration = std::time::Duration::from_secs(120);

/// A planner reply in AgenticSeek's format: a heading per step, then the ```json plan. Each
/// step: (agent, id, need as JSON, task).
fn plan_reply(steps: &[(&str, &str, &str, &str)]) -> String {
    let headings: Vec<String> = steps
        .iter()
        .map(|(_, id, _, task)| format!("## Task {id}: {task}"))
        .collect();
    let items: Vec<String> = steps
        .iter()
        .map(|(agent, id, need, task)| {
            format!(r#"{{"agent": "{agent}", "id": "{id}", "need": {need}, "task": "{task}"}}"#)
        })
        .collect();
    format!(
        "{}\n\n```json\n{{\"plan\": [\n{}\n]}}\n```\n",
        headings.join("\n"),
        items.join(",\n")
    )
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

fn start(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    runtime::spawn(runtime::config(
        &server.url(),
        work,
        &work.join("data"),
        None,
    ))
}

/// A runtime whose agents give up after one failed round (a failing step fails at once).
fn start_strict(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    let config = runtime::config(&server.url(), work, &work.join("data"), None);
    let mut config = (*config).clone();
    config.max_attempts.value = 1;
    runtime::spawn(Arc::new(config))
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

async fn until_finished(handle: &mut AgentHandle) -> Vec<Event> {
    runtime::until(handle, |e| matches!(e, Event::TurnFinished { .. })).await
}

/// The end's outcome, rounds and plan.
fn ending(events: &[Event]) -> (Outcome, u32, Vec<PlanStep>, Option<String>) {
    match events.last() {
        Some(Event::TurnFinished {
            outcome,
            rounds,
            plan,
            message,
            agent: AgentName::Planner,
            ..
        }) => (
            *outcome,
            *rounds,
            plan.clone().unwrap_or_default(),
            message.clone(),
        ),
        other => panic!("the planner's end last: {other:?}"),
    }
}

fn statuses(plan: &[PlanStep]) -> Vec<StepStatus> {
    plan.iter().map(|s| s.status).collect()
}

/// The ids of the steps started, in order.
fn started(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::StepStarted { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// The messages of a request, as (role, content).
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
async fn step_two_is_given_step_ones_output_and_the_plan_costs_n_plus_one_calls() {
    // Alone: a block's end claims the test process's other children (another test's seek).
    if support::run_alone!(
        "step_two_is_given_step_ones_output_and_the_plan_costs_n_plus_one_calls",
        &[],
    ) {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("coder", "1", "[]", "compute the magic number"),
            ("coder", "2", r#"["1"]"#, "report the magic number"),
        ])),
        Reply::text(format!(
            "Computing.\n{}\n",
            fence("python", "print('MAGIC-' + str(7000 + 731))")
        )),
        Reply::text("The magic number is MAGIC-7731."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "find the magic number and report it");
    let events = until_finished(&mut handle).await;
    let (outcome, rounds, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::Done, "{message:?} {events:?}");
    assert_eq!(statuses(&plan), [StepStatus::Done, StepStatus::Done]);
    assert_eq!(started(&events), ["1", "2"]);

    let requests = server.chat_requests();
    // The measure: one plan call and one call per step (each step finished in one round).
    assert_eq!(requests.len(), 3, "n + 1 model calls for n = 2");
    assert_eq!(rounds, 3, "the planner's call and the steps' rounds");
    let step_two = messages(&requests[2]);
    assert_eq!(step_two.len(), 2, "a step starts clean: {step_two:?}");
    assert_eq!(step_two[0].0, "system");
    let prompt = &step_two[1].1;
    assert!(prompt.contains("According to agent 1"), "{prompt}");
    assert!(
        prompt.contains("MAGIC-7731"),
        "step 1's block output: {prompt}"
    );
    assert!(
        prompt.ends_with("Your task is:\nreport the magic number"),
        "{prompt}"
    );
    // Step 1 needed nothing and was told so.
    assert!(
        messages(&requests[1])[1]
            .1
            .contains("No needed informations.")
    );

    // The step's own events nest under it; the end carries every step's blocks.
    assert!(events.iter().any(|e| matches!(e,
        Event::Step { step, event } if step == "1" && matches!(**event, Event::BlockFinished { .. }))));
    let Some(Event::TurnFinished { blocks, answer, .. }) = events.last() else {
        unreachable!("checked by ending");
    };
    assert_eq!(blocks.len(), 1);
    assert!(blocks[0].output.contains("MAGIC-7731"));
    assert_eq!(answer, "The magic number is MAGIC-7731.");
    assert!(events.iter().any(|e| matches!(e,
        Event::StepFinished { id, success: true, summary } if id == "2" && summary == "The magic number is MAGIC-7731.")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_step_is_replanned_once_and_the_new_step_runs() {
    // Alone: a block's end claims the test process's other children (another test's seek).
    if support::run_alone!("a_failed_step_is_replanned_once_and_the_new_step_runs", &[]) {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("coder", "1", "[]", "run the broken script"),
            ("coder", "2", r#"["1"]"#, "use its output"),
        ])),
        Reply::text(fence("python", "raise SystemExit('BROKEN-42')")),
        Reply::text(plan_reply(&[(
            "casual",
            "2",
            "[]",
            "explain that the script is broken",
        )])),
        Reply::text("The script is broken."),
    ]);
    let mut handle = start_strict(&server, work.path());
    plan_task(&handle, "run the script");
    let events = until_finished(&mut handle).await;
    let (outcome, rounds, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::Done, "{message:?}");
    assert_eq!(rounds, 4);
    let replans: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Replanned { .. }))
        .collect();
    assert_eq!(replans.len(), 1, "exactly one replan: {replans:?}");
    let Event::Replanned {
        steps,
        replans: count,
        reason,
    } = replans[0]
    else {
        unreachable!("filtered");
    };
    assert_eq!(*count, 1);
    assert!(reason.starts_with("step 1 (coder) failed"), "{reason}");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].status, StepStatus::Failed);
    assert_eq!(plan[1].agent, AgentName::Casual);
    assert_eq!(plan[1].task, "explain that the script is broken");
    assert_eq!(statuses(&plan), [StepStatus::Failed, StepStatus::Done]);
    assert_eq!(started(&events), ["1", "2"]);

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    // The replan is asked in the planner's conversation, with the failure's output.
    let replan = messages(&requests[2]);
    assert_eq!(replan[1].1, "run the script", "the goal: {replan:?}");
    let asked = &replan.last().expect("a request").1;
    assert!(asked.contains("Step 1 (coder) failed"), "{asked}");
    assert!(
        asked.contains("BROKEN-42"),
        "the failed step's output: {asked}"
    );
}

#[test]
fn a_plan_that_never_parses_fails_after_four_replies_with_exit_1() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("I would rather chat."),
        Reply::text("```json\n{\"plan\": [\n```"),
        Reply::text("```json\n{\"plan\": []}\n```"),
        Reply::text("Still no plan."),
    ]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "planner", "-p", "do three things"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no plan could be read after 4 replies: no plan was found"),
        "{err}"
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4, "four replies, no fifth request");
    for retry in &requests[1..] {
        let last = retry.last_user_message();
        assert!(
            last.starts_with("Failed to parse the tasks."),
            "AgenticSeek's retry text: {last}"
        );
    }
    assert!(requests[2].last_user_message().contains("not valid JSON"));
    assert!(requests[3].last_user_message().contains("no steps"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_step_two_kills_its_process_at_once_and_skips_the_rest() {
    // Alone: a block's end claims the test process's other children (another test's seek).
    if support::run_alone!(
        "stop_during_step_two_kills_its_process_at_once_and_skips_the_rest",
        &[],
    ) {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let marker = "30.5817";
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("casual", "1", "[]", "say hello"),
            ("coder", "2", "[]", "wait a long time"),
            ("casual", "3", r#"["2"]"#, "say goodbye"),
        ])),
        Reply::text("Hello."),
        Reply::text(fence("bash", &format!("echo waiting; sleep {marker}"))),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "hello, wait, goodbye");
    let mut events = runtime::until(&mut handle, |e| {
        matches!(e, Event::Step { step, event } if step == "2" && matches!(**event, Event::BlockStarted { .. }))
    })
    .await;
    let stopped_at = std::time::Instant::now();
    runtime::send(&handle, Command::Stop);
    events.extend(until_finished(&mut handle).await);
    // Far below the block's 30 s: the stop reached it, it did not run out.
    let took = stopped_at.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    let (outcome, _, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::Stopped, "{message:?}");
    assert!(
        procs::processes_with(marker, false).is_empty(),
        "the step's block is gone when the task ends"
    );
    assert_eq!(
        statuses(&plan),
        [StepStatus::Done, StepStatus::Failed, StepStatus::Skipped]
    );
    assert!(events.iter().any(|e| matches!(e,
        Event::Step { step, event } if step == "2"
            && matches!(&**event, Event::BlockFinished { record } if record.stopped))));
    assert_eq!(started(&events), ["1", "2"], "step 3 never starts");
    assert_eq!(server.chat_requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_replays_the_whole_planner_task_from_the_goal() {
    let work = tempfile::tempdir().expect("tempdir");
    let one_step = plan_reply(&[("casual", "1", "[]", "greet")]);
    let server = FakeModel::start(vec![
        Reply::text(one_step.clone()),
        Reply::text("Hi."),
        Reply::text(one_step),
        Reply::text("Hi again."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "greet me");
    assert_eq!(ending(&until_finished(&mut handle).await).0, Outcome::Done);
    runtime::send(&handle, Command::Retry);
    let events = until_finished(&mut handle).await;
    assert!(matches!(
        events.first(),
        Some(Event::TurnStarted {
            agent: AgentName::Planner,
            ..
        })
    ));
    let (outcome, _, plan, _) = ending(&events);
    assert_eq!(outcome, Outcome::Done);
    assert_eq!(statuses(&plan), [StepStatus::Done]);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        messages(&requests[0]),
        messages(&requests[2]),
        "the retry asks for the plan exactly as the first time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_task_sees_the_plan_and_what_its_steps_did() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[("casual", "1", "[]", "name a colour")])),
        Reply::text("VERMILION."),
        Reply::text("It was vermilion."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "pick a colour");
    until_finished(&mut handle).await;
    runtime::send(
        &handle,
        Command::Submit {
            prompt: "which colour was it?".into(),
            agent: Some(AgentName::Casual),
            context: None,
        },
    );
    until_finished_any(&mut handle).await;
    let follow_up = messages(&server.chat_requests()[2]);
    let contents: Vec<&str> = follow_up.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        contents.len(),
        4,
        "system, goal, the plan's note, the question: {contents:?}"
    );
    assert_eq!(contents[1], "pick a colour");
    assert!(
        contents[2].contains("## Task 1: name a colour"),
        "{}",
        contents[2]
    );
    assert!(
        contents[2].contains("- step 1 (casual) done: VERMILION."),
        "{}",
        contents[2]
    );
    assert_eq!(follow_up[2].0, "assistant");
}

async fn until_finished_any(handle: &mut AgentHandle) -> Vec<Event> {
    runtime::until(handle, |e| matches!(e, Event::TurnFinished { .. })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_step_without_a_search_engine_fails_and_is_replanned() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("web", "1", "[]", "search the release date"),
            ("casual", "2", r#"["1"]"#, "summarise it"),
        ])),
        Reply::text(plan_reply(&[(
            "casual",
            "2",
            "[]",
            "answer from knowledge",
        )])),
        Reply::text("From what I know: spring."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "when was it released?");
    let events = until_finished(&mut handle).await;
    let (outcome, _, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::Done, "{message:?}");
    assert!(events.iter().any(|e| matches!(e,
        Event::StepFinished { id, success: false, summary } if id == "1" && summary.contains("no search engine is configured"))));
    assert!(events.iter().any(|e| matches!(e,
        Event::Replanned { reason, .. } if reason.contains("step 1 (web) failed"))));
    assert_eq!(statuses(&plan), [StepStatus::Failed, StepStatus::Done]);
    // The web step asked no model (there is no search engine to search with): the plan, the
    // replan, the new step.
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 3);
    let asked = requests[1].last_user_message();
    assert!(asked.contains("no search engine is configured"), "{asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agenticseeks_canned_plan_with_null_needs_runs_end_to_end() {
    let work = tempfile::tempdir().expect("tempdir");
    // AgenticSeek's `test` provider's plan: need null, null, ["1","2"] (its web steps are
    // casual here: these tests configure no search engine).
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("casual", "1", "null", "find the first fact"),
            ("casual", "2", "null", "find the second fact"),
            ("file", "3", r#"["1", "2"]"#, "write both facts down"),
        ])),
        Reply::text("FACT-ONE."),
        Reply::text("FACT-TWO."),
        Reply::text("Both facts noted."),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "gather two facts and note them");
    let events = until_finished(&mut handle).await;
    let (outcome, rounds, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::Done, "{message:?}");
    assert_eq!(
        statuses(&plan),
        [StepStatus::Done, StepStatus::Done, StepStatus::Done]
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4, "n + 1 model calls for n = 3");
    assert_eq!(rounds, 4);
    let third = requests[3].last_user_message();
    assert!(
        third.contains("According to agent 1:\nFACT-ONE."),
        "{third}"
    );
    assert!(
        third.contains("According to agent 2:\nFACT-TWO."),
        "{third}"
    );
}

#[test]
fn json_carries_the_plan_its_steps_and_the_done_record() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("casual", "1", "[]", "say one"),
            ("casual", "2", r#"["1"]"#, "say two"),
        ])),
        Reply::text("one"),
        Reply::text("two"),
    ]);
    let out = run_within(
        &mut sb.seek_at(
            &server.url(),
            &["--agent", "planner", "--json", "-p", "count to two"],
        ),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let of_type =
        |t: &str| -> Vec<&serde_json::Value> { lines.iter().filter(|l| l["type"] == t).collect() };
    let plan = of_type("plan");
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0]["steps"][1]["need"], serde_json::json!(["1"]));
    assert_eq!(plan[0]["steps"][0]["status"], "pending");
    assert_eq!(of_type("step_started").len(), 2);
    let finished = of_type("step_finished");
    assert_eq!(finished.len(), 2);
    assert_eq!(finished[1]["summary"], "two");
    assert_eq!(finished[1]["success"], true);
    assert!(
        lines
            .iter()
            .any(|l| l["step"] == "2" && l["type"] == "answer_complete" && l["answer"] == "two"),
        "a step's events carry its id"
    );
    let done = lines.last().expect("a done line");
    assert_eq!(done["type"], "done");
    assert_eq!(done["agent"], "planner");
    assert_eq!(done["success"], true);
    assert_eq!(done["answer"], "two");
    assert_eq!(done["plan"][0]["status"], "done");
    assert_eq!(done["plan"][1]["status"], "done");
    assert_eq!(done["rounds"], 3);
}

#[test]
fn plain_mode_prints_the_plan_s_progress_and_the_last_answer() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("casual", "1", "[]", "say one"),
            ("casual", "2", "[]", "say two"),
        ])),
        Reply::text("one"),
        Reply::text("two\u{1b}[2J"),
    ]);
    let out = run_within(
        &mut sb.seek_at(&server.url(), &["--agent", "planner", "-p", "count"]),
        BOUND,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    for line in [
        "seek: plan: 2 steps",
        "  1 (casual): say one",
        "seek: step 1 (casual): say one",
        "seek: step 1 done: one",
        "seek: step 2 done: two",
    ] {
        assert!(err.lines().any(|l| l == line), "{line:?} in {err}");
    }
    assert!(!err.contains('\u{1b}') && !stdout(&out).contains('\u{1b}'));
    assert_eq!(stdout(&out), "two\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_two_replans_a_failed_step_ends_the_task_naming_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[("web", "1", "[]", "search once")])),
        Reply::text(plan_reply(&[("web", "2", "[]", "search twice")])),
        Reply::text(plan_reply(&[("web", "3", "[]", "search thrice")])),
        Reply::text(plan_reply(&[("casual", "4", "[]", "never asked")])),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "search");
    let events = until_finished(&mut handle).await;
    let (outcome, _, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::GaveUp);
    let message = message.expect("why");
    assert!(
        message.starts_with("step 3 (web) failed: no search engine is configured"),
        "{message}"
    );
    assert!(message.contains("rewritten 2 times"), "{message}");
    assert_eq!(
        statuses(&plan),
        [StepStatus::Failed, StepStatus::Failed, StepStatus::Failed]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Replanned { .. }))
            .count(),
        2
    );
    assert_eq!(server.chat_requests().len(), 3, "no third replan is asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replan_that_never_parses_ends_the_task_naming_the_failed_step() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![
        Reply::text(plan_reply(&[
            ("web", "1", "[]", "search"),
            ("casual", "2", "[]", "tell"),
        ])),
        Reply::text("no idea"),
        Reply::text("still none"),
        Reply::text(
            "```json\n{\"plan\": [{\"agent\": \"wizard\", \"id\": \"2\", \"task\": \"x\"}]}\n```",
        ),
        Reply::text("nothing"),
    ]);
    let mut handle = start(&server, work.path());
    plan_task(&handle, "search and tell");
    let events = until_finished(&mut handle).await;
    let (outcome, _, plan, message) = ending(&events);
    assert_eq!(outcome, Outcome::GaveUp);
    let message = message.expect("why");
    assert!(message.starts_with("step 1 (web) failed"), "{message}");
    assert!(
        message.contains("rewriting the plan failed: no plan could be read after 4 replies"),
        "{message}"
    );
    assert_eq!(statuses(&plan), [StepStatus::Failed, StepStatus::Skipped]);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 5, "the plan, then four replan replies");
    assert!(requests[4].last_user_message().contains("wizard"));
}
