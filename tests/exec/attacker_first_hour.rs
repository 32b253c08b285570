//! The first hour's new ways in, attacked end to end against the fake model server: the
//! user's own command (`!cmd`) must be held exactly as a model's block is (no write outside the
//! work dir, no signal to seek or others, no socket outside, no withheld variable, nothing left
//! running after Stop) and what it prints must reach the model masked; `@path` must not follow a
//! planted link out of the work dir nor wait on what never answers.

use crate::support;

use crate::fake_model;
use crate::procs;
use crate::runtime;

use std::time::{Duration, Instant};

use fake_model::{FakeModel, Reply};
use runtime::{send, until, until_command_finished};
use seek::agent::{AgentHandle, BlockRecord, Command, Event};

fn start(server: &FakeModel, work: &std::path::Path) -> AgentHandle {
    runtime::spawn(runtime::config(
        &server.url(),
        &work.join("work"),
        &work.join("data"),
        None,
    ))
}

async fn run_command(handle: &mut AgentHandle, command: &str) -> BlockRecord {
    send(
        handle,
        Command::Shell {
            command: command.into(),
        },
    );
    until_command_finished(handle).await.1
}

fn landlock() -> bool {
    if seek::exec::sandbox::scoped() {
        return true;
    }
    assert!(
        std::env::var("SEEK_TEST_NO_LANDLOCK").is_ok_and(|v| v == "1"),
        "this kernel has no Landlock ABI 6: set SEEK_TEST_NO_LANDLOCK=1 only on a machine known to lack it"
    );
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_command_cannot_write_signal_or_connect_outside_the_work_dir() {
    if support::run_alone!(
        "the_users_command_cannot_write_signal_or_connect_outside_the_work_dir",
        &[],
    ) || !landlock()
    {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("outside");
    let socket_path = outside.path().join("outside.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket_path).expect("bind");
    // A bystander that is not this process's child (the shell that started it is gone), so
    // nothing but the sandbox decides whether the command may signal it.
    let started = std::process::Command::new("sh")
        .args(["-c", "sleep 300 >/dev/null 2>&1 & echo $!"])
        .output()
        .expect("start the bystander");
    let victim: i32 = String::from_utf8_lossy(&started.stdout)
        .trim()
        .parse()
        .expect("the bystander's pid");
    let server = FakeModel::start(vec![]);
    let mut handle = start(&server, work.path());
    let escaped = outside.path().join("escaped");
    let script = format!(
        "echo x > '{}'; a=$?\nkill -0 {}; b=$?\nkill -0 {}; c=$?\npython3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' '{}' 2>/dev/null; d=$?\necho \"codes $a $b $c $d\"",
        escaped.display(),
        victim,
        std::process::id(),
        socket_path.display(),
    );
    let record = run_command(&mut handle, &script).await;
    let victim_alive = procs::processes_with("sleep 300", false)
        .iter()
        .any(|(pid, _)| *pid == victim);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(victim),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(victim_alive, "the user's command killed a bystander");
    assert!(
        !escaped.exists(),
        "the user's command wrote outside the work dir"
    );
    let codes = record
        .output
        .lines()
        .find_map(|l| l.strip_prefix("codes "))
        .unwrap_or_else(|| panic!("{record:?}"));
    assert_eq!(codes.split(' ').count(), 4, "{codes}");
    assert!(
        codes.split(' ').all(|code| code != "0"),
        "each of write, signal a stranger, signal seek, connect outside must fail: {codes}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_command_leaves_no_process_behind() {
    if support::run_alone!("a_stopped_command_leaves_no_process_behind", &[]) {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![]);
    let mut handle = start(&server, work.path());
    // A child in the background, one that ignores SIGTERM, and a grandchild in a new session.
    let marker = format!("9{}7", std::process::id());
    send(
        &handle,
        Command::Shell {
            command: format!(
                "sleep {marker} & (trap '' TERM; sleep {marker}) & setsid sleep {marker} & echo started; wait"
            ),
        },
    );
    until(
        &mut handle,
        |e| matches!(e, Event::BlockOutput { text, .. } if text.contains("started")),
    )
    .await;
    assert!(!procs::processes_with(&marker, false).is_empty());
    let stopping = Instant::now();
    send(&handle, Command::Stop);
    let finished = until(
        &mut handle,
        |e| matches!(e, Event::BlockFinished { record } if record.round == 0),
    )
    .await;
    assert!(stopping.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(finished.last(), Some(Event::BlockFinished { record }) if record.stopped),
        "{finished:?}"
    );
    let left = procs::processes_with(&marker, false);
    assert!(left.is_empty(), "left running after Stop: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_binary_output_with_escapes_is_bounded_for_the_model() {
    if support::run_alone!(
        "huge_binary_output_with_escapes_is_bounded_for_the_model",
        &[],
    ) {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let server = FakeModel::start(vec![Reply::text("ok")]);
    let mut handle = start(&server, work.path());
    let record = run_command(
        &mut handle,
        "head -c 20000000 /dev/urandom; printf '\\033]0;owned\\007\\033[2J'",
    )
    .await;
    assert!(
        record.output.len() < 2 << 20,
        "{} bytes kept",
        record.output.len()
    );
    send(
        &handle,
        Command::Submit {
            prompt: "what happened?".into(),
            agent: None,
            context: None,
        },
    );
    until(&mut handle, |e| matches!(e, Event::TurnFinished { .. })).await;
    let request = server.chat_requests()[0].json();
    let sent = request["messages"].to_string();
    assert!(
        sent.len() < 64 * 1024,
        "{} bytes sent to the model",
        sent.len()
    );
}

const SECRET: &str = "sk-attacker-secret-0123456789abcdef";

#[test]
fn a_credential_is_withheld_from_the_users_command_and_masked_in_its_note() {
    if support::run_alone!(
        "a_credential_is_withheld_from_the_users_command_and_masked_in_its_note",
        &[("OPENAI_API_KEY", SECRET)],
    ) {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let work = tempfile::tempdir().expect("tempdir");
        let server = FakeModel::start(vec![Reply::text("ok")]);
        let mut handle = start(&server, work.path());
        std::fs::write(work.path().join("work/leak.txt"), format!("key={SECRET}\n"))
            .expect("write");
        let record = run_command(
            &mut handle,
            "echo \"env:${OPENAI_API_KEY:-withheld}\"; cat /proc/$PPID/environ | tr '\\0' '\\n' | grep -c sk-attacker; cat leak.txt",
        )
        .await;
        assert!(record.output.contains("env:withheld"), "{record:?}");
        send(
            &handle,
            Command::Submit {
                prompt: "what happened?".into(),
                agent: None,
                context: None,
            },
        );
        until(&mut handle, |e| matches!(e, Event::TurnFinished { .. })).await;
        let sent = server.chat_requests()[0].json()["messages"].to_string();
        assert!(sent.contains("leak.txt"), "the note was sent: {sent}");
        assert!(!sent.contains(SECRET), "the secret reached the model: {sent}");
    });
}

#[test]
fn the_real_binary_refuses_a_planted_link_and_shows_a_hostile_name_inert() {
    if support::run_alone!(
        "the_real_binary_refuses_a_planted_link_and_shows_a_hostile_name_inert",
        &[],
    ) {
        return;
    }
    let sb = support::Sandbox::new();
    let work = sb.path("work");
    std::fs::create_dir_all(work.join("docs")).expect("mkdir");
    let key = sb.path("home/id_ed25519");
    std::fs::write(&key, "PRIVATE-KEY-MATERIAL").expect("write");
    // A repository's file named with a terminal escape, linking to the user's key.
    let hostile = "notes\x1b]0;owned\x07.md";
    std::os::unix::fs::symlink(&key, work.join(hostile)).expect("symlink");
    // A FIFO and a directory named like files: neither may hold seek up.
    nix::unistd::mkfifo(
        &work.join("pipe.txt"),
        nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
    )
    .expect("mkfifo");
    std::fs::write(work.join("docs/real.md"), "the real notes").expect("write");
    let server = FakeModel::start(vec![Reply::text("Read them.")]);
    let prompt = format!("summarise @{hostile} @pipe.txt @docs @docs/real.md @/dev/tty");
    let started = Instant::now();
    let out = support::run_within(
        &mut sb.seek_at(&server.url(), &["-p", &prompt]),
        Duration::from_secs(60),
    );
    let stderr = support::stderr(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let sent = server.chat_requests()[0].last_user_message();
    assert!(!sent.contains("PRIVATE-KEY-MATERIAL"), "{sent}");
    assert!(sent.contains("the real notes"), "{sent}");
    assert!(sent.contains("outside the work dir"), "{sent}");
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
    assert!(stderr.contains("outside the work dir"), "{stderr}");
}
