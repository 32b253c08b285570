//! The command-line contract, checked on the real binary: flags, exit codes, `seek config`.

use crate::support;

use support::{Sandbox, run, stderr, stdout};

#[test]
fn version_and_help_exit_zero() {
    let sb = Sandbox::new();
    let out = run(sb.seek().arg("--version"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out).trim(),
        format!("seek {}", env!("CARGO_PKG_VERSION"))
    );
    let out = run(sb.seek().arg("--help"));
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for flag in [
        "--print",
        "--json",
        "--provider",
        "--base-url",
        "--model",
        "--agent",
        "--work-dir",
        "--config",
    ] {
        assert!(help.contains(flag), "help lists {flag}");
    }
    assert!(help.contains("Exit codes"), "{help}");
}

#[test]
fn usage_errors_exit_two() {
    let sb = Sandbox::new();
    for args in [
        &["--json"][..],
        &["--bogus"],
        &["-p"],
        &["-p", "x", "config"],
    ] {
        let out = run(sb.seek().args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn without_a_terminal_seek_points_to_print_mode() {
    let sb = Sandbox::new();
    let out = run(&mut sb.seek());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("seek -p"), "{}", stderr(&out));
}

#[test]
fn config_shows_values_and_their_origins() {
    let sb = Sandbox::new();
    let file = sb.write_config(
        "provider = \"openai\"\nmodel = \"from-file\"\n\n[tools.python]\ntimeout_secs = 42\n",
    );
    let out = run(sb
        .seek()
        .arg("config")
        .args(["--base-url", "http://127.0.0.1:9/v1"])
        .env("SEEK_MODEL", "from-env")
        .env("OPENAI_API_KEY", "sk-test-secret-do-not-print"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} missing from:\n{text}"))
            .to_owned()
    };
    assert!(
        line("provider").ends_with(&format!("# {}:1", file.display())),
        "{}",
        line("provider")
    );
    assert!(line("model").contains("\"from-env\"") && line("model").ends_with("# env SEEK_MODEL"));
    assert!(
        line("base_url").ends_with("# flag --base-url"),
        "{}",
        line("base_url")
    );
    assert!(line("api_key_env").contains("OPENAI_API_KEY is set (value hidden)"));
    let python = text.split("[tools.python]").nth(1).expect("python section");
    assert!(
        python
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("timeout_secs = 42") && l.ends_with(":5")),
        "{python}"
    );
    assert!(
        !text.contains("sk-test-secret-do-not-print"),
        "secret leaked:\n{text}"
    );
    let cwd = std::fs::canonicalize(sb.path("cwd")).expect("cwd");
    assert!(
        line("work_dir").contains(&cwd.display().to_string())
            && line("work_dir").ends_with("# current directory"),
        "{}",
        line("work_dir")
    );
}

#[test]
fn work_dir_env_vars_and_creation() {
    let sb = Sandbox::new();
    let out = run(sb.seek().arg("config").env("WORK_DIR", sb.path("agentic")));
    assert!(stdout(&out).contains("# env WORK_DIR"), "{}", stdout(&out));
    let out = run(sb
        .seek()
        .arg("config")
        .env("WORK_DIR", sb.path("a"))
        .env("SEEK_WORK_DIR", sb.path("b")));
    assert!(
        stdout(&out).contains("# env SEEK_WORK_DIR"),
        "SEEK_WORK_DIR wins"
    );

    // Starting a run creates the work dir asked for.
    let asked = sb.path("asked/for");
    assert!(!asked.exists());
    let _ = run(sb.seek().env("SEEK_WORK_DIR", &asked));
    assert!(asked.is_dir(), "the work dir is created");
}

#[test]
fn config_errors_exit_two_and_name_file_line_and_key() {
    let sb = Sandbox::new();
    let file = sb.write_config("model = \"m\"\n[tools.bash]\ntimeout_sec = 5\n");
    let out = run(sb.seek().arg("config"));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(
        err.contains("line 3") && err.contains("timeout_sec"),
        "{err}"
    );
    assert!(err.contains("expected one of"), "{err}");

    let out = run(sb.seek().arg("config").args(["--config", "missing.toml"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.toml"), "{}", stderr(&out));

    std::fs::write(sb.config_file(), [0xff, 0xfe, b'\n']).expect("write binary");
    let out = run(sb.seek().arg("config"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "a config file that is not UTF-8"
    );
    assert!(stderr(&out).contains("config.toml"), "{}", stderr(&out));
}

#[test]
fn invalid_flag_and_env_values_name_their_source() {
    let sb = Sandbox::new();
    let out = run(sb.seek().args(["config", "--agent", "wizard"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("flag --agent: agent = \"wizard\""),
        "{}",
        stderr(&out)
    );
    let out = run(sb.seek().arg("config").env("SEEK_PROVIDER", "nope"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("env SEEK_PROVIDER"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_work_dir_that_cannot_be_created_is_a_configuration_error() {
    let sb = Sandbox::new();
    let blocker = sb.path("file");
    std::fs::write(&blocker, "not a directory").expect("write");
    let out = run(sb.seek().arg("--work-dir").arg(blocker.join("ws")));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("flag --work-dir")
            && err.contains(&format!(
                "{} is a file, so no directory can be made inside it",
                blocker.display()
            )),
        "{err}"
    );
}

#[test]
fn a_work_dir_that_is_a_file_or_the_root_is_refused() {
    let sb = Sandbox::new();
    let file = sb.path("notes.txt");
    std::fs::write(&file, "not a directory").expect("write");
    let out = run(sb.seek().args(["-p", "hi", "--work-dir"]).arg(&file));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("flag --work-dir")
            && err.contains("this is a file, not a directory")
            && !err.contains("File exists"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "not a directory",
        "the file is left alone"
    );

    sb.write_config("work_dir = \"/\"\n");
    let out = run(sb.seek().args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("config.toml:1: work_dir = \"/\"")
            && err.contains("the root of the filesystem cannot be the work dir"),
        "{err}"
    );
    // Also when it is spelled otherwise.
    let out = run(sb.seek().args(["-p", "hi", "--work-dir", "/tmp/../"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the root of the filesystem"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_work_dir_that_is_home_or_holds_it_is_warned_about() {
    let sb = Sandbox::new();
    let server = fake_model::FakeModel::start(vec![
        fake_model::Reply::text("Fine."),
        fake_model::Reply::text("Fine."),
        fake_model::Reply::text("Fine."),
    ]);
    let model = [
        "--provider",
        "llama.cpp",
        "--base-url",
        &server.url(),
        "--model",
        "m",
        "--agent",
        "casual",
    ];
    // HOME is the sandbox's `home`; `~` in the file means it.
    sb.write_config("work_dir = \"~\"\n");
    let out = run(sb.seek().args(model).args(["-p", "hi"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let home = std::fs::canonicalize(sb.path("home")).expect("home");
    let warning = format!("seek: warning: the work dir {} (", home.display());
    let err = stderr(&out);
    assert!(
        err.contains(&warning) && err.contains("is your home directory"),
        "{err}"
    );
    let out = run(sb
        .seek()
        .args(model)
        .args(["-p", "hi", "--work-dir"])
        .arg(sb.path("")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("contains your home directory"),
        "{}",
        stderr(&out)
    );
    let out = run(sb
        .seek()
        .args(model)
        .args(["-p", "hi", "--work-dir"])
        .arg(sb.path("home/project")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_very_long_config_line_gives_a_short_error_naming_line_and_column() {
    let sb = Sandbox::new();
    let long = "a".repeat(200_000);
    let file = sb.write_config(&format!("model = \"m\"\nbase_url = \"{long}\" oops\n"));
    let out = run(sb.seek().arg("config"));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.len() < 1024, "{} bytes: {err}", err.len());
    assert!(
        err.contains(&file.display().to_string()) && err.contains("line 2, column 200015:"),
        "{err}"
    );
    assert!(
        err.contains("aaa\" oops"),
        "an excerpt around the error: {err}"
    );
}

#[test]
fn a_cloud_preset_pointed_at_a_local_server_sends_its_key_only_if_set() {
    let sb = Sandbox::new();
    for (provider, var) in [
        ("openai", "OPENAI_API_KEY"),
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("together", "TOGETHER_API_KEY"),
        ("groq", "GROQ_API_KEY"),
    ] {
        let server = fake_model::FakeModel::start(vec![
            fake_model::Reply::text("No key needed."),
            fake_model::Reply::text("Key sent."),
        ]);
        let mut cmd = sb.seek();
        cmd.args(["--provider", provider, "--base-url", &server.url()])
            .args(["--model", "m", "--agent", "casual", "-p", "hi"]);
        let out = run(&mut cmd);
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "No key needed.");
        let key = format!("sk-test-{provider}-0123456789");
        let out = run(cmd.env(var, &key));
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        let requests = server.chat_requests();
        assert_eq!(requests.len(), 2, "{provider}");
        assert_eq!(requests[0].header("authorization"), None, "{provider}");
        assert_eq!(
            requests[1].header("authorization"),
            Some(format!("Bearer {key}").as_str()),
            "{provider}"
        );
    }
}

use crate::fake_model;

#[test]
fn models_lists_the_servers_models() {
    let sb = Sandbox::new();
    let server = fake_model::FakeModel::start(vec![]);
    for provider in ["ollama", "llama.cpp"] {
        let out = run(sb.seek().args([
            "models",
            "--provider",
            provider,
            "--base-url",
            &server.url(),
        ]));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), "fake-coder:7b\nfake-chat:1b\n");
    }
}

#[test]
fn an_unreachable_server_exits_three_with_the_url() {
    let sb = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let out = run(sb
        .seek()
        .args(["models", "--base-url", &format!("127.0.0.1:{port}")]));
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("http://127.0.0.1:{port}/api/tags")) && err.contains("ollama serve"),
        "{err}"
    );
}

#[test]
fn a_cloud_provider_without_its_key_is_a_configuration_error() {
    let sb = Sandbox::new();
    for base_url in [None, Some("https://API.groq.com/openai/v1/")] {
        let mut cmd = sb.seek();
        cmd.args(["models", "--provider", "groq"]);
        if let Some(url) = base_url {
            cmd.args(["--base-url", url]);
        }
        let out = run(&mut cmd);
        assert_eq!(out.status.code(), Some(2), "{base_url:?}");
        assert!(
            stderr(&out).contains("GROQ_API_KEY is not set"),
            "{base_url:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn print_mode_without_a_model_is_a_configuration_error() {
    let sb = Sandbox::new();
    let out = run(sb.seek().args(["--provider", "llama.cpp", "-p", "hello"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no model is configured for llama.cpp"),
        "{}",
        stderr(&out)
    );
}

use crate::pty;

/// Runs `cmd` with `input` on its stdin (written from a thread, then closed).
fn run_with_stdin(cmd: &mut std::process::Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn seek");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for seek");
    writer.join().expect("the writer thread");
    out
}

#[test]
fn piped_stdin_joins_the_prompt_or_is_the_prompt() {
    let sb = Sandbox::new();
    let server =
        fake_model::FakeModel::start((0..4).map(|_| fake_model::Reply::text("Seen.")).collect());
    let seek = |extra: &[&str]| {
        let mut cmd = sb.seek_at(&server.url(), &["--agent", "casual"]);
        cmd.args(extra);
        cmd
    };
    let out = run_with_stdin(
        &mut seek(&["-p", "why does this fail"]),
        b"error: boom at line 3\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let asked = server.chat_requests()[0].last_user_message();
    assert_eq!(
        asked,
        "why does this fail\n\nThis came from stdin:\n```\nerror: boom at line 3\n```"
    );

    let out = run_with_stdin(&mut seek(&["-p"]), b"explain this\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        server.chat_requests()[1].last_user_message(),
        "explain this"
    );

    let out = run_with_stdin(&mut seek(&["-p", "-", "--json"]), b"and this");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.chat_requests()[2].last_user_message(), "and this");

    // Empty stdin adds nothing; the words after -p are the task.
    let out = run_with_stdin(&mut seek(&["-p", "just", "this"]), b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.chat_requests()[3].last_user_message(), "just this");

    // Nothing anywhere: a usage error, and no request.
    let out = run_with_stdin(&mut seek(&["-p"]), b"  \n");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the prompt is empty"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.chat_requests().len(), 4);
}

#[test]
fn a_task_without_a_terminal_points_to_print_mode() {
    let sb = Sandbox::new();
    let out = run(sb.seek().args(["fix", "the", "bug"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("run the task headless with: seek -p"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_task_on_the_command_line_is_sent_when_the_ui_opens() {
    let sb = Sandbox::new();
    let server = fake_model::FakeModel::start(vec![fake_model::Reply::text("Hello there.")]);
    let mut args = sb.model_args(&server.url());
    args.extend(["--agent", "casual", "say", "hello"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut tui = pty::Tui::start(&sb, &args, 100, 30);
    let screen = tui.wait_for_text("Hello there.");
    assert!(screen.contains("say hello"), "{screen}");
    tui.send(pty::keys::CTRL_D);
    assert_eq!(tui.wait_exit().0, 0);
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].last_user_message(), "say hello");
}

#[test]
fn flags_work_before_and_after_subcommands_and_run_flags_do_not() {
    let sb = Sandbox::new();
    for args in [
        &["--model", "from-flag", "config"][..],
        &["config", "--model", "from-flag"],
    ] {
        let out = run(sb.seek().args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        let line = text
            .lines()
            .find(|l| l.starts_with("model = "))
            .unwrap_or_default();
        assert!(
            line.starts_with("model = \"from-flag\"") && line.ends_with("# flag --model"),
            "{args:?}: {text}"
        );
    }
    let out = run(sb.seek().args(["--work-dir", "elsewhere", "sessions"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for args in [
        &["-c", "config"][..],
        &["config", "-c"],
        &["sessions", "-r", "x"],
        &["-p", "x", "models"],
    ] {
        let out = run(sb.seek().args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("error:") && !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = run(sb.seek().args(["-c", "config"]));
    assert!(
        stderr(&out).contains("-c/--continue starts a task and cannot be used with `seek config`"),
        "{}",
        stderr(&out)
    );
    // The word itself, as a task, goes with -p.
    let out = run(sb.seek().arg("--help"));
    assert!(stdout(&out).contains("to send the word itself, use -p"));
}

/// Issue 39: `seek sesions` became a task sent to the model. A lone word a few edits from a
/// subcommand is refused with the subcommand meant; other words stay tasks.
#[test]
fn a_mistyped_subcommand_says_did_you_mean_and_sends_nothing() {
    let sb = Sandbox::new();
    for (typo, meant) in [
        ("sesions", "sessions"),
        ("confgi", "config"),
        ("pul", "pull"),
    ] {
        let out = run(sb.seek().arg(typo));
        assert_eq!(out.status.code(), Some(2), "{typo}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("did you mean `seek {meant}`?")),
            "{typo}: {err}"
        );
        assert!(err.contains(&format!("`seek -p {typo}`")), "{err}");
    }
    // Not a typo: without a terminal a task is pointed to -p, as before.
    let out = run(sb.seek().arg("hello"));
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

/// Issue 39: `--help` listed the providers without `local`, and `seek config` said "the
/// server's default applies" for the built-in engine, which has no server.
#[test]
fn help_lists_local_and_config_says_what_the_built_in_engine_uses() {
    let sb = Sandbox::new();
    let help = stdout(&run(sb.seek().arg("--help")));
    assert!(help.contains("local (the built-in engine"), "{help}");
    let out = run(sb.seek().arg("config"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("provider = \"local\""), "{shown}");
    assert!(
        shown.contains("# temperature is not set: the built-in engine uses 0.8")
            && shown.contains("# top_p is not set: the built-in engine uses 0.95"),
        "{shown}"
    );
    assert!(!shown.contains("the server's default applies"), "{shown}");
    // With a server, the server's default it is.
    let out = run(sb.seek().args([
        "config",
        "--provider",
        "llama.cpp",
        "--base-url",
        "http://127.0.0.1:1",
    ]));
    assert!(
        stdout(&out).contains("# temperature is not set: the server's default applies"),
        "{}",
        stdout(&out)
    );
}
