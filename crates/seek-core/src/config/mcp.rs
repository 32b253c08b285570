//! `[mcp_servers.NAME]` tables and `[tools.mcp]`: the MCP servers seek starts and which agents
//! may call them.
//!
//! Owns the shape users know from Codex and Claude Code (`command`/`args`/`env`/`cwd` for a
//! stdio server, `url`/`bearer_token_env_var` for streamable HTTP, the two timeouts,
//! `enabled`), its validation (messages name the file, the line and the key), and the servers'
//! lines in `seek config` (env values and URL credentials hidden). It must not start anything:
//! `crate::mcp` does.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::setting::{FileValue, line, toml_str};
use super::{ConfigError, Env, Origin, Resolver, Sourced, invalid, is_env_var_name};
use crate::wire::AgentName;

/// How long a server may take to start and list its tools, unless configured.
pub(crate) const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 10;
/// How long one tool call may take, unless configured.
pub(crate) const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;

/// The agents that get the `mcp` tool when `[tools.mcp] agents` is not set. The planner's steps
/// run these agents, so they get it too.
pub(crate) const DEFAULT_MCP_AGENTS: [AgentName; 2] = [AgentName::Coder, AgentName::File];

/// The longest server name: it prefixes every tool name a block writes.
pub(crate) const MAX_SERVER_NAME: usize = 64;
/// The range of `startup_timeout_secs`: a server that takes ten minutes to list its tools is
/// broken, not slow.
const STARTUP_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=600;
/// The range of `tool_timeout_secs` (a day, as the tools' `timeout_secs`).
const TOOL_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=86_400;

/// Every configured MCP server, and who may call them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpSettings {
    /// In the file's order.
    pub servers: Vec<McpServer>,
    /// The agents whose prompt lists the servers' tools and whose blocks may call them.
    pub agents: Vec<AgentName>,
    /// Where each server's settings came from, for `seek config` (by name; a server missing
    /// here is shown without origins).
    pub origins: Vec<McpServerOrigins>,
}

/// Where one server's settings came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerOrigins {
    pub name: String,
    /// The line naming the server (`[mcp_servers.NAME]`).
    pub table: Origin,
    pub startup_timeout: Origin,
    pub tool_timeout: Origin,
}

/// `[mcp_servers.NAME]` as read from the file. Unknown keys are refused by the parser, which
/// lists these.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerFile {
    pub command: FileValue<String>,
    pub args: FileValue<Vec<String>>,
    pub env: FileValue<BTreeMap<Spanned<String>, String>>,
    pub cwd: FileValue<String>,
    pub url: FileValue<String>,
    pub bearer_token_env_var: FileValue<String>,
    pub startup_timeout_secs: FileValue<i64>,
    pub tool_timeout_secs: FileValue<i64>,
    pub enabled: FileValue<bool>,
}

/// `[mcp_servers]`: each server's table by its name (with the name's place in the file).
pub(crate) type McpServersFile = BTreeMap<Spanned<String>, McpServerFile>;

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The table's name: letters, digits, `_` and `-` (no `.`: `server.tool` splits on it).
    pub name: String,
    pub transport: McpTransport,
    /// Variables set for a stdio server on top of the credential-stripped environment, in
    /// the file's order.
    pub env: Vec<(String, String)>,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// `enabled = false` keeps a server configured but not started.
    pub enabled: bool,
}

/// How seek talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Where the server runs (default: the work dir).
        cwd: Option<std::path::PathBuf>,
    },
    /// The streamable HTTP transport.
    Http {
        url: String,
        /// The variable holding a bearer token sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
    },
}

impl McpServer {
    /// One line saying how the server is reached: `stdio: python3 -m mcp_server_time` or
    /// `http: http://127.0.0.1:8931/mcp`.
    pub(crate) fn describe_transport(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => {
                let mut line = format!("stdio: {command}");
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            // A token in the URL's user info or query stays out of listings and logs.
            McpTransport::Http { url, .. } => format!("http: {}", super::redact_url(url)),
        }
    }
}

