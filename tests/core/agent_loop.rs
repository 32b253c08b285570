//! The agent loop end to end: the real `seek -p` binary against the fake model server, running
//! real blocks.

use crate::support;

use crate::fake_model;
use crate::procs;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

fn seek_p(sb: &Sandbox, server: &FakeModel, prompt: &str, extra: &[&str]) -> Command {
    let mut cmd = sb.seek_at(&server.url(), extra);
    cmd.args(["-p", prompt]);
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run seek")
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

#[test]
fn fail_then_fix() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!("I'll divide.\n{}\n", fence("python", "print(1/0)"))),
        Reply::text(format!(
            "Fixed the division.\n{}\n",
            fence("python", "print(10/2)")
        )),
    ]);
    let out = run(&mut seek_p(&sb, &server, "divide ten by two", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let feedback = requests[1].last_user_message();
    assert!(
        feedback.starts_with("[failure] Error in execution:\nexit code 1\n"),
        "{feedback}"
    );
    assert!(
        feedback.contains("Traceback") && feedback.contains("ZeroDivisionError"),
        "{feedback}"
    );
    let text = stdout(&out);
    assert!(
        text.starts_with("Fixed the division.\n```python\nprint(10/2)\n```\n[python ✓]\n5.0\n"),
        "{text}"
    );
    // The first request carries the system prompt teaching the fence syntax.
    let system = requests[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.contains("```python") && system.contains(&sb.path("work").display().to_string()),
        "{system}"
    );
}

#[test]
fn every_block_s_output_is_fed_back_in_one_message() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "{}\nand\n{}\n",
            fence("bash", "echo from-bash"),
            fence("python", "print('from-python')")
        )),
        Reply::text("Both ran."),
    ]);
    let out = run(&mut seek_p(&sb, &server, "run two", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.chat_requests();
    assert_eq!(
        requests.len(),
        1,
        "a successful round ending with python is done"
    );
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "{}\n{}\n",
            fence("python", "print('from-python')"),
            fence("bash", "echo from-bash")
        )),
        Reply::text("Both ran."),
    ]);
    let out = run(&mut seek_p(&sb, &server, "run two", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.chat_requests();
    assert_eq!(
        requests.len(),
        2,
        "a round ending with bash asks the model again"
    );
    let feedback = requests[1].last_user_message();
    assert!(
        feedback
            .contains("Block 0 (python):\n[success] Execution success, code output:\nfrom-python"),
        "{feedback}"
    );
    assert!(
        feedback.contains("Block 1 (bash):\n[success] Execution success, code output:\nfrom-bash"),
        "{feedback}"
    );
    assert_eq!(stdout(&out), "Both ran.\n");
}

#[test]
fn the_first_failure_stops_the_later_blocks() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "{}\n{}\n",
            fence("bash", "echo oops; exit 4"),
            fence("bash", "touch should-not-exist")
        )),
        Reply::text("I give up on that."),
    ]);
    let out = run(&mut seek_p(&sb, &server, "two steps", &[]));
    // No block of the task succeeded: it failed, whatever the model said last.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "I give up on that.\n");
    assert!(!sb.path("work/should-not-exist").exists());
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(feedback.contains("exit code 4\noops"), "{feedback}");
    assert!(
        feedback.contains("Block 1 (bash) was not run because an earlier block failed."),
        "{feedback}"
    );
}

