//! Starting and ending the browser's processes: finding Chromium and chromedriver, spawning
//! chromedriver on a free loopback port in a process group of its own (a parent-death signal so
//! a killed seek leaves no driver behind), the Chromium arguments and profile, and killing the
//! whole group when the reader ends.
//!
//! It must not speak WebDriver beyond building the session's capabilities.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::exec::HelperGroup;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdout};

use super::super::ReadError;

/// How to install what is missing, in every `BrowserMissing` error.
const INSTALL_HOW: &str = "install it (`apt install chromium chromium-driver`) or set [web] chromium and [web] chromedriver to the binaries";

/// Names Chromium goes by on `PATH`, in the order they are tried.
const CHROMIUM_NAMES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// How long chromedriver may take to say which port it listens on.
const DRIVER_START_BOUND: Duration = Duration::from_secs(15);

/// The binaries a reader runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

/// Finds Chromium (`configured`, else on `PATH`) and chromedriver (likewise).
pub fn find_binaries(
    chromium: Option<&Path>,
    chromedriver: Option<&Path>,
) -> Result<Binaries, ReadError> {
    let chromium = match chromium {
        Some(path) => executable(path).ok_or_else(|| missing_configured("chromium", path))?,
        None => CHROMIUM_NAMES
            .iter()
            .find_map(|name| on_path(name))
            .ok_or_else(|| ReadError::BrowserMissing {
                what: "chromium (looked for chromium, chromium-browser and google-chrome on PATH)"
                    .into(),
                how: INSTALL_HOW.into(),
            })?,
    };
    let chromedriver = match chromedriver {
        Some(path) => executable(path).ok_or_else(|| missing_configured("chromedriver", path))?,
        None => on_path("chromedriver").ok_or_else(|| ReadError::BrowserMissing {
            what: "chromedriver (looked for it on PATH)".into(),
            how: INSTALL_HOW.into(),
        })?,
    };
    Ok(Binaries {
        chromium,
        chromedriver,
    })
}

fn missing_configured(what: &str, path: &Path) -> ReadError {
    ReadError::BrowserMissing {
        what: format!("{what} (at {}, set in [web] {what})", path.display()),
        how: INSTALL_HOW.into(),
    }
}

/// `path` when it is an executable file.
fn executable(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then(|| path.to_path_buf())
}

/// The first executable `name` in `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| executable(&dir.join(name)))
}

/// The command-line switches Chromium runs with. `--no-sandbox` only as root, where Chromium
/// refuses to start with its sandbox; everywhere else the sandbox stays on.
pub fn chromium_args(profile: &Path, user_agent: &str, as_root: bool) -> Vec<String> {
    let mut args = vec![
        "--headless=new".to_owned(),
        format!("--user-data-dir={}", profile.display()),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-sync".to_owned(),
        "--window-size=1280,1024".to_owned(),
        format!("--user-agent={user_agent}"),
    ];
    if as_root {
        args.push("--no-sandbox".to_owned());
    }
    args
}

/// A desktop Chrome's user agent for Chromium `major` (headless Chromium announces itself as
/// `HeadlessChrome`, which many sites answer with a wall).
pub fn user_agent(major: &str) -> String {
    let major = if !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()) {
        major
    } else {
        "148"
    };
    format!(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
    )
}

/// A running chromedriver: its port, its version banner, its process group.
pub struct Driver {
    pub port: u16,
    /// The driver's version (`148.0.7778.167`), which Debian ships equal to Chromium's.
    pub version: String,
    pub group: HelperGroup,
}

