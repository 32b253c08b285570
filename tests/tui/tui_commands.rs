//! The user's own `!cmd` as a task, and what the UI says around tasks, end to end: the real
//! binary in a pseudo-terminal against the fake model server, read through a vt100 screen.
//! Esc, Ctrl+C and `/stop` end a running `!cmd` (its process checked gone in /proc); a prompt
//! sent meanwhile waits in the queue; a huge paste shows as `[pasted N lines]` but is sent
//! whole; `/agent` alone opens a picker; the exit says how to continue, and `seek -c` shows the
//! `you ran:` and `attached …` lines again. Waits are on the screen (or /proc) with a deadline,
//! never sleeps.

use crate::support;

use crate::fake_model;
use crate::procs;
use crate::pty;

use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;

/// How soon a stopped `!cmd`'s processes must be gone.
const KILL_BOUND: Duration = Duration::from_millis(500);
/// How soon the screen must say so: the next frame, which in a debug build can come late after
/// the first frame that highlighted code (frames are spaced by three times the last one's cost).
const SHOW_BOUND: Duration = Duration::from_secs(2);

fn start_with(sb: &Sandbox, server: &FakeModel, extra: &[&str]) -> Tui {
    std::fs::create_dir_all(sb.path("work")).expect("the work dir");
    let args = sb.model_args(&server.url());
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(extra);
    Tui::start(sb, &args, 110, 30)
}

fn quit(mut tui: Tui) -> String {
    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0, "{written:?}");
    // What was printed once the screen was given back.
    written
        .rsplit("\x1b[?1049l")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Waits (polling /proc, bounded) until a process with `marker` in its command line runs.
fn wait_for_process(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while procs::processes_with(marker, false).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no process with {marker} started"
        );
        std::thread::yield_now();
    }
}

/// Runs `!sleep MARKER` and stops it with `stop` (key bytes), checking the status while it runs,
/// how soon it ends and that its process is gone; `before` commands were stopped already.
/// Returns the screen once stopped.
fn run_and_stop(tui: &mut Tui, marker: &str, stop: &[u8], before: usize) -> String {
    tui.type_text(&format!("!sleep {marker}; echo finished"));
    tui.send(keys::ENTER);
    tui.wait_for(&format!("the status naming !sleep {marker}"), |s| {
        s.contains(&format!("running !sleep {marker}; echo finished"))
    });
    wait_for_process(marker);
    let pressed = Instant::now();
    tui.send(stop);
    // The process group is killed within the bound (polling /proc, no sleeps)…
    while !procs::processes_with(marker, false).is_empty() {
        assert!(
            pressed.elapsed() < KILL_BOUND,
            "!sleep {marker} still runs {:?} after the key",
            pressed.elapsed()
        );
        std::thread::yield_now();
    }
    let killed = pressed.elapsed();
    // …and the screen says so at its next frame.
    let screen = tui.wait_for_within(SHOW_BOUND, "the command stopped", |s| {
        s.contains("■ stopped") && s.matches("stopped by you").count() > before
    });
    eprintln!(
        "!sleep {marker}: process gone {killed:?}, shown stopped {:?} after the key",
        pressed.elapsed()
    );
    assert!(!screen.contains("│ finished"), "{screen}");
    assert!(
        !screen.contains("stopping…"),
        "stopped, never stopping at once: {screen}"
    );
    assert!(!screen.contains("nothing is running"), "{screen}");
    screen
}

#[test]
fn esc_ctrl_c_and_slash_stop_end_a_running_bang_command() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start_with(&sb, &server, &[]);
    tui.wait_for_text("ask seek to do something");
    run_and_stop(&mut tui, "876301", keys::ESC, 0);
    run_and_stop(&mut tui, "876302", keys::CTRL_C, 1);
    run_and_stop(&mut tui, "876303", b"/stop\r", 2);
    // Once stopped the status says ready on the next command's end, and the UI still works.
    tui.type_text("!echo still-here");
    tui.send(keys::ENTER);
    tui.wait_for_text("│ still-here");
    let printed = quit(tui);
    assert_eq!(
        printed.matches("✗ bash · stopped by you").count(),
        3,
        "{printed}"
    );
    assert!(server.chat_requests().is_empty(), "no task was sent");
}