/// Resolves every `[mcp_servers.NAME]` table, in the file's order. `work_dir` anchors a
/// relative `cwd`; `agents` is `[tools.mcp] agents`, already checked.
pub(super) fn resolve(
    r: &Resolver<'_>,
    file: Option<&McpServersFile>,
    work_dir: &Path,
    agents: Vec<AgentName>,
) -> Result<McpSettings, ConfigError> {
    let mut tables: Vec<(&Spanned<String>, &McpServerFile)> = file
        .map(|servers| servers.iter().collect())
        .unwrap_or_default();
    tables.sort_by_key(|(name, _)| name.span().start);
    let mut settings = McpSettings {
        agents,
        ..McpSettings::default()
    };
    for (name, table) in tables {
        let (server, origins) = server(r, name, table, work_dir)?;
        settings.servers.push(server);
        settings.origins.push(origins);
    }
    Ok(settings)
}

/// One server's table, checked.
fn server(
    r: &Resolver<'_>,
    name: &Spanned<String>,
    table: &McpServerFile,
    work_dir: &Path,
) -> Result<(McpServer, McpServerOrigins), ConfigError> {
    let table_origin = r.file_origin(name.span().start);
    let named = Sourced::new(name.get_ref().clone(), table_origin.clone());
    check_name(&named)?;
    let key = |k: &str| format!("mcp_servers.{}.{k}", named.value);
    let transport = transport(r, &named, table, work_dir)?;
    let mut env = Vec::new();
    if let Some(vars) = table.env.as_ref() {
        let mut vars: Vec<(&Spanned<String>, &String)> = vars.get_ref().iter().collect();
        vars.sort_by_key(|(var, _)| var.span().start);
        for (var, value) in vars {
            let var = Sourced::new(var.get_ref().clone(), r.file_origin(var.span().start));
            if !is_env_var_name(&var.value) {
                return Err(invalid(
                    &var,
                    &key("env"),
                    "expected variable names of letters, digits and _, not starting with a digit",
                ));
            }
            if value.contains('\0') {
                // The value itself stays out of the message: it may be a secret.
                return Err(ConfigError::Invalid {
                    origin: var.origin,
                    key: key(&format!("env.{}", var.value)),
                    value: "\"…\"".into(),
                    expected: "a variable's value cannot hold a NUL character".into(),
                });
            }
            env.push((var.value, value.clone()));
        }
    }
    let startup = r.number(
        table.startup_timeout_secs.as_ref(),
        &key("startup_timeout_secs"),
        STARTUP_TIMEOUT_RANGE,
        DEFAULT_STARTUP_TIMEOUT_SECS,
    )?;
    let tool = r.number(
        table.tool_timeout_secs.as_ref(),
        &key("tool_timeout_secs"),
        TOOL_TIMEOUT_RANGE,
        DEFAULT_TOOL_TIMEOUT_SECS,
    )?;
    let enabled = table.enabled.as_ref().is_none_or(|e| *e.get_ref());
    let origins = McpServerOrigins {
        name: named.value.clone(),
        table: table_origin,
        startup_timeout: startup.origin,
        tool_timeout: tool.origin,
    };
    let server = McpServer {
        name: named.value,
        transport,
        env,
        startup_timeout: Duration::from_secs(startup.value),
        tool_timeout: Duration::from_secs(tool.value),
        enabled,
    };
    Ok((server, origins))
}

/// Letters, digits, `_` and `-`, at most `MAX_SERVER_NAME`: a block names a tool
/// `server.tool`, so a `.` would make the split ambiguous.
fn check_name(name: &Sourced<String>) -> Result<(), ConfigError> {
    let valid = !name.value.is_empty()
        && name.value.chars().count() <= MAX_SERVER_NAME
        && name
            .value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        return Ok(());
    }
    Err(invalid(
        name,
        "mcp_servers",
        &format!(
            "a server's name is letters, digits, _ and - (at most {MAX_SERVER_NAME}; no `.`: blocks name tools server.tool)"
        ),
    ))
}

