//! Starting and ending the browser's processes: finding Chromium, its profile folder (named
//! after this seek's pid, so the next seek removes what a killed one left, processes included),
//! and spawning it confined like a block: the credential-stripped environment, its own session
//! (so its own process group) and cgroup, a parent-death signal, the DevTools protocol on two
//! pipes (fds 3 and 4, no listening socket), every request through seek's proxy, the
//! `exec::jail` rules (no privileges; writes only in its profile, TCP only to the proxy's port).
//! Not yet the blocks' socket guard (its supervisor makes connects outside the jail's TCP rule).
//!
//! It must not speak the DevTools protocol (`cdp.rs`) nor decide which URLs may be opened.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::super::ReadError;
use crate::exec::HelperGroup;
use crate::exec::cgroup::{BlockGroup, Limits};
use crate::exec::jail::{Jail, JailRules};

/// How to install what is missing, in every `BrowserMissing` error.
const INSTALL_HOW: &str =
    "install it (`apt install chromium`) or set [web] chromium to the browser's binary";

/// Names Chromium goes by on `PATH`, in the order they are tried.
const CHROMIUM_NAMES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// Profile folders are `<temp>/seek-chromium-<seek's pid>-<random>`.
const PROFILE_PREFIX: &str = "seek-chromium-";

/// Chromium starts well over a hundred threads; the cgroup's `pids.max` leaves room for them
/// and stops a fork bomb from a renderer exploit.
const MAX_BROWSER_TASKS: u64 = 4096;

/// How much of Chromium's stderr is kept to explain a failed start.
const STDERR_TAIL: usize = 2048;

/// Finds Chromium: `configured`, else the first of `CHROMIUM_NAMES` on `PATH`.
pub fn find_chromium(configured: Option<&Path>) -> Result<PathBuf, ReadError> {
    match configured {
        Some(path) => executable(path).ok_or_else(|| ReadError::BrowserMissing {
            what: format!("chromium (at {}, set in [web] chromium)", path.display()),
            how: INSTALL_HOW.into(),
        }),
        None => CHROMIUM_NAMES
            .iter()
            .find_map(|name| on_path(name))
            .ok_or_else(|| ReadError::BrowserMissing {
                what: "chromium (looked for chromium, chromium-browser and google-chrome on PATH)"
                    .into(),
                how: INSTALL_HOW.into(),
            }),
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
/// refuses to start with its sandbox; everywhere else its own sandbox stays on.
pub(crate) fn chromium_args(profile: &Path, proxy: SocketAddr, as_root: bool) -> Vec<String> {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--remote-debugging-pipe".to_owned(),
        format!("--user-data-dir={}", profile.display()),
        // Every request, loopback included (Chromium bypasses proxies for loopback unless told
        // `<-loopback>`), goes through seek's proxy, which resolves names and checks each
        // address itself.
        format!("--proxy-server=http://{proxy}"),
        "--proxy-bypass-list=<-loopback>".to_owned(),
        // WebRTC's UDP does not go through proxies: it is turned to proxied-only.
        "--force-webrtc-ip-handling-policy".to_owned(),
        "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        "--disable-quic".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-breakpad".to_owned(),
        "--disable-crash-reporter".to_owned(),
        "--password-store=basic".to_owned(),
        "--use-mock-keychain".to_owned(),
        "--mute-audio".to_owned(),
        "--window-size=1280,1024".to_owned(),
        "about:blank".to_owned(),
    ];
    if as_root {
        args.push("--no-sandbox".to_owned());
    }
    args
}

/// A desktop Chrome's user agent for Chromium `major` (headless Chromium announces itself as
/// `HeadlessChrome`, which many sites answer with a wall).
pub(crate) fn user_agent(major: &str) -> String {
    let major = if !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()) {
        major
    } else {
        "148"
    };
    format!(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
    )
}

/// A fresh profile folder in the system temp dir, named after this seek, with the folders
/// Chromium is pointed at as its home, temp and caches inside it (so nothing it writes lands
/// anywhere else, and removing the profile removes everything).
pub(crate) fn make_profile() -> Result<tempfile::TempDir, ReadError> {
    let profile = tempfile::Builder::new()
        .prefix(&format!("{PROFILE_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(|e| ReadError::Browser {
            reason: format!("a profile directory could not be made: {e}"),
        })?;
    for sub in ["home", "tmp", "cache", "config"] {
        std::fs::create_dir_all(profile.path().join(sub)).map_err(|e| ReadError::Browser {
            reason: format!("a profile directory could not be made: {e}"),
        })?;
    }
    Ok(profile)
}

