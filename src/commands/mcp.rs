//! `seek mcp`: starts the configured MCP servers, waits until each is ready or has failed,
//! prints them (state, transport, start-up time, protocol, and each tool with its arguments
//! and first line; or `{"servers": [...]}` with `--json`), and ends them.
//!
//! Owns the listing's text, its JSON shape and the exit code (0 when every enabled server is
//! ready). Everything a server sent is shown with its control, bidirectional and invisible
//! characters escaped (`\u{202e}`) in the text, and as JSON escapes in `--json`. It must not
//! talk to servers itself (`crate::mcp::Hub` does) nor run the agent.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use seek_core::config::{Config, ConfigFile};
use seek_core::mcp::{Hub, ServerState, ServerStatus};
use seek_wire::terminal_safe::{escape_invisible, json_line, terminal_safe};
use seek_wire::wire::Exit;

/// How long past the longest configured start-up timeout `seek mcp` waits for the hub before
/// it lists the servers as they are (the hub bounds each start itself; this bounds the hub).
const READY_GRACE: Duration = Duration::from_secs(10);
/// Characters of a tool's first line shown in the text listing.
const DESCRIPTION_MAX: usize = 160;

/// What `seek mcp` prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// For stdout.
    pub stdout: String,
    /// For stderr (the hint when nothing is configured).
    pub stderr: String,
    pub exit: Exit,
}

/// Starts `config`'s servers, lists them and ends them. `env_remove` are the credential
/// variables the servers do not inherit (`crate::secrets::withheld_names`); when `interrupt`
/// completes first (Ctrl+C), the servers are ended and nothing is listed.
pub async fn run(
    config: &Config,
    env_remove: Vec<OsString>,
    json: bool,
    interrupt: impl std::future::Future<Output = ()>,
) -> Listing {
    if config.mcp.servers.is_empty() {
        return nothing_configured(config, json);
    }
    let longest = config
        .mcp
        .servers
        .iter()
        .map(|s| s.startup_timeout)
        .max()
        .unwrap_or_default();
    let hub = Hub::start(
        config.mcp.servers.clone(),
        Arc::new(env_remove),
        &config.work_dir.value,
    );
    let ready = tokio::select! {
        ready = tokio::time::timeout(longest + READY_GRACE, hub.ready()) => ready,
        () = interrupt => {
            hub.shutdown().await;
            return Listing {
                stdout: String::new(),
                stderr: String::new(),
                exit: Exit::Interrupted,
            };
        }
    };
    let statuses = hub.statuses();
    hub.shutdown().await;
    let mut listing = listing(&statuses, json);
    if ready.is_err() {
        listing.stderr.push_str(&format!(
            "seek: the MCP servers were still starting after {} s\n",
            (longest + READY_GRACE).as_secs()
        ));
        listing.exit = Exit::TaskFailed;
    }
    listing
}

/// The listing of servers as the hub left them: text or JSON, exit 1 unless every enabled
/// server is ready.
pub fn listing(statuses: &[ServerStatus], json: bool) -> Listing {
    let all_ready = statuses
        .iter()
        .all(|s| matches!(s.state, ServerState::Ready | ServerState::Disabled));
    let stdout = if json {
        json_listing(statuses)
    } else {
        text_listing(statuses)
    };
    Listing {
        stdout,
        stderr: String::new(),
        exit: if all_ready {
            Exit::Success
        } else {
            Exit::TaskFailed
        },
    }
}

/// `{"servers": [McpServerInfo…]}` on one line; every value exact, with the characters a
/// terminal would act on or that hide escaped (`json_line`).
pub(crate) fn json_listing(statuses: &[ServerStatus]) -> String {
    let servers: Vec<crate::wire::McpServerInfo> =
        statuses.iter().map(ServerStatus::to_wire).collect();
    let value = serde_json::json!({ "servers": servers });
    // Serialising a `Value` cannot fail; were it to, the listing says so rather than panics.
    let line = json_line(&value).unwrap_or_else(|e| {
        serde_json::json!({ "servers": [], "error": e.to_string() }).to_string()
    });
    format!("{line}\n")
}

