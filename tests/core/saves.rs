//! `:path` saves and `file_finder` never leave the work dir, end to end: the real binary against
//! the fake model server, each attack of the hostile review reproduced as written (links of one
//! and two hops, made by a block or planted before the task, hard links, a folder swapped for a
//! link by a racing process, FIFOs) and shown to fail: nothing written outside, the model told
//! why, seek never hung.

use crate::support;

use crate::fake_model;
use crate::pty;

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::{FileTypeExt as _, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr};

/// A run longer than this is a hang (the slowest case here takes a few seconds).
const HANG: Duration = Duration::from_secs(60);

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

fn seek_p(sb: &Sandbox, server: &FakeModel, extra: &[&str]) -> Command {
    let mut cmd = sb.seek_at(&server.url(), extra);
    cmd.args(["-p", "do the task"]);
    cmd
}

/// What seek told the model after round `round` (0-based): the user message of the next request.
fn feedback_after(server: &FakeModel, round: usize) -> String {
    let requests = server.chat_requests();
    let Some(request) = requests.get(round + 1) else {
        panic!(
            "no request after round {round}: {} requests",
            requests.len()
        );
    };
    request.last_user_message()
}

/// A folder outside the work dir holding `target` ("original"); and the work dir, made.
fn outside_and_work(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let outside = sb.path("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("target"), "original").expect("target");
    let work = sb.path("work");
    std::fs::create_dir_all(&work).expect("work");
    (outside, work)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_outside_untouched(outside: &Path) {
    assert_eq!(names(outside), ["target"], "nothing new outside");
    assert_eq!(
        std::fs::read_to_string(outside.join("target")).expect("target"),
        "original",
        "the outside file is unchanged"
    );
}

fn assert_refused(feedback: &str, why: &str) {
    assert!(feedback.starts_with("[failure]"), "{feedback}");
    assert!(
        feedback.contains("the code ran, but was not saved"),
        "{feedback}"
    );
    assert!(feedback.contains(why), "{why:?} in {feedback}");
}

#[test]
fn a_link_of_one_hop_to_a_file_or_a_folder_outside_is_not_saved_through() {
    let sb = Sandbox::new();
    let (outside, work) = outside_and_work(&sb);
    symlink(outside.join("target"), work.join("f.py")).expect("file link");
    symlink(&outside, work.join("sub")).expect("folder link");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Saving.\n{}\n",
            fence("python:f.py", "print('one')")
        )),
        Reply::text(format!(
            "Again.\n{}\n",
            fence("python:sub/x.py", "print(2)")
        )),
        Reply::text("I cannot save there."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    // Its only block failed or was refused: the task gave up.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_refused(&feedback_after(&server, 0), "`f.py` is a symbolic link");
    let second = feedback_after(&server, 1);
    assert_refused(&second, "`sub` is a symbolic link");
    assert!(second.contains("save to the real path"), "{second}");
    assert_outside_untouched(&outside);
}

#[test]
fn a_two_hop_chain_made_by_a_block_cannot_rewrite_seeks_config() {
    let sb = Sandbox::new();
    let config = sb.write_config("max_attempts = 5\n");
    std::fs::create_dir_all(sb.path("work")).expect("work");
    // The review's attack: a block links g.py to the target and f.py to g.py; the next reply's
    // `python:f.py` holds code that is valid Python and valid TOML.
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Linking.\n{}\n",
            fence(
                "bash",
                &format!(
                    "ln -s {} g.py && ln -s g.py f.py && echo linked",
                    config.display()
                )
            )
        )),
        Reply::text(format!(
            "Saving.\n{}\n",
            fence("python:f.py", "sandbox = \"off\"")
        )),
        Reply::text("Done."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(feedback_after(&server, 0).starts_with("[success]"));
    assert_refused(
        &feedback_after(&server, 1),
        "`f.py` is a symbolic link (to `g.py`)",
    );
    assert_eq!(
        std::fs::read_to_string(&config).expect("config"),
        "max_attempts = 5\n",
        "seek's config is unchanged"
    );
    let shown = sb.seek().arg("config").output().expect("seek config");
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("sandbox = \"workspace-write\""),
        "the sandbox is still on: {}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

#[test]
fn a_chain_planted_before_the_task_is_not_followed_and_read_only_saves_nothing() {
    let sb = Sandbox::new();
    let (outside, work) = outside_and_work(&sb);
    // As a cloned repository could hold it: no block made these.
    symlink(outside.join("target"), work.join("g.py")).expect("hop 2");
    symlink("g.py", work.join("f.py")).expect("hop 1");
    let server = FakeModel::start(vec![
        Reply::text(format!("Saving.\n{}\n", fence("python:f.py", "print(1)"))),
        Reply::text("Done."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    // Its only block failed or was refused: the task gave up.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_refused(
        &feedback_after(&server, 0),
        "`f.py` is a symbolic link (to `g.py`)",
    );
    assert_outside_untouched(&outside);
    assert_eq!(names(&work), ["f.py", "g.py"]);

    // Under `--sandbox read-only` nothing is saved at all, through a link or not, and the model
    // is told why; the blocks themselves ran.
    let server = FakeModel::start(vec![Reply::text(format!(
        "Saving two.\n{}\n{}\n",
        fence("python:f.py", "print('through the chain')"),
        fence("python:fresh.py", "print('a new file')"),
    ))]);
    let out = support::run_within(
        &mut seek_p(&sb, &server, &["--sandbox", "read-only", "--json"]),
        HANG,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let done: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "done")
        .expect("a done line");
    let blocks = done["blocks"].as_array().cloned().unwrap_or_default();
    assert_eq!(blocks.len(), 2, "{done}");
    for (block, path) in blocks.iter().zip(["f.py", "fresh.py"]) {
        let feedback = block["feedback"].as_str().unwrap_or_default();
        assert_eq!(block["success"], true, "{block}");
        assert!(
            feedback.contains(&format!(
                "(the sandbox is read-only, so `{path}` was not saved: nothing is written"
            )),
            "{feedback}"
        );
    }
    assert_outside_untouched(&outside);
    assert_eq!(names(&work), ["f.py", "g.py"], "nothing saved at all");
}

#[test]
fn seeks_own_config_is_never_saved_over_by_any_name() {
    let sb = Sandbox::new();
    let config = sb.write_config("max_attempts = 5\n");
    let work = sb.path("work");
    std::fs::create_dir_all(&work).expect("work");
    symlink(&config, work.join("cfg.toml")).expect("link");
    std::fs::hard_link(&config, work.join("hard.toml")).expect("hard link");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Saving.\n{}\n",
            fence("python:cfg.toml", "sandbox = \"off\"")
        )),
        Reply::text(format!(
            "Again.\n{}\n",
            fence("python:hard.toml", "sandbox = \"off\"")
        )),
        Reply::text("Done."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    // Its only block failed or was refused: the task gave up.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_refused(&feedback_after(&server, 0), "`cfg.toml` is a symbolic link");
    assert_refused(
        &feedback_after(&server, 1),
        "`hard.toml` is seek's own config file",
    );

    // A work dir that holds seek's config folder (as a home directory does): its real path.
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Saving.\n{}\n",
            fence("python:seek/config.toml", "sandbox = \"off\"")
        )),
        Reply::text(format!(
            "Again.\n{}\n",
            fence("python:seek/prompts/coder.md", "x = 1")
        )),
        Reply::text("Done."),
    ]);
    let config_home = sb.path("config");
    let mut args = sb.model_args(&server.url());
    let at = args
        .iter()
        .position(|a| a == "--work-dir")
        .expect("a work dir flag");
    args[at + 1] = config_home.display().to_string();
    let out = support::run_within(sb.seek().args(&args).args(["-p", "do the task"]), HANG);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_refused(
        &feedback_after(&server, 0),
        "`seek/config.toml` is seek's own config file",
    );
    assert_refused(
        &feedback_after(&server, 1),
        "`seek/prompts/coder.md` is seek's own config folder",
    );
    assert!(!config_home.join("seek/prompts").exists());
    assert_eq!(
        std::fs::read_to_string(&config).expect("config"),
        "max_attempts = 5\n",
        "seek's config is unchanged"
    );
}