/// Removes what a killed seek left in `temp`: each `seek-chromium-<pid>-…` folder whose seek is
/// gone, after killing every process still running with it as its profile. Folders of live
/// seeks are left alone. Returns how many folders were removed.
pub fn remove_stale_profiles(temp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = stale_owner(&name.to_string_lossy()) else {
            continue;
        };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let dir = entry.path();
        kill_users_of(&dir);
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in a profile folder's name.
fn stale_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PROFILE_PREFIX)?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok().filter(|pid| *pid > 1)
}

/// SIGKILLs every process whose command line names `profile` as its user-data dir.
fn kill_users_of(profile: &Path) {
    let flag = format!("--user-data-dir={}", profile.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|arg| arg == flag.as_bytes()) {
            // SAFETY: kill(2) with plain integers.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// A running browser: its control pipes, its process group and cgroup, the tail of its stderr.
pub struct Browser {
    pub to_browser: pipe::Sender,
    pub from_browser: pipe::Receiver,
    pub group: HelperGroup,
    pub cgroup: Arc<BlockGroup>,
    pub stderr_tail: Arc<Mutex<String>>,
}

/// Spawns Chromium on `profile`, confined, speaking over pipes, sending every request to
/// `proxy`. `env_remove`: the variables it must not inherit (credentials, session handles).
/// Must run on a runtime worker thread: the parent-death signal follows the thread that forked.
pub fn spawn(
    binary: &Path,
    profile: &Path,
    proxy: SocketAddr,
    env_remove: &[OsString],
) -> Result<Browser, ReadError> {
    let failed = |what: &str, e: std::io::Error| ReadError::Browser {
        reason: format!("{what}: {e}"),
    };
    // Chromium reads commands from its fd 3 and writes to its fd 4.
    let (commands_read, commands_write) = cloexec_pipe().map_err(|e| failed("a pipe", e))?;
    let (answers_read, answers_write) = cloexec_pipe().map_err(|e| failed("a pipe", e))?;
    let jail = Jail::new(&JailRules {
        writable: vec![profile.to_path_buf()],
        connect_ports: vec![proxy.port()],
    })
    .map_err(|e| failed("the browser's confinement could not be built", e))?;
    let cgroup = Arc::new(BlockGroup::create(Limits {
        max_processes: Some(MAX_BROWSER_TASKS),
        max_memory: None,
    }));

    let mut command = tokio::process::Command::new(binary);
    command
        .args(chromium_args(profile, proxy, running_as_root()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for name in env_remove {
        command.env_remove(name);
    }
    for (name, sub) in [
        ("HOME", "home"),
        ("TMPDIR", "tmp"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_CONFIG_HOME", "config"),
    ] {
        command.env(name, profile.join(sub));
    }
    // A proxy in the environment must not take the browser past seek's own.
    for name in [
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "DBUS_SESSION_BUS_ADDRESS",
    ] {
        command.env_remove(name);
    }
    crate::exec::die_with_parent(&mut command, "the browser");
    let child_fds = [commands_read.as_raw_fd(), answers_write.as_raw_fd()];
    let joining = Arc::clone(&cgroup);
    // SAFETY: the closure runs in the forked child before exec and makes only async-signal-safe
    // system calls (setsid, fcntl, dup2, close, write, setrlimit, prctl, capset, landlock); it
    // allocates nothing.
    unsafe {
        command.pre_exec(move || {
            // A session of its own (so its own process group, which no process of seek's
            // session can join to pass the proxy's peer check), no controlling terminal (a
            // Ctrl+C meant for seek does not reach it).
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Joining the cgroup and entering the jail write to descriptors seek opened (the
            // groups' `cgroup.procs`, the Landlock ruleset), and any of them may sit at 3 or 4:
            // seek's descriptors 3 and 4 come and go (a finished runtime's epoll, a closed
            // socket). Placing the pipes there first would turn a join's "0\n" into garbage
            // before the browser's first answer, and hand Landlock a pipe (EBADFD). So the
            // pipes are placed last.
            joining.apply_in_child();
            jail.apply_in_child()?;
            place_fds(child_fds)
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| failed(&format!("{} could not be started", binary.display()), e))?;
    drop(commands_read);
    drop(answers_write);
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(ReadError::Browser {
            reason: "chromium exited as soon as it started".into(),
        });
    };
    let group = HelperGroup::new(pid);
    let stderr_tail = Arc::new(Mutex::new(String::new()));
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(drain_stderr(stderr, Arc::clone(&stderr_tail)));
    }
    // The leader is reaped when it exits.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    let to_browser =
        pipe::Sender::from_owned_fd(commands_write).map_err(|e| failed("the control pipe", e))?;
    let from_browser =
        pipe::Receiver::from_owned_fd(answers_read).map_err(|e| failed("the control pipe", e))?;
    Ok(Browser {
        to_browser,
        from_browser,
        group,
        cgroup,
        stderr_tail,
    })
}

/// A pipe whose two ends close on exec (the child gets its ends as fds 3 and 4 explicitly).
fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)
}

/// In the child: the two pipe ends become fds 3 and 4 (without close-on-exec). Each is first
/// copied above 10, so that placing one cannot overwrite the other.
fn place_fds([commands, answers]: [i32; 2]) -> std::io::Result<()> {
    let check = |fd: libc::c_int| {
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(fd)
        }
    };
    // SAFETY: fcntl, dup2 and close on descriptors this child owns; no memory is touched.
    unsafe {
        let high_commands = check(libc::fcntl(commands, libc::F_DUPFD_CLOEXEC, 10))?;
        let high_answers = check(libc::fcntl(answers, libc::F_DUPFD_CLOEXEC, 10))?;
        check(libc::dup2(high_commands, 3))?;
        check(libc::dup2(high_answers, 4))?;
        libc::close(high_commands);
        libc::close(high_answers);
    }
    Ok(())
}

async fn drain_stderr(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut chunk).await {
        if n == 0 {
            return;
        }
        let mut kept = tail.lock().unwrap_or_else(|e| e.into_inner());
        kept.push_str(&String::from_utf8_lossy(&chunk[..n]));
        if kept.len() > STDERR_TAIL * 2 {
            let mut cut = kept.len() - STDERR_TAIL;
            while !kept.is_char_boundary(cut) {
                cut += 1;
            }
            kept.drain(..cut);
        }
    }
}

/// The last meaningful line Chromium wrote on stderr (its D-Bus complaints skipped), to explain
/// a failed start.
pub(crate) fn last_complaint(tail: &Mutex<String>) -> Option<String> {
    let kept = tail.lock().unwrap_or_else(|e| e.into_inner());
    kept.lines()
        .rev()
        .map(str::trim)
        .find(|line| {
            !line.is_empty() && !line.contains("dbus") && !line.contains("unexpected operator")
        })
        .map(|line| line.chars().take(300).collect())
}

/// Chromium refuses to start its sandbox as root (containers): only then is it turned off.
fn running_as_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_sandbox_only_as_root_and_every_request_through_the_proxy() {
        let profile = Path::new("/tmp/p");
        let proxy: SocketAddr = "127.0.0.1:4000".parse().expect("an address");
        let user = chromium_args(profile, proxy, false);
        assert!(!user.contains(&"--no-sandbox".to_owned()));
        assert!(chromium_args(profile, proxy, true).contains(&"--no-sandbox".to_owned()));
        assert!(user.contains(&"--user-data-dir=/tmp/p".to_owned()));
        assert!(user.contains(&"--proxy-server=http://127.0.0.1:4000".to_owned()));
        assert!(user.contains(&"--proxy-bypass-list=<-loopback>".to_owned()));
        assert!(user.contains(&"--remote-debugging-pipe".to_owned()));
        assert!(
            !user
                .iter()
                .any(|a| a.starts_with("--remote-debugging-port"))
        );
    }

    #[test]
    fn the_user_agent_names_chrome_not_headless() {
        let ua = user_agent("148");
        assert!(ua.contains("Chrome/148.0.0.0") && !ua.contains("Headless"));
        assert!(user_agent("1;drop").contains("Chrome/148.0.0.0"));
    }

    #[test]
    fn a_configured_path_that_is_missing_is_named() {
        let error = find_chromium(Some(Path::new("/nonexistent/chromium")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("/nonexistent/chromium"), "{error}");
        assert!(error.contains("apt install chromium"), "{error}");
    }

    #[test]
    fn a_profile_names_its_seek_and_only_dead_owners_are_stale() {
        assert_eq!(stale_owner("seek-chromium-1234-AbCd"), Some(1234));
        assert_eq!(stale_owner("seek-chromium-x-AbCd"), None);
        assert_eq!(stale_owner("seek-chromium-1-AbCd"), None);
        assert_eq!(stale_owner("other-1234-AbCd"), None);
        let temp = tempfile::tempdir().expect("a temp dir");
        let live = temp
            .path()
            .join(format!("{PROFILE_PREFIX}{}-live", std::process::id()));
        // A pid above the kernel's maximum is never alive.
        let dead = temp.path().join(format!("{PROFILE_PREFIX}2147483646-dead"));
        std::fs::create_dir_all(live.join("tmp")).expect("mkdir");
        std::fs::create_dir_all(dead.join("tmp")).expect("mkdir");
        assert_eq!(remove_stale_profiles(temp.path()), 1);
        assert!(live.exists() && !dead.exists());
    }
}
