//! A block's processes are held in, through the real binary and the fake model: they cannot
//! signal anything outside the block (an unrelated process, seek itself), cannot outlive it by
//! forking and detaching, cannot reach seek's own files inside the work dir, and whatever a killed
//! seek left behind is removed by the next start. The private temp dir cannot be planted.
//!
//! These tests need Landlock ABI 6 (Linux 6.12) for the signal scope; on an older kernel they
//! fail saying so, unless `SEEK_TEST_NO_LANDLOCK=1` declares such a machine.

use crate::support;

use crate::fake_model;

use std::io::BufRead;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::Duration;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

fn fence(code: &str) -> String {
    format!("Running it.\n```bash\n{code}\n```\n")
}

fn scoped_kernel() -> bool {
    if seek::exec::sandbox::scoped() {
        return true;
    }
    assert!(
        std::env::var("SEEK_TEST_NO_LANDLOCK").is_ok_and(|v| v == "1"),
        "this kernel has no Landlock ABI 6 (Linux 6.12+): signals are not scoped; set SEEK_TEST_NO_LANDLOCK=1 only on a machine known to lack it"
    );
    false
}

fn last_user_message(server: &FakeModel, request: usize) -> String {
    server.chat_requests()[request].last_user_message()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Live processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(marker) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_block_cannot_signal_seek_or_an_unrelated_process() {
    if !scoped_kernel() {
        return;
    }
    let sb = Sandbox::new();
    let mut victim = Command::new("sleep").arg("300").spawn().expect("victim");
    let victim_pid = victim.id();
    let server = FakeModel::start(vec![
        Reply::text(fence(&format!(
            "kill -9 {victim_pid}; a=$?\nkill -STOP $PPID; b=$?\nkill -9 $PPID; c=$?\necho \"codes $a $b $c\"\n[ $a -ne 0 ] && [ $b -ne 0 ] && [ $c -ne 0 ]"
        ))),
        Reply::text("All three were refused."),
    ]);
    let out = support::run_within(
        &mut sb.seek_at(&server.url(), &["-p", "signal things"]),
        Duration::from_secs(60),
    );
    let victim_alive = victim.try_wait().expect("try_wait").is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(
        out.status.success(),
        "seek: {:?}\n{}",
        out.status,
        stderr(&out)
    );
    assert!(victim_alive, "the block killed an unrelated process");
    let feedback = last_user_message(&server, 1);
    assert!(feedback.starts_with("[success]"), "{feedback}");
    assert!(feedback.contains("codes 1 1 1"), "{feedback}");
}

#[test]
fn a_fork_walker_dies_with_its_block() {
    let sb = Sandbox::new();
    let marker = format!("walker-{}", std::process::id());
    // Forks, lets the parent exit, starts a new session, forever: never the same pid, never in
    // the block's process group or session, and without the block's environment token.
    let walker = "import os, sys, time\nwhile True:\n    if os.fork():\n        os._exit(0)\n    os.setsid()\n";
    let server = FakeModel::start(vec![
        Reply::text(fence(&format!(
            "env -i python3 -c '{walker}' {marker} &\necho started"
        ))),
        Reply::text("Done."),
    ]);
    let out = sb
        .seek_at(&server.url(), &["-p", "start a walker"])
        .output()
        .expect("seek");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        last_user_message(&server, 1).contains("started"),
        "the walker was not started"
    );
    let left = processes_with(&marker);
    for pid in &left {
        // SAFETY: kill(2) with plain integers; cleaning up after a failed test.
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "the fork walker outlived its block: {left:?}"
    );
}

#[test]
fn the_temp_dir_is_fresh_and_private_and_planted_links_are_not_followed() {
    let sb = Sandbox::new();
    let temp_parent = sb.path("tmp");
    let outside = sb.path("outside");
    std::fs::create_dir_all(&temp_parent).expect("tmp");
    std::fs::create_dir_all(&outside).expect("outside");
    // The names an attacker could guess (the old scheme was seek-<pid>-<n>).
    for n in 0..64 {
        std::os::unix::fs::symlink(&outside, temp_parent.join(format!("seek-{n}-0")))
            .expect("plant");
    }
    std::os::unix::fs::symlink(&outside, temp_parent.join("seek-")).expect("plant");
    let server = FakeModel::start(vec![
        Reply::text(fence(
            "echo \"TMP=$TMPDIR\"; echo hi > \"$TMPDIR/x\" && ls \"$TMPDIR\"",
        )),
        Reply::text("Done."),
    ]);
    let out = sb
        .seek_at(&server.url(), &["-p", "use the temp dir"])
        .env("TMPDIR", &temp_parent)
        .output()
        .expect("seek");
    assert!(out.status.success(), "{}", stderr(&out));
    let feedback = last_user_message(&server, 1);
    assert!(feedback.starts_with("[success]"), "{feedback}");
    let used = feedback
        .lines()
        .find_map(|l| l.strip_prefix("TMP="))
        .expect("the block printed its TMPDIR");
    assert!(
        used.starts_with(temp_parent.to_str().expect("utf-8")),
        "{used}"
    );
    assert_eq!(
        std::fs::read_dir(&outside).expect("outside").count(),
        0,
        "a planted link was followed"
    );
    // Gone once seek ended.
    assert!(
        !std::path::Path::new(used).exists(),
        "{used} was left behind"
    );
}

