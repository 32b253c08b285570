//! Credentials end to end, through the real binary and the fake model server: 22 common
//! credential variables, URLs with passwords and the handles of the user's session (tmux, agents,
//! D-Bus, docker, the display) are not in a block's environment unless `pass_env` names them; the
//! model server's credentials in `SEEK_BASE_URL` are neither; and no such value reaches a session
//! file or the log, wherever it appears (the model's text, a block's output, a server error).

use crate::support;

use crate::fake_model;
use crate::pty;

use std::process::Command;

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

/// 22 common credential variables: the 10 the review found leaking, 12 more. Each value holds a
/// unique marker `cNN-…`, the part that must never be seen (for URLs, the password).
const CREDENTIALS: [(&str, &str, &str); 22] = [
    (
        "AWS_SECRET_ACCESS_KEY",
        "c01-wJalrXUtnFEMI/K7MDENG",
        "c01-wJalrXUtnFEMI",
    ),
    (
        "AWS_ACCESS_KEY_ID",
        "c02-AKIAIOSFODNN7",
        "c02-AKIAIOSFODNN7",
    ),
    ("GITHUB_PAT", "c03-ghp_16C7e42F292c", "c03-ghp_16C7e42F292c"),
    ("DB_PASSWD", "c04-hunter2", "c04-hunter2"),
    ("SECRET_KEY", "c05-django-insecure", "c05-django-insecure"),
    ("PRIVATE_KEY", "c06-MIIEvQIBADANBg", "c06-MIIEvQIBADANBg"),
    ("TOKEN", "c07-tok-abcdef", "c07-tok-abcdef"),
    ("NPM_AUTH", "c08-npm-auth-xyz", "c08-npm-auth-xyz"),
    (
        "SLACK_WEBHOOK_URL",
        "https://hooks.slack.com/services/T000/B000/c09-slackhook",
        "c09-slackhook",
    ),
    (
        "DATABASE_URL",
        "postgres://app:c10-dbpass@db.internal:5432/app",
        "c10-dbpass",
    ),
    ("OPENAI_API_KEY", "c11-sk-proj-abc", "c11-sk-proj-abc"),
    ("ANTHROPIC_API_KEY", "c12-sk-ant-abc", "c12-sk-ant-abc"),
    ("HF_TOKEN", "c13-hf_abcdef", "c13-hf_abcdef"),
    ("GH_TOKEN", "c14-gho_abcdef", "c14-gho_abcdef"),
    (
        "AZURE_CLIENT_SECRET",
        "c15-azure~secret",
        "c15-azure~secret",
    ),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "/home/u/c16-gcp-creds.json",
        "c16-gcp-creds",
    ),
    ("MYSQL_PWD", "c17-mysqlpw", "c17-mysqlpw"),
    ("PGPASSWORD", "c18-pgpw", "c18-pgpw"),
    (
        "REDIS_URL",
        "redis://:c19-redispw@cache:6379/0",
        "c19-redispw",
    ),
    ("SENTRY_AUTH_TOKEN", "c20-sntrys_abc", "c20-sntrys_abc"),
    ("STRIPE_SECRET_KEY", "c21-sk_live_abc", "c21-sk_live_abc"),
    ("SESSION_COOKIE", "c22-sessioncookie", "c22-sessioncookie"),
];

/// A variable whose name says nothing, holding a URL with a password.
const URL_VARIABLE: (&str, &str, &str) = (
    "BACKUP_TARGET",
    "https://svc:c23-svcpw@backup.internal/x",
    "c23-svcpw",
);

/// The model server's credentials, in `SEEK_BASE_URL`.
const BASE_USER: &str = "seekuser";
const BASE_PASSWORD: &str = "c24-basepw";

