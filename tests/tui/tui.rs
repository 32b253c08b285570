//! The terminal UI end to end: the real binary in a pseudo-terminal against the fake model
//! server, read through a vt100 screen.

use crate::support;

use crate::fake_model;
use crate::procs;
use crate::pty;

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;

fn start(sb: &Sandbox, server: &FakeModel) -> Tui {
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Tui::start(sb, &args, 120, 30)
}

fn reasoning_reply(reasoning: &str, answer: &str) -> Reply {
    Reply::Text {
        answer: answer.into(),
        reasoning: Some(reasoning.into()),
    }
}

#[test]
fn a_task_shows_its_pane_which_unfolds_and_its_thoughts_unfold_too() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![reasoning_reply(
        "The user wants a count; python can do it.",
        "I'll count.\n```python\nprint(sum(range(5)))\n```\n",
    )]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("add up 0 to 4");
    tui.send(keys::ENTER);
    // The coder is done when its last block succeeded.
    let screen = tui.wait_for_text("✓ done");
    assert!(screen.contains("you  add up 0 to 4"), "{screen}");
    assert!(screen.contains("✓ python · exit 0"), "{screen}");
    assert!(
        screen.contains("│ 10"),
        "a folded pane shows its last lines: {screen}"
    );
    assert!(
        !screen.contains("print(sum(range(5)))"),
        "folded: no code: {screen}"
    );
    assert!(screen.contains("▸ Thinking · "), "{screen}");
    assert!(
        !screen.contains("python can do it"),
        "thoughts start folded: {screen}"
    );

    // Tab focuses the newest foldable item (the pane), Enter unfolds it.
    tui.send(keys::TAB);
    tui.wait_for_text("›▸ ✓ python");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("print(sum(range(5)))");
    assert!(screen.contains("›▾ ✓ python"), "{screen}");

    // Esc returns to the input; Ctrl+T unfolds the thoughts.
    tui.send(keys::ESC);
    tui.send(keys::CTRL_T);
    tui.wait_for_text("python can do it");

    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0);
    let printed = written.rsplit("\x1b[?1049l").next().unwrap_or_default();
    assert!(
        printed.contains("you  add up 0 to 4"),
        "the transcript is printed on exit: {printed:?}"
    );
    assert!(printed.contains("✓ python · exit 0"), "{printed:?}");
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

#[test]
fn esc_stops_a_running_block_and_its_process_is_gone() {
    let sb = Sandbox::new();
    let marker = "876123";
    let server = FakeModel::start(vec![Reply::text(format!(
        "Waiting.\n{}\n",
        fence("bash", &format!("echo started; sleep {marker}"))
    ))]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("wait a while");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("│ started");
    assert!(screen.contains("Executing bash"), "{screen}");
    assert_eq!(
        procs::processes_with(marker, false).len(),
        1,
        "the block runs"
    );
    tui.send(keys::ESC);
    let screen = tui.wait_for_text("■ stopped");
    assert!(screen.contains("✗ bash · stopped by you"), "{screen}");
    assert!(
        procs::processes_with(marker, false).is_empty(),
        "the block's process is gone when the UI says stopped"
    );
    // The shell stays usable.
    tui.type_text("/quit");
    tui.send(keys::ENTER);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn ctrl_r_retries_the_last_task_with_the_same_prompt() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/agent casual");
    tui.send(keys::ENTER);
    tui.wait_for_text("agent: casual (from the next task on)");
    tui.type_text("say something");
    tui.send(keys::ENTER);
    tui.wait_for_text("First answer.");
    // Ctrl+R while the task is still running only says so: the task's end comes after its
    // answer's last words are on screen.
    tui.wait_for_text("✓ done");
    tui.send(keys::CTRL_R);
    let screen = tui.wait_for_text("Second answer.");
    assert_eq!(screen.matches("you  say something").count(), 2, "{screen}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let messages = |i: usize| {
        requests[i].json()["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        messages(0).len(),
        messages(1).len(),
        "the retry forgets the first answer"
    );
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn ctrl_c_clears_the_input_then_quits_on_a_second_press() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("half a thought");
    tui.wait_for_text("half a thought");
    tui.send(keys::CTRL_C);
    tui.wait_for("the input cleared", |s| {
        !s.contains("half a thought") && s.contains("ask seek to do something")
    });
    tui.send(keys::CTRL_C);
    tui.wait_for_text("press Ctrl+C again to quit");
    tui.send(keys::CTRL_C);
    let (code, _) = tui.wait_exit();
    assert_eq!(code, 0);
    assert!(server.chat_requests().is_empty());
}

#[test]
fn a_model_server_error_shows_in_the_transcript_and_the_shell_stays_usable() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::status(404, r#"{"error":"model 'fake-coder:7b' not found"}"#),
        Reply::text("Recovered."),
    ]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("hello");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("! model server error");
    assert!(
        screen.contains(" ! "),
        "the error is in the transcript: {screen}"
    );
    assert!(
        screen.contains("check the name with `seek models`"),
        "{screen}"
    );
    tui.type_text("/agent casual");
    tui.send(keys::ENTER);
    tui.type_text("again");
    tui.send(keys::ENTER);
    tui.wait_for_text("Recovered.");
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn prompts_are_recalled_with_up_across_runs() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Hi.")]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/agent casual");
    tui.send(keys::ENTER);
    tui.type_text("first line");
    tui.send(keys::CTRL_J);
    tui.type_text("second line");
    tui.wait_for_text("second line");
    tui.send(keys::ENTER);
    tui.wait_for_text("Hi.");
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);

    let mut again = start(&sb, &server);
    again.wait_for_text("ask seek to do something");
    again.send(keys::UP);
    let screen = again.wait_for_text("second line");
    assert!(
        screen.contains(" › first line"),
        "the multi-line prompt comes back whole: {screen}"
    );
    again.send(keys::CTRL_C);
    again.send(keys::CTRL_C);
    again.send(keys::CTRL_C);
    assert_eq!(again.wait_exit().0, 0);
}

