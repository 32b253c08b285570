//! Snapshots of the input side's overlays drawn by the real screen code into ratatui's
//! `TestBackend` at 80x24 (the pickers with 0, 1, 3 and 500 entries, the popup, `/help`, the
//! queue), and the pickers' flows from key to command.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::agent::{Command, Event, ModelEntry, SessionEntry, Status};
use crate::app::{App, Effect};
use crate::config::AgentName;
use crate::history::History;
use crate::render::screen;

fn app() -> App {
    App::new(
        AgentName::Coder,
        "qwen2.5-coder:7b @ ollama http://127.0.0.1:11434".into(),
        "~/project".into(),
        History::default(),
    )
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now())
}

fn typed(app: &mut App, text: &str) -> Vec<Effect> {
    text.chars()
        .flat_map(|c| press(app, KeyCode::Char(c)))
        .collect()
}

fn draw(app: &mut App) -> String {
    draw_at(app, Instant::now())
}

/// Draws as at `now`: a running task's clock then reads the same on any machine.
fn draw_at(app: &mut App, now: Instant) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("test terminal");
    terminal
        .draw(|frame| screen::draw(frame, app, now, true))
        .expect("draw");
    terminal.backend().to_string()
}

fn models(names: &[&str], current: &str) -> Event {
    Event::ModelList {
        current: current.into(),
        models: names
            .iter()
            .map(|n| ModelEntry {
                name: (*n).into(),
                detail: if n.contains("7b") {
                    "4.7 GB".into()
                } else {
                    String::new()
                },
            })
            .collect(),
        error: None,
    }
}

fn sessions(n: usize) -> Event {
    Event::SessionList {
        lines: Vec::new(),
        sessions: (0..n)
            .map(|i| SessionEntry {
                id: format!("20261201-1200{i:02}-{i:04}"),
                last_activity_ms: 1_764_590_400_000 - i as u64 * 60_000,
                agent: "coder".into(),
                turns: Some(1),
                first_prompt: format!("task number {i}\nwith a second line"),
                work_dir: Some("/home/u/project".into()),
            })
            .collect(),
    }
}

#[test]
fn model_picker_marks_the_current_model_and_chooses_with_enter() {
    let mut a = app();
    typed(&mut a, "/model");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Effect::Send(Command::ListModels)]
    );
    let loading = draw(&mut a);
    assert!(loading.contains("loading…"), "{loading}");
    a.agent_event(
        &models(
            &["qwen2.5-coder:7b", "llama3.2:3b", "evil\x1b]0;pwned\x07:1b"],
            "qwen2.5-coder:7b",
        ),
        Instant::now(),
    );
    press(&mut a, KeyCode::Down);
    insta::assert_snapshot!(draw(&mut a));
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Effect::Send(Command::SetModel {
            model: "llama3.2:3b".into()
        })]
    );
    assert!(a.overlay.is_none());
}

#[test]
fn model_picker_with_one_entry_and_with_an_error() {
    let mut a = app();
    typed(&mut a, "/model");
    press(&mut a, KeyCode::Enter);
    a.agent_event(&models(&["only:1b"], "only:1b"), Instant::now());
    insta::assert_snapshot!(draw(&mut a));
    press(&mut a, KeyCode::Esc);
    assert!(a.overlay.is_none(), "Esc cancels");
    typed(&mut a, "/model");
    press(&mut a, KeyCode::Enter);
    a.agent_event(
        &Event::ModelList {
            current: String::new(),
            models: Vec::new(),
            error: Some("the server did not answer in 10 s".into()),
        },
        Instant::now(),
    );
    let failed = draw(&mut a);
    assert!(
        failed.contains("the server did not answer in 10 s"),
        "{failed}"
    );
}

#[test]
fn resume_picker_scrolls_through_500_sessions_and_resumes_one() {
    let mut a = app();
    typed(&mut a, "/resume");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Effect::Send(Command::ListSessions)]
    );
    let empty = {
        let mut b = app();
        typed(&mut b, "/resume");
        press(&mut b, KeyCode::Enter);
        b.agent_event(&sessions(0), Instant::now());
        draw(&mut b)
    };
    assert!(
        empty.contains("no saved sessions in this directory"),
        "{empty}"
    );
    a.agent_event(&sessions(500), Instant::now());
    assert!(
        a.transcript.items().is_empty(),
        "the list asked for by the picker is not also printed"
    );
    draw(&mut a);
    press(&mut a, KeyCode::PageDown);
    press(&mut a, KeyCode::PageDown);
    press(&mut a, KeyCode::Down);
    insta::assert_snapshot!(draw(&mut a));
    press(&mut a, KeyCode::End);
    let end = draw(&mut a);
    assert!(
        end.contains("500/500") && end.contains("task number 499"),
        "{end}"
    );
    typed(&mut a, "number 7");
    press(&mut a, KeyCode::Down);
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Effect::Send(Command::Resume {
            id: Some("20261201-120070-0070".into())
        })],
        "the filter keeps 7 and 70…79; Down picks the second"
    );
}

#[test]
fn slash_popup_at_80x24() {
    let mut a = app();
    typed(&mut a, "/");
    insta::assert_snapshot!(draw(&mut a));
}

#[test]
fn the_model_argument_asks_for_the_list_once_and_completes_from_it() {
    let mut a = app();
    let asked = typed(&mut a, "/model ");
    assert_eq!(asked, [Effect::Send(Command::ListModels)]);
    assert!(draw(&mut a).contains("loading…"));
    assert!(typed(&mut a, "ll").is_empty(), "asked once");
    a.agent_event(
        &models(&["qwen2.5-coder:7b", "llama3.2:3b"], "qwen2.5-coder:7b"),
        Instant::now(),
    );
    press(&mut a, KeyCode::Tab);
    assert_eq!(a.composer.text(), "/model llama3.2:3b");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Effect::Send(Command::SetModel {
            model: "llama3.2:3b".into()
        })]
    );
}

#[test]
fn queued_prompts_show_under_the_input_box() {
    let mut a = app();
    let now = Instant::now();
    a.agent_event(
        &Event::TurnStarted {
            turn: 1,
            prompt: "build the project".into(),
            agent: AgentName::Coder,
        },
        now,
    );
    a.agent_event(
        &Event::Status {
            status: Status::Thinking,
            round: 1,
            attempt: 0,
            max_attempts: 5,
        },
        now,
    );
    for prompt in [
        "then run the tests",
        "and write a summary of what failed and why",
    ] {
        typed(&mut a, prompt);
        press(&mut a, KeyCode::Enter);
    }
    let screen = draw_at(&mut a, now);
    let rule_under_input = screen.lines().nth(22).unwrap_or_default();
    assert!(
        rule_under_input.contains("queued: then run the tests"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn help_overlay_at_80x24() {
    let mut a = app();
    typed(&mut a, "/help");
    press(&mut a, KeyCode::Enter);
    insta::assert_snapshot!(draw(&mut a));
}