#[test]
fn a_prompt_sent_while_a_bang_command_runs_waits_for_it() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("After the command.")]);
    let mut tui = start_with(&sb, &server, &["--agent", "casual"]);
    tui.wait_for_text("ask seek to do something");
    // Runs until the test makes the file: no timing involved.
    tui.type_text("!until [ -e go ]; do sleep 0.02; done; echo went");
    tui.send(keys::ENTER);
    tui.wait_for_text("running !until");
    tui.type_text("what happened");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("queued: what happened");
    assert!(!screen.contains("a command is running"), "{screen}");
    assert!(server.chat_requests().is_empty(), "held in the queue");
    std::fs::write(sb.path("work/go"), "").expect("write the file the command waits for");
    let screen = tui.wait_for_text("After the command.");
    assert!(screen.contains("│ went"), "{screen}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].last_user_message().contains("what happened"),
        "{}",
        requests[0].last_user_message()
    );
    quit(tui);
}

#[test]
fn a_huge_paste_is_one_line_on_screen_and_in_the_printout_but_sent_whole() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Counted them.")]);
    // Room for all of it: the point is what is shown, not the context budget.
    server.set_context_length(1_000_000);
    let mut tui = start_with(&sb, &server, &["--agent", "casual"]);
    tui.wait_for_text("ask seek to do something");
    let paste: String = (0..4000)
        .map(|i| format!("pasted line {i:04} of the log, padded to about sixty-two bytes\n"))
        .collect();
    assert!(paste.len() > 240_000, "{}", paste.len());
    tui.send(format!("\x1b[200~{paste}\x1b[201~").as_bytes());
    tui.wait_for_text(" › [pasted 4,000 lines]");
    tui.type_text(" count these");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("Counted them.");
    assert!(
        screen.contains("you  [pasted 4,000 lines] count these"),
        "{screen}"
    );
    assert!(!screen.contains("pasted line 0001"), "{screen}");
    let sent = server.chat_requests()[0].last_user_message();
    assert!(
        sent.contains("pasted line 0000") && sent.contains("pasted line 3999"),
        "the model gets the whole paste ({} bytes)",
        sent.len()
    );
    assert!(
        sent.contains("sixty-two bytes\n count these"),
        "the typed words follow the paste"
    );
    let printed = quit(tui);
    assert!(
        printed.contains("you  [pasted 4,000 lines] count these"),
        "{printed}"
    );
    assert!(
        printed.len() < 10_000,
        "the paste is not printed again: {} bytes",
        printed.len()
    );
}

#[test]
fn agent_alone_opens_a_picker_like_model_alone() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start_with(&sb, &server, &[]);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/agent");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text(" agents");
    assert!(screen.contains("● coder"), "the agent in use: {screen}");
    assert!(screen.contains("planner"), "{screen}");
    tui.type_text("casu");
    tui.wait_for_text("› casual");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("agent: casual (from the next task on)");
    assert!(!screen.contains("type to filter"), "closed: {screen}");
    quit(tui);
}

#[test]
fn the_exit_says_how_to_continue_and_c_restores_the_commands_and_attachments() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("work")).expect("mkdir");
    std::fs::write(sb.path("work/notes.txt"), "remember the milk\n").expect("write");
    let server = FakeModel::start(vec![Reply::text("Read it."), Reply::text("Again.")]);
    let mut tui = start_with(&sb, &server, &["--agent", "casual"]);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("!echo from-the-user");
    tui.send(keys::ENTER);
    tui.wait_for_text("│ from-the-user");
    tui.type_text("read @notes.txt");
    tui.send(keys::ENTER);
    tui.wait_for_text("Read it.");
    let printed = quit(tui);
    assert!(
        printed.trim_end().ends_with("continue with: seek -c"),
        "{printed}"
    );

    let tui = start_with(&sb, &server, &["--agent", "casual", "-c"]);
    let screen = tui.wait_for_text("continuing session");
    assert!(screen.contains("you ran: echo from-the-user"), "{screen}");
    assert!(screen.contains("│ from-the-user"), "{screen}");
    assert!(screen.contains("attached notes.txt (18 B)"), "{screen}");
    assert!(screen.contains("Read it."), "{screen}");
    let printed = quit(tui);
    assert!(printed.contains("you ran: echo from-the-user"), "{printed}");
    assert!(printed.contains("continue with: seek -c"), "{printed}");
}

#[test]
fn nothing_saved_means_no_hint_to_continue() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let tui = start_with(&sb, &server, &[]);
    tui.wait_for_text("ask seek to do something");
    let printed = quit(tui);
    assert!(!printed.contains("seek -c"), "{printed}");
}
