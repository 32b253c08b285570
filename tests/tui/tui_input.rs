//! The terminal UI's input side end to end: the `/` completion popup, the `/model` and
//! `/resume` pickers, `!cmd`, `@path` completion and attachments, the queue, Ctrl+Y's OSC 52
//! copy and `/help` at 80x24 — the real binary in a pseudo-terminal against the fake model
//! server, read through a vt100 screen. Waits are on the screen, never sleeps.

use crate::support;

use crate::fake_model;
use crate::pty;

use fake_model::{FakeModel, Gate, Reply};
use pty::{Tui, keys};
use support::Sandbox;

const CTRL_Y: &[u8] = b"\x19";
const DOWN: &[u8] = b"\x1b[B";
const PAGE_DOWN: &[u8] = b"\x1b[6~";

fn start_at(sb: &Sandbox, server: &FakeModel, cols: u16, rows: u16) -> Tui {
    std::fs::create_dir_all(sb.path("work")).expect("the work dir");
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tui = Tui::start(sb, &args, cols, rows);
    tui.wait_for_text("ask seek to do something");
    tui
}

fn start(sb: &Sandbox, server: &FakeModel) -> Tui {
    start_at(sb, server, 100, 30)
}

fn quit(mut tui: Tui) -> String {
    tui.send(keys::CTRL_D);
    let (code, written) = tui.wait_exit();
    assert_eq!(code, 0);
    written
}

/// The casual agent answers in prose: a task ends with its first reply.
fn casual(tui: &mut Tui) {
    tui.type_text("/agent casual");
    tui.send(keys::ENTER);
    tui.wait_for_text("agent: casual (from the next task on)");
}

#[test]
fn slash_opens_a_popup_of_commands_that_filters_and_tab_completes() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start(&sb, &server);
    tui.type_text("/");
    tui.wait_for("every command listed with its description", |s| {
        [
            "/help",
            "/model NAME",
            "/resume ID",
            "/exit",
            "keys and commands",
        ]
        .iter()
        .all(|line| s.contains(line))
    });
    tui.type_text("re");
    tui.wait_for("the list narrowed to /resume and /retry", |s| {
        s.contains("/resume ID") && s.contains("/retry") && !s.contains("keys and commands")
    });
    tui.send(DOWN);
    tui.send(keys::TAB);
    tui.wait_for("/retry completed into the prompt", |s| {
        s.contains(" › /retry") && !s.contains("/resume ID")
    });
    // Ctrl+U empties the line; `/ag` + Tab completes the command and shows its arguments.
    tui.send(b"\x15");
    tui.type_text("/ag");
    tui.wait_for_text("/agent NAME");
    tui.send(keys::TAB);
    tui.wait_for("the agents offered after /agent", |s| {
        s.contains(" › /agent")
            && ["auto", "casual", "coder", "file"].iter().all(|agent| {
                s.contains(&format!("   {agent}")) || s.contains(&format!(" › {agent}"))
            })
    });
    tui.type_text("ca");
    tui.wait_for("only casual left", |s| !s.contains("   coder"));
    tui.send(keys::TAB);
    tui.wait_for_text(" › /agent casual");
    tui.send(keys::ENTER);
    tui.wait_for_text("agent: casual (from the next task on)");
    // Esc closes the popup; the text stays.
    tui.type_text("/he");
    tui.wait_for_text("keys and commands");
    tui.send(keys::ESC);
    tui.wait_for("the popup closed", |s| {
        !s.contains("keys and commands") && s.contains(" › /he")
    });
    // Typing opens it again; Enter on a partial name runs the command it completes to.
    tui.type_text("l");
    tui.wait_for_text("keys and commands");
    tui.send(keys::ENTER);
    tui.wait_for_text("lines 1-");
    tui.send(keys::ESC);
    tui.wait_for("the help closed", |s| !s.contains("lines 1-"));
    quit(tui);
    assert!(server.chat_requests().is_empty());
}

#[test]
fn help_fits_80x24_scrolls_to_its_end_and_lists_every_command() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start_at(&sb, &server, 80, 24);
    tui.type_text("/help");
    tui.send(keys::ENTER);
    // Every command is on the first page.
    let first = tui.wait_for("the help's first page", |s| {
        [
            "help · lines 1-",
            "Commands",
            "/model",
            "/resume",
            "/quit, /exit",
            "!cmd",
            "@path",
        ]
        .iter()
        .all(|shown| s.contains(shown))
    });
    // Two pages down is the end (PageDown stops there); every key is on the way.
    tui.send(PAGE_DOWN);
    tui.wait_for("the queue's section", |s| {
        s.contains("Queue") && !s.contains("help · lines 1-")
    });
    tui.send(PAGE_DOWN);
    let last = tui.wait_for("the end of the help", |s| {
        [
            " · end · ",
            "Ctrl+Y",
            "Shift+drag",
            "Ctrl+D",
            "edit in $EDITOR",
        ]
        .iter()
        .all(|shown| s.contains(shown))
    });
    for row in first.lines().chain(last.lines()) {
        assert!(row.chars().count() <= 80, "{row}");
    }
    tui.send(keys::ESC);
    tui.wait_for("the help closed", |s| {
        !s.contains("help · lines") && s.contains("ask seek to do something")
    });
    quit(tui);
}

