//! The work dir is the folder seek is started in, except `/`, the home folder and what holds it
//! (a scratch folder then, said once); sessions remember their folder, and `-c` and
//! `seek sessions` keep to it. Checked on the real binary against the fake model.

use crate::support;

use crate::fake_model;
use crate::pty;

use std::path::{Path, PathBuf};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, run, stderr, stdout};

/// A reply whose bash block leaves `made.txt` in the folder it runs in.
const MAKE_A_FILE: &str = "Making it.\n```bash\necho made > made.txt\n```\n";

/// The flags for the fake model, and no work dir.
fn model(server: &FakeModel) -> Vec<String> {
    ["--provider", "llama.cpp", "--base-url", &server.url()]
        .into_iter()
        .chain(["--model", "fake-coder:7b"])
        .map(str::to_owned)
        .collect()
}

fn folder(sb: &Sandbox, rel: &str) -> PathBuf {
    let path = sb.path(rel);
    std::fs::create_dir_all(&path).expect("mkdir");
    std::fs::canonicalize(path).expect("canonical")
}

fn scratch(sb: &Sandbox) -> PathBuf {
    sb.path("data/seek/workspace")
}

#[test]
fn code_runs_in_the_folder_seek_is_started_in() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(MAKE_A_FILE), Reply::text("Done.")]);
    let project = folder(&sb, "cwd/project");
    let out = run(sb
        .seek()
        .current_dir(&project)
        .args(model(&server))
        .args(["-p", "make a file"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(project.join("made.txt")).expect("made here"),
        "made\n"
    );
    assert!(!scratch(&sb).exists(), "no scratch folder is made");
    assert!(!stderr(&out).contains("started in"), "{}", stderr(&out));

    let out = run(sb.seek().current_dir(&project).arg("config"));
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with("work_dir = "))
        .expect("a work_dir line")
        .to_owned();
    assert!(
        line.contains(&format!("{:?}", project.display().to_string()))
            && line.ends_with("# current directory"),
        "{line}"
    );
}

