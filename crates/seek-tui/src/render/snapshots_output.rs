//! Snapshot tests of what the first-hour work added to the output: the header at four widths,
//! the status line's speed, tokens and context fill, the rule between rounds, the panes of a
//! cut reply, folded blocks that never ran, and the model's question shown once.

use crossterm::event::{KeyCode, KeyModifiers};

use super::header::SandboxBadge;
use super::snapshots::{Scene, record, status};
use crate::agent::{AnswerFinish, BlockRecord, Event, NotRun, Outcome, RoundUsage, Status};
use crate::config::{AgentName, Approval};
use crate::exec::sandbox::SandboxMode;

fn header_scene() -> Scene {
    let mut s = Scene::new();
    s.app.work_dir = "~/src/clients/acme/deep/project".into();
    s.app.sandbox = Some(SandboxBadge::Mode(SandboxMode::WorkspaceWrite));
    s.app.approval = Some(Approval::Auto);
    s
}

#[test]
fn header_shortens_at_60_80_120_and_200_columns() {
    for width in [60, 80, 120, 200] {
        let mut s = header_scene();
        let screen = s.draw(width, 7, 0);
        assert!(
            screen.lines().next().is_some_and(|l| l.contains("project")),
            "{width}: the work dir stays: {screen}"
        );
        insta::assert_snapshot!(format!("header_at_{width}"), screen);
    }
}

#[test]
fn header_with_the_sandbox_off_and_approval_ask_at_80() {
    let mut s = header_scene();
    s.app.sandbox = Some(SandboxBadge::Mode(SandboxMode::Off));
    s.app.approval = Some(Approval::Ask);
    insta::assert_snapshot!(s.draw(80, 7, 0));
}

fn usage(prompt: u64, completion: u64, streaming_ms: f64) -> Event {
    Event::Usage {
        round: 1,
        usage: RoundUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            streaming_ms,
            context_window: Some(32_768),
            estimated: false,
        },
    }
}

#[test]
fn status_line_shows_speed_tokens_and_context_fill() {
    let mut s = Scene::new();
    s.one_block("print(1)\n")
        .event(4200, usage(13_400, 380, 4_000.0));
    insta::assert_snapshot!(s.draw(100, 8, 4_500));
}

fn failed_python(round: u32) -> BlockRecord {
    BlockRecord {
        round,
        output: "Traceback (most recent call last):\nNameError: name 'x' is not defined\n".into(),
        ..record(false, "")
    }
}

/// Round 1's python block fails; round 2 (attempt 2/5) succeeds with bash; round 3 goes on.
fn three_rounds(s: &mut Scene) {
    s.one_block("print(x)\n")
        .finish_block(failed_python(1))
        .event(5100, status(Status::Correcting, 1))
        .event(
            5200,
            Event::AnswerComplete {
                round: 2,
                answer: "Let me look first.\nblock:0\n".into(),
                reasoning: None,
                blocks: 1,
                finish: AnswerFinish::Stop,
            },
        )
        .event(
            5300,
            Event::BlockFinished {
                record: BlockRecord {
                    round: 2,
                    tool_type: "bash".into(),
                    block: "ls\n".into(),
                    output: "notes.txt\n".into(),
                    ..record(true, "")
                },
            },
        )
        .event(
            5400,
            Event::Status {
                status: Status::Thinking,
                round: 3,
                attempt: 1,
                max_attempts: 5,
            },
        )
        .event(
            5500,
            Event::AnswerComplete {
                round: 3,
                answer: "The file has 42 words.".into(),
                reasoning: None,
                blocks: 0,
                finish: AnswerFinish::Stop,
            },
        );
}

#[test]
fn round_rules_name_each_round_after_the_first() {
    let mut s = Scene::new();
    three_rounds(&mut s);
    let screen = s.draw(80, 24, 6_000);
    assert!(
        screen.contains("── attempt 2/5 · the python block failed ──"),
        "{screen}"
    );
    assert!(screen.contains("── round 3 · continuing ──"), "{screen}");
    insta::assert_snapshot!(screen);
}

fn cut_reply(s: &mut Scene, finish: AnswerFinish) {
    let unit = "Trying again.\n```bash\necho loop\n```\n";
    s.start("loop for me")
        .event(
            200,
            Event::AnswerDelta {
                text: unit.repeat(3),
            },
        )
        .event(
            900,
            Event::AnswerComplete {
                round: 1,
                answer: "Trying again.\nblock:0\nTrying again.\nblock:1\nTrying again.\n".into(),
                reasoning: None,
                blocks: 2,
                finish,
            },
        );
}