#[test]
fn a_prompt_typed_while_a_task_runs_is_queued_and_sent_when_it_ends() {
    let sb = Sandbox::new();
    let gate = Gate::new();
    let server = FakeModel::start(vec![
        Reply::Held {
            answer: "First answer.".into(),
            gate: gate.clone(),
        },
        Reply::text("Second answer."),
    ]);
    let mut tui = start(&sb, &server);
    casual(&mut tui);
    tui.type_text("first task");
    tui.send(keys::ENTER);
    server.wait_for_request();
    tui.type_text("second task");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("queued: second task");
    assert!(!screen.contains("Second answer."), "{screen}");
    assert_eq!(server.chat_requests().len(), 1, "held in the queue");
    gate.open();
    let screen = tui.wait_for_text("Second answer.");
    assert!(screen.contains("First answer."), "{screen}");
    assert!(
        !screen.contains("queued: second task"),
        "the queue emptied: {screen}"
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].last_user_message(), "second task");
    quit(tui);
}

#[test]
fn esc_stops_the_task_and_drops_the_queue() {
    let sb = Sandbox::new();
    let gate = Gate::new();
    let server = FakeModel::start(vec![Reply::Held {
        answer: "Never shown.".into(),
        gate: gate.clone(),
    }]);
    let mut tui = start(&sb, &server);
    casual(&mut tui);
    tui.type_text("first task");
    tui.send(keys::ENTER);
    server.wait_for_request();
    tui.type_text("dropped task");
    tui.send(keys::ENTER);
    tui.wait_for_text("queued: dropped task");
    tui.send(keys::ESC);
    tui.wait_for_text("■ stopped");
    let screen = tui.wait_for("the queue gone", |s| !s.contains("queued:"));
    assert!(!screen.contains("you  dropped task"), "{screen}");
    gate.open();
    quit(tui);
    assert_eq!(
        server.chat_requests().len(),
        1,
        "the queued prompt was not sent"
    );
}

/// Standard base64, for reading what seek put in an OSC 52 sequence.
fn unbase64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        other => panic!("not base64: {other}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|b| *b != b'=').map(value).collect();
    digits
        .chunks(4)
        .flat_map(|c| {
            let n = c
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, d)| n | u32::from(*d) << (18 - 6 * i));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            bytes[..c.len() - 1].to_vec()
        })
        .collect()
}

/// The texts of every OSC 52 clipboard sequence in `written`.
fn clipboard_writes(written: &str) -> Vec<String> {
    written
        .split("\x1b]52;c;")
        .skip(1)
        .map(|rest| {
            let payload = rest.split('\x07').next().unwrap_or_default();
            String::from_utf8(unbase64(payload)).expect("utf-8")
        })
        .collect()
}

#[test]
fn ctrl_y_copies_the_focused_panes_code_then_its_output_through_osc52() {
    let sb = Sandbox::new();
    let code = "print('copied \\x1b[31m text')";
    let server = FakeModel::start(vec![Reply::text(format!(
        "Printing.\n```python\n{code}\n```\n"
    ))]);
    let mut tui = start(&sb, &server);
    tui.type_text("print something");
    tui.send(keys::ENTER);
    tui.wait_for_text("✓ done");
    tui.send(keys::TAB);
    tui.wait_for_text("›▸ ✓ python");
    tui.send(CTRL_Y);
    let notice = format!("copied the python code: {} bytes", code.len());
    tui.wait_for("the notice says what was copied and how to select", |s| {
        s.contains(&notice) && s.contains("Shift+drag selects text")
    });
    tui.send(CTRL_Y);
    tui.wait_for_text("copied the python output");
    tui.send(keys::ESC);
    tui.wait_for("the focus back in the input", |s| !s.contains("›▸"));
    // Nothing focused: the last answer.
    tui.send(CTRL_Y);
    tui.wait_for_text("copied the answer");
    let written = quit(tui);
    let copies = clipboard_writes(&written);
    assert_eq!(copies.len(), 3, "{copies:?}");
    assert_eq!(copies[0], code, "the code without the pane's gutter");
    assert_eq!(
        copies[1], "copied  text\n",
        "the output as shown: no gutter, no escape"
    );
    assert_eq!(copies[2].trim(), "Printing.");
}

