//! Snapshot tests of the planner's and router's items, drawn by the real screen code: the plan
//! pane pending, running, done, failed, replanned and folded, a step's own section under its
//! header, the status line while a step runs, and the routed line. The events are made by hand
//! in the shapes `crate::wire` documents (what the planner's runner emits).

use crossterm::event::{KeyCode, KeyModifiers};

use super::snapshots::{Scene, status};
use crate::agent::{AnswerFinish, BlockRecord, Event, Outcome, Status};
use crate::config::AgentName;
use crate::wire::{PlanStep, Route, StepStatus};

pub(crate) fn plan_step(id: &str, agent: AgentName, task: &str) -> PlanStep {
    PlanStep {
        id: id.into(),
        agent,
        task: task.into(),
        need: Vec::new(),
        title: None,
        status: StepStatus::Pending,
    }
}

fn two_steps() -> Vec<PlanStep> {
    vec![
        plan_step(
            "1",
            AgentName::Coder,
            "write hello.py, a script that prints hello and the date in ISO form",
        ),
        plan_step("2", AgentName::Coder, "run hello.py and report its output"),
    ]
}

fn in_step(id: &str, event: Event) -> Event {
    Event::Step {
        step: id.into(),
        event: Box::new(event),
    }
}

pub(super) fn bash_record(success: bool, output: &str) -> BlockRecord {
    BlockRecord {
        round: 1,
        index: 0,
        tool_type: "bash".into(),
        block: "python3 hello.py\n".into(),
        save_path: None,
        feedback: String::new(),
        success,
        exit_code: Some(if success { 0 } else { 2 }),
        timed_out: false,
        stopped: false,
        skipped: false,
        duration_ms: 30.0,
        output: output.into(),
        not_run: None,
    }
}

fn finished(agent: AgentName, outcome: Outcome, plan: Option<Vec<PlanStep>>) -> Event {
    Event::TurnFinished {
        turn: 1,
        outcome,
        answer: String::new(),
        reasoning: None,
        agent,
        rounds: 1,
        blocks: Vec::new(),
        message: None,
        usage: None,
        plan,
        web: None,
    }
}

/// The planner's task begins and its plan arrives.
pub(super) fn planned(s: &mut Scene) -> &mut Scene {
    s.event(
        0,
        Event::TurnStarted {
            turn: 1,
            prompt: "make hello.py and run it".into(),
            agent: AgentName::Planner,
        },
    )
    .event(0, status(Status::Thinking, 0))
    .event(
        900,
        Event::Plan {
            steps: two_steps(),
            notes: vec!["step 2 needed step 3, which does not exist: dropped".into()],
        },
    )
}

/// Step `id`'s sub-agent: a reply with one bash block, the block's result, the end.
pub(super) fn step(s: &mut Scene, at: u64, id: &str, record: BlockRecord, ends: bool) {
    let task = if id == "1" {
        "write hello.py"
    } else {
        "run hello.py"
    };
    s.event(
        at,
        Event::StepStarted {
            id: id.into(),
            agent: AgentName::Coder,
            task: task.into(),
        },
    )
    .event(
        at,
        in_step(
            id,
            Event::TurnStarted {
                turn: 1,
                prompt: format!("{task}\n\nresults of earlier steps: …"),
                agent: AgentName::Coder,
            },
        ),
    )
    .event(at, in_step(id, status(Status::Thinking, 0)))
    .event(
        at + 100,
        in_step(
            id,
            Event::AnswerComplete {
                round: 1,
                answer: format!("Step {id}, one block.\nblock:0\n"),
                reasoning: None,
                blocks: 1,
                finish: AnswerFinish::Stop,
            },
        ),
    )
    .event(
        at + 100,
        in_step(
            id,
            status(
                Status::Executing {
                    tool: "bash".into(),
                },
                0,
            ),
        ),
    )
    .event(
        at + 100,
        in_step(
            id,
            Event::BlockStarted {
                round: 1,
                index: 0,
                tool: "bash".into(),
                code: record.block.clone(),
                save_path: None,
            },
        ),
    );
    if !ends {
        return;
    }
    let success = record.success;
    let outcome = if success {
        Outcome::Done
    } else {
        Outcome::GaveUp
    };
    s.event(at + 200, in_step(id, Event::BlockFinished { record }))
        .event(
            at + 200,
            in_step(id, finished(AgentName::Coder, outcome, None)),
        )
        .event(
            at + 200,
            Event::StepFinished {
                id: id.into(),
                success,
                summary: if success {
                    "done".into()
                } else {
                    "the bash block failed: exit 2".into()
                },
            },
        );
}

fn with_status(steps: Vec<PlanStep>, statuses: &[StepStatus]) -> Vec<PlanStep> {
    steps
        .into_iter()
        .zip(statuses)
        .map(|(step, status)| PlanStep {
            status: *status,
            ..step
        })
        .collect()
}