#[test]
fn five_failures_give_up_after_exactly_five_calls() {
    let sb = Sandbox::new();
    let failing = Reply::text(format!(
        "Trying.\n{}\n",
        fence("python", "import nonexistent_module_xyz")
    ));
    let server = FakeModel::start(vec![failing; 7]);
    let out = run(&mut seek_p(&sb, &server, "import it", &[]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.chat_requests().len(), 5);
    let err = stderr(&out);
    assert!(
        err.contains("gave up after 5 failed attempts") && err.contains("ModuleNotFoundError"),
        "{err}"
    );
}

#[test]
fn a_bash_success_then_a_final_answer() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("work")).expect("work");
    std::fs::write(sb.path("work/notes.txt"), "one two three\n").expect("notes");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Counting.\n{}\n",
            fence("bash", "wc -w < notes.txt")
        )),
        Reply::text("The file has 3 words."),
    ]);
    let out = run(&mut seek_p(&sb, &server, "count words", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The file has 3 words.\n");
    let feedback = server.chat_requests()[1].last_user_message();
    assert_eq!(feedback, "[success] Execution success, code output:\n3\n");
}

#[test]
fn a_clarification_goes_to_the_user() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(
        "Which file do you mean? REQUEST_CLARIFICATION",
    )]);
    let out = run(&mut seek_p(&sb, &server, "fix the file", &[]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.chat_requests().len(), 1);
    assert!(
        stderr(&out).contains("seek: Which file do you mean?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_casual_agent_runs_no_code() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(format!(
        "Like this:\n{}\n",
        fence("bash", "touch casual-ran-it")
    ))]);
    let out = run(&mut seek_p(
        &sb,
        &server,
        "how do I make a file?",
        &["--agent", "casual"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!sb.path("work/casual-ran-it").exists());
    assert_eq!(server.chat_requests().len(), 1);
    assert!(
        stdout(&out).contains("```bash\ntouch casual-ran-it\n```"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_unclosed_block_is_reported_to_the_model() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text("Here:\n```python\nprint('never closed')\n"),
        Reply::text(format!(
            "Closed now.\n{}\n",
            fence("python", "print('closed')")
        )),
    ]);
    let out = run(&mut seek_p(&sb, &server, "print", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(
        feedback.contains("the python block was not closed"),
        "{feedback}"
    );
}

#[test]
fn a_model_server_error_exits_three() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::status(
        404,
        r#"{"error":{"message":"model 'fake-coder:7b' not found"}}"#,
    )]);
    let out = run(&mut seek_p(&sb, &server, "anything", &[]));
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("model fake-coder:7b is not on"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_json_contract() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::Text {
        answer: format!("Running.\n{}\n", fence("python:hello.py", "print('hi')")),
        reasoning: Some("Use python.".into()),
    }]);
    let out = run(&mut seek_p(&sb, &server, "say hi", &["--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    for wanted in [
        "turn_started",
        "status",
        "reasoning_delta",
        "answer_delta",
        "answer_complete",
        "block_started",
        "block_output",
        "block_finished",
        "turn_finished",
        "done",
    ] {
        assert!(types.contains(&wanted), "{wanted} missing from {types:?}");
    }
    let done = lines.last().expect("lines");
    assert_eq!(done["type"], "done");
    assert_eq!(done["success"], true);
    assert_eq!(
        done["answer"], "Running.\nblock:0",
        "trailing whitespace trimmed"
    );
    assert_eq!(done["reasoning"], "Use python.");
    assert_eq!(done["agent"], "coder");
    assert_eq!(done["rounds"], 1);
    let block = &done["blocks"][0];
    assert_eq!(block["tool_type"], "python");
    assert_eq!(block["block"], "print('hi')\n");
    assert_eq!(block["success"], true);
    assert_eq!(block["exit_code"], 0);
    assert!(
        block["feedback"]
            .as_str()
            .is_some_and(|f| f.starts_with("[success]") && f.ends_with("(saved to hello.py)"))
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("work/hello.py")).expect("saved"),
        "print('hi')\n"
    );
}

#[test]
fn ctrl_c_during_streaming_stops_at_once() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::Stall {
        answer: "Let me think about".into(),
    }]);
    let child = seek_p(&sb, &server, "slow", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    server.wait_for_request();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signal");
    server.wait_for_hangup();
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
}

#[test]
fn ctrl_c_during_a_long_block_kills_it() {
    let sb = Sandbox::new();
    let marker = "987123";
    let server = FakeModel::start(vec![Reply::text(format!(
        "Waiting.\n{}\n",
        fence("bash", &format!("echo started; sleep {marker}"))
    ))]);
    let mut child = seek_p(&sb, &server, "wait", &["--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Wait until the block has printed, as reported by the event stream.
    support::until_block_prints(&mut lines, "started");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signal");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130));
    let finished = rest
        .iter()
        .find(|l| l.contains("\"block_finished\""))
        .expect("block_finished after stop");
    assert!(finished.contains("\"stopped\":true"), "{finished}");
    assert!(
        procs::processes_with(marker, false).is_empty(),
        "the block's process is gone"
    );
}

#[test]
fn a_reply_cut_for_repeating_itself_is_reported_to_the_model() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::Repeat {
            unit: "I will now do it. ".into(),
            limit: 10 << 20,
        },
        Reply::text("Done: nothing to run."),
    ]);
    let out = run(&mut seek_p(&sb, &server, "loop", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let feedback = server.chat_requests()[1].last_user_message();
    assert!(
        feedback.starts_with("[failure]") && feedback.contains("kept repeating the same text"),
        "{feedback}"
    );
}

#[test]
fn endless_successful_rounds_end_at_the_round_limit() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("config/seek")).expect("config dir");
    std::fs::write(sb.config_file(), "max_rounds = 3\n").expect("config");
    let again = Reply::text(format!(
        "Checking again.\n{}\n",
        fence("bash", "echo still here")
    ));
    let server = FakeModel::start(vec![again; 5]);
    let out = run(&mut seek_p(&sb, &server, "check forever", &[]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.chat_requests().len(), 3);
    let err = stderr(&out);
    assert!(
        err.contains("stopped after 3 rounds without finishing (max_rounds = 3)"),
        "{err}"
    );
    assert!(!err.contains("sorry"), "{err}");
}

#[test]
fn the_file_agent_works_one_command_at_a_time() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("work")).expect("work");
    std::fs::write(sb.path("work/report.txt"), "quarterly numbers\n").expect("report");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "Finding it.\n{}\n",
            fence("file_finder", "name=report.txt")
        )),
        Reply::text(format!(
            "Copying it.\n{}\n",
            fence("bash", "cp report.txt backup.txt")
        )),
        Reply::text("Copied report.txt to backup.txt."),
    ]);
    let out = run(&mut seek_p(
        &sb,
        &server,
        "back up the report",
        &["--agent", "file"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        server.chat_requests().len(),
        3,
        "AgenticSeek stopped after the first command"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("work/backup.txt")).expect("copied"),
        "quarterly numbers\n"
    );
    let first_feedback = server.chat_requests()[1].last_user_message();
    assert!(
        first_feedback.contains("File: report.txt, found at"),
        "{first_feedback}"
    );
}
