//! Unit tests for resolution: precedence, origins and error messages.

use std::path::{Path, PathBuf};

use super::*;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn dirs(&self) -> Dirs {
        Dirs {
            default_config_file: Some(self.path().join("config/config.toml")),
            data_dir: self.path().join("data"),
        }
    }

    fn write_config(&self, text: &str) -> PathBuf {
        let path = self.path().join("config/config.toml");
        std::fs::create_dir_all(path.parent().expect("has parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write config");
        path
    }

    fn resolve(&self, overrides: &Overrides, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let env = Env::from_pairs(env.iter().copied());
        Config::resolve(overrides, &env, &self.dirs(), self.path())
    }
}

#[test]
fn with_no_provider_named_a_server_setting_still_means_ollama() {
    let f = Fixture::new();
    let provider = |overrides: Overrides, env: &[(&str, &str)]| {
        f.resolve(&overrides, env)
            .expect("resolves")
            .provider
            .value
            .name
    };
    let model = |m: &str| Overrides {
        model: Some(m.into()),
        ..Overrides::default()
    };
    assert_eq!(provider(model("qwen2.5-coder:7b"), &[]), "ollama");
    assert_eq!(
        provider(Overrides::default(), &[("SEEK_MODEL", "llama3")]),
        "ollama"
    );
    assert_eq!(
        provider(Overrides::default(), &[("OLLAMA_HOST", "10.0.0.2")]),
        "ollama"
    );
    let url = Overrides {
        base_url: Some("http://127.0.0.1:8080".into()),
        ..Overrides::default()
    };
    assert_eq!(provider(url, &[]), "ollama");
    assert_eq!(provider(model("qwen2.5-coder-1.5b"), &[]), "local");
    assert_eq!(provider(model("./models/x.GGUF"), &[]), "local");
    let config = f
        .resolve(&model("qwen2.5-coder:7b"), &[])
        .expect("resolves");
    assert_eq!(config.base_url.value, "http://127.0.0.1:11434");
    assert_eq!(config.base_url.origin, Origin::Preset("ollama"));
}

#[test]
fn defaults_without_any_file() {
    let f = Fixture::new();
    let config = f
        .resolve(&Overrides::default(), &[])
        .expect("defaults resolve");
    assert_eq!(config.provider.value.name, "local", "the built-in engine");
    assert_eq!(config.provider.origin, Origin::Default);
    assert_eq!(config.model.value.as_deref(), Some("smollm2-135m"));
    assert_eq!(config.model.origin, Origin::Preset("local"));
    assert_eq!(config.agent.value, AgentName::Auto);
    assert_eq!(config.max_attempts.value, 5);
    assert_eq!(config.work_dir.value, f.path(), "the current directory");
    assert_eq!(config.work_dir.origin, Origin::CurrentDir);
    assert_eq!(
        config.file,
        ConfigFile::Absent(f.path().join("config/config.toml"))
    );
    let bash = config
        .tool(crate::tool_kind::ToolKind::Bash)
        .expect("bash tool");
    assert_eq!(bash.timeout().as_secs(), 300);
    assert_eq!(bash.command(), "bash");
    let c = config.tool(crate::tool_kind::ToolKind::C).expect("c tool");
    assert_eq!(
        (c.compile_timeout().as_secs(), c.timeout().as_secs()),
        (60, 120)
    );
    assert_eq!(
        config
            .tool(crate::tool_kind::ToolKind::Java)
            .expect("java")
            .runtime(),
        "java"
    );
}