#[test]
fn a_hard_link_to_an_outside_file_is_not_saved_over() {
    let sb = Sandbox::new();
    let (outside, work) = outside_and_work(&sb);
    std::fs::hard_link(outside.join("target"), work.join("h.py")).expect("hard link");
    let server = FakeModel::start(vec![
        Reply::text(format!("Saving.\n{}\n", fence("python:h.py", "print(1)"))),
        Reply::text("Done."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    // Its only block failed or was refused: the task gave up.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_refused(&feedback_after(&server, 0), "`h.py` has 2 hard links");
    assert_outside_untouched(&outside);
}

/// Swaps `d` (a folder) and `l` (a link to the outside folder) in `work` with
/// `renameat2(RENAME_EXCHANGE)`, as fast as it can, at most `limit` times; prints `ready` first.
const RACER: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = libc.renameat2
AT_FDCWD, RENAME_EXCHANGE = -100, 2
os.chdir(sys.argv[1])
limit = int(sys.argv[2])
if renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
print("ready", flush=True)
for _ in range(limit):
    renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE)
"#;

#[test]
fn a_folder_swapped_for_a_link_by_a_racing_process_never_leads_out() {
    const ROUNDS: usize = 120;
    let sb = Sandbox::new();
    let (outside, work) = outside_and_work(&sb);
    std::fs::create_dir(work.join("d")).expect("folder");
    symlink(&outside, work.join("l")).expect("link");
    sb.write_config(&format!(
        "max_rounds = {}\nmax_attempts = 100\n",
        ROUNDS + 1
    ));
    // Each round saves `d/xN.sh`: through the real folder, or refused when `d` is the link.
    let mut replies: Vec<Reply> = (0..ROUNDS)
        .map(|i| {
            Reply::text(format!(
                "Saving.\n{}\n",
                fence(&format!("bash:d/x{i}.sh"), "true")
            ))
        })
        .collect();
    replies.push(Reply::text("Done."));
    let server = FakeModel::start(replies);

    let mut racer = Command::new("python3")
        .args(["-c", RACER])
        .arg(&work)
        .arg("50000000")
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the racer");
    let mut ready = String::new();
    BufReader::new(racer.stdout.take().expect("racer stdout"))
        .read_line(&mut ready)
        .expect("the racer starts");
    assert_eq!(ready.trim(), "ready", "the racer could not swap");

    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    let _ = racer.kill();
    let _ = racer.wait();
    assert!(
        !names(&outside).iter().any(|n| n.starts_with('x')),
        "a save landed outside: {:?}",
        names(&outside)
    );
    assert_outside_untouched(&outside);

    let rounds = server.chat_requests().len() - 1;
    // Refused as a link, or as a folder that changed between two looks at it.
    let refused = (0..rounds)
        .filter(|&r| feedback_after(&server, r).contains("the code ran, but was not saved"))
        .count();
    let real = if std::fs::symlink_metadata(work.join("d"))
        .expect("d")
        .is_dir()
    {
        work.join("d")
    } else {
        work.join("l")
    };
    let saved = names(&real).len();
    assert_eq!(
        saved + refused,
        rounds,
        "every save either landed in the real folder or was refused: {}",
        stderr(&out)
    );
    eprintln!("{rounds} saves while racing: {saved} landed in the real folder, {refused} refused");
    // Both outcomes happened: the swap really raced the saves.
    assert!(saved > 0 && refused > 0, "saved {saved}, refused {refused}");
}

#[test]
fn a_save_onto_a_fifo_is_refused_at_once() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Making a pipe.\n{}\n",
            fence("bash", "mkfifo pipe.py && echo made")
        )),
        Reply::text(format!(
            "Saving.\n{}\n",
            fence("python:pipe.py", "print(1)")
        )),
        Reply::text("Done."),
    ]);
    let started = Instant::now();
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_refused(
        &feedback_after(&server, 1),
        "`pipe.py` is a FIFO (named pipe), not a regular file",
    );
    let pipe = std::fs::symlink_metadata(sb.path("work/pipe.py")).expect("pipe");
    assert!(pipe.file_type().is_fifo(), "the FIFO is left as it was");
    assert!(started.elapsed() < HANG / 2, "{:?}", started.elapsed());
}

