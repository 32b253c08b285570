//! Property test: whatever the model and the programs send (control characters, escape
//! sequences, wide and combining characters, huge lines, events in odd orders, plans and their
//! steps' events mixed and repeated) and whatever the user presses, at whatever terminal size, the UI updates and draws without panicking.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::screen;
use crate::agent::{BlockRecord, Event, Outcome, Status};
use crate::app::App;
use crate::config::AgentName;
use crate::history::History;

fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z \\n`*#|>-]{0,40}",
        Just("```python\nprint(1)\n".to_owned()),
        Just("```\n".to_owned()),
        Just("\u{1b}[31mred\u{1b}[0m\r\u{7}\u{0}\t".to_owned()),
        Just("日本語のテキスト\u{301}\u{200b}".to_owned()),
        Just("block:0\n".to_owned()),
        Just("x".repeat(3000)),
        Just("| a | b |\n|---|---|\n| 1 | 2 |\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("- item\n  - nested\n> quote\n".to_owned()),
    ]
}

fn record(round: u32, index: usize, success: bool, output: String) -> BlockRecord {
    BlockRecord {
        round,
        index,
        tool_type: "bash".into(),
        block: "true".into(),
        save_path: None,
        feedback: String::new(),
        success,
        exit_code: Some(i32::from(!success)),
        timed_out: false,
        stopped: !success,
        skipped: false,
        duration_ms: 1.0,
        output,
        not_run: None,
    }
}

fn event() -> impl Strategy<Value = Event> {
    let small = 0u32..3;
    let index = 0usize..3;
    prop_oneof![
        nasty_text().prop_map(|prompt| Event::TurnStarted {
            turn: 1,
            prompt,
            agent: AgentName::Coder
        }),
        nasty_text().prop_map(|text| Event::ReasoningDelta { text }),
        nasty_text().prop_map(|text| Event::AnswerDelta { text }),
        Just(Event::AnswerWasReasoning),
        (small.clone(), nasty_text()).prop_map(|(round, answer)| Event::AnswerComplete {
            round,
            answer,
            reasoning: None,
            blocks: 1,
            finish: crate::agent::AnswerFinish::Stop
        }),
        (small.clone(), index.clone(), nasty_text()).prop_map(|(round, index, code)| {
            Event::BlockStarted {
                round,
                index,
                tool: "bash".into(),
                code,
                save_path: None,
            }
        }),
        (small.clone(), index.clone(), nasty_text())
            .prop_map(|(round, index, text)| Event::BlockOutput { round, index, text }),
        (small.clone(), index.clone(), any::<bool>(), nasty_text()).prop_map(
            |(round, index, ok, output)| Event::BlockFinished {
                record: record(round, index, ok, output)
            }
        ),
        (small.clone(), index, nasty_text()).prop_map(|(round, index, code)| {
            Event::ApprovalRequested {
                id: 1,
                round,
                index,
                tool: "bash".into(),
                code,
                save_path: None,
            }
        }),
        nasty_text().prop_map(|message| Event::Error { message }),
        Just(Event::Status {
            status: Status::Thinking,
            round: 1,
            attempt: 0,
            max_attempts: 5
        }),
        Just(Event::Cleared),
        Just(Event::TurnFinished {
            usage: None,
            turn: 1,
            outcome: Outcome::GaveUp,
            answer: String::new(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 1,
            blocks: Vec::new(),
            message: Some("gave up".into()),
            plan: None,
            web: None,
        }),
    ]
}

/// Step ids that repeat, clash or are hostile.
fn step_id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_owned()),
        Just("2".to_owned()),
        Just("\u{1b}[2J9".to_owned())
    ]
}

fn plan_steps() -> impl Strategy<Value = Vec<crate::wire::PlanStep>> {
    proptest::collection::vec((step_id(), nasty_text()), 0..4).prop_map(|steps| {
        steps
            .into_iter()
            .map(|(id, task)| crate::wire::PlanStep {
                id,
                agent: AgentName::Coder,
                task,
                need: Vec::new(),
                title: None,
                status: crate::wire::StepStatus::Pending,
            })
            .collect()
    })
}

/// The planner's and router's events, and any event as a step's sub-agent's, in any order.
fn planner_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (step_id(), event()).prop_map(|(step, event)| Event::Step {
            step,
            event: Box::new(event)
        }),
        (step_id(), nasty_text()).prop_map(|(id, task)| Event::StepStarted {
            id,
            agent: AgentName::File,
            task
        }),
        (step_id(), any::<bool>(), nasty_text()).prop_map(|(id, success, summary)| {
            Event::StepFinished {
                id,
                success,
                summary,
            }
        }),
        (plan_steps(), nasty_text()).prop_map(|(steps, note)| Event::Plan {
            steps,
            notes: vec![note]
        }),
        (plan_steps(), nasty_text()).prop_map(|(steps, reason)| Event::Replanned {
            steps,
            replans: 7,
            reason
        }),
        (any::<f64>(), nasty_text()).prop_map(|(confidence, reason)| Event::Routed {
            route: crate::wire::Route {
                agent: AgentName::Casual,
                confidence,
                why: reason.clone(),
                reason
            }
        }),
    ]
}

fn key() -> impl Strategy<Value = KeyEvent> {
    let code = prop_oneof![
        Just(KeyCode::Tab),
        Just(KeyCode::BackTab),
        Just(KeyCode::Enter),
        Just(KeyCode::Char(' ')),
        Just(KeyCode::Char('y')),
        Just(KeyCode::Char('x')),
        Just(KeyCode::Char('界')),
        // Opens the completion popup (which crashed in windows of 13 rows or less).
        Just(KeyCode::Char('/')),
        Just(KeyCode::Up),
        Just(KeyCode::Down),
        Just(KeyCode::Left),
        Just(KeyCode::PageUp),
        Just(KeyCode::PageDown),
        Just(KeyCode::Home),
        Just(KeyCode::End),
        Just(KeyCode::Backspace),
        Just(KeyCode::Esc),
    ];
    let modifiers = prop_oneof![
        Just(KeyModifiers::NONE),
        Just(KeyModifiers::SHIFT),
        Just(KeyModifiers::CONTROL),
    ];
    (code, modifiers).prop_map(|(code, modifiers)| KeyEvent::new(code, modifiers))
}

#[derive(Debug, Clone)]
// Test input, generated and dropped one at a time: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Step {
    Agent(Event),
    Key(KeyEvent),
    Draw(u16, u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => event().prop_map(Step::Agent),
        2 => planner_event().prop_map(Step::Agent),
        2 => key().prop_map(Step::Key),
        1 => (1u16..130, 1u16..45).prop_map(|(w, h)| Step::Draw(w, h)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: RngSeed::Fixed(0x7e55_7e55),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn any_events_keys_and_sizes_draw_without_panicking(steps in proptest::collection::vec(step(), 1..60)) {
        let mut app = App::new(AgentName::Coder, "m @ p".into(), "~/w".into(), History::default());
        let t0 = Instant::now();
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
        for (n, step) in steps.into_iter().enumerate() {
            let now = t0 + Duration::from_millis(n as u64 * 37);
            match step {
                Step::Agent(event) => app.agent_event(&event, now),
                Step::Key(key) => {
                    let _ = app.key(key, now);
                }
                Step::Draw(w, h) => {
                    terminal.backend_mut().resize(w, h);
                    terminal.resize(ratatui::layout::Rect::new(0, 0, w, h)).expect("resize");
                }
            }
            terminal.draw(|f| screen::draw(f, &mut app, now, true)).expect("draw");
        }
        let _ = screen::plain_transcript(&app, 60, t0);
    }
}