#[test]
fn cut_reply_panes_say_why_they_did_not_run() {
    let mut s = Scene::new();
    cut_reply(&mut s, AnswerFinish::Repetition);
    let screen = s.draw(80, 16, 1_000);
    assert_eq!(
        screen.matches("reply cut: it repeated itself").count(),
        2,
        "{screen}"
    );
    assert!(!screen.contains("waiting"), "{screen}");
    assert!(
        screen.contains("the reply was cut: it repeated itself"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn max_tokens_panes_never_stay_waiting_after_the_task() {
    let mut s = Scene::new();
    cut_reply(&mut s, AnswerFinish::Length);
    // agent-core's record for a parsed block that was not run, and no record for the other.
    s.event(
        950,
        Event::BlockFinished {
            record: BlockRecord {
                tool_type: "bash".into(),
                block: "echo loop\n".into(),
                not_run: Some(NotRun::ReplyCut),
                skipped: true,
                exit_code: None,
                ..record(false, "")
            },
        },
    );
    s.end(Outcome::GaveUp, Some("the reply reached max_tokens"));
    let screen = s.draw(80, 16, 6_000);
    assert_eq!(
        screen.matches("reply cut: max_tokens reached").count(),
        2,
        "{screen}"
    );
    assert!(!screen.contains("waiting"), "{screen}");
}

#[test]
fn blocks_that_did_not_run_fold_to_one_line_and_unfold_with_enter() {
    let mut s = Scene::new();
    s.start("edit my notes").event(
        200,
        Event::AnswerComplete {
            round: 1,
            answer: "Opening it.\nblock:0\nThen listing.\nblock:1\n".into(),
            reasoning: None,
            blocks: 2,
            finish: AnswerFinish::Stop,
        },
    );
    let refused = BlockRecord {
        tool_type: "bash".into(),
        block: "vim notes.txt\n".into(),
        not_run: Some(NotRun::Interactive),
        exit_code: None,
        output: "vim waits for keys; write the file with a command instead (sed, cat <<EOF)\n"
            .into(),
        ..record(false, "")
    };
    let skipped = BlockRecord {
        index: 1,
        tool_type: "bash".into(),
        block: "ls\n".into(),
        not_run: Some(NotRun::EarlierFailure),
        skipped: true,
        exit_code: None,
        ..record(false, "")
    };
    s.event(300, Event::BlockFinished { record: refused })
        .event(300, Event::BlockFinished { record: skipped })
        .end(Outcome::GaveUp, Some("gave up"));
    let folded = s.draw(80, 14, 6_000);
    assert!(
        folded.contains("▸ ✗ bash · refused: interactive input"),
        "{folded}"
    );
    assert!(!folded.contains("vim notes.txt"), "folded: {folded}");
    assert!(!folded.contains("killed by a signal"), "{folded}");
    insta::assert_snapshot!("not_run_folded", folded);
    // Tab reaches the newer pane first; Shift+Tab… the older one is a second Tab away.
    s.key(6_000, KeyCode::Tab, KeyModifiers::NONE);
    s.key(6_000, KeyCode::Tab, KeyModifiers::NONE);
    s.key(6_000, KeyCode::Enter, KeyModifiers::NONE);
    let unfolded = s.draw(80, 14, 6_000);
    assert!(unfolded.contains("vim notes.txt"), "{unfolded}");
    assert!(
        unfolded.contains("write the file with a command"),
        "{unfolded}"
    );
}

#[test]
fn a_clarification_is_shown_once_as_a_question() {
    let mut s = Scene::new();
    let reply = "REQUEST_CLARIFICATION: Which notes file do you mean, notes.txt or notes.md?";
    s.start("fix my notes")
        .event(100, Event::AnswerDelta { text: reply.into() })
        .event(
            200,
            Event::AnswerComplete {
                round: 1,
                answer: reply.into(),
                reasoning: None,
                blocks: 0,
                finish: AnswerFinish::Stop,
            },
        )
        .event(
            300,
            Event::TurnFinished {
                usage: None,
                turn: 1,
                outcome: Outcome::NeedsClarification,
                answer: reply.into(),
                reasoning: None,
                agent: AgentName::Coder,
                rounds: 1,
                blocks: Vec::new(),
                message: Some("Which notes file do you mean, notes.txt or notes.md?".into()),
                plan: None,
                web: None,
            },
        );
    let screen = s.draw(80, 10, 1_000);
    assert_eq!(screen.matches("Which notes file").count(), 1, "{screen}");
    assert!(!screen.contains("REQUEST_CLARIFICATION"), "{screen}");
    insta::assert_snapshot!(screen);
}
