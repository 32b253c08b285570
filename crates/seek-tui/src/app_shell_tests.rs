//! Tests of `app` around the user's own `!cmd` (a task for Esc, Ctrl+C, `/stop`, the status line
//! and the queue), the stop hint, large pastes and the `/agent` picker.

use super::*;
use crate::agent::{BlockRecord, USER_ROUND};
use crossterm::event::KeyEvent;

fn app() -> App {
    App::new(
        AgentName::Coder,
        "m @ p".into(),
        "~/w".into(),
        History::default(),
    )
}

fn press(app: &mut App, code: KeyCode, now: Instant) -> Vec<Effect> {
    app.key(KeyEvent::new(code, KeyModifiers::NONE), now)
}

fn typed(app: &mut App, text: &str, now: Instant) {
    for c in text.chars() {
        press(app, KeyCode::Char(c), now);
    }
}

fn command_started(app: &mut App, command: &str, now: Instant) {
    app.agent_event(
        &Event::BlockStarted {
            round: USER_ROUND,
            index: 0,
            tool: "bash".into(),
            code: format!("{command}\n"),
            save_path: None,
        },
        now,
    );
}

fn command_finished(app: &mut App, stopped: bool, now: Instant) {
    app.agent_event(
        &Event::BlockFinished {
            record: BlockRecord {
                round: USER_ROUND,
                index: 0,
                tool_type: "bash".into(),
                block: "sleep 8\n".into(),
                save_path: None,
                feedback: String::new(),
                success: !stopped,
                exit_code: (!stopped).then_some(0),
                timed_out: false,
                stopped,
                skipped: false,
                duration_ms: 300.0,
                output: String::new(),
                not_run: None,
            },
        },
        now,
    );
}

#[test]
fn a_running_bang_command_is_stopped_by_esc_ctrl_c_and_slash_stop() {
    let t = Instant::now();
    for stop in ["esc", "ctrl+c", "/stop"] {
        let mut a = app();
        typed(&mut a, "!sleep 8; echo finished", t);
        assert_eq!(
            press(&mut a, KeyCode::Enter, t),
            [Effect::Send(Command::Shell {
                command: "sleep 8; echo finished".into()
            })]
        );
        command_started(&mut a, "sleep 8; echo finished", t);
        assert!(a.running(), "{stop}");
        let (status, _) = a.status.describe(t);
        assert!(
            status.contains("running !sleep 8; echo finished"),
            "{stop}: {status}"
        );
        let effects = match stop {
            "esc" => press(&mut a, KeyCode::Esc, t),
            "ctrl+c" => a.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), t),
            _ => {
                typed(&mut a, "/stop", t);
                press(&mut a, KeyCode::Enter, t)
            }
        };
        assert_eq!(effects, [Effect::Send(Command::Stop)], "{stop}");
        assert_eq!(a.hint(t), Some("stopping…"), "{stop}");
        command_finished(&mut a, true, t);
        assert!(!a.running());
        let (status, _) = a.status.describe(t);
        assert!(status.starts_with("■ stopped"), "{stop}: {status}");
        assert_eq!(a.hint(t), None, "{stop}: stopped, so no longer stopping");
    }
}

#[test]
fn a_prompt_sent_while_a_bang_command_runs_is_queued_and_sent_when_it_ends() {
    let t = Instant::now();
    let mut a = app();
    typed(&mut a, "!make", t);
    press(&mut a, KeyCode::Enter, t);
    // Before the command has even started, a prompt waits for it.
    typed(&mut a, "first", t);
    assert!(
        press(&mut a, KeyCode::Enter, t)
            .iter()
            .all(|e| !matches!(e, Effect::Send(_)))
    );
    command_started(&mut a, "make", t);
    typed(&mut a, "second", t);
    press(&mut a, KeyCode::Enter, t);
    assert_eq!(a.queue, ["first", "second"]);
    typed(&mut a, "!ls", t);
    press(&mut a, KeyCode::Enter, t);
    assert_eq!(
        a.composer.text(),
        "!ls",
        "a second command waits in the box"
    );
    assert!(a.hint(t).is_some_and(|h| h.contains("Esc stops it")));
    command_finished(&mut a, false, t);
    assert_eq!(a.status.describe(t).0, "ready");
    assert_eq!(
        a.take_effects(),
        [Effect::Send(Command::Submit {
            prompt: "first".into(),
            agent: Some(AgentName::Coder),
            context: None,
        })]
    );
}

#[test]
fn answer_text_streaming_is_not_thinking() {
    let t = Instant::now();
    let mut a = app();
    a.agent_event(
        &Event::TurnStarted {
            turn: 1,
            prompt: "p".into(),
            agent: AgentName::Coder,
        },
        t,
    );
    a.agent_event(&Event::ReasoningDelta { text: "hmm".into() }, t);
    assert!(a.status.describe(t).0.contains("Thinking"));
    a.agent_event(
        &Event::AnswerDelta {
            text: "Here".into(),
        },
        t,
    );
    let (status, _) = a.status.describe(t);
    assert!(
        status.contains("Answering") && !status.contains("Thinking"),
        "{status}"
    );
    a.agent_event(
        &Event::ReasoningDelta {
            text: "more".into(),
        },
        t,
    );
    assert!(a.status.describe(t).0.contains("Thinking"));
}

#[test]
fn a_huge_paste_is_a_label_in_the_box_and_the_transcript_but_sent_whole() {
    let t = Instant::now();
    let mut a = app();
    let paste: String = (0..4000).map(|i| format!("line {i}\r\n")).collect();
    a.paste(&paste);
    assert_eq!(a.composer.text(), "[pasted 4,000 lines]");
    typed(&mut a, " why", t);
    let effects = press(&mut a, KeyCode::Enter, t);
    let Some(Effect::Send(Command::Submit { prompt, .. })) = effects.last() else {
        panic!("sent: {effects:?}");
    };
    let whole = paste.replace("\r\n", "\n");
    assert_eq!(*prompt, format!("{whole} why"));
    a.agent_event(
        &Event::TurnStarted {
            turn: 1,
            prompt: prompt.clone(),
            agent: AgentName::Coder,
        },
        t,
    );
    assert_eq!(
        a.transcript.items().last(),
        Some(&crate::transcript::Item::User(
            "[pasted 4,000 lines] why".into()
        ))
    );
    let printed = crate::render::screen::plain_transcript(&a, 80, t);
    assert!(printed.contains("[pasted 4,000 lines] why"), "{printed}");
    assert!(printed.len() < 500, "{printed}");
    // A small paste goes in as it is.
    a.paste("two\nlines");
    assert_eq!(a.composer.text(), "two\nlines");
}

#[test]
fn agent_alone_opens_a_picker_that_sets_the_agent() {
    let t = Instant::now();
    let mut a = app();
    typed(&mut a, "/agent", t);
    assert!(
        press(&mut a, KeyCode::Enter, t)
            .iter()
            .all(|e| !matches!(e, Effect::Send(_)))
    );
    assert!(matches!(
        &a.overlay,
        Some(Overlay::Picker(p)) if p.kind == PickerKind::Agent
    ));
    typed(&mut a, "plan", t);
    assert!(
        press(&mut a, KeyCode::Enter, t).is_empty(),
        "nothing to send"
    );
    assert!(a.overlay.is_none());
    assert_eq!(a.agent, AgentName::Planner);
}
