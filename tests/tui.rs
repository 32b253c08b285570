//! The terminal UI end to end: the real binary in a pseudo-terminal against the fake model
//! server, read through a vt100 screen.

mod support;

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/procs.rs"]
mod procs;
#[path = "support/pty.rs"]
mod pty;

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;

fn start(sb: &Sandbox, server: &FakeModel) -> Tui {
    let work = sb.path("work");
    let work = work.to_str().expect("utf-8 path");
    Tui::start(
        sb,
        &[
            "--provider",
            "llama.cpp",
            "--base-url",
            &server.url(),
            "--model",
            "fake-coder:7b",
            "--work-dir",
            work,
        ],
        120,
        30,
    )
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
