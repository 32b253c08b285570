//! Hostile input for what the first hour added to the screen: the event orders a hostile
//! server or a damaged, resumed session file can produce (blocks finishing in panes that never
//! started, round 0 during a task, usage before the answer), work dirs with escapes or no valid
//! UTF-8, and terminals 1 to 20 columns wide. Nothing here may panic, and no escape may reach
//! the screen.
//!
//! Tests only; it must not hold anything the program uses.

use std::os::unix::ffi::OsStrExt;

use super::super::snapshots::Scene;
use super::{HeaderParts, SandboxBadge, header};
use crate::agent::{AnswerFinish, BlockRecord, Event, NotRun, Outcome, RoundUsage, Status};
use crate::config::{AgentName, Approval};
use crate::exec::sandbox::SandboxMode;

/// A small deterministic generator: the same sequences on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

const HOSTILE_TEXT: &[&str] = &[
    "plain",
    "\x1b]0;owned\x07title",
    "\x1b[2J\x1b[Hclear",
    "```python\nprint(1)\n",
    "é\u{202e}rtl\u{200b}",
    "\r\rcarriage",
    "\u{9b}31mC1",
    "",
];

fn record(round: u32, index: usize, not_run: Option<NotRun>, text: &str) -> BlockRecord {
    BlockRecord {
        round,
        index,
        tool_type: "bash".into(),
        block: text.into(),
        save_path: None,
        feedback: text.into(),
        success: not_run.is_none(),
        exit_code: not_run.is_none().then_some(0),
        timed_out: false,
        stopped: false,
        skipped: not_run.is_some(),
        duration_ms: f64::NAN,
        output: text.into(),
        not_run,
    }
}

fn random_event(rng: &mut Lcg) -> Event {
    let text = HOSTILE_TEXT[rng.next(HOSTILE_TEXT.len() as u64) as usize].to_owned();
    let round = [0, 1, 2, 7, u32::MAX][rng.next(5) as usize];
    let index = [0, 1, 3, usize::MAX][rng.next(4) as usize];
    let not_run = [
        None,
        Some(NotRun::ReplyCut),
        Some(NotRun::Interactive),
        Some(NotRun::SafeMode),
        Some(NotRun::Stopped),
        Some(NotRun::EarlierFailure),
        Some(NotRun::Repeated),
    ][rng.next(7) as usize];
    let finish = [
        AnswerFinish::Stop,
        AnswerFinish::Length,
        AnswerFinish::Repetition,
        AnswerFinish::Block,
    ][rng.next(4) as usize]
        .clone();
    let outcome = [
        Outcome::Done,
        Outcome::NeedsClarification,
        Outcome::Stopped,
        Outcome::GaveUp,
        Outcome::ModelError,
    ][rng.next(5) as usize];
    match rng.next(14) {
        0 => Event::TurnStarted {
            turn: rng.next(3),
            prompt: text,
            agent: AgentName::Coder,
        },
        1 => Event::Status {
            status: Status::Executing { tool: text },
            round,
            attempt: round,
            max_attempts: u32::from(round > 1),
        },
        2 => Event::ReasoningDelta { text },
        3 => Event::AnswerDelta { text },
        4 => Event::AnswerComplete {
            round,
            answer: text,
            reasoning: None,
            blocks: index,
            finish,
        },
        5 => Event::BlockStarted {
            round,
            index,
            tool: "bash".into(),
            code: text,
            save_path: None,
        },
        6 => Event::BlockOutput { round, index, text },
        7 => Event::BlockFinished {
            record: record(round, index, not_run, &text),
        },
        8 => Event::Usage {
            round,
            usage: RoundUsage {
                prompt_tokens: u64::MAX - rng.next(2),
                completion_tokens: rng.next(1 << 40),
                streaming_ms: [f64::NAN, -1.0, 0.0, 1e308][rng.next(4) as usize],
                context_window: [None, Some(0), Some(1)][rng.next(3) as usize],
                estimated: true,
            },
        },
        9 => Event::TurnFinished {
            turn: rng.next(3),
            outcome,
            answer: text,
            reasoning: None,
            agent: AgentName::Coder,
            rounds: round,
            blocks: vec![record(round, index, not_run, "")],
            message: Some("\x1b]9;fake\x07".into()),
            usage: None,
            plan: None,
            web: None,
        },
        10 => Event::BlocksNotRun {
            round,
            count: index,
            limit: 0,
        },
        11 => Event::Error { message: text },
        12 => Event::AnswerWasReasoning,
        _ => Event::Cleared,
    }
}

/// Every drawn cell is printable: no escape or control character reached the screen.
fn assert_printable(screen: &str, context: &str) {
    assert!(
        !screen
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '"'),
        "{context}: {screen:?}"
    );
}

#[test]
fn any_order_of_hostile_events_draws_without_panicking_at_any_width() {
    for seed in 0..60 {
        let mut rng = Lcg(seed);
        let mut scene = Scene::new();
        for step in 0..80u64 {
            let event = random_event(&mut rng);
            scene.event(step * 10, event);
        }
        for width in [1, 2, 5, 13, 20, 80] {
            let screen = scene.draw(width, 12, 1_000);
            assert_printable(&screen, &format!("seed {seed} width {width}"));
        }
    }
}

#[test]
fn a_damaged_session_replayed_on_resume_draws_without_panicking() {
    for seed in 100..140 {
        let mut rng = Lcg(seed);
        let replay: Vec<(u64, Event)> = (0..60).map(|i| (i, random_event(&mut rng))).collect();
        let mut scene = Scene::new();
        scene.event(
            0,
            Event::Resumed {
                id: "\x1b[31mid".into(),
                turns: usize::MAX,
                warnings: vec!["\x1b]0;w\x07".into()],
                replay,
            },
        );
        for width in [1, 7, 20, 80] {
            let screen = scene.draw(width, 10, 500);
            assert_printable(&screen, &format!("seed {seed} width {width}"));
        }
    }
}

#[test]
fn work_dirs_with_escapes_or_invalid_utf8_fit_every_narrow_header() {
    let bytes = b"/home/u/\x1b]0;owned\x07/\xff\xfe/\xe6\x97\xa5\xe6\x9c\xac/\x1b[2J/x";
    let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(bytes));
    let shown = crate::config::abbreviate_home(dir, Some(std::path::Path::new("/home/u")));
    let long = format!("~/{}", "日本語/".repeat(300));
    for work_dir in [shown.as_str(), long.as_str(), "", "/", "\u{202e}"] {
        let parts = HeaderParts {
            agent: AgentName::Coder,
            model: "\x1b[5mmodel @ \x1b]8;;http://x\x07provider",
            sandbox: Some(SandboxBadge::Mode(SandboxMode::Off)),
            approval: Some(Approval::Ask),
            work_dir,
        };
        for columns in 0..=20 {
            let (left, right) = header(&parts, columns);
            for span in left.spans.iter().chain(&right.spans) {
                assert_printable(&span.content, &format!("{work_dir:?} at {columns}"));
            }
        }
        let mut scene = Scene::new();
        scene.app.work_dir = work_dir.to_owned();
        for width in 1..=20 {
            assert_printable(
                &scene.draw(width, 4, 0),
                &format!("{work_dir:?} at {width}"),
            );
        }
    }
}