#[test]
fn sigterm_gives_the_terminal_back() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    let pid = tui.pid().expect("pid") as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal");
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 130);
    let tail = written.rsplit("\x1b[?1049h").next().unwrap_or_default();
    assert!(tail.contains("\x1b[?1049l"), "left the alternate screen");
    assert!(tail.contains("\x1b[?1000l"), "mouse reports off");
    assert!(tail.contains("seek: ended by SIGTERM"), "{tail:?}");
}

#[test]
fn inline_think_tags_look_like_a_reasoning_field_and_the_log_is_written() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(
        "<think>The user greets me; greet back.</think>Hello there.",
    )]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/agent casual");
    tui.send(keys::ENTER);
    tui.type_text("hi");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("Hello there.");
    assert!(screen.contains("▸ Thinking · 0 s · 6 words"), "{screen}");
    assert!(
        !screen.contains("<think>") && !screen.contains("greet back"),
        "{screen}"
    );
    tui.send(keys::CTRL_T);
    tui.wait_for_text("The user greets me; greet back.");
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
    let log = std::fs::read_to_string(sb.path("data/seek/seek.log")).expect("the log file");
    assert!(
        log.contains("INFO start: fake-coder:7b @ llama.cpp"),
        "{log}"
    );
    assert!(log.contains("task 1 ended: Done"), "{log}");
}

#[test]
fn the_screen_follows_resizes_and_the_wheel_scrolls() {
    let sb = Sandbox::new();
    let long: String = (1..=60)
        .map(|i| format!("Line {i} of the answer.\n\n"))
        .collect();
    let server = FakeModel::start(vec![Reply::text(long)]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/agent casual");
    tui.send(keys::ENTER);
    tui.type_text("talk");
    tui.send(keys::ENTER);
    tui.wait_for_text("Line 60 of the answer.");

    tui.resize(80, 24);
    let screen = tui.wait_for("a redraw at 80x24", |s| {
        let rows: Vec<&str> = s.lines().collect();
        rows.len() == 24 && rows[23].contains("✓ done") && rows[21].starts_with(" › ")
    });
    assert!(screen.contains("Line 60 of the answer."), "{screen}");

    for _ in 0..5 {
        tui.send(keys::WHEEL_UP);
    }
    let screen = tui.wait_for_text("scrolled up · End follows");
    assert!(!screen.contains("Line 60 of the answer."), "{screen}");
    tui.send(keys::END);
    tui.wait_for("following the end again", |s| {
        s.contains("Line 60 of the answer.") && !s.contains("scrolled up")
    });
    tui.send(keys::PAGE_UP);
    tui.wait_for_text("scrolled up · End follows");
    tui.send(keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn quitting_during_a_running_block_kills_it_and_prints_it_stopped() {
    let sb = Sandbox::new();
    let marker = "765123";
    let server = FakeModel::start(vec![Reply::text(format!(
        "Waiting.\n{}\n",
        fence("bash", &format!("echo started; sleep {marker}"))
    ))]);
    let mut tui = start(&sb, &server);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("wait");
    tui.send(keys::ENTER);
    tui.wait_for_text("│ started");
    // Quitting while the block runs: the agent shuts down, killing it, and its last events
    // still reach the printed transcript.
    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0);
    let printed = written.rsplit("\x1b[?1049l").next().unwrap_or_default();
    assert!(printed.contains("✗ bash · stopped by you"), "{printed:?}");
    assert!(procs::processes_with(marker, false).is_empty());
}