#[test]
fn started_in_the_home_folder_seek_works_in_a_scratch_folder_and_says_so_once() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(MAKE_A_FILE), Reply::text("Done.")]);
    let home = folder(&sb, "home");
    let out = run(sb
        .seek()
        .current_dir(&home)
        .args(model(&server))
        .args(["-p", "make a file"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let scratch = std::fs::canonicalize(scratch(&sb)).expect("the scratch folder is made");
    assert!(
        scratch.join("made.txt").exists(),
        "the block ran in the scratch folder"
    );
    assert!(!home.join("made.txt").exists(), "nothing was made at home");
    let notice = format!(
        "seek: started in your home folder (~): code runs in {} instead; run seek from a project folder, or pass --work-dir ~ to work here",
        scratch.display()
    );
    assert_eq!(stderr(&out).matches(&notice).count(), 1, "{}", stderr(&out));
}

#[test]
fn started_in_the_root_or_above_home_seek_works_in_the_scratch_folder() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Fine."), Reply::text("Fine.")]);
    let above = std::fs::canonicalize(sb.root.path()).expect("canonical");
    let out = run(sb
        .seek()
        .current_dir(&above)
        .args(model(&server))
        .args(["--agent", "casual", "-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "seek: started in {}, which holds your home folder: code runs in ",
            above.display()
        )) && err.contains(&format!(
            "or pass --work-dir {} to work here",
            above.display()
        )),
        "{err}"
    );
    let out = run(sb
        .seek()
        .current_dir("/")
        .args(model(&server))
        .args(["--agent", "casual", "-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("seek: started in / (the root of the filesystem): code runs in ")
            && err.contains("run seek from a project folder\n"),
        "{err}"
    );
}

#[test]
fn a_work_dir_asked_for_is_obeyed_even_at_home_with_the_warning() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(MAKE_A_FILE), Reply::text("Done.")]);
    let home = folder(&sb, "home");
    let out = run(sb
        .seek()
        .current_dir(&home)
        .args(model(&server))
        .arg("--work-dir")
        .arg(&home)
        .args(["-p", "make a file"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(home.join("made.txt").exists(), "the block ran at home");
    let err = stderr(&out);
    assert!(
        err.contains("is your home directory") && !err.contains("started in"),
        "{err}"
    );
    assert!(!scratch(&sb).exists());
}

#[test]
fn the_terminal_ui_says_it_works_in_the_scratch_folder() {
    let sb = Sandbox::new();
    let server = FakeModel::start(Vec::new());
    let args = model(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The pty starts seek in the sandbox's `cwd`: made the home folder here.
    let home = sb.path("cwd");
    let mut tui = pty::Tui::start_with_env(&sb, &args, 100, 30, &[("HOME", home.as_path())]);
    let screen = tui.wait_for_text("started in your home folder (~)");
    assert!(screen.contains("code runs in"), "{screen}");
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
}

/// Runs one casual task in `dir` (the fake model answers `reply`).
fn task_in(sb: &Sandbox, server: &FakeModel, dir: &Path, extra: &[&str]) -> std::process::Output {
    run(sb
        .seek()
        .current_dir(dir)
        .args(model(server))
        .args(["--agent", "casual"])
        .args(extra))
}

fn session_id(out: &std::process::Output) -> String {
    let err = stderr(out);
    err.lines()
        .find_map(|l| l.strip_prefix("seek: session "))
        .unwrap_or_else(|| panic!("a session line: {err}"))
        .trim()
        .to_owned()
}

#[test]
fn continue_and_the_listing_keep_to_the_folder_seek_is_started_in() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("In alpha."),
        Reply::text("In beta."),
        Reply::text("Alpha again."),
        Reply::text("Beta, from alpha."),
    ]);
    let (alpha, beta, gamma) = (
        folder(&sb, "cwd/alpha"),
        folder(&sb, "cwd/beta"),
        folder(&sb, "cwd/gamma"),
    );
    let out = task_in(&sb, &server, &alpha, &["-p", "alpha task"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let alpha_id = session_id(&out);
    // Newer, but in another folder.
    let out = task_in(&sb, &server, &beta, &["-p", "beta task"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let beta_id = session_id(&out);

    let out = task_in(&sb, &server, &alpha, &["-c", "-p", "more"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("continuing session {alpha_id}")),
        "{}",
        stderr(&out)
    );
    let asked = &server.chat_requests()[2];
    assert!(
        asked.json().to_string().contains("alpha task"),
        "alpha's conversation"
    );

    let out = task_in(&sb, &server, &gamma, &["-c", "-p", "more"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "no saved session in {}; `seek sessions --all` lists every one",
            gamma.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.chat_requests().len(), 3, "nothing was asked");

    // `-r` reaches any session; the work dir stays this one, and the warning names both.
    let out = task_in(&sb, &server, &alpha, &["-r", &beta_id, "-p", "from alpha"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "seek: warning: session {beta_id} worked in {}; it continues here, in {}",
            beta.display(),
            alpha.display()
        )),
        "{}",
        stderr(&out)
    );

    let listing = |dir: &Path, all: bool| {
        let mut cmd = sb.seek();
        cmd.current_dir(dir).arg("sessions");
        if all {
            cmd.arg("--all");
        }
        let out = run(&mut cmd);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let here = listing(&alpha, false);
    let rows: Vec<&str> = here.lines().collect();
    assert!(rows[0].contains("  DIR  "), "{here}");
    assert_eq!(rows.len(), 2, "{here}");
    assert!(
        rows[1].starts_with(&alpha_id) && rows[1].contains(&alpha.display().to_string()),
        "{here}"
    );
    let all = listing(&gamma, true);
    assert_eq!(all.lines().count(), 3, "{all}");
    assert!(all.contains(&alpha_id) && all.contains(&beta_id), "{all}");
    let none = listing(&gamma, false);
    assert!(
        none.contains("no saved sessions in") && none.contains("seek sessions --all"),
        "{none}"
    );
}

#[test]
fn the_dir_column_writes_the_home_folder_as_a_tilde() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text("Fine.")]);
    let project = folder(&sb, "home/project");
    let out = task_in(&sb, &server, &project, &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(sb.seek().current_dir(&project).arg("sessions"));
    let text = stdout(&out);
    assert!(text.contains("  ~/project  "), "{text}");
}
