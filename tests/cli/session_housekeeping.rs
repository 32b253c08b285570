//! Keeping the sessions folder clean, on the real binary: a start that never reached the model
//! leaves no file; `seek sessions rm` and `seek sessions prune` remove only seek's own session
//! files, never through a link.

use crate::support;

use crate::fake_model;

use std::path::{Path, PathBuf};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run, stderr, stdout};

fn session_files(sb: &Sandbox) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sb.path("data/seek/sessions"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn id_of(path: &Path) -> String {
    path.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

/// One finished casual task; returns its session id.
fn saved_session(sb: &Sandbox, server: &FakeModel, prompt: &str) -> String {
    let out = run(&mut sb.seek_at(&server.url(), &["--agent", "casual", "-p", prompt]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    err.lines()
        .find_map(|l| l.strip_prefix("seek: session "))
        .unwrap_or_else(|| panic!("a session line: {err}"))
        .trim()
        .to_owned()
}

/// A session file as an old seek would have left it: last active on 2020-01-01.
fn old_session(folder: &Path, id: &str) -> PathBuf {
    let at = 1_577_836_800_000_u64;
    let path = folder.join(format!("{id}.jsonl"));
    std::fs::create_dir_all(folder).expect("mkdir");
    std::fs::write(
        &path,
        format!(
            "{{\"kind\":\"header\",\"version\":1,\"id\":\"{id}\",\"created_ms\":{at},\"work_dir\":\"/old\",\"model\":\"m\",\"agent\":\"casual\"}}\n\
             {{\"kind\":\"event\",\"at_ms\":{at},\"event\":{{\"type\":\"turn_started\",\"turn\":1,\"prompt\":\"an old task\",\"agent\":\"casual\"}}}}\n"
        ),
    )
    .expect("write");
    path
}

#[test]
fn a_start_that_never_reached_the_model_leaves_no_session_file() {
    let sb = Sandbox::new();
    // Connection refused: a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    sb.write_config("max_retries = 0\n");
    let out = run(sb.seek().args([
        "--provider",
        "llama.cpp",
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "-p",
        "hello?",
    ]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(session_files(&sb), Vec::<PathBuf>::new());

    // The server answers, but not with a reply (no such model).
    let server = FakeModel::start(vec![Reply::status(404, "{\"error\":\"model not found\"}")]);
    let out = run(&mut sb.seek_at(&server.url(), &["--agent", "casual", "-p", "hello?"]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(session_files(&sb), Vec::<PathBuf>::new());

    // Once the model answers, the session is saved whole.
    let server = FakeModel::start(vec![Reply::text("Here.")]);
    let id = saved_session(&sb, &server, "hello?");
    let files = session_files(&sb);
    assert_eq!(files.len(), 1);
    assert_eq!(id_of(&files[0]), id);
    let text = std::fs::read_to_string(&files[0]).expect("read");
    assert!(
        text.starts_with("{\"kind\":\"header\"") && text.contains("hello?"),
        "{text}"
    );
}

#[test]
fn sessions_rm_removes_what_it_is_told_and_says_so() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let first = saved_session(&sb, &server, "first task");
    let second = saved_session(&sb, &server, "second task");
    let folder = sb.path("data/seek/sessions");
    let old = old_session(&folder, "20200101-000000-abcd");

    // An exact id and a unique prefix, in one go.
    let prefix = &old_id_prefix(&old);
    let out = run(sb.seek().args(["sessions", "rm", &first, prefix]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains(&format!("removed {first}")) && said.contains("first task"),
        "{said}"
    );
    assert!(said.contains("removed 20200101-000000-abcd"), "{said}");
    assert_eq!(
        session_files(&sb)
            .iter()
            .map(|p| id_of(p))
            .collect::<Vec<_>>(),
        [second]
    );

    // What is not there, and what is not a session, are errors that remove nothing.
    std::fs::write(folder.join("notes.jsonl"), "my notes\n").expect("write");
    let out = run(sb
        .seek()
        .args(["sessions", "rm", "nope", "notes", "../sessions/x"]));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no session nope") && err.contains("notes.jsonl is not a seek session"),
        "{err}"
    );
    assert!(folder.join("notes.jsonl").exists());
    assert_eq!(session_files(&sb).len(), 2, "the session and the notes");
}

/// The shortest prefix of the old session's id that no other session shares (the others start
/// with today's date).
fn old_id_prefix(path: &Path) -> String {
    id_of(path)[..4].to_owned()
}

#[test]
fn prune_removes_sessions_older_than_asked_and_follows_no_link() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Fresh.")]);
    let fresh = saved_session(&sb, &server, "fresh task");
    let folder = sb.path("data/seek/sessions");
    let old = old_session(&folder, "20200101-000000-0001");
    // An old session elsewhere, linked into the folder: the link is not followed.
    let elsewhere = old_session(&sb.path("elsewhere"), "20200101-000000-0002");
    std::os::unix::fs::symlink(&elsewhere, folder.join("20200101-000000-0002.jsonl"))
        .expect("symlink");

    let out = run(sb
        .seek()
        .args(["sessions", "prune", "--older-than", "30d", "--dry-run"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("would remove 20200101-000000-0001")
            && said.contains("would remove 1 session last active more than 30 days ago"),
        "{said}"
    );
    assert!(old.exists(), "a dry run removes nothing");

    let out = run(sb.seek().args(["sessions", "prune", "--older-than", "30d"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("removed 20200101-000000-0001  2020-01-01")
            && said.contains("removed 1 session last active more than 30 days ago"),
        "{said}"
    );
    assert!(
        stderr(&out).contains("kept 20200101-000000-0002") && stderr(&out).contains("link"),
        "{}",
        stderr(&out)
    );
    assert!(!old.exists());
    assert!(elsewhere.exists(), "the link's target is untouched");
    assert!(
        folder
            .join("20200101-000000-0002.jsonl")
            .symlink_metadata()
            .is_ok()
    );
    assert!(
        folder.join(format!("{fresh}.jsonl")).exists(),
        "the fresh one stays"
    );

    let out = run(sb
        .seek()
        .args(["sessions", "prune", "--older-than", "soon"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected a number and d, h or m"),
        "{}",
        stderr(&out)
    );
}