#[test]
fn plan_pending() {
    let mut s = Scene::new();
    planned(&mut s);
    insta::assert_snapshot!(s.draw(80, 16, 1_000));
}

#[test]
fn plan_running_shows_the_step_in_the_status_line() {
    let mut s = Scene::new();
    planned(&mut s);
    step(&mut s, 1_000, "1", bash_record(true, "hello\n"), false);
    let screen = s.draw(80, 22, 1_500);
    assert!(screen.contains("step 1/2 · coder"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn plan_done_after_two_steps() {
    let mut s = Scene::new();
    planned(&mut s);
    step(&mut s, 1_000, "1", bash_record(true, ""), true);
    step(
        &mut s,
        2_000,
        "2",
        bash_record(true, "hello 2026-12-01\n"),
        true,
    );
    let done = with_status(two_steps(), &[StepStatus::Done, StepStatus::Done]);
    s.event(
        3_000,
        finished(AgentName::Planner, Outcome::Done, Some(done)),
    );
    let screen = s.draw(80, 26, 3_000);
    assert!(
        screen.matches('✓').count() >= 5,
        "2 steps, 2 headers, 2 panes, done: {screen}"
    );
    assert!(screen.contains("✓ done"), "the task's end, once: {screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn plan_failed_step_and_the_rest_skipped() {
    let mut s = Scene::new();
    planned(&mut s);
    step(
        &mut s,
        1_000,
        "1",
        bash_record(false, "python3: can't open file\n"),
        true,
    );
    let failed = with_status(two_steps(), &[StepStatus::Failed, StepStatus::Skipped]);
    let mut end = finished(AgentName::Planner, Outcome::GaveUp, Some(failed));
    if let Event::TurnFinished { message, .. } = &mut end {
        *message = Some("the plan gave up: step 1 failed and no replan was left".into());
    }
    s.event(2_000, end);
    insta::assert_snapshot!(s.draw(80, 24, 2_000));
}

#[test]
fn plan_replanned_after_a_failure() {
    let mut s = Scene::new();
    planned(&mut s);
    step(&mut s, 1_000, "1", bash_record(false, "no python3\n"), true);
    let mut rewritten = two_steps();
    rewritten[0].status = StepStatus::Failed;
    rewritten[1] = plan_step(
        "2",
        AgentName::File,
        "find a python interpreter on this machine",
    );
    rewritten.push(plan_step("3", AgentName::Coder, "run hello.py with it"));
    s.event(
        2_000,
        Event::Replanned {
            steps: rewritten,
            replans: 1,
            reason: "python3 is not installed".into(),
        },
    );
    insta::assert_snapshot!(s.draw(80, 26, 2_000));
}

#[test]
fn plan_folded_with_tab_and_enter() {
    let mut s = Scene::new();
    planned(&mut s);
    step(&mut s, 1_000, "1", bash_record(true, ""), true);
    // Tab goes over the foldable items newest first: the step's pane, then the plan.
    s.key(1_500, KeyCode::Tab, KeyModifiers::NONE);
    s.key(1_500, KeyCode::Tab, KeyModifiers::NONE);
    assert!(
        matches!(
            s.app.focus.and_then(|f| s.app.transcript.items().get(f)),
            Some(crate::transcript::Item::Plan(_))
        ),
        "the plan has the focus"
    );
    s.key(1_500, KeyCode::Enter, KeyModifiers::NONE);
    insta::assert_snapshot!(s.draw(80, 18, 1_500));
}

#[test]
fn routed_line_above_the_answer_with_its_reason_when_wide() {
    let mut s = Scene::new();
    s.app.agent = AgentName::Auto;
    s.event(
        0,
        Event::TurnStarted {
            turn: 1,
            prompt: "what is a monad".into(),
            agent: AgentName::Casual,
        },
    )
    .event(
        0,
        Event::Routed {
            route: Route {
                agent: AgentName::Casual,
                confidence: 0.8712,
                reason: "words: monad".into(),
                why: "a question or a chat, no code needed".into(),
            },
        },
    )
    .event(
        300,
        Event::AnswerComplete {
            round: 1,
            answer: "A monoid in the category of endofunctors.".into(),
            reasoning: None,
            blocks: 0,
            finish: AnswerFinish::Stop,
        },
    )
    .event(400, finished(AgentName::Casual, Outcome::Done, None));
    let narrow = s.draw(30, 10, 400);
    assert!(narrow.contains("→ casual (a question"), "{narrow}");
    assert!(
        !narrow.contains("0.87") && !narrow.contains("monad"),
        "plain words, no confidence when sure, no classifier evidence: {narrow}"
    );
    insta::assert_snapshot!(s.draw(80, 10, 400));
}