/// Handles into the user's session.
const HANDLES: [(&str, &str); 12] = [
    ("TMUX", "/tmp/tmux-1000/default,4242,0"),
    ("TMUX_PANE", "%3"),
    ("STY", "4242.pts-1.host"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-agent/agent.4242"),
    ("SSH_AGENT_PID", "4243"),
    ("GPG_AGENT_INFO", "/run/user/1000/gnupg/S.gpg-agent:0:1"),
    ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
    ("DOCKER_HOST", "unix:///var/run/docker.sock"),
    ("DISPLAY", ":0"),
    ("WAYLAND_DISPLAY", "wayland-0"),
    ("XDG_RUNTIME_DIR", "/run/user/1000"),
    ("KRB5CCNAME", "FILE:/tmp/krb5cc_1000"),
];

/// Ordinary variables that must still reach blocks.
const ORDINARY: [(&str, &str); 8] = [
    ("LANG", "C.UTF-8"),
    ("USER", "someone"),
    ("SHELL", "/bin/bash"),
    ("EDITOR", "vi"),
    ("PYTHONPATH", "/opt/lib/python"),
    ("KEYBOARD_LAYOUT", "us"),
    ("TOKENIZERS_PARALLELISM", "false"),
    ("XDG_SESSION_TYPE", "wayland"),
];

/// Every marker that must never be seen.
fn markers() -> Vec<&'static str> {
    let mut all: Vec<&str> = CREDENTIALS.iter().map(|(_, _, m)| *m).collect();
    all.push(URL_VARIABLE.2);
    all.push(BASE_PASSWORD);
    all
}

/// The model's prose, quoting every secret value (models repeat what they read).
fn prose_with_every_secret() -> String {
    let mut text = String::from("I found these:");
    for (_, value, _) in CREDENTIALS {
        text.push(' ');
        text.push_str(value);
    }
    text.push_str(&format!(" {} {BASE_PASSWORD}.", URL_VARIABLE.1));
    text
}

/// The model server's URL with a user and password in it.
fn url_with_credentials(server: &FakeModel) -> String {
    format!(
        "http://{BASE_USER}:{BASE_PASSWORD}@127.0.0.1:{}",
        server.port
    )
}

/// Every variable of the test, on `cmd`.
fn with_environment(cmd: &mut Command, server: &FakeModel) {
    for (name, value, _) in CREDENTIALS {
        cmd.env(name, value);
    }
    cmd.env(URL_VARIABLE.0, URL_VARIABLE.1);
    for (name, value) in HANDLES.iter().chain(ORDINARY.iter()) {
        cmd.env(name, value);
    }
    cmd.env("GOPATH", "/home/someone/go");
    cmd.env("TERM", "xterm-256color");
    cmd.env("SEEK_BASE_URL", url_with_credentials(server));
}

/// `seek` on the server named only by `SEEK_BASE_URL` (no `--base-url`).
fn seek(sb: &Sandbox, server: &FakeModel, extra: &[&str]) -> Command {
    let mut cmd = sb.seek();
    cmd.args([
        "--provider",
        "llama.cpp",
        "--model",
        "fake-coder:7b",
        "--work-dir",
    ])
    .arg(sb.path("work"))
    .args(extra);
    with_environment(&mut cmd, server);
    cmd
}

fn session_text(sb: &Sandbox) -> String {
    let dir = sb.path("data/seek/sessions");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(files.len(), 1, "one session file in {}", dir.display());
    std::fs::read_to_string(&files[0]).expect("read the session file")
}