/// `command` (with `args`, `cwd`) or `url` (with `bearer_token_env_var`): exactly one, and
/// only the keys of that transport.
fn transport(
    r: &Resolver<'_>,
    name: &Sourced<String>,
    table: &McpServerFile,
    work_dir: &Path,
) -> Result<McpTransport, ConfigError> {
    let key = |k: &str| format!("mcp_servers.{}.{k}", name.value);
    let command = r.file_value(table.command.as_ref());
    let url = r.file_value(table.url.as_ref());
    match (command, url) {
        (Some(_), Some(url)) => Err(invalid(
            &url,
            &key("url"),
            "a server has either command (stdio) or url (streamable HTTP), not both",
        )),
        (None, None) => Err(ConfigError::Invalid {
            origin: name.origin.clone(),
            key: format!("mcp_servers.{}", name.value),
            value: given_keys(table),
            expected: "expected command = \"program\" (a stdio server) or url = \"http://…\" (streamable HTTP)".into(),
        }),
        (Some(command), None) => {
            if let Some(token) = r.file_value(table.bearer_token_env_var.as_ref()) {
                return Err(invalid(
                    &token,
                    &key("bearer_token_env_var"),
                    "bearer_token_env_var is for a url server; this one runs a command",
                ));
            }
            if command.value.trim().is_empty() || command.value.contains('\0') {
                return Err(invalid(
                    &command,
                    &key("command"),
                    "expected a program name or path, such as python3",
                ));
            }
            let args = r
                .file_value(table.args.as_ref())
                .map_or_else(Vec::new, |args| args.value);
            if let Some(arg) = args.iter().find(|a| a.contains('\0'))
                && let Some(spanned) = table.args.as_ref()
            {
                let at = Sourced::new(arg.clone(), r.file_origin(spanned.span().start));
                return Err(invalid(&at, &key("args"), "an argument cannot hold a NUL character"));
            }
            let cwd = match r.file_value(table.cwd.as_ref()) {
                Some(cwd) if cwd.value.trim().is_empty() || cwd.value.contains('\0') => {
                    return Err(invalid(&cwd, &key("cwd"), "expected a directory path"));
                }
                Some(cwd) => Some(work_dir.join(super::local::expand_home(&cwd.value))),
                None => None,
            };
            Ok(McpTransport::Stdio {
                command: command.value,
                args,
                cwd,
            })
        }
        (None, Some(url)) => {
            for (given, k) in [
                (table.args.as_ref().map(|s| s.span().start), "args"),
                (table.cwd.as_ref().map(|s| s.span().start), "cwd"),
                (table.env.as_ref().map(|s| s.span().start), "env"),
            ] {
                if let Some(at) = given {
                    return Err(ConfigError::Invalid {
                        origin: r.file_origin(at),
                        key: key(k),
                        value: "…".into(),
                        expected: format!(
                            "{k} is for a server seek starts (command); a url server runs elsewhere"
                        ),
                    });
                }
            }
            check_url(&url, &key("url"))?;
            let bearer_token_env_var = match r.file_value(table.bearer_token_env_var.as_ref()) {
                Some(var) if !is_env_var_name(&var.value) => {
                    return Err(invalid(
                        &var,
                        &key("bearer_token_env_var"),
                        "expected the NAME of an environment variable holding the token, such as MCP_TOKEN (never the token itself)",
                    ));
                }
                Some(var) => Some(var.value),
                None => None,
            };
            Ok(McpTransport::Http {
                url: url.value,
                bearer_token_env_var,
            })
        }
    }
}