/// Spawns chromedriver on a free loopback port (it binds 127.0.0.1 and ::1 only when given no
/// `--allowed-ips`) and waits (bounded) for the line naming the port. Must run on a runtime
/// worker thread: the parent-death signal follows the thread that forked.
pub async fn spawn_driver(binary: &Path) -> Result<Driver, ReadError> {
    let mut command = tokio::process::Command::new(binary);
    command
        .arg("--port=0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own group: the driver, Chromium and all of Chromium's helpers end in one signal,
        // and a Ctrl+C meant for seek's terminal does not reach them.
        .process_group(0)
        .kill_on_drop(true);
    crate::exec::die_with_parent(&mut command, "the browser");
    let mut child = command.spawn().map_err(|e| ReadError::Browser {
        reason: format!(
            "chromedriver ({}) could not be started: {e}",
            binary.display()
        ),
    })?;
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(ReadError::Browser {
            reason: "chromedriver exited as soon as it started".into(),
        });
    };
    let group = HelperGroup::new(pid);
    let Some(stdout) = child.stdout.take() else {
        // Asked for as a pipe just above.
        return Err(ReadError::Browser {
            reason: "chromedriver started without its output pipe".into(),
        });
    };
    let mut lines = BufReader::new(stdout);
    let banner = tokio::time::timeout(DRIVER_START_BOUND, read_banner(&mut lines)).await;
    let (port, version) = match banner {
        Ok(Ok(found)) => found,
        Ok(Err(reason)) => return Err(ReadError::Browser { reason }),
        Err(_) => {
            return Err(ReadError::Browser {
                reason: format!(
                    "chromedriver did not say which port it listens on within {} s",
                    DRIVER_START_BOUND.as_secs()
                ),
            });
        }
    };
    // The rest of its output is drained so that it never blocks on a full pipe; the leader is
    // reaped when it exits.
    tokio::spawn(drain_and_reap(lines, child));
    Ok(Driver {
        port,
        version,
        group,
    })
}

/// Reads "Starting ChromeDriver 148.0… on port 0" and "… started successfully on port 40077.".
async fn read_banner(lines: &mut BufReader<ChildStdout>) -> Result<(u16, String), String> {
    let mut version = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        let read = lines
            .read_line(&mut line)
            .await
            .map_err(|e| format!("chromedriver's output could not be read: {e}"))?;
        if read == 0 {
            return Err("chromedriver exited before it listened on a port".into());
        }
        if let Some(rest) = line.trim().strip_prefix("Starting ChromeDriver ") {
            version = rest.split_whitespace().next().unwrap_or("").to_owned();
        }
        if let Some(port) = port_of(&line) {
            return Ok((port, version));
        }
    }
}

/// The port in chromedriver's "started successfully on port N." line.
fn port_of(line: &str) -> Option<u16> {
    let rest = line.split("started successfully on port ").nth(1)?;
    rest.trim().trim_end_matches('.').parse().ok()
}

async fn drain_and_reap(mut lines: BufReader<ChildStdout>, mut child: Child) {
    let mut sink = [0u8; 4096];
    while matches!(lines.read(&mut sink).await, Ok(n) if n > 0) {}
    let _ = child.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_the_driver_banner() {
        assert_eq!(
            port_of("ChromeDriver was started successfully on port 40077.\n"),
            Some(40077)
        );
        assert_eq!(port_of("Only local connections are allowed."), None);
        assert_eq!(port_of("started successfully on port 99999999."), None);
    }

    #[test]
    fn no_sandbox_only_as_root() {
        let profile = Path::new("/tmp/p");
        assert!(!chromium_args(profile, "ua", false).contains(&"--no-sandbox".to_owned()));
        assert!(chromium_args(profile, "ua", true).contains(&"--no-sandbox".to_owned()));
        assert!(chromium_args(profile, "ua", false).contains(&"--user-data-dir=/tmp/p".to_owned()));
    }

    #[test]
    fn the_user_agent_names_chrome_not_headless() {
        let ua = user_agent("148");
        assert!(ua.contains("Chrome/148.0.0.0") && !ua.contains("Headless"));
        assert!(user_agent("1;drop").contains("Chrome/148.0.0.0"));
    }

    #[test]
    fn a_configured_path_that_is_missing_is_named() {
        let error = find_binaries(Some(Path::new("/nonexistent/chromium")), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("/nonexistent/chromium"), "{error}");
        assert!(
            error.contains("apt install chromium chromium-driver"),
            "{error}"
        );
    }
}
