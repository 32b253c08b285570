//! Unit tests of `[mcp_servers.NAME]` and `[tools.mcp]`: the file's order, the defaults, every
//! validation message (file, line, key), and `seek config` hiding env values and URL secrets.

use std::time::Duration;

use super::super::tests::resolve_in as resolve;
use super::*;

fn resolve_ok(dir: &Path, text: &str) -> super::super::Config {
    resolve(dir, Some(text), &[]).unwrap_or_else(|e| panic!("{text}\n{e}"))
}

fn error(dir: &Path, text: &str) -> String {
    resolve(dir, Some(text), &[])
        .map(|_| ())
        .expect_err(text)
        .to_string()
}

#[test]
fn servers_keep_the_files_order_with_their_settings_and_defaults() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = r#"
[mcp_servers.zeta]
command = "python3"
args = ["-m", "mcp_server_time"]
env = { TZ = "UTC", B_VAR = "2", A_VAR = "1" }
startup_timeout_secs = 30
cwd = "servers/zeta"

[mcp_servers.alpha]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "MCP_TOKEN"
tool_timeout_secs = 120

[mcp_servers.mid-1_x]
command = "/usr/bin/srv"
enabled = false
"#;
    let config = resolve_ok(dir.path(), text);
    let mcp = &config.mcp;
    let names: Vec<&str> = mcp.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid-1_x"], "the file's order");
    let zeta = &mcp.servers[0];
    assert_eq!(
        zeta.transport,
        McpTransport::Stdio {
            command: "python3".into(),
            args: vec!["-m".into(), "mcp_server_time".into()],
            cwd: Some(dir.path().join("servers/zeta")),
        },
        "a relative cwd is the work dir's"
    );
    let env: Vec<(&str, &str)> = zeta
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(env, [("TZ", "UTC"), ("B_VAR", "2"), ("A_VAR", "1")]);
    assert_eq!(zeta.startup_timeout, Duration::from_secs(30));
    assert_eq!(
        zeta.tool_timeout,
        Duration::from_secs(DEFAULT_TOOL_TIMEOUT_SECS)
    );
    assert!(zeta.enabled);
    assert_eq!(
        zeta.describe_transport(),
        "stdio: python3 -m mcp_server_time"
    );
    let alpha = &mcp.servers[1];
    assert_eq!(
        alpha.transport,
        McpTransport::Http {
            url: "https://mcp.example.com/mcp".into(),
            bearer_token_env_var: Some("MCP_TOKEN".into()),
        }
    );
    assert_eq!(
        alpha.startup_timeout,
        Duration::from_secs(DEFAULT_STARTUP_TIMEOUT_SECS)
    );
    assert_eq!(alpha.tool_timeout, Duration::from_secs(120));
    assert!(!mcp.servers[2].enabled);
    assert!(matches!(
        &mcp.servers[2].transport,
        McpTransport::Stdio { args, cwd: None, .. } if args.is_empty()
    ));
    let zeta_origins = &mcp.origins[0];
    assert!(matches!(zeta_origins.table, Origin::File { line: 2, .. }));
    assert!(matches!(
        zeta_origins.startup_timeout,
        Origin::File { line: 6, .. }
    ));
    assert_eq!(zeta_origins.tool_timeout, Origin::Default);
    assert_eq!(mcp.agents, DEFAULT_MCP_AGENTS);
}

#[test]
fn no_servers_and_the_default_agents_without_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = resolve(dir.path(), None, &[]).expect("defaults");
    assert!(config.mcp.servers.is_empty());
    assert_eq!(config.mcp.agents, [AgentName::Coder, AgentName::File]);
}

