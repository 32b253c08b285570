//! Every view, popup, picker, overlay and pane state drawn by the real screen code, into a
//! plain buffer per size, at the sizes from 1×1 to 200×60 where drawing goes wrong: every size up
//! to 24×16 (where rows and columns run out), every width at the heights 1, 13, 24 and 60, every
//! height at the widths 1, 40 and 200, and 300 more spread over the whole range by a fixed
//! generator. All 12,000 sizes took six minutes a test at about 3 ms a draw; these take well
//! under a minute. Nothing may panic, and the cursor, when shown, must be on the screen.
//!
//! Each state is built once through the app's own update (events and keys, as the event loop
//! feeds them) and drawn at all sizes; widths go in the outer loop so the transcript's wrapped
//! rows are reused across heights.

use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::screen;
use super::snapshots::{CODE, Scene, record, status};
use crate::agent::{Event, ModelEntry, Outcome, SessionEntry, Status};
use crate::wire::{McpServerInfo, McpState, McpToolInfo};

const MAX_WIDTH: u16 = 200;
const MAX_HEIGHT: u16 = 60;
/// The moment every state is drawn at (ms after its scene began).
const AT: u64 = 9_000;

fn typed(s: &mut Scene, text: &str) {
    for c in text.chars() {
        s.key(AT, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

fn press(s: &mut Scene, code: KeyCode) {
    s.key(AT, code, KeyModifiers::NONE);
}

fn models() -> Event {
    Event::ModelList {
        current: "qwen2.5-coder:7b".into(),
        models: (0..40)
            .map(|i| ModelEntry {
                name: format!("model-{i}:{}b", i % 9 + 1),
                detail: format!("{i}.1 GB download · a longer description of the model"),
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
                id: format!("20261201-1200{:02}-{i:04}", i % 60),
                last_activity_ms: 1_764_590_400_000 - i as u64 * 60_000,
                agent: "coder".into(),
                turns: Some(1),
                first_prompt: format!("task number {i}\nwith a second line"),
                work_dir: Some("/home/u/project".into()),
            })
            .collect(),
    }
}

fn mcp_servers() -> Event {
    Event::McpServers {
        servers: vec![
            McpServerInfo {
                name: "time".into(),
                transport: "stdio: python3 -m mcp_server_time".into(),
                state: McpState::Ready,
                error: None,
                tools: vec![McpToolInfo {
                    name: "get_current_time".into(),
                    description: "Get the current time in a time zone, a long description".into(),
                    arguments: "timezone: string".into(),
                }],
            },
            McpServerInfo {
                name: "broken".into(),
                transport: "stdio: no-such-server".into(),
                state: McpState::Failed,
                error: Some("cannot start `no-such-server`: No such file or directory".into()),
                tools: Vec::new(),
            },
        ],
    }
}

/// A finished task with everything the transcript shows: thoughts, an answer, a failed pane
/// (expanded), a plan with its steps, a web task's panes, notices and errors.
fn full_transcript() -> Scene {
    let mut s = Scene::new();
    s.one_block(CODE)
        .finish_block(record(false, &"Traceback: boom\n".repeat(30)))
        .end(Outcome::GaveUp, Some("gave up after 1 round"));
    super::snapshots_plan::planned(&mut s);
    super::snapshots_plan::step(
        &mut s,
        1_000,
        "1",
        super::snapshots_plan::bash_record(true, "hello 2026-12-06\n"),
        true,
    );
    for event in super::snapshots_web::web_steps() {
        s.event(2_000, event);
    }
    s.app.transcript.notice("you ran: ls -la");
    s.app.transcript.error("a long error message ".repeat(12));
    s.app
        .transcript
        .notice("| a | b |\n|---|---|\n| 1 | 2 |\n日本語のテキスト");
    s
}

/// A task running: thoughts streaming, an answer with an open fence, a block running with
/// output, a prompt queued and another one typed.
fn running() -> Scene {
    let mut s = Scene::new();
    s.one_block("sleep 30\n")
        .event(
            4_500,
            Event::BlockOutput {
                round: 1,
                index: 0,
                text: "line\n".repeat(50),
            },
        )
        .event(4_600, status(Status::Thinking, 1))
        .event(
            4_700,
            Event::AnswerDelta {
                text: "Next:\n```python\nprint(1)\n".into(),
            },
        );
    typed(&mut s, "then push");
    press(&mut s, KeyCode::Enter);
    typed(&mut s, "and tag it");
    press(&mut s, KeyCode::Enter);
    typed(&mut s, "typed ahead");
    s
}

fn waiting_for_approval() -> Scene {
    let mut s = Scene::new();
    s.app.approval = Some(crate::config::Approval::Ask);
    s.start("clean up").event(
        300,
        Event::ApprovalRequested {
            id: 7,
            round: 1,
            index: 0,
            tool: "bash".into(),
            code: "rm -rf build/\nls\n".repeat(10),
            save_path: None,
        },
    );
    s
}

/// Every state to draw, named for the failure message: the transcript's states (`part` 0) or
/// the popups, pickers and overlays (`part` 1).
fn states(part: usize) -> Vec<(&'static str, Scene)> {
    let mut states = vec![
        ("empty", Scene::new()),
        ("full transcript", full_transcript()),
        ("running", running()),
        ("waiting for approval", waiting_for_approval()),
    ];
    let mut focused = full_transcript();
    press(&mut focused, KeyCode::Tab);
    press(&mut focused, KeyCode::Enter);
    states.push(("a focused, unfolded pane", focused));

    let mut scrolled = full_transcript();
    press(&mut scrolled, KeyCode::PageUp);
    press(&mut scrolled, KeyCode::PageUp);
    scrolled.key(AT, KeyCode::Char('t'), KeyModifiers::CONTROL);
    scrolled.key(AT, KeyCode::Char('o'), KeyModifiers::CONTROL);
    states.push(("scrolled up, all unfolded", scrolled));

    let mut tall_input = full_transcript();
    for line in 0..20 {
        typed(&mut tall_input, &format!("line {line} of a long prompt "));
        tall_input.key(AT, KeyCode::Enter, KeyModifiers::SHIFT);
    }
    states.push(("a tall prompt", tall_input));
    if part == 0 {
        return states;
    }
    let mut states = Vec::new();

    let mut slash = full_transcript();
    typed(&mut slash, "/");
    states.push(("the / popup", slash));

    let mut slash_moved = Scene::new();
    typed(&mut slash_moved, "/");
    for _ in 0..15 {
        press(&mut slash_moved, KeyCode::Down);
    }
    states.push(("the / popup, moved down", slash_moved));

    let mut model_arg = Scene::new();
    typed(&mut model_arg, "/model ");
    states.push(("the /model popup, loading", model_arg));

    let mut model_listed = Scene::new();
    typed(&mut model_listed, "/model ");
    model_listed.event(AT, models());
    states.push(("the /model popup, listed", model_listed));

    let mut at = Scene::new();
    typed(&mut at, "read @fi");
    // In place of the work dir's names, listed when the `@` was typed.
    at.app.popup.files = Some((0..30).map(|i| format!("file-{i}.txt")).collect());
    states.push(("the @ popup", at));

    let mut model_picker = full_transcript();
    typed(&mut model_picker, "/model");
    press(&mut model_picker, KeyCode::Enter);
    model_picker.event(AT, models());
    for _ in 0..25 {
        press(&mut model_picker, KeyCode::Down);
    }
    states.push(("the model picker", model_picker));

    let mut loading_picker = Scene::new();
    typed(&mut loading_picker, "/model");
    press(&mut loading_picker, KeyCode::Enter);
    states.push(("the model picker, loading", loading_picker));

    let mut session_picker = Scene::new();
    typed(&mut session_picker, "/resume");
    press(&mut session_picker, KeyCode::Enter);
    session_picker.event(AT, sessions(500));
    press(&mut session_picker, KeyCode::End);
    states.push(("the session picker", session_picker));

    let mut help = full_transcript();
    typed(&mut help, "/help");
    press(&mut help, KeyCode::Enter);
    press(&mut help, KeyCode::PageDown);
    states.push(("help", help));

    let mut mcp = Scene::new();
    typed(&mut mcp, "/mcp");
    press(&mut mcp, KeyCode::Enter);
    mcp.event(AT, mcp_servers());
    states.push(("/mcp", mcp));
    states
}

/// The sizes drawn (module doc), widths ascending, each once.
fn sizes() -> Vec<(u16, u16)> {
    let mut sizes = std::collections::BTreeSet::new();
    for width in 1..=24 {
        for height in 1..=16 {
            sizes.insert((width, height));
        }
    }
    for width in 1..=MAX_WIDTH {
        for height in [1, 13, 24, MAX_HEIGHT] {
            sizes.insert((width, height));
        }
    }
    for height in 1..=MAX_HEIGHT {
        for width in [1, 40, MAX_WIDTH] {
            sizes.insert((width, height));
        }
    }
    // A fixed linear congruential generator: the same 300 sizes every run.
    let mut state: u32 = 0x5eec;
    let mut next = |bound: u16| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 16) as u16 % bound + 1
    };
    for _ in 0..300 {
        let width = next(MAX_WIDTH);
        let height = next(MAX_HEIGHT);
        sizes.insert((width, height));
    }
    sizes.into_iter().collect()
}

/// Draws each state at each size; one buffer is resized for each (its old content does not
/// matter: the point is that nothing draws outside it).
fn draw_every_size(part: usize) {
    let sizes = sizes();
    let mut buf = Buffer::empty(Rect::new(0, 0, 1, 1));
    for (name, mut scene) in states(part) {
        let now = scene.at(AT);
        for &(width, height) in &sizes {
            let area = Rect::new(0, 0, width, height);
            buf.resize(area);
            let drawn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                screen::draw_into(&mut buf, &mut scene.app, now, true)
            }));
            let cursor = match drawn {
                Ok(cursor) => cursor,
                Err(_) => panic!("{name} at {width}x{height} panicked"),
            };
            if let Some(cursor) = cursor {
                assert!(
                    area.contains(cursor),
                    "{name} at {width}x{height}: the cursor {cursor:?} is off the screen"
                );
            }
        }
    }
}

#[test]
fn every_transcript_state_draws_at_sizes_from_1x1_to_200x60() {
    draw_every_size(0);
}

#[test]
fn every_popup_picker_and_overlay_draws_at_sizes_from_1x1_to_200x60() {
    draw_every_size(1);
}
