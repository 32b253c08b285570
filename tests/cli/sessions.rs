//! Sessions end to end: the real binary saves every task as it happens, lists sessions, and
//! continues one (memory and transcript), also after `kill -9`.

use crate::support;

use crate::fake_model;
use crate::measure;
use crate::pty;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use fake_model::{FakeModel, Gate, Reply};
use support::{Sandbox, stderr, stdout};

fn seek(sb: &Sandbox, server: &FakeModel, extra: &[&str]) -> Command {
    sb.seek_at(&server.url(), extra)
}

fn messages(request: &fake_model::Logged) -> Vec<(String, String)> {
    request.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn session_files(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    let dir = sb.path("data/seek/sessions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn continue_brings_back_the_conversation_and_appends_to_the_same_file() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("The capital is Paris."),
        Reply::text("About two million people."),
    ]);
    let out = seek(
        &sb,
        &server,
        &["--agent", "casual", "-p", "capital of France?"],
    )
    .output()
    .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("seek: session "), "{}", stderr(&out));
    let out = seek(&sb, &server, &["-c", "-p", "how many live there?"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("continuing session"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).trim(), "About two million people.");
    let second = &server.chat_requests()[1];
    let contents: Vec<String> = messages(second).into_iter().map(|(_, c)| c).collect();
    assert_eq!(
        contents[1..],
        [
            "capital of France?".to_owned(),
            "The capital is Paris.".to_owned(),
            "how many live there?".to_owned()
        ],
        "the model remembers the first task"
    );
    assert_eq!(session_files(&sb).len(), 1, "one session, appended to");
    let text = std::fs::read_to_string(&session_files(&sb)[0]).expect("read");
    assert_eq!(text.matches("\"type\":\"turn_started\"").count(), 2);
    assert!(
        text.contains("\"agent\":\"casual\""),
        "the agent is remembered"
    );
}