/// Each server on a line (name · state · transport · tools · start-up · protocol · server),
/// then its tools indented (`name(arguments) — first line`) or why it is not running.
pub(crate) fn text_listing(statuses: &[ServerStatus]) -> String {
    let mut out = String::new();
    for status in statuses {
        let mut head = vec![
            status.name.clone(),
            state_word(&status.state).to_owned(),
            status.transport.clone(),
        ];
        if status.state == ServerState::Ready {
            let count = status.tools.len();
            head.push(format!("{count} tool{}", if count == 1 { "" } else { "s" }));
        }
        if let Some(ms) = status.startup_ms {
            head.push(format!("started in {ms} ms"));
        }
        if let Some(version) = &status.protocol_version {
            head.push(format!("protocol {version}"));
        }
        if let Some(info) = &status.server_info {
            head.push(info.clone());
        }
        let _ = writeln!(out, "{}", escape_invisible(&head.join(" · ")));
        match &status.state {
            ServerState::Failed(why) | ServerState::Exited(why) => {
                let _ = writeln!(out, "  {}", escape_invisible(&one_line(why)));
            }
            ServerState::Disabled => {
                let _ = writeln!(out, "  enabled = false: not started");
            }
            ServerState::Starting => {
                let _ = writeln!(out, "  did not finish starting");
            }
            ServerState::Ready => {}
        }
        for tool in &status.tools {
            let description = crate::mcp::first_line(&tool.description);
            let mut row = format!(
                "  {}({})",
                tool.name,
                crate::mcp::check::signature(&tool.input_schema)
            );
            if !description.is_empty() {
                row.push_str(" — ");
                row.push_str(&cut(&description, DESCRIPTION_MAX));
            }
            let _ = writeln!(out, "{}", escape_invisible(&row));
        }
    }
    out
}

/// The state as one word.
pub(crate) fn state_word(state: &ServerState) -> &'static str {
    match state {
        ServerState::Starting => "starting",
        ServerState::Ready => "ready",
        ServerState::Failed(_) => "failed",
        ServerState::Exited(_) => "exited",
        ServerState::Disabled => "disabled",
    }
}

/// No `[mcp_servers.NAME]` table: say where to add one. `--json` still prints an empty list.
fn nothing_configured(config: &Config, json: bool) -> Listing {
    let file = match &config.file {
        ConfigFile::Loaded(path) | ConfigFile::Absent(path) => path.display().to_string(),
        ConfigFile::NoLocation => "a config file (--config FILE)".to_owned(),
    };
    let hint = format!(
        "no MCP servers are configured: add a [mcp_servers.NAME] table to {file} (see docs/mcp.md)\n"
    );
    let hint = terminal_safe(&hint).into_owned();
    if json {
        Listing {
            stdout: json_listing(&[]),
            stderr: format!("seek: {hint}"),
            exit: Exit::Success,
        }
    } else {
        Listing {
            stdout: hint,
            stderr: String::new(),
            exit: Exit::Success,
        }
    }
}

/// A server's message on one line (its later lines joined), as it goes under the server.
fn one_line(text: &str) -> String {
    let joined: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    cut(&joined.join(" · "), 4 * DESCRIPTION_MAX)
}