fn events(out: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The names a block's `env` listed.
fn listed_names(env_output: &str) -> Vec<&str> {
    env_output
        .lines()
        .filter_map(|l| l.split_once('=').map(|(name, _)| name))
        .collect()
}

#[test]
fn blocks_get_no_credentials_or_session_handles_and_session_files_hold_no_secret() {
    let sb = Sandbox::new();
    sb.write_config("[exec]\npass_env = [\"GITHUB_PAT\"]\n");
    let server = FakeModel::start(vec![
        Reply::text(format!(
            "{}\n```bash\nenv\necho \"passed=$GITHUB_PAT\"\necho \"db at postgres://app:printed-pw-55@db.internal/app\"\n```\n",
            prose_with_every_secret()
        )),
        Reply::text("Done."),
    ]);
    let out = seek(
        &sb,
        &server,
        &["-y", "--json", "-p", "print the environment"],
    )
    .output()
    .expect("run seek");
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    let output = events
        .iter()
        .find(|e| e["type"] == "block_finished")
        .and_then(|e| e["output"].as_str())
        .unwrap_or_else(|| panic!("no block_finished event: {}", stdout(&out)));
    let names = listed_names(output);

    // Ordinary variables pass (PWD is the shell's own), and pass_env brings one credential back.
    for (name, value) in ORDINARY {
        assert!(
            output.contains(&format!("{name}={value}\n")),
            "{name} must reach the block: {output}"
        );
    }
    // The sandbox points GOPATH into seek's cache; the shell sets PWD.
    for name in ["PATH", "PWD", "HOME", "TERM", "GOPATH"] {
        assert!(names.contains(&name), "{name}: {output}");
    }
    assert!(output.contains("passed=c03-ghp_16C7e42F292c"), "{output}");

    // Nothing else of the credentials, the handles or the model server.
    for (name, _, marker) in CREDENTIALS.iter().filter(|(n, _, _)| *n != "GITHUB_PAT") {
        assert!(!names.contains(name), "{name} reached the block");
        assert!(!output.contains(marker), "{marker} reached the block");
    }
    assert!(!names.contains(&URL_VARIABLE.0), "a URL with a password");
    for (name, _) in HANDLES {
        assert!(!names.contains(&name), "{name} reached the block");
    }
    assert!(!names.contains(&"SEEK_BASE_URL"));
    assert!(!output.contains(BASE_PASSWORD) && !output.contains(URL_VARIABLE.2));

    // The session file holds none of it: not the model's prose quoting every value, not the
    // block's output printing the passed one and a database URL, not the header's server URL.
    let session = session_text(&sb);
    for marker in markers() {
        assert!(!session.contains(marker), "{marker} is in the session file");
    }
    assert!(session.contains("passed=[redacted]"), "{session}");
    assert!(
        session.contains("postgres://app:***@db.internal/app")
            && !session.contains("printed-pw-55"),
        "a URL password the block printed is masked: {session}"
    );
    assert!(
        session.contains(&format!("{BASE_USER}:***@127.0.0.1")),
        "the header names the server, masked: {session}"
    );
    // Masking keeps the file valid JSON Lines.
    for line in session.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "{line}"
        );
    }
}

#[test]
fn the_log_and_the_session_hold_no_secret_from_a_server_error() {
    let sb = Sandbox::new();
    // A server error quoting every secret, which the terminal UI logs and the session records
    // (a session is written once the model has answered: the first task's answer).
    let server = FakeModel::start(vec![
        Reply::text("Hello."),
        Reply::status(400, prose_with_every_secret()),
    ]);
    let args = [
        "--provider",
        "llama.cpp",
        "--model",
        "fake-coder:7b",
        "--work-dir",
        &sb.path("work").to_string_lossy(),
    ]
    .map(str::to_owned);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let base_url = url_with_credentials(&server);
    let mut env: Vec<(&str, &std::path::Path)> = CREDENTIALS
        .iter()
        .map(|(name, value, _)| (*name, std::path::Path::new(*value)))
        .collect();
    env.push((URL_VARIABLE.0, std::path::Path::new(URL_VARIABLE.1)));
    env.push(("SEEK_BASE_URL", std::path::Path::new(&base_url)));
    let mut tui = pty::Tui::start_with_env(&sb, &args, 120, 30, &env);
    tui.wait_for_text("ask seek to do something");
    tui.type_text("hello");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("Hello.");
    tui.type_text("again");
    tui.send(pty::keys::ENTER);
    tui.wait_for_text("HTTP 400");
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);

    let log = std::fs::read_to_string(sb.path("data/seek/seek.log")).expect("read the log");
    assert!(log.contains("ERROR"), "the error is logged: {log}");
    assert!(
        log.contains(&format!("{BASE_USER}:***@127.0.0.1")),
        "the server URL is logged, masked: {log}"
    );
    let session = session_text(&sb);
    for marker in markers() {
        assert!(!log.contains(marker), "{marker} is in the log: {log}");
        assert!(!session.contains(marker), "{marker} is in the session file");
    }
}