#[test]
fn the_private_temp_dir_is_mode_0700_and_owned_by_the_user() {
    let parent = tempfile::tempdir().expect("tmp");
    let instance = seek::exec::instance::Instance::start(parent.path(), None).expect("an instance");
    let meta = std::fs::symlink_metadata(instance.temp_dir()).expect("stat");
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    // SAFETY: geteuid(2) cannot fail.
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });
}

#[test]
fn what_a_killed_seek_left_is_removed_by_the_next_start() {
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![
        Reply::text(fence(
            "setsid sleep 1000 < /dev/null > /dev/null 2>&1 &\necho \"daemon $! tmp $TMPDIR\"\nsleep 1000",
        )),
        Reply::text("Second task."),
    ]);
    let mut first = sb
        .seek_at(&server.url(), &["--json", "-p", "start a daemon"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("seek");
    let mut lines = std::io::BufReader::new(first.stdout.take().expect("stdout")).lines();
    let mut daemon_line = String::new();
    for line in lines.by_ref() {
        let line = line.expect("line");
        if line.contains("\"block_output\"") && line.contains("daemon ") {
            daemon_line = line;
            break;
        }
    }
    let event: serde_json::Value = serde_json::from_str(&daemon_line).expect("json");
    let text = event["text"].as_str().unwrap_or_default().to_owned();
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .map(|w| (*w).to_owned())
            .expect(key)
    };
    let daemon: i32 = after("daemon").parse().expect("pid");
    let temp_dir = std::path::PathBuf::from(after("tmp"));
    first.kill().expect("kill -9 seek");
    first.wait().expect("wait");
    assert!(alive(daemon), "the daemon should outlive a killed seek");
    assert!(temp_dir.exists(), "{}", temp_dir.display());

    let out = sb
        .seek_at(&server.url(), &["-p", "anything"])
        .output()
        .expect("seek again");
    let daemon_left = alive(daemon);
    if daemon_left {
        // SAFETY: kill(2) with plain integers; cleaning up after a failed test.
        unsafe {
            libc::kill(daemon, libc::SIGKILL);
        }
    }
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !daemon_left,
        "the next start left the dead seek's daemon running"
    );
    assert!(
        !temp_dir.exists(),
        "the dead seek's temp dir {} is still there",
        temp_dir.display()
    );
    let _ = stdout(&out);
}

#[test]
fn seek_s_own_files_inside_the_work_dir_stay_out_of_reach() {
    let sb = Sandbox::new();
    let config = sb.write_config("# seek's config\n");
    let server = FakeModel::start(vec![
        Reply::text(fence(
            "echo 'sandbox = \"off\"' >> config/seek/config.toml; echo \"config $?\"\n\
             mkdir -p data/seek/sessions/x; echo \"data $?\"\n\
             mv config config.old; echo \"rename $?\"\n\
             mkdir -p home/project && echo fine > home/project/f && echo \"home ok\"",
        )),
        Reply::text("Done."),
    ]);
    let root = sb.path("");
    let mut args = sb.model_args(&server.url());
    let at = args
        .iter()
        .position(|a| a == "--work-dir")
        .expect("--work-dir");
    args[at + 1] = root.to_string_lossy().into_owned();
    let out = sb
        .seek()
        .args(args)
        .args(["-p", "touch seek's files"])
        .output()
        .expect("seek");
    assert!(out.status.success(), "{}", stderr(&out));
    let feedback = last_user_message(&server, 1);
    assert_eq!(
        std::fs::read_to_string(&config).expect("config"),
        "# seek's config\n",
        "a block rewrote seek's config: {feedback}"
    );
    assert!(!sb.path("data/seek/sessions/x").exists(), "{feedback}");
    assert!(sb.path("config").exists(), "{feedback}");
    assert!(feedback.contains("home ok"), "{feedback}");
    for refused in ["config 1", "data 1", "rename 1"] {
        assert!(feedback.contains(refused), "{refused}: {feedback}");
    }
}

