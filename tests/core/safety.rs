//! Safety end to end, through the real binary and the fake model server: the default sandbox,
//! toolchains under it, credentials kept from blocks, approvals (headless and in the terminal
//! UI), and safe mode's blocklist.

use crate::support;

use crate::fake_model;
use crate::pty;

use std::process::{Command, Output};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

fn seek(sb: &Sandbox, server: &FakeModel, extra: &[&str]) -> Command {
    sb.seek_at(&server.url(), extra)
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

fn done_line(out: &Output) -> serde_json::Value {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "done")
        .unwrap_or(serde_json::Value::Null)
}

#[test]
fn the_default_sandbox_keeps_writes_in_the_work_dir_and_tells_the_model() {
    let sb = Sandbox::new();
    let outside = sb.path("home/escaped.txt");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Writing.\n{}\n",
            fence(
                "bash",
                &format!("echo in > inside.txt && echo out > {}", outside.display())
            )
        )),
        Reply::text("Understood."),
    ]);
    let out = seek(&sb, &server, &["-p", "write two files"])
        .output()
        .expect("run");
    assert!(sb.path("work/inside.txt").exists(), "{}", stderr(&out));
    assert!(
        !outside.exists(),
        "the sandbox let a write out of the work dir"
    );
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(feedback.starts_with("[failure]"), "{feedback}");
    assert!(feedback.contains("Permission denied"), "{feedback}");
    assert!(
        feedback.contains("[sandbox]") && feedback.contains("the only writable place"),
        "{feedback}"
    );
}

#[test]
fn toolchains_work_under_the_sandbox() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(format!(
        "All four.\n{}\n{}\n{}\n{}\n{}\n",
        fence(
            "c",
            "#include <stdio.h>\nint main(void) { puts(\"c ok\"); return 0; }"
        ),
        fence(
            "go",
            "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"go ok\") }"
        ),
        fence(
            "java",
            "public class Main { public static void main(String[] a) { System.out.println(\"java ok\"); } }"
        ),
        fence(
            "python",
            "import tempfile\nwith tempfile.TemporaryFile() as f: f.write(b'x')\nprint('python ok')"
        ),
        fence(
            "bash",
            "python3 -m venv .venv && .venv/bin/python -c 'import sys; print(\"venv ok\", sys.prefix)'"
        ),
    ))]);
    let out = seek(&sb, &server, &["--json", "-p", "hello in four languages"])
        .output()
        .expect("run");
    let done = done_line(&out);
    let blocks = done["blocks"].as_array().cloned().unwrap_or_default();
    assert_eq!(blocks.len(), 5, "{}", stdout(&out));
    for block in &blocks {
        assert_eq!(block["success"], true, "{block}");
    }
    let text = stdout(&out);
    for word in ["c ok", "go ok", "java ok", "python ok", "venv ok"] {
        assert!(text.contains(word), "{word}: {text}");
    }
    assert!(
        sb.path("work/.venv/bin/python").exists(),
        "the virtualenv is in the work dir"
    );
}

#[test]
fn credentials_are_not_in_a_blocks_environment() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!("Listing.\n{}\n", fence("bash", "env"))),
        Reply::text("Done."),
    ]);
    let out = seek(&sb, &server, &["--json", "-p", "print the environment"])
        .env("SEEK_FAKE_API_KEY", "sk-secret-value-123")
        .env("GITHUB_TOKEN", "ghp-secret-value-456")
        .env("DB_PASSWORD", "hunter2-secret")
        .env("HARMLESS", "visible-value")
        .output()
        .expect("run");
    let text = stdout(&out);
    assert!(text.contains("HARMLESS=visible-value"), "{text}");
    for secret in [
        "sk-secret-value-123",
        "ghp-secret-value-456",
        "hunter2-secret",
    ] {
        assert!(!text.contains(secret), "{secret} reached the block");
    }
}

#[test]
fn headless_refuses_to_ask_and_never_shows_blocks_without_running_them() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(format!(
        "Here.\n{}\n",
        fence("bash", "touch ran.txt")
    ))]);
    let out = seek(&sb, &server, &["--approval", "ask", "-p", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert!(server.chat_requests().is_empty());

    let out = seek(&sb, &server, &["--approval", "never", "--json", "-p", "x"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!sb.path("work/ran.txt").exists(), "the block must not run");
    let done = done_line(&out);
    assert_eq!(done["blocks"][0]["skipped"], true, "{done}");
    assert!(
        done["message"]
            .as_str()
            .unwrap_or("")
            .contains("shown, not run"),
        "{done}"
    );
    assert_eq!(
        server.chat_requests().len(),
        1,
        "the task ends with the reply"
    );
}

#[test]
fn safe_mode_refuses_a_blocklisted_command_anywhere_in_the_block() {
    let sb = Sandbox::new();
    sb.write_config("safe_mode = true\n");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Cleaning.\n{}\n",
            fence("bash", "touch marker.txt; bash -c \"rm -rf some_dir\"")
        )),
        Reply::text("I will not."),
    ]);
    let out = seek(&sb, &server, &["-p", "clean up"])
        .output()
        .expect("run");
    // Its only block failed or was refused: the task gave up.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        !sb.path("work/marker.txt").exists(),
        "nothing of the block ran"
    );
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(
        feedback.contains("Unsafe command: rm -rf some_dir. Execution aborted."),
        "{feedback}"
    );
}

