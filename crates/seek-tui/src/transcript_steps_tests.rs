//! Tests of `transcript_steps`: a plan's steps as sections of their own, live and replayed, and
//! the task's end that only the task's own `TurnFinished` makes.

use std::time::Instant;

use super::super::{Item, PaneState, Transcript};
use crate::agent::{AnswerFinish, BlockRecord, Event, Outcome};
use crate::app::App;
use crate::history::History;
use crate::wire::{AgentName, PlanStep, StepStatus};

fn plan_step(id: &str, task: &str) -> PlanStep {
    PlanStep {
        id: id.into(),
        agent: AgentName::Coder,
        task: task.into(),
        need: Vec::new(),
        title: None,
        status: StepStatus::Pending,
    }
}

fn in_step(id: &str, event: Event) -> Event {
    Event::Step {
        step: id.into(),
        event: Box::new(event),
    }
}

fn started(agent: AgentName, prompt: &str) -> Event {
    Event::TurnStarted {
        turn: 1,
        prompt: prompt.into(),
        agent,
    }
}

fn finished(agent: AgentName, outcome: Outcome) -> Event {
    Event::TurnFinished {
        turn: 1,
        outcome,
        answer: String::new(),
        reasoning: None,
        agent,
        rounds: 1,
        blocks: Vec::new(),
        message: Some("it went as it went".into()),
        usage: None,
        plan: None,
        web: None,
    }
}

fn record(output: &str) -> BlockRecord {
    BlockRecord {
        round: 1,
        index: 0,
        tool_type: "bash".into(),
        block: "echo\n".into(),
        save_path: None,
        feedback: String::new(),
        success: true,
        exit_code: Some(0),
        timed_out: false,
        stopped: false,
        skipped: false,
        duration_ms: 1.0,
        output: output.into(),
        not_run: None,
    }
}

/// Step `id`'s sub-agent from its start to (if `ends`) its end: one reply, one bash block that
/// prints `output`. Without the live pieces (deltas, output) when `replayed`, as a session
/// file keeps it.
fn step_events(id: &str, output: &str, ends: bool, replayed: bool) -> Vec<Event> {
    let mut events = vec![
        Event::StepStarted {
            id: id.into(),
            agent: AgentName::Coder,
            task: format!("task {id}"),
        },
        in_step(id, started(AgentName::Coder, &format!("task {id}"))),
    ];
    if !replayed {
        events.push(in_step(
            id,
            Event::AnswerDelta {
                text: "Running.\n".into(),
            },
        ));
    }
    events.extend([
        in_step(
            id,
            Event::AnswerComplete {
                round: 1,
                answer: "Running.\nblock:0\n".into(),
                reasoning: None,
                blocks: 1,
                finish: AnswerFinish::Stop,
            },
        ),
        in_step(
            id,
            Event::BlockStarted {
                round: 1,
                index: 0,
                tool: "bash".into(),
                code: format!("echo {output}\n"),
                save_path: None,
            },
        ),
    ]);
    if !replayed {
        events.push(in_step(
            id,
            Event::BlockOutput {
                round: 1,
                index: 0,
                text: format!("{output}\n"),
            },
        ));
    }
    if ends {
        events.extend([
            in_step(
                id,
                Event::BlockFinished {
                    record: record(&format!("{output}\n")),
                },
            ),
            in_step(id, finished(AgentName::Coder, Outcome::Done)),
            Event::StepFinished {
                id: id.into(),
                success: true,
                summary: output.into(),
            },
        ]);
    }
    events
}

fn planner_task(replayed: bool) -> Vec<Event> {
    let mut events = vec![
        started(AgentName::Planner, "do two things"),
        Event::Plan {
            steps: vec![plan_step("1", "task 1"), plan_step("2", "task 2")],
            notes: Vec::new(),
        },
    ];
    events.extend(step_events("1", "one", true, replayed));
    events.extend(step_events("2", "two", true, replayed));
    let done = vec![
        PlanStep {
            status: StepStatus::Done,
            ..plan_step("1", "task 1")
        },
        PlanStep {
            status: StepStatus::Done,
            ..plan_step("2", "task 2")
        },
    ];
    let mut end = finished(AgentName::Planner, Outcome::Done);
    if let Event::TurnFinished { plan, .. } = &mut end {
        *plan = Some(done);
    }
    events.push(end);
    events
}

