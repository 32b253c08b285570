//! Tests of `transcript`.

use super::*;
use crate::agent::{Outcome, Status};
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
            plan: None,
            web: None,
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

fn finished(outcome: Outcome) -> Event {
    Event::TurnFinished {
        usage: None,
        turn: 1,
        outcome,
        answer: String::new(),
        reasoning: None,
        agent: AgentName::Coder,
        rounds: 1,
        blocks: Vec::new(),
        message: None,
        plan: None,
        web: None,
    }
}

fn pane_state(t: &Transcript, at: usize) -> PaneState {
    match &t.items()[at] {
        Item::Pane(p) => p.state.clone(),
        other => panic!("not a pane: {other:?}"),
    }
}

#[test]
fn no_pane_outlives_its_task_waiting_or_running() {
    for (outcome, why) in [
        (Outcome::Stopped, Abandoned::Stopped),
        (Outcome::Done, Abandoned::Ended),
    ] {
        let mut t = Transcript::default();
        turn(&mut t);
        t.apply(&finished(outcome), t0());
        assert_eq!(pane_state(&t, 3), PaneState::Abandoned(why), "{outcome:?}");
    }
}

#[test]
fn a_new_round_ends_the_open_panes_of_the_last_one_and_names_itself() {
    let mut t = Transcript::default();
    turn(&mut t);
    t.apply(
        &Event::BlockFinished {
            record: BlockRecord {
                timed_out: true,
                exit_code: None,
                ..record(1, 0, false)
            },
        },
        t0(),
    );
    t.apply(
        &Event::Status {
            status: Status::Correcting,
            round: 2,
            attempt: 1,
            max_attempts: 3,
        },
        t0(),
    );
    assert_eq!(
        t.items().last(),
        Some(&Item::Rule(
            "attempt 2/3 · the python block timed out".into()
        ))
    );
    // A status within the same round adds nothing.
    let len = t.items().len();
    t.apply(
        &Event::Status {
            status: Status::Executing {
                tool: "bash".into(),
            },
            round: 2,
            attempt: 1,
            max_attempts: 3,
        },
        t0(),
    );
    assert_eq!(t.items().len(), len);
}

#[test]
fn a_replayed_session_without_statuses_still_gets_its_rules() {
    let mut t = Transcript::default();
    turn(&mut t);
    let refused = BlockRecord {
        not_run: Some(crate::agent::NotRun::Interactive),
        exit_code: None,
        ..record(1, 0, false)
    };
    t.apply(&Event::BlockFinished { record: refused }, t0());
    t.apply(
        &Event::AnswerComplete {
            round: 2,
            answer: "Without input() then.".into(),
            reasoning: None,
            blocks: 0,
            finish: crate::agent::AnswerFinish::Stop,
        },
        t0(),
    );
    assert!(
        t.items().contains(&Item::Rule(
            "round 2 · the python block was refused: interactive input".into()
        )),
        "{:?}",
        t.items()
    );
    assert!(
        matches!(&t.items()[3], Item::Pane(p) if p.did_not_run() && !p.expanded),
        "a refused block is folded"
    );
}

#[test]
fn the_question_loses_its_sentinel_word() {
    use super::rounds::question;
    assert_eq!(
        question("REQUEST_CLARIFICATION: Which file?"),
        "Which file?"
    );
    assert_eq!(
        question("I need to know more.\nREQUEST_CLARIFICATION\nWhich file?"),
        "I need to know more.\n\nWhich file?"
    );
    assert_eq!(question("Which one? REQUEST_CLARIFICATION"), "Which one?");
}

#[test]
fn a_question_asked_at_the_end_only_is_shown_as_one() {
    let mut t = Transcript::default();
    turn(&mut t);
    let mut end = finished(Outcome::NeedsClarification);
    if let Event::TurnFinished { message, .. } = &mut end {
        *message = Some("REQUEST_CLARIFICATION Which file?".into());
    }
    t.apply(&end, t0());
    assert_eq!(
        t.items().last(),
        Some(&Item::Question("Which file?".into()))
    );
}

fn finished_with(answer: &str) -> Event {
    Event::TurnFinished {
        usage: None,
        turn: 1,
        outcome: Outcome::Done,
        answer: answer.into(),
        reasoning: None,
        agent: AgentName::Coder,
        rounds: 2,
        blocks: Vec::new(),
        message: None,
        plan: None,
        web: None,
    }
}

/// Round 2's reply, `answer`, that ran no block.
fn second_reply(t: &mut Transcript, answer: &str) {
    for event in [
        Event::Status {
            status: Status::Thinking,
            round: 2,
            attempt: 0,
            max_attempts: 5,
        },
        Event::AnswerComplete {
            round: 2,
            answer: answer.into(),
            reasoning: None,
            blocks: 0,
            finish: crate::agent::AnswerFinish::Stop,
        },
    ] {
        t.apply(&event, t0());
    }
}

#[test]
fn the_final_answer_is_shown_when_it_replaced_a_reply_that_ran_nothing() {
    let mut t = Transcript::default();
    turn(&mut t);
    second_reply(&mut t, "block:0");
    t.apply(&finished_with("Ran `print(1)`:\n1"), t0());
    assert_eq!(
        t.items().last(),
        Some(&Item::Answer("Ran `print(1)`:\n1".into()))
    );
}

#[test]
fn the_final_answer_is_not_repeated_when_the_reply_or_its_panes_say_it() {
    let mut t = Transcript::default();
    turn(&mut t);
    second_reply(&mut t, "All done.");
    let before = t.items().len();
    t.apply(&finished_with("All done."), t0());
    assert_eq!(t.items().len(), before, "{:?}", t.items());

    // The last reply's block ran: its pane shows the result the answer says.
    let mut t = Transcript::default();
    turn(&mut t);
    let before = t.items().len();
    t.apply(&finished_with("Ran `print(1)`:\n1"), t0());
    assert_eq!(t.items().len(), before, "{:?}", t.items());
}