#[test]
fn at_completes_file_names_of_the_work_dir_and_the_prompt_goes_as_typed() {
    let sb = Sandbox::new();
    let work = sb.path("work");
    std::fs::create_dir_all(work.join("docs")).expect("mkdir");
    std::fs::create_dir_all(work.join(".git")).expect("mkdir");
    std::fs::write(work.join("notes.txt"), "remember the milk\n").expect("write");
    std::fs::write(work.join("docs/guide.md"), "# guide\n").expect("write");
    std::fs::write(work.join(".git/notes-in-git"), "x").expect("write");
    let server = FakeModel::start(vec![Reply::text("Read it.")]);
    let mut tui = start(&sb, &server);
    casual(&mut tui);
    tui.type_text("summarise @no");
    let screen = tui.wait_for_text("notes.txt");
    assert!(
        !screen.contains("notes-in-git"),
        ".git is skipped: {screen}"
    );
    tui.send(keys::TAB);
    tui.wait_for("the name completed and the popup closed", |s| {
        s.contains(" › summarise @notes.txt") && !s.contains("Tab complete")
    });
    tui.type_text("and @gui");
    tui.wait_for_text("docs/guide.md");
    // Enter in the popup takes the name; the next Enter sends the prompt.
    tui.send(keys::ENTER);
    tui.wait_for("the second name completed", |s| {
        s.contains(" › summarise @notes.txt and @docs/guide.md") && !s.contains("Tab complete")
    });
    tui.send(keys::ENTER);
    tui.wait_for_text("Read it.");
    let sent = server.chat_requests()[0].last_user_message();
    assert!(
        sent.contains("summarise @notes.txt and @docs/guide.md"),
        "the prompt as typed: {sent}"
    );
    quit(tui);
}

// The tests below go through the agent side too (model lists, the user's shell commands,
// attachments, sessions listed as data).

#[test]
fn an_attached_file_is_named_in_a_notice() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("work")).expect("mkdir");
    std::fs::write(sb.path("work/notes.txt"), "remember the milk\n").expect("write");
    let server = FakeModel::start(vec![Reply::text("Read it.")]);
    let mut tui = start(&sb, &server);
    casual(&mut tui);
    tui.type_text("read @notes.txt");
    tui.send(keys::ENTER);
    tui.wait_for_text("attached notes.txt (18 B)");
    tui.wait_for_text("Read it.");
    quit(tui);
}

#[test]
fn model_picker_lists_the_servers_models_and_switches() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start_at(&sb, &server, 80, 24);
    tui.type_text("/model");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("fake-chat:1b");
    assert!(screen.contains(" models"), "{screen}");
    assert!(
        screen.contains("› fake-coder:7b"),
        "the first row selected: {screen}"
    );
    tui.send(DOWN);
    tui.wait_for_text("› fake-chat:1b");
    tui.send(keys::ENTER);
    tui.wait_for_text("model: fake-chat:1b");
    // The popup completes `/model ` with the same list.
    tui.type_text("/model fake-c");
    // The popup is drawn from the first `/` typed: wait for the models' rows themselves.
    tui.wait_for("the models offered", |s| {
        s.contains("Tab complete") && s.contains("fake-coder:7b") && s.contains("fake-chat:1b")
    });
    tui.send(keys::ESC);
    tui.wait_for("the popup closed", |s| !s.contains("Tab complete"));
    tui.send(b"\x15");
    tui.wait_for_text("ask seek to do something");
    quit(tui);
}

#[test]
fn resume_picker_lists_this_directorys_sessions_and_resumes_one() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Remembered.")]);
    let mut tui = start(&sb, &server);
    casual(&mut tui);
    tui.type_text("the first task ever");
    tui.send(keys::ENTER);
    tui.wait_for_text("Remembered.");
    tui.type_text("/new");
    tui.send(keys::ENTER);
    tui.wait_for_text("conversation cleared");
    tui.type_text("/resume");
    tui.send(keys::ENTER);
    let screen = tui.wait_for_text("the first task ever");
    assert!(screen.contains("sessions of this directory"), "{screen}");
    tui.send(keys::ENTER);
    tui.wait_for_text("continuing session");
    quit(tui);
}

#[test]
fn bang_runs_the_users_command_as_a_pane_of_its_own() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let mut tui = start(&sb, &server);
    tui.type_text("!echo hi-from-$((40 + 2))");
    tui.send(keys::ENTER);
    // The output streams before the pane's end: wait for both.
    let screen = tui.wait_for("the finished pane", |s| {
        s.contains("│ hi-from-42") && s.contains("✓ bash")
    });
    assert!(
        screen.contains("you ran: echo hi-from-$((40 + 2))"),
        "{screen}"
    );
    quit(tui);
    assert!(server.chat_requests().is_empty(), "no task was sent");
}