#[test]
fn file_finder_refuses_to_read_a_fifo_at_once() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Making a pipe.\n{}\n",
            fence("bash", "mkfifo notes.txt && echo made")
        )),
        Reply::text(format!(
            "Reading.\n{}\n",
            fence("file_finder", "action=read\nname=notes.txt")
        )),
        Reply::text("It is not a file."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    assert!(out.status.success(), "{}", stderr(&out));
    let feedback = feedback_after(&server, 1);
    assert!(feedback.starts_with("[failure]"), "{feedback}");
    assert!(
        feedback.contains("is a FIFO (named pipe), not a regular file (never read)")
            && feedback.contains(
                "Not read: it is a FIFO (named pipe), not a regular file; only regular files are read"
            ),
        "{feedback}"
    );
}

#[test]
fn after_a_fifo_save_and_read_ctrl_c_still_answers_within_a_second() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Making a pipe.\n{}\n",
            fence("bash", "mkfifo pipe.txt && echo made")
        )),
        Reply::text(format!(
            "Reading.\n{}\n",
            fence("file_finder", "action=read\nname=pipe.txt")
        )),
        Reply::text(format!(
            "Saving.\n{}\n",
            fence("python:pipe.txt", "print(1)")
        )),
        Reply::Stall {
            answer: "Let me think about that pipe".into(),
        },
    ]);
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut tui = pty::Tui::start(&sb, &args, 120, 30);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("use the pipe");
    tui.send(pty::keys::ENTER);
    // Where the old seek hung: reading the FIFO, then saving onto it.
    tui.wait_for_text("Let me think about that pipe");
    let read = feedback_after(&server, 1);
    assert!(read.contains("Not read: it is a FIFO"), "{read}");
    assert_refused(&feedback_after(&server, 2), "is a FIFO (named pipe)");

    let second = Duration::from_secs(1);
    tui.send(pty::keys::CTRL_C);
    tui.wait_for_within(second, "the task stopped", |s| s.contains("■ stopped"));
    tui.send(pty::keys::CTRL_C);
    tui.wait_for_within(second, "the quit hint", |s| {
        s.contains("press Ctrl+C again to quit")
    });
    tui.send(pty::keys::CTRL_C);
    assert_eq!(tui.wait_exit_within(second).0, 0);
}

