//! The terminal UI's output, end to end: the real binary in a pseudo-terminal against the fake
//! model server, read through a vt100 screen (and the raw bytes, for notifications). The status
//! line's speed, tokens and context fill; the rule before a round that follows a failure; the
//! panes of a reply cut for repeating itself; the bell and OSC 9 after a focus-out.

use crate::support;

use crate::fake_model;
use crate::pty;

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;

/// What a terminal sends when it loses and regains the focus (with focus reports on).
const FOCUS_OUT: &[u8] = b"\x1b[O";
const FOCUS_IN: &[u8] = b"\x1b[I";

fn start(sb: &Sandbox, server: &FakeModel, rows: u16) -> Tui {
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Tui::start(sb, &args, 100, rows)
}

fn ask(tui: &mut Tui, task: &str) {
    tui.wait_for_text("ask seek to do something");
    tui.type_text(task);
    tui.send(keys::ENTER);
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

#[test]
fn the_status_line_shows_generation_speed_tokens_and_context_fill() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::Paced {
        answer: "The answer is forty-two, as it always was and will be.".into(),
        every: Duration::from_millis(20),
        prompt_tokens: 20_480,
        completion_tokens: 40,
    }]);
    server.set_context_length(32_768);
    let mut tui = start(&sb, &server, 20);
    ask(&mut tui, "what is the answer");
    let screen = tui.wait_for_text("✓ done");
    let status = screen
        .lines()
        .find(|l| l.contains("✓ done"))
        .unwrap_or_default();
    assert!(status.contains("21k tokens"), "{status}");
    assert!(status.contains("ctx 62%"), "20480 of 32768: {status}");
    let rate = status
        .split(" · ")
        .find_map(|part| part.trim().strip_suffix(" tok/s"))
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("a speed: {status}"));
    // 40 tokens over ~11 pieces 20 ms apart: far above the 2 tok/s a wall-clock average of a
    // slow task would give, and bounded by the pace.
    assert!(rate > 20.0 && rate < 1_000.0, "{rate} tok/s: {status}");
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn a_round_after_a_failing_block_starts_with_a_rule_naming_it() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!("Trying.\n{}\n", fence("bash", "exit 3"))),
        Reply::text("It cannot work here; sorry."),
    ]);
    let mut tui = start(&sb, &server, 30);
    ask(&mut tui, "try something");
    let screen = tui.wait_for_text("It cannot work here");
    assert!(screen.contains("✗ bash · exit 3"), "{screen}");
    assert!(
        screen.contains("── attempt 2/5 · the bash block failed ──"),
        "{screen}"
    );
    let rule = screen.find("attempt 2/5").unwrap_or_default();
    assert!(
        screen.find("✗ bash").unwrap_or_default() < rule
            && rule < screen.find("It cannot work here").unwrap_or_default(),
        "the rule stands between the rounds: {screen}"
    );
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn a_reply_cut_for_repeating_itself_says_so_and_no_pane_waits() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::Repeat {
            unit: format!("Again.\n{}\n", fence("bash", "echo loop")),
            limit: 1 << 20,
        },
        Reply::text("Done looping."),
    ]);
    let mut tui = start(&sb, &server, 40);
    ask(&mut tui, "loop");
    let screen = tui.wait_for_text("Done looping.");
    assert!(
        screen.contains("the reply was cut: it repeated itself"),
        "a notice says it: {screen}"
    );
    assert!(
        screen.contains("attempt 2/5 · the reply repeated itself"),
        "{screen}"
    );
    // None of its blocks ran, let alone worked: a coder task so ended gave up.
    let screen = tui.wait_for_text("✗ gave up");
    assert!(!screen.contains("waiting"), "{screen}");
    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0);
    // The panes have scrolled off (the reply holds many blocks): the transcript printed on
    // exit holds them all.
    let printed = written.rsplit("\x1b[?1049l").next().unwrap_or_default();
    assert!(
        printed.matches("reply cut: it repeated itself").count() >= 2,
        "the panes say why: {printed}"
    );
    assert!(!printed.contains("waiting"), "{printed}");
}

/// Runs one task with `[tui]` set to `tui_config`, the terminal's focus changed by `focus`
/// first; returns everything seek wrote.
fn task_with_focus(tui_config: &str, focus: &[&[u8]]) -> String {
    let sb = Sandbox::new();
    sb.write_config(&format!("[tui]\n{tui_config}\n"));
    let server = FakeModel::start(vec![Reply::text("All done.")]);
    let mut tui = start(&sb, &server, 20);
    tui.wait_for_text("ask seek to do something");
    // Focus reports come through the same input as keys: they are handled before the Enter
    // that starts the task.
    for report in focus {
        tui.send(report);
    }
    ask(&mut tui, "say it");
    tui.wait_for_text("✓ done");
    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0);
    written
}

#[test]
fn a_task_ending_while_the_terminal_is_unfocused_sends_osc9() {
    let written = task_with_focus("notify = \"osc9\"\nnotify_after_secs = 0", &[FOCUS_OUT]);
    let start = written.find("\x1b]9;").expect("an OSC 9 notification");
    let text = &written[start + 4..];
    let text = &text[..text.find('\x07').expect("ended by BEL")];
    assert!(text.starts_with("seek: task done ("), "{text:?}");
}

#[test]
fn the_bell_rings_instead_when_asked_and_nothing_comes_while_focused() {
    let rung = task_with_focus("notify = \"bell\"\nnotify_after_secs = 0", &[FOCUS_OUT]);
    assert!(rung.contains('\x07'), "a bell");
    assert!(!rung.contains("\x1b]9;"));
    let focused = task_with_focus(
        "notify = \"bell\"\nnotify_after_secs = 0",
        &[FOCUS_OUT, FOCUS_IN],
    );
    assert!(!focused.contains('\x07'), "focused again: no bell");
    let never_reported = task_with_focus("notify = \"osc9\"\nnotify_after_secs = 0", &[]);
    assert!(
        !never_reported.contains("\x1b]9;"),
        "a terminal that never reports focus counts as focused"
    );
}