fn apply_all(t: &mut Transcript, events: &[Event]) {
    let now = Instant::now();
    for event in events {
        t.apply(event, now);
    }
}

fn panes(t: &Transcript) -> Vec<(Option<String>, String, bool)> {
    t.items()
        .iter()
        .filter_map(|item| match item {
            Item::Pane(p) => Some((p.step.clone(), p.output.clone(), p.succeeded())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_steps_turn_finished_does_not_end_the_task_only_the_tasks_own_does() {
    let mut app = App::new(
        AgentName::Planner,
        String::new(),
        String::new(),
        History::default(),
    );
    let now = Instant::now();
    let mut events = vec![
        started(AgentName::Planner, "do two things"),
        Event::Plan {
            steps: vec![plan_step("1", "task 1"), plan_step("2", "task 2")],
            notes: Vec::new(),
        },
    ];
    events.extend(step_events("1", "one", true, false));
    for event in &events {
        app.agent_event(event, now);
    }
    app.queue.push("a prompt typed meanwhile".into());
    // Another step's end, straight after: still nothing ends.
    app.agent_event(
        &in_step("1", finished(AgentName::Coder, Outcome::GaveUp)),
        now,
    );
    assert!(app.running(), "the task still runs after its step's end");
    assert_eq!(
        app.queue.len(),
        1,
        "the queued prompt waits for the task's end"
    );
    let users = app
        .transcript
        .items()
        .iter()
        .filter(|i| matches!(i, Item::User(_)))
        .count();
    assert_eq!(users, 1, "a step's start is not a prompt of the user's");
    assert!(
        !app.transcript
            .items()
            .iter()
            .any(|i| matches!(i, Item::Notice(n) if n.contains("went as it went"))),
        "a step's end says nothing of the task's"
    );
    app.agent_event(&finished(AgentName::Planner, Outcome::Done), now);
    assert!(!app.running(), "the task's own end ends it");
    assert!(app.queue.is_empty(), "and the queued prompt goes");
}

#[test]
fn blocks_of_two_steps_with_the_same_round_and_index_get_their_own_panes() {
    let mut t = Transcript::default();
    let mut events = vec![started(AgentName::Planner, "do two things")];
    events.extend(step_events("1", "one", true, false));
    // Step 2's block is running: its output must not land in step 1's pane.
    events.extend(step_events("2", "two", false, false));
    apply_all(&mut t, &events);
    assert_eq!(
        panes(&t),
        [
            (Some("1".into()), "one\n".into(), true),
            (Some("2".into()), "two\n".into(), false),
        ]
    );
    let running = t
        .items()
        .iter()
        .filter(|i| matches!(i, Item::Pane(p) if matches!(p.state, PaneState::Running { .. })))
        .count();
    assert_eq!(running, 1, "only step 2's pane runs");
}

#[test]
fn the_plan_ticks_and_each_step_has_its_header() {
    let mut t = Transcript::default();
    let events = planner_task(false);
    // Up to step 2's start: step 1 done, step 2 running.
    let step2 = events
        .iter()
        .position(|e| matches!(e, Event::StepStarted { id, .. } if id == "2"))
        .unwrap_or(0);
    apply_all(&mut t, &events[..=step2]);
    let plan = t.items().iter().find_map(|i| match i {
        Item::Plan(p) => Some(p.clone()),
        _ => None,
    });
    let statuses: Vec<StepStatus> = plan
        .map(|p| p.steps.iter().map(|s| s.status).collect())
        .unwrap_or_default();
    assert_eq!(statuses, [StepStatus::Done, StepStatus::Running]);
    apply_all(&mut t, &events[step2 + 1..]);
    let headers: Vec<(String, Option<AgentName>, StepStatus)> = t
        .items()
        .iter()
        .filter_map(|i| match i {
            Item::Step(h) => Some((h.id.clone(), h.agent, h.status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        headers,
        [
            ("1".into(), Some(AgentName::Coder), StepStatus::Done),
            ("2".into(), Some(AgentName::Coder), StepStatus::Done),
        ]
    );
}

#[test]
fn a_resumed_session_shows_its_plan_and_steps_as_they_were() {
    let mut live = Transcript::default();
    apply_all(&mut live, &planner_task(false));
    let mut app = App::new(
        AgentName::Auto,
        String::new(),
        String::new(),
        History::default(),
    );
    let replay = planner_task(true)
        .into_iter()
        .enumerate()
        .map(|(i, e)| (1_000 + i as u64, e))
        .collect();
    app.agent_event(
        &Event::Resumed {
            id: "s1".into(),
            turns: 1,
            warnings: Vec::new(),
            replay,
        },
        Instant::now(),
    );
    let shown = |t: &Transcript| -> Vec<String> {
        t.items()
            .iter()
            .filter_map(|i| match i {
                Item::Plan(p) => Some(format!("plan {:?}", p.progress())),
                Item::Step(h) => Some(format!("step {} {:?}", h.id, h.status)),
                Item::Pane(p) => Some(format!("pane {:?} {}", p.step, p.succeeded())),
                Item::User(u) => Some(format!("user {u}")),
                _ => None,
            })
            .collect()
    };
    assert_eq!(shown(&app.transcript), shown(&live));
    assert_eq!(shown(&live).len(), 6, "{:?}", shown(&live));
    assert!(!app.running());
}

#[test]
fn a_steps_events_cannot_clear_plan_or_start_a_step_inside_it() {
    let mut t = Transcript::default();
    let mut events = vec![started(AgentName::Planner, "do it")];
    // No StepStarted: the section opens on the step's first event.
    events.extend([
        in_step("7", started(AgentName::File, "look around\nand more")),
        in_step("7", Event::Cleared),
        in_step(
            "7",
            Event::Plan {
                steps: vec![plan_step("1", "evil")],
                notes: Vec::new(),
            },
        ),
        in_step(
            "7",
            in_step(
                "8",
                Event::Error {
                    message: "deep".into(),
                },
            ),
        ),
        in_step(
            "7",
            Event::Error {
                message: "shown".into(),
            },
        ),
    ]);
    apply_all(&mut t, &events);
    let kinds: Vec<String> = t
        .items()
        .iter()
        .map(|i| match i {
            Item::User(u) => format!("user {u}"),
            Item::Step(h) => format!("step {} {:?} {}", h.id, h.agent, h.task),
            Item::Error(e) => format!("error {e}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["user do it", "step 7 Some(File) look around", "error shown"]
    );
    // The step's end after its `StepFinished` has nothing left to close.
    apply_all(
        &mut t,
        &[
            Event::StepFinished {
                id: "7".into(),
                success: false,
                summary: "no luck".into(),
            },
            in_step("7", finished(AgentName::File, Outcome::GaveUp)),
        ],
    );
    let last = t.items().last().cloned();
    assert_eq!(last, Some(Item::Notice("step 7 failed: no luck".into())));
}

#[test]
fn the_plan_pane_takes_the_place_of_the_reply_that_wrote_it() {
    let mut t = Transcript::default();
    let reply = "## Task 1: look\n\n```json\n{\"plan\": [{\"agent\": \"file\", \"id\": \"1\", \"need\": [], \"task\": \"look\"}]}\n```\n";
    apply_all(
        &mut t,
        &[
            started(AgentName::Planner, "look around"),
            Event::AnswerDelta { text: reply.into() },
            Event::AnswerComplete {
                round: 1,
                answer: reply.into(),
                reasoning: None,
                blocks: 0,
                finish: AnswerFinish::Stop,
            },
            Event::Error {
                message: "a note of seek's".into(),
            },
            Event::Plan {
                steps: vec![plan_step("1", "look")],
                notes: Vec::new(),
            },
        ],
    );
    let kinds: Vec<&str> = t
        .items()
        .iter()
        .map(|i| match i {
            Item::User(_) => "user",
            Item::Answer(_) => "answer",
            Item::Error(_) => "error",
            Item::Plan(_) => "plan",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["user", "error", "plan"]);
    let stamps: std::collections::HashSet<u64> = (0..t.items().len()).map(|i| t.stamp(i)).collect();
    assert_eq!(stamps.len(), 3, "every item keeps a stamp of its own");
}