#[test]
fn sessions_are_listed_most_recently_active_first() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ]);
    for prompt in ["first session", "second session"] {
        let out = seek(&sb, &server, &["--agent", "casual", "-p", prompt])
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let files = session_files(&sb);
    assert_eq!(files.len(), 2);
    // Continue the older one: it becomes the most recently active.
    let older = files
        .iter()
        .find(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains("first session")
        })
        .expect("the first session");
    let older_id = older.file_stem().unwrap().to_string_lossy().into_owned();
    let other_id = files
        .iter()
        .find(|f| *f != older)
        .and_then(|f| f.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .expect("the other session");
    // The shortest prefix that names only the older session.
    let unique = older_id
        .chars()
        .zip(other_id.chars())
        .position(|(a, b)| a != b)
        .map_or(older_id.len(), |at| at + 1);
    let out = seek(&sb, &server, &["-r", &older_id[..unique], "-p", "again"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sb.seek().args(["sessions", "--all"]).output().expect("run");
    let listing = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{listing}");
    assert!(rows[0].starts_with(&older_id), "{listing}");
    assert!(
        rows[0].contains("first session") && rows[0].contains("    2  "),
        "{listing}"
    );
    assert!(rows[1].contains("second session"), "{listing}");
}

#[test]
fn resuming_what_does_not_exist_is_a_clear_error() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let out = seek(&sb, &server, &["-c", "-p", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no saved session in ")
            && stderr(&out).contains("`seek sessions --all` lists every one"),
        "{}",
        stderr(&out)
    );
    let out = seek(&sb, &server, &["-r", "nope", "-p", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no session nope"), "{}", stderr(&out));
    assert!(server.chat_requests().is_empty());
}

#[test]
fn kill_9_during_a_block_loses_nothing_before_it() {
    let sb = Sandbox::new();
    let marker = "654123";
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Two steps.\n```bash\necho first step done\n```\n```bash\necho started; sleep {marker}\n```\n"
        )),
        Reply::text("Continuing."),
    ]);
    let mut child = seek(&sb, &server, &["--json", "-p", "wait for it"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Wait until the block has printed, as reported by the event stream.
    support::until_block_prints(&mut lines, "started");
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    drop(lines);

    // The session holds the task, the reply, the finished first block and the second's start.
    let file = &session_files(&sb)[0];
    let text = std::fs::read_to_string(file).expect("read");
    assert!(
        text.contains("\"type\":\"block_finished\"") && text.contains("first step done"),
        "{text}"
    );
    assert_eq!(
        text.matches("\"type\":\"block_started\"").count(),
        2,
        "{text}"
    );
    // And a torn last line, as a kill while writing would leave, is skipped with a warning.
    std::fs::write(file, format!("{text}{{\"kind\":\"event\",\"at_ms\":1,\"ev")).expect("tear");

    let out = seek(&sb, &server, &["--agent", "casual", "-c", "-p", "go on"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the last line was cut short"),
        "{}",
        stderr(&out)
    );
    let resumed = messages(&server.chat_requests()[1]);
    let contents: Vec<&str> = resumed.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(contents[1], "wait for it");
    assert!(
        contents[2].contains("sleep 654123"),
        "the reply is remembered: {contents:?}"
    );
    assert_eq!(contents[3], "go on");
    let text = std::fs::read_to_string(file).expect("read");
    assert!(text.contains("\"go on\""), "appended to the same session");
    for (n, line) in text.lines().enumerate() {
        let torn = line.starts_with("{\"kind\":\"event\",\"at_ms\":1,\"ev") && !line.ends_with('}');
        assert!(
            torn || serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "line {n}: {line}"
        );
    }
}

#[test]
fn no_secret_reaches_a_session_file() {
    let sb = Sandbox::new();
    let secret = "sk-test-0123456789-secret";
    let server = FakeModel::start(vec![
        Reply::text("Here.\n```bash\necho key=$SEEK_TEST_API_KEY\n```\n"),
        Reply::text("Done."),
    ]);
    // Blocks do not see credentials unless `pass_env` lets one through; even then the session
    // file never holds it.
    sb.write_config("[exec]\npass_env = [\"SEEK_TEST_API_KEY\"]\n");
    let out = seek(&sb, &server, &["-p", "show the key"])
        .env("SEEK_TEST_API_KEY", secret)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&session_files(&sb)[0]).expect("read");
    assert!(text.contains("key=[redacted]"), "{text}");
    assert!(!text.contains(secret));
}

#[test]
fn a_session_from_headless_continues_in_the_terminal_ui() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("Counting.\n```python\nprint(6 * 7)\n```\n"),
        Reply::text("Still here."),
    ]);
    let out = seek(&sb, &server, &["-p", "multiply"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut args = sb.model_args(&server.url());
    args.push("-c".to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut tui = pty::Tui::start(&sb, &args, 120, 30);
    let screen = tui.wait_for_text("continuing session");
    assert!(screen.contains("you  multiply"), "{screen}");
    assert!(screen.contains("✓ python · exit 0"), "{screen}");
    assert!(screen.contains("│ 42"), "{screen}");
    tui.type_text("/agent casual");
    tui.send(pty::keys::ENTER);
    tui.type_text("are you there?");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("Still here.");
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
    let second = messages(&server.chat_requests()[1]);
    assert_eq!(second[1].1, "multiply");
    assert_eq!(second.last().map(|m| m.1.as_str()), Some("are you there?"));
    assert_eq!(session_files(&sb).len(), 1);
}

/// seek's own estimate (budget.rs): a third of the bytes, plus four per message.
fn estimated_tokens(request: &fake_model::Logged) -> u64 {
    messages(request)
        .iter()
        .map(|(_, c)| (c.len() as u64).div_ceil(3) + 4)
        .sum()
}

#[test]
fn a_long_session_stays_inside_the_window_and_keeps_the_current_task() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    // llama.cpp reports a 1,024-token window: 768 for the prompt, a quarter for the reply.
    server.set_context_length(1024);
    let filler = "lorem ipsum dolor sit amet ".repeat(20);
    for task in 0..10 {
        server.push(Reply::text(format!("Answer {task}: {filler}")));
        let prompt = format!("task {task}: {filler}");
        let mut args = vec!["--agent", "casual", "-p", &prompt];
        if task > 0 {
            args.insert(0, "-c");
        }
        let out = seek(&sb, &server, &args).output().expect("run");
        assert!(out.status.success(), "task {task}: {}", stderr(&out));
        if task == 9 {
            assert!(stderr(&out).contains("context trimmed"), "{}", stderr(&out));
        }
    }
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 10);
    for (task, request) in requests.iter().enumerate() {
        let sent = messages(request);
        assert!(
            estimated_tokens(request) <= 768,
            "task {task}: {} tokens",
            estimated_tokens(request)
        );
        assert_eq!(sent[0].0, "system");
        assert_eq!(
            sent.last().map(|m| m.1.as_str()),
            Some(format!("task {task}: {filler}").as_str()),
            "the current task is always sent whole"
        );
    }
    assert!(
        messages(&requests[9]).len() < 2 * 10 + 1,
        "older tasks were left out"
    );
    let text = std::fs::read_to_string(&session_files(&sb)[0]).expect("read");
    assert!(
        text.contains("\"type\":\"context_trimmed\""),
        "the session records the trimming"
    );
    assert_eq!(
        text.matches("\"op\":\"begin_turn\"").count(),
        10,
        "the session keeps everything"
    );
}

