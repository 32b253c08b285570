//! Snapshot tests of every widget state, drawn by the real screen code into ratatui's
//! `TestBackend` at fixed moments (so spinners and clocks are deterministic).

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::screen;
use crate::agent::{BlockRecord, Command, Event, Outcome, Status};
use crate::app::{App, Effect};
use crate::config::AgentName;
use crate::history::History;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub(super) struct Scene {
    pub(super) app: App,
    t0: Instant,
}

impl Scene {
    pub(super) fn new() -> Self {
        Scene {
            app: App::new(
                AgentName::Coder,
                "qwen2.5-coder:7b @ ollama http://127.0.0.1:11434".into(),
                "~/seek/workspace".into(),
                History::default(),
            ),
            t0: Instant::now(),
        }
    }

    pub(super) fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    pub(super) fn event(&mut self, ms: u64, event: Event) -> &mut Self {
        let now = self.at(ms);
        self.app.agent_event(&event, now);
        self
    }

    pub(super) fn key(&mut self, ms: u64, code: KeyCode, modifiers: KeyModifiers) -> Vec<Effect> {
        let now = self.at(ms);
        self.app.key(KeyEvent::new(code, modifiers), now)
    }

    pub(super) fn draw(&mut self, width: u16, height: u16, ms: u64) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
        let now = self.at(ms);
        terminal
            .draw(|frame| screen::draw(frame, &mut self.app, now, true))
            .expect("draw");
        terminal.backend().to_string()
    }

    pub(super) fn start(&mut self, prompt: &str) -> &mut Self {
        self.event(
            0,
            Event::TurnStarted {
                turn: 1,
                prompt: prompt.into(),
                agent: AgentName::Coder,
            },
        )
        .event(0, status(Status::Thinking, 0))
    }

    /// Reasoning, an answer with one python block, the block started.
    pub(super) fn one_block(&mut self, code: &str) -> &mut Self {
        self.start("count the words in notes.txt")
            .event(
                100,
                Event::ReasoningDelta {
                    text: "I should read the file and split it on whitespace.".into(),
                },
            )
            .event(
                4100,
                Event::AnswerDelta {
                    text: "I'll read the file and count with python.\n".into(),
                },
            )
            .event(
                4200,
                Event::AnswerComplete {
                    round: 1,
                    answer: "I'll read the file and count with python.\nblock:0\n".into(),
                    reasoning: None,
                    blocks: 1,
                    finish: crate::agent::AnswerFinish::Stop,
                },
            )
            .event(
                4200,
                status(
                    Status::Executing {
                        tool: "python".into(),
                    },
                    0,
                ),
            )
            .event(
                4200,
                Event::BlockStarted {
                    round: 1,
                    index: 0,
                    tool: "python".into(),
                    code: code.into(),
                    save_path: None,
                },
            )
    }

    pub(super) fn finish_block(&mut self, record: BlockRecord) -> &mut Self {
        self.event(5000, Event::BlockFinished { record })
    }

    pub(super) fn end(&mut self, outcome: Outcome, message: Option<&str>) -> &mut Self {
        self.event(
            5200,
            Event::TurnFinished {
                usage: None,
                turn: 1,
                outcome,
                answer: String::new(),
                reasoning: None,
                agent: AgentName::Coder,
                rounds: 1,
                blocks: Vec::new(),
                message: message.map(str::to_owned),
                plan: None,
                web: None,
            },
        )
    }
}

pub(super) fn status(status: Status, attempt: u32) -> Event {
    Event::Status {
        status,
        round: attempt + 1,
        attempt,
        max_attempts: 5,
    }
}

pub(super) const CODE: &str = "with open(\"notes.txt\") as f:\n    print(len(f.read().split()))\n";

pub(super) fn record(success: bool, output: &str) -> BlockRecord {
    BlockRecord {
        round: 1,
        index: 0,
        tool_type: "python".into(),
        block: CODE.into(),
        save_path: None,
        feedback: String::new(),
        success,
        exit_code: Some(if success { 0 } else { 1 }),
        timed_out: false,
        stopped: false,
        skipped: false,
        duration_ms: 40.0,
        output: output.into(),
        not_run: None,
    }
}

#[test]
fn empty_screen_at_80x24() {
    let mut s = Scene::new();
    insta::assert_snapshot!(s.draw(80, 24, 0));
}

