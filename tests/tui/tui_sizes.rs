//! The terminal UI at small sizes and through resizes, end to end: the real binary in a
//! pseudo-terminal, read through a vt100 screen. The `/` popup opened in a 13-row window and
//! resized down to 1×1 and back never crashes seek; and a panic (forced in a debug build by
//! `SEEK_DEBUG_PANIC_ON`) still gives the terminal back and prints the transcript. Waits are on
//! the screen, never sleeps.

use crate::support;

use crate::fake_model;
use crate::pty;

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;

const DOWN: &[u8] = b"\x1b[B";

fn start_at(sb: &Sandbox, server: &FakeModel, cols: u16, rows: u16) -> Tui {
    std::fs::create_dir_all(sb.path("work")).expect("the work dir");
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Tui::start(sb, &args, cols, rows)
}

/// The row the prompt box starts on shows `text` after the prompt mark.
fn prompt_shows(screen: &str, text: &str) -> bool {
    screen
        .lines()
        .any(|row| row.starts_with(&format!(" › {text}")))
}

#[test]
fn the_slash_popup_survives_small_windows_and_resizes_down_to_1x1() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    // Where seek crashed: `/` at the start of the prompt in a window of 13 rows or less.
    let mut tui = start_at(&sb, &server, 60, 13);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/");
    tui.wait_for("the popup in 13 rows", |s| {
        s.contains("Tab complete") && s.contains("/help")
    });
    // Each size is waited for where something tells it was drawn: the popup's rule while the
    // transcript's window has room for it, the prompt row after that.
    let sizes: [(u16, u16, Option<&str>); 9] = [
        (60, 12, Some("Tab complete")),
        (40, 9, Some("Tab complete")),
        (30, 8, Some("Tab complete")),
        (20, 7, None),
        (12, 6, None),
        (8, 4, None),
        (3, 2, None),
        (1, 1, None),
        (80, 24, Some("Tab complete")),
    ];
    for (cols, rows, text) in sizes {
        tui.resize(cols, rows);
        match text {
            Some(text) => tui.wait_for(&format!("{text:?} at {cols}x{rows}"), |s| {
                s.lines().count() == usize::from(rows) && s.contains(text)
            }),
            None if rows >= 6 => tui.wait_for(&format!("the prompt at {cols}x{rows}"), |s| {
                prompt_shows(s, "/")
            }),
            // Too small for any part to be sure to show: a key and the next size prove seek
            // still runs.
            None => {
                tui.send(DOWN);
                String::new()
            }
        };
    }
    // Still answering keys, with the popup where it belongs.
    tui.type_text("he");
    tui.wait_for("the list narrowed to /help", |s| {
        prompt_shows(s, "/he") && s.contains("Tab complete") && !s.contains("/retry")
    });
    tui.send(keys::ESC);
    tui.wait_for("the popup closed", |s| !s.contains("Tab complete"));
    tui.send(b"\x15");
    tui.wait_for_text("ask seek to do something");
    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0, "seek ended normally: {written:?}");
    assert!(!written.contains("panicked"), "{written:?}");
}

#[test]
fn a_panic_gives_the_terminal_back_and_prints_the_transcript() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("The answer before the crash.")]);
    std::fs::create_dir_all(sb.path("work")).expect("the work dir");
    let args = sb.model_args(&server.url());
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--agent", "casual"]);
    let trigger = std::path::Path::new("crash-the-ui-now");
    let mut tui = Tui::start_with_env(&sb, &args, 100, 30, &[("SEEK_DEBUG_PANIC_ON", trigger)]);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("say something");
    tui.send(keys::ENTER);
    tui.wait_for_text("The answer before the crash.");
    tui.type_text("crash-the-ui-now");
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 101, "a panic's exit code: {written:?}");
    let restored = written
        .rfind("\x1b[?1049l")
        .expect("the alternate screen was left");
    let after = &written[restored..];
    assert!(
        after.contains("a panic asked for by a test"),
        "the panic's message: {after:?}"
    );
    assert!(
        after.contains("you  say something") && after.contains("The answer before the crash."),
        "the transcript is printed after the screen is given back: {after:?}"
    );
    assert!(
        after.contains("the UI stopped on an internal error"),
        "{after:?}"
    );
    // Raw mode is off again: the terminal's line discipline echoes and translates newlines.
    assert!(after.contains("\r\n"), "{after:?}");
}