#[test]
fn flags_beat_env_beat_file_beat_defaults() {
    let f = Fixture::new();
    let path = f.write_config("provider = \"openai\"\nmodel = \"from-file\"\nagent = \"file\"\n");
    let file_line = |line| Origin::File {
        path: path.clone(),
        line,
    };

    let config = f.resolve(&Overrides::default(), &[]).expect("file only");
    assert_eq!(config.model.value.as_deref(), Some("from-file"));
    assert_eq!(config.model.origin, file_line(2));
    assert_eq!(config.provider.value.name, "openai");
    assert_eq!(config.base_url.origin, Origin::Preset("openai"));
    assert_eq!(config.api_key_env.value.as_deref(), Some("OPENAI_API_KEY"));

    let env = [("SEEK_MODEL", "from-env"), ("SEEK_AGENT", "casual")];
    let config = f
        .resolve(&Overrides::default(), &env)
        .expect("env over file");
    assert_eq!(config.model.value.as_deref(), Some("from-env"));
    assert_eq!(config.model.origin, Origin::Env("SEEK_MODEL"));
    assert_eq!(config.agent.value, AgentName::Casual);

    let flags = Overrides {
        model: Some("from-flag".into()),
        ..Overrides::default()
    };
    let config = f.resolve(&flags, &env).expect("flag over env");
    assert_eq!(config.model.value.as_deref(), Some("from-flag"));
    assert_eq!(config.model.origin, Origin::Flag("--model"));
    assert_eq!(config.agent.origin, Origin::Env("SEEK_AGENT"));
}

#[test]
fn work_dir_sources() {
    let f = Fixture::new();
    let path = f.write_config("work_dir = \"projects/ws\"\n");
    let config = f.resolve(&Overrides::default(), &[]).expect("file");
    assert_eq!(
        config.work_dir.value,
        path.parent().expect("parent").join("projects/ws"),
        "relative to the file"
    );

    let config = f
        .resolve(&Overrides::default(), &[("WORK_DIR", "/w1")])
        .expect("WORK_DIR");
    assert_eq!(config.work_dir.value, PathBuf::from("/w1"));
    let env = [("WORK_DIR", "/w1"), ("SEEK_WORK_DIR", "rel")];
    let config = f
        .resolve(&Overrides::default(), &env)
        .expect("SEEK_WORK_DIR");
    assert_eq!(
        config.work_dir.value,
        f.path().join("rel"),
        "relative to the cwd"
    );
    assert_eq!(config.work_dir.origin, Origin::Env("SEEK_WORK_DIR"));
    let flags = Overrides {
        work_dir: Some("/w3".into()),
        ..Overrides::default()
    };
    assert_eq!(
        f.resolve(&flags, &env).expect("flag").work_dir.value,
        PathBuf::from("/w3")
    );
}

#[test]
fn ensure_work_dir_creates_it() {
    let f = Fixture::new();
    let mut config = f.resolve(&Overrides::default(), &[]).expect("defaults");
    let made = config.ensure_work_dir().expect("created").to_owned();
    assert!(made.is_dir());
    assert!(made.is_absolute());
}

#[test]
fn named_config_file_must_exist() {
    let f = Fixture::new();
    let flags = Overrides {
        config: Some("nope.toml".into()),
        ..Overrides::default()
    };
    let err = f
        .resolve(&flags, &[])
        .expect_err("missing file")
        .to_string();
    assert!(
        err.contains("nope.toml") && err.contains("cannot read"),
        "{err}"
    );
    let err = f
        .resolve(&Overrides::default(), &[("SEEK_CONFIG", "/no/such.toml")])
        .expect_err("missing");
    assert!(err.to_string().contains("/no/such.toml"), "{err}");
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let f = Fixture::new();
    f.write_config("model = \"m\"\nmodle = \"typo\"\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("unknown key")
        .to_string();
    assert!(err.contains("config.toml"), "{err}");
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("modle"), "{err}");
    assert!(err.contains("expected one of"), "{err}");
}