#[test]
fn reasoning_live_while_the_model_thinks() {
    let mut s = Scene::new();
    s.start("count the words in notes.txt").event(
        100,
        Event::ReasoningDelta {
            text: "Let me think about the file first".into(),
        },
    );
    insta::assert_snapshot!(s.draw(80, 16, 9_300));
}

#[test]
fn answer_streaming_with_an_open_fence() {
    let mut s = Scene::new();
    s.start("say hi").event(
        200,
        Event::AnswerDelta {
            text: "Sure, **here** it is:\n\n```bash\necho hi".into(),
        },
    );
    insta::assert_snapshot!(s.draw(80, 16, 1_000));
}

#[test]
fn pane_running_shows_a_live_tail_and_the_clock() {
    let mut s = Scene::new();
    s.one_block(CODE);
    for i in 1..=12 {
        s.event(
            4300,
            Event::BlockOutput {
                round: 1,
                index: 0,
                text: format!("line {i}\n"),
            },
        );
    }
    insta::assert_snapshot!(s.draw(80, 24, 16_600));
}

#[test]
fn pane_succeeded_collapsed_then_expanded() {
    let mut s = Scene::new();
    s.one_block(CODE)
        .finish_block(record(true, "212\n"))
        .end(Outcome::Done, None);
    insta::assert_snapshot!("pane_succeeded_collapsed", s.draw(80, 20, 6_000));
    s.key(6_000, KeyCode::Tab, KeyModifiers::NONE);
    s.key(6_000, KeyCode::Enter, KeyModifiers::NONE);
    insta::assert_snapshot!("pane_succeeded_expanded_focused", s.draw(80, 20, 6_000));
}

#[test]
fn pane_failed_stays_expanded() {
    let mut s = Scene::new();
    let error = "  File \"<block>\", line 2\n    print(len(f.read().split())\n         ^\nSyntaxError: '(' was never closed\n";
    s.one_block(CODE)
        .finish_block(record(false, error))
        .event(5100, status(Status::Correcting, 1));
    insta::assert_snapshot!(s.draw(80, 24, 5_500));
}

#[test]
fn pane_timed_out() {
    let mut s = Scene::new();
    let mut r = record(false, "waiting\n");
    r.timed_out = true;
    r.exit_code = None;
    r.duration_ms = 300_000.0;
    s.one_block("import time\ntime.sleep(1000)\n")
        .finish_block(r);
    insta::assert_snapshot!(s.draw(80, 20, 305_000));
}

#[test]
fn pane_stopped_by_the_user() {
    let mut s = Scene::new();
    let mut r = record(false, "started\n");
    r.stopped = true;
    r.exit_code = None;
    r.duration_ms = 3_100.0;
    s.one_block("sleep 1000\n")
        .finish_block(r)
        .end(Outcome::Stopped, Some("stopped by the user"));
    insta::assert_snapshot!(s.draw(80, 20, 8_000));
}

#[test]
fn reasoning_unfolded_with_ctrl_t() {
    let mut s = Scene::new();
    s.one_block(CODE)
        .finish_block(record(true, "212\n"))
        .end(Outcome::Done, None);
    s.key(6_000, KeyCode::Char('t'), KeyModifiers::CONTROL);
    insta::assert_snapshot!(s.draw(80, 20, 6_000));
}