/// At most `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// `seek mcp`: the configured MCP servers, started, listed and ended; Ctrl+C ends them too.
pub fn servers(config: &Config, json: bool) -> anyhow::Result<Exit> {
    // Servers inherit what blocks inherit: the environment without credentials.
    let env_remove = seek_core::secrets::withheld_names(
        std::env::vars_os(),
        &config.credential_vars(),
        &config.safety.pass_env.value,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Ctrl+C, SIGTERM and SIGHUP all end the servers before seek exits. The handlers are in
    // place before any server starts, so no signal takes the default action meanwhile.
    let listing = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let signals = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        );
        let interrupt = async move {
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = signals else {
                // Without signal handlers there is nothing to wait for.
                return std::future::pending::<()>().await;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
        };
        run(config, env_remove, json, interrupt).await
    });
    std::io::stdout()
        .lock()
        .write_all(listing.stdout.as_bytes())?;
    eprint!("{}", listing.stderr);
    Ok(listing.exit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::ToolInfo;

    fn status(name: &str, state: ServerState, tools: &[(&str, &str)]) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            transport: format!("stdio: {name}-server"),
            state,
            tools: tools
                .iter()
                .map(|(tool, description)| ToolInfo {
                    server: name.into(),
                    name: (*tool).into(),
                    description: (*description).into(),
                    input_schema: Arc::new(serde_json::Map::new()),
                })
                .collect(),
            protocol_version: Some("2025-06-18".into()),
            server_info: Some("srv 1.0".into()),
            startup_ms: Some(42),
        }
    }

    #[test]
    fn the_text_lists_each_server_and_its_tools_terminal_safe() {
        let statuses = [
            status(
                "time",
                ServerState::Ready,
                &[
                    ("get_current_time", "\n  Get the time\nin a zone"),
                    ("evil\x1b]0;x\x07", ""),
                ],
            ),
            ServerStatus {
                startup_ms: None,
                protocol_version: None,
                server_info: None,
                ..status(
                    "gone",
                    ServerState::Failed("cannot start\n`nope`: not found\x1b[2J".into()),
                    &[],
                )
            },
        ];
        let text = text_listing(&statuses);
        assert!(
            text.starts_with(
                "time · ready · stdio: time-server · 2 tools · started in 42 ms · protocol 2025-06-18 · srv 1.0\n  get_current_time() — Get the time\n"
            ),
            "{text}"
        );
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(
            text.contains("gone · failed · stdio: gone-server\n  cannot start · `nope`: not found"),
            "{text}"
        );
        let listing = listing(&statuses, false);
        assert_eq!(listing.exit, Exit::TaskFailed);
    }

    #[test]
    fn hidden_characters_of_a_server_show_escaped_in_text_and_json() {
        let statuses = [ServerStatus {
            server_info: Some("srv\u{202e}1.0".into()),
            ..status(
                "s",
                ServerState::Ready,
                &[(
                    "\u{202e}gnp.exe",
                    "reads \u{2066}files\u{2069}\u{200b} \u{9b}2J",
                )],
            )
        }];
        let text = text_listing(&statuses);
        assert!(
            !text
                .chars()
                .any(|c| crate::terminal_safe::is_invisible(c) || (c.is_control() && c != '\n')),
            "{text:?}"
        );
        assert!(text.contains("srv\\u{202e}1.0"), "{text}");
        assert!(
            text.contains(
                "  \\u{202e}gnp.exe() — reads \\u{2066}files\\u{2069}\\u{200b} \\u{9b}2J"
            ),
            "{text}"
        );
        let json = json_listing(&statuses);
        assert!(
            !json.chars().any(crate::terminal_safe::is_invisible),
            "{json:?}"
        );
        let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        assert_eq!(value["servers"][0]["tools"][0]["name"], "\u{202e}gnp.exe");
    }

    #[test]
    fn disabled_servers_do_not_fail_the_listing_and_json_has_the_wire_shape() {
        let statuses = [
            status("a", ServerState::Ready, &[("t", "does t")]),
            status("b", ServerState::Disabled, &[]),
        ];
        let listing = listing(&statuses, true);
        assert_eq!(listing.exit, Exit::Success);
        let value: serde_json::Value =
            serde_json::from_str(&listing.stdout).expect("one JSON document");
        assert_eq!(value["servers"][0]["name"], "a");
        assert_eq!(value["servers"][0]["state"], "ready");
        assert_eq!(value["servers"][0]["tools"][0]["name"], "t");
        assert_eq!(value["servers"][0]["tools"][0]["description"], "does t");
        assert_eq!(value["servers"][1]["state"], "disabled");
        let still = listing_of(ServerState::Starting);
        assert_eq!(still.exit, Exit::TaskFailed);
        assert!(still.stdout.contains("did not finish starting"));
    }

    fn listing_of(state: ServerState) -> Listing {
        listing(&[status("s", state, &[])], false)
    }

    #[test]
    fn long_descriptions_are_cut() {
        let long = "x".repeat(1000);
        let text = text_listing(&[status("s", ServerState::Ready, &[("t", &long)])]);
        let row = text.lines().nth(1).expect("the tool's row");
        assert!(row.chars().count() < DESCRIPTION_MAX + 20, "{row}");
        assert!(row.ends_with('…'));
    }
}