#[test]
fn a_block_is_held_to_its_process_and_memory_limits() {
    let sb = Sandbox::new();
    sb.write_config("[exec]\nmax_processes = 40\nmax_memory_mb = 100\n");
    let server = FakeModel::start(vec![
        Reply::text(
            "Forking.\n```python\nimport os, time\nn = 0\ntry:\n    for i in range(200):\n        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n        n += 1\n    print('all', n)\nexcept OSError as e:\n    print('refused after', n, e)\n```\nNow memory.\n```python\nblob = bytearray(400 * 1024 * 1024)\nprint('allocated', len(blob))\n```\n",
        ),
        Reply::text("Both were limited."),
    ]);
    let out = sb
        .seek_at(&server.url(), &["-p", "use too much"])
        .output()
        .expect("seek");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let forks = last_user_message(&server, 1);
    let started: usize = forks
        .split("refused after ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("200 processes were allowed under max_processes = 40: {forks}"));
    assert!(started < 40, "{forks}");
    let memory = forks.split("[failure]").nth(1).unwrap_or_default();
    assert!(!memory.is_empty(), "the memory block did not fail: {forks}");
    assert!(!memory.contains("allocated"), "{memory}");
    let config = sb.seek().arg("config").output().expect("seek config");
    let shown = stdout(&config);
    assert!(shown.contains("max_processes = 40"), "{shown}");
    assert!(shown.contains("# blocks' processes: "), "{shown}");
}

#[test]
fn python_under_the_sandbox_uses_the_standard_library_s_compiled_files() {
    // With a pycache prefix Python ignores the standard library's own compiled files, and where
    // PYTHONDONTWRITEBYTECODE=1 is set it recompiled every imported module in every block.
    let sb = Sandbox::new();
    let server = FakeModel::start(vec![Reply::text(
        "Checking.\n```python\nimport sys, json\nprint('prefix', sys.pycache_prefix)\nprint('cached', json.__cached__)\n```\n",
    )]);
    let out = sb
        .seek_at(&server.url(), &["-p", "where are the compiled files"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("seek");
    assert!(out.status.success(), "{}", stderr(&out));
    let feedback = stdout(&out);
    assert!(feedback.contains("prefix None"), "{feedback}");
    let cached = feedback
        .lines()
        .find_map(|l| l.strip_prefix("cached "))
        .expect("the block printed json's compiled file");
    let compiled = std::path::Path::new(cached);
    assert!(
        compiled
            .parent()
            .is_some_and(|dir| dir.ends_with("json/__pycache__")),
        "{cached}"
    );
}

#[test]
fn a_block_cannot_change_seek_s_limits_or_priority_nor_leave_its_cgroup() {
    let sb = Sandbox::new();
    // Lowering seek's RLIMIT_NOFILE or RLIMIT_AS would kill or cripple it; clone3 could place a
    // child in another cgroup (CLONE_INTO_CGROUP).
    let code = "import ctypes, os, resource\n\
ppid = os.getppid()\n\
def refused(f):\n    try:\n        f()\n        return 'allowed'\n    except OSError as e:\n        return 'refused'\n\
print('nofile', refused(lambda: resource.prlimit(ppid, resource.RLIMIT_NOFILE, (1, 1))))\n\
print('as', refused(lambda: resource.prlimit(ppid, resource.RLIMIT_AS, (20000000, 20000000))))\n\
print('own', refused(lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, 0))))\n\
print('read', refused(lambda: resource.prlimit(ppid, resource.RLIMIT_NOFILE)))\n\
print('nice', refused(lambda: os.setpriority(os.PRIO_PROCESS, ppid, 19)))\n\
print('nice-user', refused(lambda: os.setpriority(os.PRIO_USER, 0, 19)))\n\
print('affinity', refused(lambda: os.sched_setaffinity(ppid, {0})))\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
r = libc.syscall(435, None, 0)\n\
print('clone3', r, ctypes.get_errno())\n";
    let server = FakeModel::start(vec![Reply::text(format!(
        "Trying.\n```python\n{code}```\n"
    ))]);
    let out = support::run_within(
        &mut sb.seek_at(&server.url(), &["-p", "change seek's limits"]),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "seek: {:?}\n{}",
        out.status,
        stderr(&out)
    );
    let printed = stdout(&out);
    for line in [
        "nofile refused",
        "as refused",
        "own allowed",
        "read allowed",
        "nice refused",
        "nice-user refused",
        "affinity refused",
        "clone3 -1 38",
    ] {
        assert!(printed.contains(line), "{line}: {printed}");
    }
}