#[test]
fn status_line_states() {
    let mut lines = Vec::new();
    let mut s = Scene::new();
    let mut grab = |s: &mut Scene, ms| {
        let screen = s.draw(100, 8, ms);
        lines.push(screen.lines().last().unwrap_or_default().to_owned());
    };
    grab(&mut s, 0);
    s.start("x");
    grab(&mut s, 1_500);
    s.event(1_600, status(Status::Correcting, 2));
    grab(&mut s, 2_000);
    s.event(
        2_100,
        Event::Retrying {
            attempt: 1,
            delay_ms: 500,
            reason: "HTTP 503".into(),
        },
    );
    grab(&mut s, 2_200);
    for (outcome, message) in [
        (Outcome::Done, None),
        (Outcome::GaveUp, Some("gave up")),
        (Outcome::RoundLimit, Some("round limit")),
        (Outcome::NeedsClarification, Some("which file?")),
        (Outcome::ModelError, Some("connection refused")),
        (Outcome::Stopped, Some("stopped by the user")),
    ] {
        s.end(outcome, message);
        grab(&mut s, 9_000);
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn model_server_error_and_notices() {
    let mut s = Scene::new();
    s.start("hello").event(
        300,
        Event::Error {
            message: "model server http://127.0.0.1:11434: connection refused — is Ollama running? (ollama serve)".into(),
        },
    );
    s.end(Outcome::ModelError, Some("connection refused"));
    insta::assert_snapshot!(s.draw(80, 14, 1_000));
}

#[test]
fn narrow_terminal_wraps_everything() {
    let mut s = Scene::new();
    s.one_block(CODE)
        .finish_block(record(
            false,
            "Traceback (most recent call last): a very long error line that must wrap\n",
        ))
        .end(Outcome::GaveUp, Some("gave up after 5 failed attempts"));
    insta::assert_snapshot!(s.draw(40, 24, 6_000));
}

#[test]
fn multi_line_input_and_help() {
    let mut s = Scene::new();
    for c in "/help".chars() {
        s.key(0, KeyCode::Char(c), KeyModifiers::NONE);
    }
    s.key(0, KeyCode::Enter, KeyModifiers::NONE);
    for c in "first".chars() {
        s.key(0, KeyCode::Char(c), KeyModifiers::NONE);
    }
    s.key(0, KeyCode::Enter, KeyModifiers::SHIFT);
    for c in "second".chars() {
        s.key(0, KeyCode::Char(c), KeyModifiers::NONE);
    }
    insta::assert_snapshot!(s.draw(100, 40, 0));
}

#[test]
fn submitting_sends_the_prompt_to_the_chosen_agent() {
    let mut s = Scene::new();
    for c in "/agent file".chars() {
        s.key(0, KeyCode::Char(c), KeyModifiers::NONE);
    }
    assert!(s.key(0, KeyCode::Enter, KeyModifiers::NONE).is_empty());
    for c in "list".chars() {
        s.key(0, KeyCode::Char(c), KeyModifiers::NONE);
    }
    assert_eq!(
        s.key(0, KeyCode::Enter, KeyModifiers::NONE),
        [Effect::Send(Command::Submit {
            prompt: "list".into(),
            agent: Some(AgentName::File),
            context: None,
        })]
    );
}

#[test]
fn tiny_terminals_draw_without_panicking() {
    let mut s = Scene::new();
    s.one_block(CODE)
        .finish_block(record(false, "boom\n"))
        .end(Outcome::GaveUp, Some("gave up"));
    for c in "a long prompt that will not fit".chars() {
        s.key(6_000, KeyCode::Char(c), KeyModifiers::NONE);
    }
    s.key(6_000, KeyCode::Tab, KeyModifiers::NONE);
    for (w, h) in [(1, 1), (2, 3), (10, 5), (20, 7), (80, 2), (3, 40)] {
        let screen = s.draw(w, h, 6_000);
        assert_eq!(screen.lines().count(), usize::from(h), "{w}x{h}");
    }
}

#[test]
fn a_block_waiting_for_approval() {
    let mut s = Scene::new();
    s.app.sandbox = Some(super::header::SandboxBadge::Mode(
        crate::exec::sandbox::SandboxMode::WorkspaceWrite,
    ));
    s.app.approval = Some(crate::config::Approval::Ask);
    s.start("clean the build folder").event(
        200,
        Event::AnswerComplete {
            round: 1,
            answer: "I'll remove it.\nblock:0\n".into(),
            reasoning: None,
            blocks: 1,
            finish: crate::agent::AnswerFinish::Stop,
        },
    );
    s.event(
        300,
        Event::ApprovalRequested {
            id: 7,
            round: 1,
            index: 0,
            tool: "bash".into(),
            code: "rm -rf build/\nls\n".into(),
            save_path: None,
        },
    );
    insta::assert_snapshot!(s.draw(100, 14, 1_000));
    assert_eq!(
        s.key(1_000, KeyCode::Char('y'), KeyModifiers::NONE),
        [Effect::Send(Command::Approve {
            id: 7,
            decision: crate::agent::ApprovalDecision::Run
        })]
    );
    assert!(s.app.awaiting.is_none());
}