#[test]
fn wrong_type_names_the_key() {
    let f = Fixture::new();
    f.write_config("\n\nmax_attempts = \"five\"\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("wrong type")
        .to_string();
    assert!(
        err.contains("line 3") && err.contains("max_attempts = \"five\""),
        "{err}"
    );
    assert!(err.contains("expected a whole number"), "{err}");
}

#[test]
fn syntax_error_names_the_line() {
    let f = Fixture::new();
    f.write_config("provider = \"ollama\"\nmodel = \n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("bad toml")
        .to_string();
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn a_very_long_line_is_cut_to_an_excerpt_around_the_error() {
    let f = Fixture::new();
    let long = "a".repeat(200_000);
    // A syntax error at the end of a 200 KB line, and a 200 KB value of the wrong type.
    for (text, column, near) in [
        (
            format!("model = \"m\"\nx = \"{long}\" junk\n"),
            200_008,
            "aaa\" junk",
        ),
        (
            format!("model = \"m\"\nmax_rounds = \"{long}\"\n"),
            14,
            "max_rounds = \"aaa",
        ),
    ] {
        f.write_config(&text);
        let err = f
            .resolve(&Overrides::default(), &[])
            .expect_err("bad toml")
            .to_string();
        assert!(err.len() < 1024, "{} bytes: {err}", err.len());
        assert!(err.contains(&format!("line 2, column {column}:")), "{err}");
        assert!(err.contains(near), "{err}");
        assert!(
            err.contains("expected newline") || err.contains("\", expected a whole number"),
            "the parser's message, its quoted value cut: {err}"
        );
        let excerpt = err.lines().find(|l| l.contains(near)).expect("excerpt");
        let caret = err.lines().last().expect("caret line");
        assert!(caret.ends_with('^'), "{err}");
        let excerpt_at =
            excerpt.chars().count() - excerpt.trim_start_matches("  | ").chars().count();
        let caret_at = caret.chars().count() - 1 - excerpt_at;
        let pointed = excerpt.chars().nth(excerpt_at + caret_at);
        assert!(matches!(pointed, Some('j' | '"')), "{err}");
    }
}

#[test]
fn invalid_values_name_their_origin() {
    let f = Fixture::new();
    let path = f.write_config("max_attempts = 0\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("zero attempts")
        .to_string();
    assert_eq!(
        err,
        format!(
            "{}:1: max_attempts = 0: expected a whole number from 1 to 100",
            path.display()
        )
    );

    let err = f
        .resolve(&Overrides::default(), &[("SEEK_PROVIDER", "anthropic")])
        .expect_err("unknown provider")
        .to_string();
    assert!(
        err.starts_with("env SEEK_PROVIDER: provider = \"anthropic\""),
        "{err}"
    );
    assert!(err.contains("ollama, llama.cpp"), "{err}");

    let flags = Overrides {
        agent: Some("wizard".into()),
        ..Overrides::default()
    };
    let err = f
        .resolve(&flags, &[])
        .expect_err("unknown agent")
        .to_string();
    assert!(err.starts_with("flag --agent: agent = \"wizard\""), "{err}");
}

#[test]
fn a_small_model_s_cap_lowers_only_the_timeouts_the_user_did_not_set() {
    let f = Fixture::new();
    f.write_config("[tools.python]\ntimeout_secs = 90\n");
    let config = f.resolve(&Overrides::default(), &[]).expect("tools");
    let mut python = config
        .tool(crate::tool_kind::ToolKind::Python)
        .expect("python")
        .clone();
    python.cap_default_timeout(20);
    assert_eq!(python.timeout().as_secs(), 90, "the user's own timeout");
    let mut bash = config
        .tool(crate::tool_kind::ToolKind::Bash)
        .expect("bash")
        .clone();
    bash.cap_default_timeout(20);
    assert_eq!(bash.timeout().as_secs(), 20, "the default 300 s, lowered");
    bash.cap_default_timeout(600);
    assert_eq!(bash.timeout().as_secs(), 20, "never raised");
}

#[test]
fn tool_tables() {
    let f = Fixture::new();
    let path = f.write_config(
        "[tools.python]\ncommand = \"/usr/bin/python3.11\"\ntimeout_secs = 30\n\n[tools.bash]\nallow_rerun = true\n",
    );
    let config = f.resolve(&Overrides::default(), &[]).expect("tools");
    let python = config
        .tool(crate::tool_kind::ToolKind::Python)
        .expect("python");
    assert_eq!(python.command(), "/usr/bin/python3.11");
    assert_eq!(python.timeout().as_secs(), 30);
    assert_eq!(
        python.timeout_secs.as_ref().map(|s| s.origin.clone()),
        Some(Origin::File {
            path: path.clone(),
            line: 3
        })
    );
    assert!(
        config
            .tool(crate::tool_kind::ToolKind::Bash)
            .expect("bash")
            .allow_rerun()
    );

    f.write_config("[tools.bash]\ncompile_timeout_secs = 5\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("key not for bash")
        .to_string();
    assert!(
        err.contains(":2: tools.bash.compile_timeout_secs = 5"),
        "{err}"
    );
    assert!(
        err.contains("it takes: timeout_secs, command, allow_rerun"),
        "{err}"
    );

    f.write_config("[tools.ruby]\ntimeout_secs = 5\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("unknown tool")
        .to_string();
    assert!(err.contains("ruby") && err.contains("line 1"), "{err}");

    f.write_config("[tools.c]\ntimeout_secs = -1\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("negative")
        .to_string();
    assert!(err.contains("tools.c.timeout_secs = -1"), "{err}");
}

#[test]
fn api_key_env_must_be_a_name_not_a_key() {
    let f = Fixture::new();
    f.write_config("api_key_env = \"sk-abc123\"\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("a key, not a name")
        .to_string();
    assert!(err.contains("NAME of an environment variable"), "{err}");
}

#[test]
fn rendered_config_is_valid_toml_that_resolves_to_the_same_values() {
    let f = Fixture::new();
    f.write_config(
        "provider = \"groq\"\nmodel = \"llama\"\n[tools.go]\ncompile_timeout_secs = 200\n",
    );
    let env = Env::from_pairs([("GROQ_API_KEY", "gsk-secret-value")]);
    let config =
        Config::resolve(&Overrides::default(), &env, &f.dirs(), f.path()).expect("resolves");
    let text = render(&config, &env);
    assert!(!text.contains("gsk-secret-value"), "{text}");
    assert!(
        text.contains("GROQ_API_KEY is set (value hidden)"),
        "{text}"
    );
    assert!(text.contains("# preset groq"), "{text}");

    let copy = f.path().join("copy.toml");
    std::fs::write(&copy, &text).expect("write copy");
    let flags = Overrides {
        config: Some(copy),
        ..Overrides::default()
    };
    let again = Config::resolve(&flags, &env, &f.dirs(), f.path()).expect("rendered config parses");
    assert_eq!(again.model.value, config.model.value);
    assert_eq!(again.base_url.value, config.base_url.value);
    assert_eq!(again.work_dir.value, config.work_dir.value);
    assert_eq!(
        again
            .tool(crate::tool_kind::ToolKind::Go)
            .map(|t| t.compile_timeout()),
        config
            .tool(crate::tool_kind::ToolKind::Go)
            .map(|t| t.compile_timeout())
    );
}

#[test]
fn model_settings() {
    let f = Fixture::new();
    let config = f.resolve(&Overrides::default(), &[]).expect("defaults");
    assert_eq!(config.model_settings.context_window.value, 8192);
    assert_eq!(config.model_settings.max_tokens.value, 4096);
    assert_eq!(config.model_settings.temperature, None);

    f.write_config("temperature = 0\ntop_p = 0.9\nseed = 7\ncontext_window = 32768\n");
    let config = f.resolve(&Overrides::default(), &[]).expect("set");
    let m = &config.model_settings;
    assert_eq!(
        m.temperature.as_ref().map(|t| t.value),
        Some(0.0),
        "an integer temperature is accepted"
    );
    assert_eq!(m.top_p.as_ref().map(|t| t.value), Some(0.9));
    assert_eq!(m.seed.as_ref().map(|t| t.value), Some(7));
    assert_eq!(m.context_window.value, 32768);

    let fresh = f.resolve(&Overrides::default(), &[]).expect("defaults");
    assert_eq!(fresh.model_settings.reply_timeout_secs.value, 3600);
    assert_eq!(fresh.model_settings.stream_max_line_mib.value, 4);
    f.write_config("reply_timeout_secs = 90\nstream_max_line_mib = 16\n");
    let config = f
        .resolve(&Overrides::default(), &[])
        .expect("stream bounds");
    let m = &config.model_settings;
    assert_eq!(m.reply_timeout_secs.value, 90);
    assert_eq!(m.stream_max_line_mib.value, 16);
    assert!(matches!(m.stream_max_line_mib.origin, Origin::File { .. }));
    f.write_config("stream_max_line_mib = 0\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("out of range")
        .to_string();
    assert!(
        err.contains("stream_max_line_mib = 0: expected a whole number from 1 to 1024"),
        "{err}"
    );

    f.write_config("temperature = 3.5\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("out of range")
        .to_string();
    assert!(
        err.contains(":1: temperature = 3.5: expected a number from 0 to 2"),
        "{err}"
    );
}

#[test]
fn ollama_host_is_the_default_ollama_address() {
    let f = Fixture::new();
    let config = f
        .resolve(&Overrides::default(), &[("OLLAMA_HOST", "10.1.2.3:11434")])
        .expect("env");
    assert_eq!(config.base_url.value, "10.1.2.3:11434");
    assert_eq!(config.base_url.origin, Origin::Env("OLLAMA_HOST"));
    let flags = Overrides {
        provider: Some("llama.cpp".into()),
        ..Overrides::default()
    };
    let config = f
        .resolve(&flags, &[("OLLAMA_HOST", "10.1.2.3:11434")])
        .expect("not ollama");
    assert_eq!(config.base_url.origin, Origin::Preset("llama.cpp"));
    f.write_config("base_url = \"http://gpu-box:11434\"\n");
    let config = f
        .resolve(&Overrides::default(), &[("OLLAMA_HOST", "10.1.2.3:11434")])
        .expect("file wins");
    assert_eq!(config.base_url.value, "http://gpu-box:11434");
}

#[test]
fn safety_settings_resolve_with_their_origins() {
    let f = Fixture::new();
    let config = f.resolve(&Overrides::default(), &[]).expect("defaults");
    let safety = &config.safety;
    assert_eq!(
        safety.sandbox.value,
        crate::exec::sandbox::SandboxMode::WorkspaceWrite
    );
    // Blocks are shown before they run wherever the sandbox cannot confine them.
    let expected = if crate::exec::sandbox::supported() {
        Approval::Auto
    } else {
        Approval::Ask
    };
    assert_eq!(safety.approval.value, expected);
    assert!(!safety.safe_mode.value);

    f.write_config(
        "sandbox = \"read-only\"\napproval = \"never\"\nsafe_mode = true\n[exec]\npass_env = [\"GH_TOKEN\"]\n",
    );
    let config = f
        .resolve(&Overrides::default(), &[("SEEK_APPROVAL", "ask")])
        .expect("file");
    let safety = &config.safety;
    assert_eq!(
        safety.sandbox.value,
        crate::exec::sandbox::SandboxMode::ReadOnly
    );
    assert!(matches!(
        safety.sandbox.origin,
        Origin::File { line: 1, .. }
    ));
    assert_eq!(safety.approval.value, Approval::Ask, "env beats the file");
    assert!(safety.safe_mode.value);
    assert_eq!(safety.pass_env.value, ["GH_TOKEN"]);

    let flags = Overrides {
        sandbox: Some("off".into()),
        approval: Some("auto".into()),
        ..Overrides::default()
    };
    let config = f
        .resolve(&flags, &[("SEEK_APPROVAL", "ask")])
        .expect("flags");
    assert_eq!(
        config.safety.sandbox.value,
        crate::exec::sandbox::SandboxMode::Off
    );
    assert_eq!(config.safety.approval.value, Approval::Auto);
    assert_eq!(config.safety.approval.origin, Origin::Flag("--approval"));
}

#[test]
fn bad_safety_values_are_named() {
    let f = Fixture::new();
    f.write_config("sandbox = \"strict\"\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("sandbox") && err.contains("workspace-write, read-only, off"),
        "{err}"
    );
    f.write_config("approval = \"maybe\"\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("approval") && err.contains("auto, ask, never"),
        "{err}"
    );
}

#[test]
fn own_files_name_every_file_of_seeks_and_not_the_work_dir() {
    let f = Fixture::new();
    let config = f
        .resolve(&Overrides::default(), &[])
        .expect("defaults resolve");
    let own = config.own_files();
    let has = |path: &Path, what: &str| own.iter().any(|(p, w)| p == path && *w == what);
    assert!(
        has(&f.path().join("config/config.toml"), "config file"),
        "{own:?}"
    );
    assert!(
        has(&crate::session::dir(&config.data_dir), "session files"),
        "the sessions folder is the session store's: {own:?}"
    );
    assert!(has(&config.history_file(), "prompt history"), "{own:?}");
    assert!(has(&config.log_file(), "log"), "{own:?}");
    assert!(
        own.iter()
            .all(|(p, _)| !config.work_dir.value.starts_with(p)),
        "the default work dir is none of them: {own:?}"
    );
}

#[test]
fn allow_sockets_are_read_checked_and_rendered() {
    use crate::exec::socket_guard::AllowedSocket;
    let f = Fixture::new();
    let config = f.resolve(&Overrides::default(), &[]).expect("defaults");
    assert!(config.safety.allow_sockets.value.is_empty());

    f.write_config("[exec]\nallow_sockets = [\"/run/user/1000/bus\", \"@docker\"]\n");
    let env = Env::from_pairs::<[(&str, &str); 0], _, _>([]);
    let config =
        Config::resolve(&Overrides::default(), &env, &f.dirs(), f.path()).expect("resolves");
    let allowed = &config.safety.allow_sockets;
    assert_eq!(
        allowed.value,
        [
            AllowedSocket::Path("/run/user/1000/bus".into()),
            AllowedSocket::Abstract(b"docker".to_vec())
        ]
    );
    assert!(matches!(allowed.origin, Origin::File { line: 2, .. }));
    let text = render(&config, &env);
    assert!(
        text.contains("allow_sockets = [\"/run/user/1000/bus\", \"@docker\"]"),
        "{text}"
    );
    let copy = f.path().join("copy.toml");
    std::fs::write(&copy, &text).expect("write copy");
    let flags = Overrides {
        config: Some(copy),
        ..Overrides::default()
    };
    let again = Config::resolve(&flags, &env, &f.dirs(), f.path()).expect("rendered config parses");
    assert_eq!(again.safety.allow_sockets.value, allowed.value);

    f.write_config("[exec]\nallow_sockets = [\"run/x.sock\"]\n");
    let err = f
        .resolve(&Overrides::default(), &[])
        .expect_err("a relative path")
        .to_string();
    assert!(
        err.contains(":2: exec.allow_sockets = \"run/x.sock\"") && err.contains("absolute path"),
        "{err}"
    );
}

/// The configuration resolved in `dir` with `file` as its config file (when given) and `env`.
pub(super) fn resolve_in(
    dir: &Path,
    file: Option<&str>,
    env: &[(&str, &str)],
) -> Result<Config, ConfigError> {
    let config_file = dir.join("config.toml");
    if let Some(text) = file {
        std::fs::write(&config_file, text).expect("write config");
    }
    let dirs = Dirs {
        default_config_file: Some(config_file),
        data_dir: dir.join("data"),
    };
    let env = Env::from_pairs(env.iter().copied());
    Config::resolve(&Overrides::default(), &env, &dirs, dir)
}