#[test]
fn a_task_bigger_than_the_window_the_server_reports_is_not_sent() {
    // llama.cpp reports its window at /props, Ollama the model's at /api/show.
    for provider in ["llama.cpp", "ollama"] {
        let sb = Sandbox::new();
        let server = FakeModel::start(Vec::new());
        server.set_context_length(1024);
        let prompt = "x".repeat(10_000);
        let mut cmd = sb.seek();
        cmd.args([
            "--provider",
            provider,
            "--base-url",
            &server.url(),
            "--model",
            "m",
        ])
        .args(["--agent", "casual", "-p", &prompt]);
        let out = cmd.output().expect("run");
        assert_eq!(out.status.code(), Some(3), "{provider}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("does not fit the model's context window"),
            "{provider}: {}",
            stderr(&out)
        );
        assert!(
            server.chat_requests().is_empty(),
            "{provider}: nothing was sent"
        );

        // A server that does not say leaves the configured 8,192 tokens: the prompt goes.
        let quiet = FakeModel::start(vec![Reply::text("Fine.")]);
        let mut cmd = sb.seek();
        cmd.args([
            "--provider",
            provider,
            "--base-url",
            &quiet.url(),
            "--model",
            "m",
        ])
        .args(["--agent", "casual", "-p", &prompt]);
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        assert_eq!(quiet.chat_requests().len(), 1);
    }
}

