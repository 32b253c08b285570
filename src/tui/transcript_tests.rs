//! Tests of `transcript`.

use super::*;
use crate::agent::Status;
use crate::config::AgentName;

fn t0() -> Instant {
    Instant::now()
}

fn record(round: u32, index: usize, success: bool) -> BlockRecord {
    BlockRecord {
        round,
        index,
        tool_type: "python".into(),
        block: "print(1)\n".into(),
        save_path: None,
        feedback: String::new(),
        success,
        exit_code: Some(if success { 0 } else { 1 }),
        timed_out: false,
        stopped: false,
        skipped: false,
        duration_ms: 3.0,
        output: "1\n".into(),
        not_run: None,
    }
}

fn turn(t: &mut Transcript) {
    for event in [
        Event::TurnStarted {
            turn: 1,
            prompt: "count".into(),
            agent: AgentName::Coder,
        },
        Event::Status {
            status: Status::Thinking,
            round: 1,
            attempt: 0,
            max_attempts: 5,
        },
        Event::ReasoningDelta {
            text: "use ".into(),
        },
        Event::ReasoningDelta {
            text: "python".into(),
        },
        Event::AnswerDelta {
            text: "I'll count.\n```python\nprint(1)\n```\nDone.".into(),
        },
        Event::AnswerComplete {
            round: 1,
            answer: "I'll count.\nblock:0\nDone.".into(),
            reasoning: Some("use python".into()),
            blocks: 1,
            finish: crate::agent::AnswerFinish::Stop,
        },
        Event::BlockStarted {
            round: 1,
            index: 0,
            tool: "python".into(),
            code: "print(1)\n".into(),
            save_path: None,
        },
        Event::BlockOutput {
            round: 1,
            index: 0,
            text: "1\n".into(),
        },
    ] {
        t.apply(&event, t0());
    }
}

#[test]
fn a_turn_becomes_prompt_reasoning_text_pane_text() {
    let mut t = Transcript::default();
    turn(&mut t);
    let items = t.items();
    assert_eq!(items[0], Item::User("count".into()));
    assert!(
        matches!(&items[1], Item::Reasoning(r) if r.text == "use python" && !r.live && !r.expanded && r.until.is_some())
    );
    assert_eq!(items[2], Item::Answer("I'll count.".into()));
    assert!(
        matches!(&items[3], Item::Pane(p) if matches!(p.state, PaneState::Running { .. }) && p.output == "1\n" && !p.expanded)
    );
    assert_eq!(items[4], Item::Answer("Done.".into()));
    t.apply(
        &Event::BlockFinished {
            record: record(1, 0, true),
        },
        t0(),
    );
    assert!(
        matches!(&t.items()[3], Item::Pane(p) if p.succeeded() && !p.expanded),
        "success collapses"
    );
}

#[test]
fn a_failed_pane_stays_open_and_a_bad_end_leaves_a_notice() {
    let mut t = Transcript::default();
    turn(&mut t);
    t.apply(
        &Event::BlockFinished {
            record: record(1, 0, false),
        },
        t0(),
    );
    assert!(matches!(&t.items()[3], Item::Pane(p) if !p.succeeded() && p.expanded));
    t.apply(
        &Event::TurnFinished {
            usage: None,
            turn: 1,
            outcome: Outcome::GaveUp,
            answer: String::new(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 5,
            blocks: Vec::new(),
            message: Some("gave up after 5 failed attempts".into()),
        },
        t0(),
    );
    assert_eq!(
        t.items().last(),
        Some(&Item::Notice("gave up after 5 failed attempts".into()))
    );
}

#[test]
fn folding() {
    let mut t = Transcript::default();
    turn(&mut t);
    assert_eq!(t.foldable(), [3, 1], "newest first");
    t.toggle(1);
    assert!(matches!(
        t.items()[1],
        Item::Reasoning(Reasoning { expanded: true, .. })
    ));
    t.toggle_all_reasoning();
    assert!(
        matches!(
            t.items()[1],
            Item::Reasoning(Reasoning { expanded: true, .. })
        ),
        "Ctrl+T unfolds all"
    );
    t.toggle_all_reasoning();
    assert!(matches!(
        t.items()[1],
        Item::Reasoning(Reasoning {
            expanded: false,
            ..
        })
    ));
    t.toggle(0);
    assert_eq!(
        t.items()[0],
        Item::User("count".into()),
        "prompts do not fold"
    );
}

#[test]
fn a_late_think_close_moves_the_streamed_answer_into_reasoning() {
    let mut t = Transcript::default();
    t.apply(
        &Event::TurnStarted {
            turn: 1,
            prompt: "x".into(),
            agent: AgentName::Coder,
        },
        t0(),
    );
    t.apply(
        &Event::AnswerDelta {
            text: "hmm, ".into(),
        },
        t0(),
    );
    t.apply(&Event::AnswerWasReasoning, t0());
    t.apply(&Event::ReasoningDelta { text: "ok".into() }, t0());
    t.apply(
        &Event::AnswerDelta {
            text: "Answer.".into(),
        },
        t0(),
    );
    assert!(
        matches!(&t.items()[1], Item::Reasoning(r) if r.text == "hmm, ok" && !r.live && r.until.is_some())
    );
    assert_eq!(t.items()[2], Item::Answer("Answer.".into()));
}

#[test]
fn live_output_is_bounded() {
    let mut t = Transcript::default();
    turn(&mut t);
    for _ in 0..100 {
        t.apply(
            &Event::BlockOutput {
                round: 1,
                index: 0,
                text: "x".repeat(4096),
            },
            t0(),
        );
    }
    assert!(matches!(&t.items()[3], Item::Pane(p) if p.output.len() <= LIVE_OUTPUT_LIMIT));
}