#[test]
fn every_mistake_is_named_with_its_line_and_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let long = "n".repeat(MAX_SERVER_NAME + 1);
    let long_table = format!("[mcp_servers.{long}]\ncommand = \"x\"\n");
    let cases: Vec<(&str, &[&str])> = vec![
        (
            "[mcp_servers.\"a.b\"]\ncommand = \"x\"\n",
            &[
                ":1: mcp_servers = \"a.b\"",
                "letters, digits, _ and -",
                "no `.`",
            ],
        ),
        (
            "[mcp_servers.\"sp ace\"]\ncommand = \"x\"\n",
            &[":1: mcp_servers = \"sp ace\""],
        ),
        (&long_table, &[":1: mcp_servers", "at most 64"]),
        (
            "[mcp_servers.t]\nargs = [\"-m\"]\n",
            &[
                ":1: mcp_servers.t = { args }",
                "command = \"program\"",
                "url = \"http://…\"",
            ],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
            &[":3: mcp_servers.t.url", "either command", "not both"],
        ),
        (
            "[mcp_servers.t]\nurl = \"http://h/mcp\"\nargs = [\"a\"]\n",
            &[":3: mcp_servers.t.args", "args is for a server seek starts"],
        ),
        (
            "[mcp_servers.t]\nurl = \"http://h/mcp\"\nenv = { A = \"1\" }\n",
            &[":3: mcp_servers.t.env"],
        ),
        (
            "[mcp_servers.t]\nurl = \"http://h/mcp\"\ncwd = \"d\"\n",
            &[":3: mcp_servers.t.cwd"],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\nbearer_token_env_var = \"T\"\n",
            &[
                ":3: mcp_servers.t.bearer_token_env_var",
                "is for a url server",
            ],
        ),
        (
            "[mcp_servers.t]\nurl = \"ftp://h/mcp\"\n",
            &[":2: mcp_servers.t.url = \"ftp://h/mcp\"", "http(s) URL"],
        ),
        (
            "[mcp_servers.t]\nurl = \"http://\"\n",
            &[":2: mcp_servers.t.url", "with a host"],
        ),
        (
            "[mcp_servers.t]\nurl = \"not a url\"\n",
            &[":2: mcp_servers.t.url"],
        ),
        (
            "[mcp_servers.t]\nurl = \"http://h/mcp\"\nbearer_token_env_var = \"sk-abc 123\"\n",
            &[
                ":3: mcp_servers.t.bearer_token_env_var",
                "the NAME of an environment variable",
            ],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\nenv = { \"1BAD\" = \"v\" }\n",
            &[":3: mcp_servers.t.env = \"1BAD\"", "variable names"],
        ),
        (
            "[mcp_servers.t]\ncommand = \"  \"\n",
            &[":2: mcp_servers.t.command", "program name"],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\ncwd = \"\"\n",
            &[":3: mcp_servers.t.cwd", "directory path"],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\nstartup_timeout_secs = 0\n",
            &[
                ":3: mcp_servers.t.startup_timeout_secs = 0",
                "from 1 to 600",
            ],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\nstartup_timeout_secs = 601\n",
            &["from 1 to 600"],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\ntool_timeout_secs = 86401\n",
            &[":3: mcp_servers.t.tool_timeout_secs", "from 1 to 86400"],
        ),
        (
            "[mcp_servers.t]\ncommand = \"x\"\ntool_timeout_secs = -5\n",
            &["mcp_servers.t.tool_timeout_secs = -5"],
        ),
    ];
    for (text, wanted) in cases {
        let err = error(dir.path(), text);
        assert!(err.contains("config.toml"), "names the file: {err}");
        for part in wanted {
            assert!(err.contains(part), "{text}\nwanted {part:?} in: {err}");
        }
    }
}

#[test]
fn a_nul_in_an_env_value_is_refused_without_showing_the_value() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = error(
        dir.path(),
        "[mcp_servers.t]\ncommand = \"x\"\nenv = { TOKEN = \"sec\\u0000ret\" }\n",
    );
    assert!(err.contains("mcp_servers.t.env.TOKEN"), "{err}");
    assert!(err.contains("NUL"), "{err}");
    assert!(!err.contains("sec"), "the value stays hidden: {err}");
}

#[test]
fn unknown_keys_and_wrong_types_are_refused_by_the_parser_with_the_valid_keys() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = error(
        dir.path(),
        "[mcp_servers.t]\ncommand = \"x\"\nargv = [\"a\"]\n",
    );
    assert!(err.contains("line 3"), "{err}");
    for key in [
        "argv",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "bearer_token_env_var",
        "startup_timeout_secs",
        "tool_timeout_secs",
        "enabled",
    ] {
        assert!(err.contains(key), "{key} in: {err}");
    }
    for text in [
        "[mcp_servers.t]\ncommand = \"x\"\nargs = \"-m x\"\n",
        "[mcp_servers.t]\ncommand = \"x\"\nenv = { A = 1 }\n",
        "[mcp_servers.t]\ncommand = \"x\"\nenabled = \"no\"\n",
        "[mcp_servers.t]\ncommand = 3\n",
        "mcp_servers = 1\n",
    ] {
        let err = error(dir.path(), text);
        assert!(
            err.contains("is not valid") && err.contains("line"),
            "{err}"
        );
    }
}