#[test]
fn resume_and_new_in_the_terminal_ui() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Saved answer.")]);
    let out = seek(&sb, &server, &["--agent", "casual", "-p", "remember this"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let id = session_files(&sb)[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let args = sb.model_args(&server.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut tui = pty::Tui::start(&sb, &args, 120, 30);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("/resume");
    tui.send(pty::keys::ENTER);
    let screen = tui.wait_for_text(&id);
    assert!(
        screen.contains("remember this"),
        "the picker shows the first prompt: {screen}"
    );
    // Leave the picker; `/resume ID` works without it.
    tui.send(pty::keys::ESC);
    tui.wait_for("the picker closed", |s| !s.contains("remember this"));
    tui.type_text(&format!("/resume {}", &id[..15]));
    tui.send(pty::keys::ENTER);
    let screen = tui.wait_for_text("continuing session");
    assert!(
        screen.contains("you  remember this") && screen.contains("Saved answer."),
        "{screen}"
    );
    tui.type_text("/new");
    tui.send(pty::keys::ENTER);
    tui.wait_for("a fresh screen", |s| {
        s.contains("conversation cleared") && !s.contains("Saved answer.")
    });
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

fn id_of(path: &std::path::Path) -> String {
    path.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn files_that_are_not_sessions_are_never_continued_nor_listed() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Noted."), Reply::text("Again.")]);
    let out = seek(&sb, &server, &["--agent", "casual", "-p", "the real one"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let real = id_of(&session_files(&sb)[0]);
    // Newer than the session by mtime and by name: a file of garbage and an empty one.
    let folder = sb.path("data/seek/sessions");
    std::fs::write(folder.join("29991231-235959-ffff.jsonl"), "\0garbage\n{}\n").expect("write");
    std::fs::write(folder.join("29991231-235959-fffe.jsonl"), "").expect("write");

    let out = sb
        .seek()
        .arg("sessions")
        .arg("--work-dir")
        .arg(sb.path("work"))
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<String> = stdout(&out).lines().skip(1).map(str::to_owned).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].starts_with(&real) && rows[0].contains("the real one"),
        "{rows:?}"
    );
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "one warning: {}", stderr(&out));
    assert!(
        warnings[0].contains("29991231-235959-ffff.jsonl (its first line is not a session header)")
            && warnings[0].contains("29991231-235959-fffe.jsonl (empty)"),
        "{}",
        warnings[0]
    );

    let out = seek(&sb, &server, &["-c", "-p", "and again"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("continuing session {real}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).trim(), "Again.");
}

/// A real session made 1 GiB long: a hole of zeros (sparse, so it costs no disk) between its
/// records and a copy of its last record appended after the hole.
fn inflate_to_a_gigabyte(path: &std::path::Path) {
    use std::io::Write;
    let text = std::fs::read_to_string(path).expect("read");
    let last = text.lines().last().expect("a last record").to_owned();
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open");
    file.set_len(text.len() as u64 + (1 << 30))
        .expect("set_len");
    writeln!(&file, "\n{last}").expect("append");
}

#[test]
fn listing_and_choosing_a_session_read_only_the_ends_of_a_gigabyte_file() {
    // Alone: the memory measured below must not include other tests' (see `run_alone`).
    if support::run_alone!(
        "listing_and_choosing_a_session_read_only_the_ends_of_a_gigabyte_file",
        &[],
    ) {
        return;
    }
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("Big."),
        Reply::text("Small."),
        Reply::text("Continued."),
    ]);
    let out = seek(&sb, &server, &["--agent", "casual", "-p", "the big one"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let big = session_files(&sb)[0].clone();
    inflate_to_a_gigabyte(&big);
    assert!(std::fs::metadata(&big).expect("stat").len() > 1 << 30);
    let out = seek(&sb, &server, &["--agent", "casual", "-p", "the small one"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let small = session_files(&sb)
        .into_iter()
        .find(|f| *f != big)
        .expect("the small session");

    let (out, cost) = measure::run_measured(sb.seek().args(["sessions", "--all"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = stdout(&out);
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{listing}");
    assert!(rows[0].starts_with(&id_of(&small)), "{listing}");
    assert!(
        rows[1].starts_with(&id_of(&big))
            && rows[1].contains("casual")
            && rows[1].contains("    1  ")
            && rows[1].ends_with("  the big one"),
        "{listing}"
    );
    eprintln!("seek sessions with a 1 GiB session: {cost:?}");
    // Reading the whole file costs a gigabyte of memory and seconds of CPU.
    assert!(cost.peak_rss < 64 << 20, "{cost:?}");
    assert!(cost.cpu < std::time::Duration::from_secs(1), "{cost:?}");

    // `-c` weighs the big session by its ends too, and continues the newer one.
    let (out, cost) = measure::run_measured(&mut seek(&sb, &server, &["-c", "-p", "go on"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("continuing session {}", id_of(&small))),
        "{}",
        stderr(&out)
    );
    eprintln!("seek -c -p beside a 1 GiB session: {cost:?}");
    assert!(cost.peak_rss < 128 << 20, "{cost:?}");
}

/// Spawns `seek … -p` with its output piped.
fn spawn(cmd: &mut Command) -> std::process::Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Runs a second seek continuing the session `holder` has open: it must be refused, naming the
/// session and the holder's pid, without asking the model anything.
fn refused_while_held(sb: &Sandbox, server: &FakeModel, holder: u32, id: &str) {
    let asked = server.chat_requests().len();
    let out = seek(sb, server, &["-c", "-p", "interloper"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "session {id} is in use by another seek (pid {holder})"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        server.chat_requests().len(),
        asked,
        "the model was not asked"
    );
}

#[test]
fn one_seek_at_a_time_writes_a_session_and_a_second_is_told_it_is_busy() {
    let sb = Sandbox::new();
    let second_gate = Gate::new();
    let server = FakeModel::start(vec![
        Reply::text("First answer."),
        Reply::Held {
            answer: "Second answer.".into(),
            gate: second_gate.clone(),
        },
        Reply::text("Third answer."),
    ]);
    // A new session's file appears once the model answers, already locked (the `session` unit
    // tests check that); a continued one is locked for the whole run of the seek continuing it.
    let out = seek(&sb, &server, &["--agent", "casual", "-p", "first task"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    server.wait_for_request(); // the first task's, long answered
    let id = id_of(&session_files(&sb)[0]);
    let second = spawn(&mut seek(&sb, &server, &["-c", "-p", "second task"]));
    server.wait_for_request();
    refused_while_held(&sb, &server, second.id(), &id);
    // Listing does not need the lock.
    let out = sb.seek().args(["sessions", "--all"]).output().expect("run");
    assert!(stdout(&out).contains(&id), "{}", stdout(&out));
    second_gate.open();
    let out = second.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Second answer.");

    // The holder gone, the session is free again.
    let out = seek(&sb, &server, &["-c", "-p", "third task"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(session_files(&sb).len(), 1);
    let text = std::fs::read_to_string(&session_files(&sb)[0]).expect("read");
    assert!(!text.contains("interloper"), "{text}");
    let memory: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["kind"] == "memory")
        .map(|r| {
            format!(
                "{} {}",
                r["op"].as_str().unwrap_or(""),
                r["content"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        memory,
        [
            "begin_turn first task",
            "push First answer.",
            "begin_turn second task",
            "push Second answer.",
            "begin_turn third task",
            "push Third answer.",
        ],
        "the memory in order, nothing interleaved"
    );
}