fn tui(sb: &Sandbox, server: &FakeModel, editor: Option<&std::path::Path>) -> pty::Tui {
    let mut args = sb.model_args(&server.url());
    args.extend(["--approval".to_owned(), "ask".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match editor {
        Some(editor) => pty::Tui::start_with_env(sb, &args, 120, 30, &[("EDITOR", editor)]),
        None => pty::Tui::start(sb, &args, 120, 30),
    }
}

#[test]
fn approvals_in_the_terminal_ui() {
    let sb = Sandbox::new();
    let editor = sb.path("home/edit.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/original/edited/' \"$1\"\n").expect("editor");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    // After a successful shell block the coder looks at its output once more: each task
    // ends with a reply without blocks.
    let server = FakeModel::start(vec![
        Reply::text(format!("First.\n{}\n", fence("bash", "echo first-ran"))),
        Reply::text("Done one."),
        Reply::text(format!(
            "Second.\n{}\n",
            fence("bash", "touch declined.txt")
        )),
        Reply::text("Fine, I will not."),
        Reply::text(format!("Third.\n{}\n", fence("bash", "echo original"))),
        Reply::text("Done three."),
        Reply::text(format!("Fourth.\n{}\n", fence("bash", "echo no-question"))),
        Reply::text("Done four."),
    ]);
    let mut tui = tui(&sb, &server, Some(&editor));
    let screen = tui.wait_for_text("ask seek to do something");
    assert!(
        screen.contains("approval ask"),
        "the mode is shown: {screen}"
    );

    // y runs the block.
    tui.type_text("one");
    tui.send(pty::keys::ENTER);
    let screen = tui.wait_for_text("? run this bash block?");
    assert!(
        screen.contains("│ echo first-ran"),
        "the code is shown: {screen}"
    );
    tui.type_text("y");
    tui.wait_for_text("│ first-ran");
    tui.wait_for_text("Done one.");

    // n declines: nothing runs and the model is told.
    tui.type_text("two");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("? run this bash block?");
    tui.type_text("n");
    let screen = tui.wait_for_text("Fine, I will not.");
    assert!(screen.contains("✗ bash · declined by you"), "{screen}");
    assert!(!sb.path("work/declined.txt").exists());
    let told = server.chat_requests()[3].last_user_message();
    assert!(told.contains("the user declined"), "{told}");

    // e edits the block in $EDITOR, then it runs as edited.
    tui.type_text("three");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("? run this bash block?");
    tui.type_text("e");
    tui.wait_for_text("│ edited");

    // a runs it and every later block without asking.
    tui.wait_for_text("Done three.");
    tui.type_text("four");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("? run this bash block?");
    tui.type_text("a");
    tui.wait_for_text("Done four.");
    let screen = tui.wait_for_text("│ no-question");
    assert!(
        screen.contains("approval: auto for the rest of this session"),
        "{screen}"
    );
    assert!(
        screen.contains("approval auto"),
        "the header follows: {screen}"
    );
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

#[test]
fn the_editor_gets_the_keys_and_a_failed_edit_leaves_the_block_waiting() {
    let sb = Sandbox::new();
    let editor = sb.path("home/edit.sh");
    // The first run fails; the second reads a line from the terminal and makes it the block.
    std::fs::write(
        &editor,
        "#!/bin/sh\n\
         if [ ! -e \"$HOME/edited-once\" ]; then : > \"$HOME/edited-once\"; exit 3; fi\n\
         printf 'EDITOR-READY\\n' > /dev/tty\n\
         IFS= read -r line < /dev/tty\n\
         printf 'echo %s\\n' \"$line\" > \"$1\"\n",
    )
    .expect("editor");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let server = FakeModel::start(vec![
        Reply::text(format!("Here.\n{}\n", fence("bash", "echo original"))),
        Reply::text("Done."),
    ]);
    let mut tui = tui(&sb, &server, Some(&editor));
    tui.wait_for_text("ask seek to do something");
    tui.type_text("go");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("? run this bash block?");

    tui.type_text("e");
    let screen = tui.wait_for_text("ended with exit status: 3");
    assert!(
        screen.contains("? run this bash block?"),
        "the block still waits: {screen}"
    );

    tui.type_text("e");
    tui.wait_for_text("EDITOR-READY");
    // seek's own reader is paused: these keys reach the editor, not the input box.
    tui.type_text("typed-in-the-editor\r");
    let screen = tui.wait_for_text("Done.");
    assert!(screen.contains("│ typed-in-the-editor"), "{screen}");
    assert!(
        screen.contains("ask seek to do something"),
        "nothing leaked into the input box: {screen}"
    );
    let told = server.chat_requests()[1].last_user_message();
    assert!(told.contains("typed-in-the-editor"), "{told}");
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}