/// `{ args, env }`: the keys a table without `command` or `url` has, for its message.
fn given_keys(table: &McpServerFile) -> String {
    let keys: Vec<&str> = [
        ("args", table.args.is_some()),
        ("env", table.env.is_some()),
        ("cwd", table.cwd.is_some()),
        ("bearer_token_env_var", table.bearer_token_env_var.is_some()),
        ("startup_timeout_secs", table.startup_timeout_secs.is_some()),
        ("tool_timeout_secs", table.tool_timeout_secs.is_some()),
        ("enabled", table.enabled.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, given)| given.then_some(key))
    .collect();
    if keys.is_empty() {
        "{}".into()
    } else {
        format!("{{ {} }}", keys.join(", "))
    }
}

/// An http(s) URL with a host. The value is shown redacted: it may carry a token.
fn check_url(url: &Sourced<String>, key: &str) -> Result<(), ConfigError> {
    let parsed = reqwest::Url::parse(url.value.trim());
    let fine = parsed.as_ref().is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
    }) && !url.value.chars().any(char::is_whitespace);
    if fine {
        return Ok(());
    }
    let shown = Sourced::new(super::redact_url(&url.value), url.origin.clone());
    Err(invalid(
        &shown,
        key,
        "expected an http(s) URL with a host, such as http://127.0.0.1:8931/mcp",
    ))
}

/// The `[mcp_servers.NAME]` tables of `seek config`: every setting, with where it came from;
/// env values are hidden (they are often tokens) and URLs lose their credentials.
pub(super) fn render(out: &mut String, mcp: &McpSettings, env: &Env) {
    if mcp.servers.is_empty() {
        let _ = writeln!(
            out,
            "\n# no MCP servers: add a [mcp_servers.NAME] table (docs/mcp.md)"
        );
        return;
    }
    let default = Origin::Default;
    for server in &mcp.servers {
        let origins = mcp.origins.iter().find(|o| o.name == server.name);
        let _ = match origins {
            Some(o) => writeln!(
                out,
                "\n{:<44} # {}",
                format!("[mcp_servers.{}]", server.name),
                o.table
            ),
            None => writeln!(out, "\n[mcp_servers.{}]", server.name),
        };
        match &server.transport {
            McpTransport::Stdio { command, args, cwd } => {
                let _ = writeln!(out, "command = {}", toml_str(command));
                let shown: Vec<String> = args.iter().map(|a| toml_str(a)).collect();
                let _ = writeln!(out, "args = [{}]", shown.join(", "));
                match cwd {
                    Some(cwd) => {
                        let _ = writeln!(out, "cwd = {}", toml_str(&cwd.display().to_string()));
                    }
                    None => {
                        let _ = writeln!(out, "# cwd is not set: the server runs in the work dir");
                    }
                }
            }
            McpTransport::Http {
                url,
                bearer_token_env_var,
            } => {
                let _ = writeln!(out, "url = {}", toml_str(&super::redact_url(url)));
                if let Some(var) = bearer_token_env_var {
                    let state = if env.get(var).is_some() {
                        format!("# {var} is set (value hidden)")
                    } else {
                        format!("# {var} is not set: no token is sent")
                    };
                    let assignment = format!("bearer_token_env_var = {}", toml_str(var));
                    let _ = writeln!(out, "{assignment:<44} {state}");
                }
            }
        }
        if !server.env.is_empty() {
            // Only the names: values are often tokens.
            let shown: Vec<String> = server
                .env
                .iter()
                .map(|(name, _)| format!("{name} = \"…\""))
                .collect();
            let assignment = format!("env = {{ {} }}", shown.join(", "));
            let _ = writeln!(out, "{assignment:<44} # values hidden");
        }
        let secs = |d: Duration| d.as_secs().to_string();
        line(
            out,
            "startup_timeout_secs",
            &secs(server.startup_timeout),
            origins.map_or(&default, |o| &o.startup_timeout),
            None,
        );
        line(
            out,
            "tool_timeout_secs",
            &secs(server.tool_timeout),
            origins.map_or(&default, |o| &o.tool_timeout),
            None,
        );
        if !server.enabled {
            let _ = writeln!(out, "{:<44} # not started", "enabled = false");
        }
    }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