#[test]
fn tools_mcp_agents_takes_only_agents_that_have_the_tool() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = resolve_ok(
        dir.path(),
        "[tools.mcp]\nagents = [\"file\", \"code\", \"coder\"]\n",
    );
    assert_eq!(
        config.mcp.agents,
        [AgentName::File, AgentName::Coder],
        "aliases accepted, each once, in the given order"
    );
    let none = resolve_ok(dir.path(), "[tools.mcp]\nagents = []\n");
    assert!(none.mcp.agents.is_empty());
    for (text, wanted) in [
        (
            "[tools.mcp]\nagents = [\"planner\"]\n",
            "the planner's steps run the coder and file agents, which have the tool",
        ),
        ("[tools.mcp]\nagents = [\"auto\"]\n", "auto is not an agent"),
        (
            "[tools.mcp]\nagents = [\"web\"]\n",
            "the web agent runs no code blocks",
        ),
        (
            "[tools.mcp]\nagents = [\"wizard\"]\n",
            "expected agents that can call MCP tools: coder, file",
        ),
        (
            "[tools.mcp]\nagents = [\"casual\"]\n",
            "the casual agent runs no tools; agents that can call MCP tools: coder, file",
        ),
        (
            "[tools.bash]\nagents = [\"coder\"]\n",
            "[tools.bash] has no agents",
        ),
        (
            "[tools.mcp]\ntimeout_secs = 5\n",
            "[tools.mcp] has no timeout_secs; it takes: agents",
        ),
    ] {
        let err = error(dir.path(), text);
        assert!(err.contains(":2: tools."), "names the line: {err}");
        assert!(err.contains(wanted), "{text}\nwanted {wanted:?} in: {err}");
    }
}

#[test]
fn seek_config_shows_every_server_with_env_values_and_url_secrets_hidden() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = r#"
[tools.mcp]
agents = ["coder"]

[mcp_servers.time]
command = "python3"
args = ["-m", "mcp_server_time"]
env = { TZ = "UTC", API_TOKEN = "s3cr3t-value" }
startup_timeout_secs = 30

[mcp_servers.remote]
url = "https://bob:hunter2@mcp.example.com/mcp?token=abc123&x=1"
bearer_token_env_var = "MCP_TOKEN"
enabled = false
"#;
    let config = resolve_ok(dir.path(), text);
    let shown = super::super::render(
        &config,
        &Env::from_pairs([("MCP_TOKEN", "tok-should-not-show")]),
    );
    for secret in [
        "UTC",
        "s3cr3t-value",
        "hunter2",
        "abc123",
        "tok-should-not-show",
    ] {
        assert!(!shown.contains(secret), "{secret} shown:\n{shown}");
    }
    for part in [
        "[tools.mcp]\nagents = [\"coder\"]",
        "[mcp_servers.time]",
        "command = \"python3\"",
        "args = [\"-m\", \"mcp_server_time\"]",
        "env = { TZ = \"…\", API_TOKEN = \"…\" }",
        "# values hidden",
        "# cwd is not set: the server runs in the work dir",
        "startup_timeout_secs = 30",
        "tool_timeout_secs = 60",
        "# default",
        "[mcp_servers.remote]",
        "url = \"https://bob:***@mcp.example.com/mcp?token=***&x=1\"",
        "bearer_token_env_var = \"MCP_TOKEN\"",
        "MCP_TOKEN is set (value hidden)",
        "enabled = false",
    ] {
        assert!(shown.contains(part), "{part:?} in:\n{shown}");
    }
    assert!(
        shown.find("[mcp_servers.time]") < shown.find("[mcp_servers.remote]"),
        "the file's order"
    );
    assert!(shown.contains("config.toml:5"), "the table's line: {shown}");
    assert!(
        shown.contains("config.toml:9"),
        "the timeout's line: {shown}"
    );
    let parsed: toml::Value = toml::from_str(&shown).expect("seek config stays valid TOML");
    assert_eq!(
        parsed["mcp_servers"]["time"]["startup_timeout_secs"].as_integer(),
        Some(30)
    );
    let remote = &config.mcp.servers[1];
    assert_eq!(
        remote.describe_transport(),
        "http: https://bob:***@mcp.example.com/mcp?token=***&x=1"
    );
}

#[test]
fn seek_config_says_how_to_add_a_server_when_there_is_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = resolve(dir.path(), None, &[]).expect("defaults");
    let shown = super::super::render(&config, &Env::default());
    assert!(
        shown.contains("# no MCP servers: add a [mcp_servers.NAME] table (docs/mcp.md)"),
        "{shown}"
    );
    assert!(
        shown.contains("[tools.mcp]\nagents = [\"coder\", \"file\"]"),
        "{shown}"
    );
}
