//! Helpers for the tests that drive `seek::mcp::Hub` against real MCP servers: where the servers
//! are (`SEEK_TEST_MCP_PYTHON`, `SEEK_TEST_MCP_EVERYTHING`), server configurations, the HTTP
//! server's process, and `/proc` checks of a process group.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use seek::config::{McpServer, McpTransport};
use seek::mcp::{CallOutput, Hub, McpError, Part, ServerState, ServerStatus};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// The Python with the `mcp` and `mcp-server-time` packages; fails (does not skip) without them.
pub fn python() -> String {
    static CHECKED: OnceLock<Result<String, String>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let python =
                std::env::var("SEEK_TEST_MCP_PYTHON").unwrap_or_else(|_| "python3".to_owned());
            let ok = std::process::Command::new(&python)
                .args(["-c", "import mcp, mcp_server_time"])
                .output()
                .is_ok_and(|out| out.status.success());
            if ok {
                Ok(python)
            } else {
                Err(format!(
                    "`{python}` cannot import `mcp` and `mcp_server_time`: install them \
                     (`pip install mcp mcp-server-time`, or run .ci/run, which sets \
                     SEEK_TEST_MCP_PYTHON to a venv that has them)"
                ))
            }
        })
        .clone()
        .unwrap_or_else(|why| panic!("{why}"))
}

/// The `mcp-server-everything` command; fails (does not skip) when it is not installed.
pub fn everything() -> String {
    let command = std::env::var("SEEK_TEST_MCP_EVERYTHING")
        .unwrap_or_else(|_| "mcp-server-everything".into());
    let found = if command.contains('/') {
        Path::new(&command).is_file()
    } else {
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| dir.join(&command).is_file())
        })
    };
    assert!(
        found,
        "`{command}` is not installed: `npm install -g @modelcontextprotocol/server-everything` \
         (or run .ci/run, which sets SEEK_TEST_MCP_EVERYTHING)"
    );
    command
}

/// tests/fixtures/mcp/edge_server.py.
pub fn edge_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/edge_server.py")
}

/// A stdio server with generous timeouts (two cores shared by several builds).
pub fn stdio(name: &str, command: &str, args: &[&str]) -> McpServer {
    McpServer {
        name: name.to_owned(),
        transport: McpTransport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            cwd: None,
        },
        env: Vec::new(),
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(30),
        enabled: true,
    }
}

/// The edge server, with `env` on top of seek's environment.
pub fn edge(name: &str, env: &[(&str, &str)]) -> McpServer {
    let script = edge_script();
    let mut server = stdio(name, &python(), &[script.to_str().expect("utf-8 path")]);
    server.env = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    server
}

/// A streamable HTTP server.
pub fn http(name: &str, url: &str) -> McpServer {
    McpServer {
        transport: McpTransport::Http {
            url: url.to_owned(),
            bearer_token_env_var: None,
        },
        ..stdio(name, "unused", &[])
    }
}

/// Starts a hub on `servers` in `work_dir` (nothing withheld but `env_remove`) and waits for it.
pub async fn ready_hub(servers: Vec<McpServer>, env_remove: &[&str], work_dir: &Path) -> Arc<Hub> {
    let env_remove: Vec<OsString> = env_remove.iter().map(OsString::from).collect();
    let hub = Hub::start(servers, Arc::new(env_remove), work_dir);
    tokio::time::timeout(Duration::from_secs(60), hub.ready())
        .await
        .expect("every server settles within its startup timeout");
    hub
}

pub fn status(hub: &Hub, name: &str) -> ServerStatus {
    hub.statuses()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

pub fn assert_ready(hub: &Hub, name: &str) {
    let status = status(hub, name);
    assert_eq!(status.state, ServerState::Ready, "{name}: {status:?}");
}

/// The text of a `Failed`/`Exited` state.
pub fn state_message(hub: &Hub, name: &str) -> String {
    match status(hub, name).state {
        ServerState::Failed(why) | ServerState::Exited(why) => why,
        other => panic!("{name} is {other:?}, not failed or exited"),
    }
}

/// Waits for `path` to hold a pid (a server writes it as it starts).
pub async fn read_pid(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got a pid",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Live (not zombie) processes whose process group is `pgid`, from `/proc/*/stat`.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        let (state, pgrp) = (fields[0], fields[2].parse::<i32>().unwrap_or(0));
        if pgrp == pgid && state != "Z" && state != "X" {
            live.push(pid);
        }
    }
    live
}

/// Waits (bounded) until no process of the group is alive; returns those still alive.
pub async fn wait_group_gone(pgid: i32, within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let live = live_group_members(pgid);
        if live.is_empty() || Instant::now() >= deadline {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `mcp-server-everything streamableHttp` on a free port, killed (whole group) on drop.
pub struct EverythingHttp {
    child: std::process::Child,
    pub url: String,
}

impl EverythingHttp {
    pub fn start() -> Self {
        use std::os::unix::process::CommandExt;
        let port = free_port();
        let child = std::process::Command::new(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn mcp-server-everything streamableHttp");
        // A group of its own: no sweep of a block run in this process may take it.
        crate::support::hold_apart(child.id());
        let server = Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the HTTP server never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: plain kill(2) on the group this test started.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
        crate::support::release(self.child.id());
    }
}

/// `value`, a JSON object, as a call's arguments.
pub fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Calls `server.tool` with `arguments` (a JSON object), never cancelled.
pub async fn call(
    hub: &Hub,
    server: &str,
    tool: &str,
    arguments: Value,
) -> Result<CallOutput, McpError> {
    hub.call(server, tool, args(arguments), &CancellationToken::new())
        .await
}

/// The text parts of a result, one per line.
pub fn texts(output: &CallOutput) -> String {
    output
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
