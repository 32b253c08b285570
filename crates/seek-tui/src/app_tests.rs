//! Tests of `app`.

use super::*;
use crate::agent::Status;
use crossterm::event::KeyEvent;

fn app() -> App {
    App::new(
        AgentName::Coder,
        "m @ p".into(),
        "~/w".into(),
        History::default(),
    )
}

fn press(app: &mut App, code: KeyCode, modifiers: KeyModifiers, now: Instant) -> Vec<Effect> {
    app.key(KeyEvent::new(code, modifiers), now)
}

fn typed(app: &mut App, text: &str, now: Instant) {
    for c in text.chars() {
        press(app, KeyCode::Char(c), KeyModifiers::NONE, now);
    }
}

fn start_turn(app: &mut App, now: Instant) {
    app.agent_event(
        &Event::TurnStarted {
            turn: 1,
            prompt: "p".into(),
            agent: AgentName::Coder,
        },
        now,
    );
    app.agent_event(
        &Event::Status {
            status: Status::Thinking,
            round: 1,
            attempt: 0,
            max_attempts: 5,
        },
        now,
    );
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

#[test]
fn ctrl_c_stops_then_clears_then_quits_on_a_second_press_within_two_seconds() {
    let t = Instant::now();
    let mut a = app();
    start_turn(&mut a, t);
    assert_eq!(
        press(&mut a, KeyCode::Char('c'), CTRL, t),
        [Effect::Send(Command::Stop)]
    );
    a.agent_event(
        &Event::TurnFinished {
            usage: None,
            turn: 1,
            outcome: crate::agent::Outcome::Stopped,
            answer: String::new(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 1,
            blocks: Vec::new(),
            message: None,
            plan: None,
            web: None,
        },
        t,
    );
    typed(&mut a, "draft", t);
    press(&mut a, KeyCode::Char('c'), CTRL, t);
    assert!(a.composer.is_empty() && !a.quit, "clears the input first");
    press(&mut a, KeyCode::Char('c'), CTRL, t);
    assert_eq!(a.hint(t), Some("press Ctrl+C again to quit"));
    press(&mut a, KeyCode::Char('c'), CTRL, t + Duration::from_secs(3));
    assert!(!a.quit, "too late: this press arms again");
    press(&mut a, KeyCode::Char('c'), CTRL, t + Duration::from_secs(4));
    assert!(a.quit);
}

#[test]
fn ctrl_d_quits_only_on_an_empty_input() {
    let t = Instant::now();
    let mut a = app();
    typed(&mut a, "ab", t);
    press(&mut a, KeyCode::Left, NONE, t);
    press(&mut a, KeyCode::Char('d'), CTRL, t);
    assert_eq!(a.composer.text(), "a");
    assert!(!a.quit);
    a.composer.take();
    press(&mut a, KeyCode::Char('d'), CTRL, t);
    assert!(a.quit);
}

#[test]
fn esc_stops_a_running_task_but_first_leaves_the_focus() {
    let t = Instant::now();
    let mut a = app();
    start_turn(&mut a, t);
    a.agent_event(&Event::ReasoningDelta { text: "hmm".into() }, t);
    press(&mut a, KeyCode::Tab, NONE, t);
    assert_eq!(a.focus, Some(1));
    assert!(press(&mut a, KeyCode::Esc, NONE, t).is_empty());
    assert_eq!(a.focus, None);
    assert_eq!(
        press(&mut a, KeyCode::Esc, NONE, t),
        [Effect::Send(Command::Stop)]
    );
}

#[test]
fn tab_walks_foldable_items_newest_first_and_enter_toggles() {
    let t = Instant::now();
    let mut a = app();
    start_turn(&mut a, t);
    a.agent_event(&Event::ReasoningDelta { text: "a".into() }, t);
    a.agent_event(
        &Event::AnswerComplete {
            round: 1,
            answer: "text\nblock:0\nmore\nblock:1\n".into(),
            reasoning: None,
            blocks: 2,
            finish: crate::agent::AnswerFinish::Stop,
        },
        t,
    );
    // Items: 0 you, 1 thoughts, 2 text, 3 pane, 4 text, 5 pane.
    let order: Vec<_> = (0..4)
        .map(|_| {
            press(&mut a, KeyCode::Tab, NONE, t);
            a.focus
        })
        .collect();
    assert_eq!(order, [Some(5), Some(3), Some(1), None]);
    press(&mut a, KeyCode::BackTab, NONE, t);
    assert_eq!(
        a.focus,
        Some(1),
        "Shift+Tab from the input starts at the oldest"
    );
    press(&mut a, KeyCode::Char(' '), NONE, t);
    assert!(
        matches!(&a.transcript.items()[1], crate::transcript::Item::Reasoning(r) if r.expanded)
    );
    press(&mut a, KeyCode::Down, NONE, t);
    assert_eq!(a.focus, Some(3), "Down moves to the newer item");
    press(&mut a, KeyCode::Enter, NONE, t);
    assert!(matches!(&a.transcript.items()[3], crate::transcript::Item::Pane(p) if p.expanded));
    press(&mut a, KeyCode::Char('x'), NONE, t);
    assert_eq!(
        (a.focus, a.composer.text()),
        (None, "x"),
        "typing returns to the input"
    );
}

#[test]
fn enter_sends_and_shift_alt_enter_and_ctrl_j_insert_newlines() {
    let t = Instant::now();
    let mut a = app();
    typed(&mut a, "a", t);
    press(&mut a, KeyCode::Enter, KeyModifiers::SHIFT, t);
    typed(&mut a, "b", t);
    press(&mut a, KeyCode::Enter, KeyModifiers::ALT, t);
    typed(&mut a, "c", t);
    press(&mut a, KeyCode::Char('j'), CTRL, t);
    typed(&mut a, "d", t);
    assert_eq!(
        press(&mut a, KeyCode::Enter, NONE, t),
        [Effect::Send(Command::Submit {
            prompt: "a\nb\nc\nd".into(),
            agent: Some(AgentName::Coder),
            context: None,
        })]
    );
    assert!(a.composer.is_empty());
}

#[test]
fn prompts_typed_while_a_task_runs_are_queued_and_sent_one_per_ended_task() {
    let t = Instant::now();
    let mut a = app();
    start_turn(&mut a, t);
    for next in ["next", "after"] {
        typed(&mut a, next, t);
        let effects = press(&mut a, KeyCode::Enter, NONE, t);
        assert!(
            effects.iter().all(|e| matches!(e, Effect::Write(_))),
            "only the history is written: {effects:?}"
        );
    }
    assert!(a.composer.is_empty());
    assert_eq!(a.queue, ["next", "after"]);
    assert_eq!(
        a.hint(t),
        Some("queued: sent when the task ends · Esc stops and clears")
    );
    assert!(
        press(&mut a, KeyCode::Char('r'), CTRL, t).is_empty(),
        "no retry while running"
    );
    finish(&mut a, t);
    let sent = |prompt: &str| {
        vec![Effect::Send(Command::Submit {
            prompt: prompt.into(),
            agent: Some(AgentName::Coder),
            context: None,
        })]
    };
    assert_eq!(a.take_effects(), sent("next"));
    assert_eq!(a.queue, ["after"]);
    typed(&mut a, "third", t);
    press(&mut a, KeyCode::Enter, NONE, t);
    assert_eq!(
        a.queue,
        ["after", "third"],
        "sent but not yet started still queues"
    );
    start_turn(&mut a, t);
    finish(&mut a, t);
    assert_eq!(a.take_effects(), sent("after"));
    assert!(a.take_effects().is_empty(), "taken once");
}

#[test]
fn esc_stops_the_task_and_empties_the_queue_in_one_press() {
    let t = Instant::now();
    let mut a = app();
    start_turn(&mut a, t);
    typed(&mut a, "later", t);
    press(&mut a, KeyCode::Enter, NONE, t);
    assert_eq!(
        press(&mut a, KeyCode::Esc, NONE, t),
        [Effect::Send(Command::Stop)]
    );
    assert!(a.queue.is_empty());
    assert_eq!(a.hint(t), Some("stopping… (1 queued dropped)"));
    finish(&mut a, t);
    assert!(a.take_effects().is_empty(), "nothing left to send");
}

fn finish(app: &mut App, now: Instant) {
    app.agent_event(
        &Event::TurnFinished {
            usage: None,
            turn: 1,
            outcome: crate::agent::Outcome::Done,
            answer: String::new(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 1,
            blocks: Vec::new(),
            message: None,
            plan: None,
            web: None,
        },
        now,
    );
}

#[test]
fn up_and_down_recall_history_only_at_the_edges_of_the_input() {
    let t = Instant::now();
    let mut a = app();
    for p in ["one", "two"] {
        typed(&mut a, p, t);
        press(&mut a, KeyCode::Enter, NONE, t);
    }
    typed(&mut a, "x", t);
    press(&mut a, KeyCode::Char('j'), CTRL, t);
    typed(&mut a, "y", t);
    press(&mut a, KeyCode::Up, NONE, t);
    assert_eq!(
        a.composer.text(),
        "x\ny",
        "Up on the second line moves the cursor"
    );
    press(&mut a, KeyCode::Up, NONE, t);
    assert_eq!(a.composer.text(), "two");
    press(&mut a, KeyCode::Up, NONE, t);
    assert_eq!(a.composer.text(), "one");
    press(&mut a, KeyCode::Down, NONE, t);
    press(&mut a, KeyCode::Down, NONE, t);
    assert_eq!(a.composer.text(), "x\ny", "the draft comes back");
}

#[test]
fn home_and_end_scroll_on_an_empty_input_and_edit_otherwise() {
    let t = Instant::now();
    let mut a = app();
    press(&mut a, KeyCode::Home, NONE, t);
    assert!(!a.viewport.following());
    press(&mut a, KeyCode::End, NONE, t);
    assert!(a.viewport.following());
    typed(&mut a, "abc", t);
    press(&mut a, KeyCode::Home, NONE, t);
    assert_eq!(a.composer.cursor(), 0);
    assert!(a.viewport.following());
    press(&mut a, KeyCode::Home, CTRL, t);
    assert!(!a.viewport.following(), "Ctrl+Home always scrolls");
}

#[test]
fn slash_commands() {
    let t = Instant::now();
    let mut a = app();
    typed(&mut a, "/model qwen3:8b", t);
    assert_eq!(
        press(&mut a, KeyCode::Enter, NONE, t),
        [Effect::Send(Command::SetModel {
            model: "qwen3:8b".into()
        })]
    );
    typed(&mut a, "/clear", t);
    assert_eq!(
        press(&mut a, KeyCode::Enter, NONE, t),
        [Effect::Send(Command::Clear)]
    );
    typed(&mut a, "/bogus", t);
    press(&mut a, KeyCode::Enter, NONE, t);
    assert!(
        matches!(a.transcript.items().last(), Some(crate::transcript::Item::Error(e)) if e.contains("/help"))
    );
    typed(&mut a, "/quit", t);
    press(&mut a, KeyCode::Enter, NONE, t);
    assert!(a.quit);
}

fn ask(app: &mut App, id: ApprovalId, now: Instant) {
    app.agent_event(
        &Event::ApprovalRequested {
            id,
            round: 1,
            index: 0,
            tool: "python".into(),
            code: "print(1)\n".into(),
            save_path: None,
        },
        now,
    );
}

#[test]
fn an_approval_is_answered_with_its_id_and_an_edit_only_while_it_waits() {
    let t = Instant::now();
    let mut a = app();
    start_turn(&mut a, t);
    ask(&mut a, 4, t);
    assert_eq!(
        press(&mut a, KeyCode::Char('e'), NONE, t),
        [Effect::Edit {
            id: 4,
            tool: "python".into(),
            code: "print(1)\n".into()
        }]
    );
    // The editor failed: the block still waits, and the error is shown.
    assert_eq!(a.edited(4, Err("no editor".into()), t), []);
    assert!(a.awaiting.is_some());
    assert_eq!(
        a.edited(4, Ok("print(2)\n".into()), t),
        [Effect::Send(Command::Approve {
            id: 4,
            decision: ApprovalDecision::Edit {
                code: "print(2)\n".into()
            }
        })]
    );
    assert_eq!(a.awaiting, None);

    // An edit for a question that no longer waits answers nothing, not the next question.
    ask(&mut a, 5, t);
    assert_eq!(a.edited(4, Ok("stale\n".into()), t), []);
    assert_eq!(
        a.hint(t),
        Some("the block no longer waits: the edit was not used")
    );
    assert_eq!(
        press(&mut a, KeyCode::Char('n'), NONE, t),
        [Effect::Send(Command::Approve {
            id: 5,
            decision: ApprovalDecision::Decline
        })]
    );
}

#[test]
fn a_resumed_transcript_keeps_its_durations_without_reading_the_clock() {
    // Far from "now" on any clock: only the times between events matter.
    let recorded_ms = 1_000_000_000_000u64;
    let t = Instant::now() + Duration::from_secs(60);
    let mut a = app();
    a.agent_event(
        &Event::Resumed {
            id: "s1".into(),
            turns: 1,
            warnings: Vec::new(),
            replay: vec![
                (
                    recorded_ms,
                    Event::TurnStarted {
                        turn: 1,
                        prompt: "p".into(),
                        agent: AgentName::Coder,
                    },
                ),
                (
                    recorded_ms + 1_000,
                    Event::ReasoningDelta { text: "hmm".into() },
                ),
                (
                    recorded_ms + 4_000,
                    Event::AnswerComplete {
                        round: 1,
                        answer: "done".into(),
                        reasoning: Some("hmm".into()),
                        blocks: 0,
                        finish: crate::agent::AnswerFinish::Stop,
                    },
                ),
            ],
        },
        t,
    );
    let reasoning = a
        .transcript
        .items()
        .iter()
        .find_map(|item| match item {
            crate::transcript::Item::Reasoning(r) => Some(r.clone()),
            _ => None,
        })
        .expect("a reasoning panel");
    assert_eq!(reasoning.until, Some(t), "the newest event is placed now");
    assert_eq!(t.duration_since(reasoning.since), Duration::from_secs(3));
}