/// The records of the `block_finished` events of a `--json` run.
fn finished_blocks(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "block_finished")
        .collect()
}

/// Issue 39: the model wrote ```` ```python:print('hello') ```` and an empty file named
/// `print('hello')` appeared. A suffix that is not a path is ignored with a note, and a block
/// with no code is never saved, under any name.
#[test]
fn a_suffix_that_is_not_a_path_and_an_empty_block_leave_no_file() {
    let sb = Sandbox::new();
    let work = sb.path("work");
    std::fs::create_dir_all(&work).expect("work");
    for (reply, told) in [
        // As the model wrote it: no code at all.
        (
            "```python:print('hello')\n```\n",
            "`print('hello')` after `python:` is not a file name",
        ),
        // The code on the fence line and again inside: it runs, nothing is saved.
        (
            "```python:print('hello')\nprint('hello')\n```\n",
            "`print('hello')` after `python:` is not a file name",
        ),
        (
            "```bash: x = 1\necho one\n```\n",
            "`x = 1` after `bash:` is not a file name",
        ),
        // A real path but nothing to put in it.
        (
            "```python:empty.py\n```\n",
            "holds no code, so nothing ran and no file was written",
        ),
    ] {
        let server = FakeModel::start(vec![Reply::text(reply), Reply::text("Done.")]);
        let out = support::run_within(&mut seek_p(&sb, &server, &["--json"]), HANG);
        let blocks = finished_blocks(&out);
        assert_eq!(blocks.len(), 1, "{reply:?}: {blocks:?}");
        // Only a path is a save path (and the empty block's path saves nothing).
        let path = reply
            .split_once(':')
            .map(|(_, rest)| rest.lines().next().unwrap_or(""));
        let expected = match path {
            Some("empty.py") => serde_json::json!("empty.py"),
            _ => serde_json::Value::Null,
        };
        assert_eq!(blocks[0]["save_path"], expected, "{reply:?}");
        let feedback = blocks[0]["feedback"].as_str().unwrap_or_default();
        assert!(feedback.contains(told), "{reply:?}: {feedback}");
        // What the user sees of the block says it too.
        let output = blocks[0]["output"].as_str().unwrap_or_default();
        assert!(output.contains(told), "{reply:?}: {output}");
        assert!(names(&work).is_empty(), "{reply:?} left {:?}", names(&work));
    }
    // The wire convention still saves a real path.
    let server = FakeModel::start(vec![
        Reply::text("```python:hello.py\nprint('hello')\n```\n"),
        Reply::text("Done."),
    ]);
    let out = support::run_within(&mut seek_p(&sb, &server, &[]), HANG);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(names(&work), ["hello.py"]);
}
