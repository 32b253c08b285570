//! Helpers shared by the end-to-end tests: run the real `seek` binary in an isolated home.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// An isolated environment: its own HOME, XDG dirs and cwd, so no test reads the developer's
/// config or writes to their data dir.
pub struct Sandbox {
    pub root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        for dir in ["home", "config", "data", "cwd"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
        }
        Self { root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// The default config file location inside the sandbox.
    pub fn config_file(&self) -> PathBuf {
        self.path("config/seek/config.toml")
    }

    pub fn write_config(&self, text: &str) -> PathBuf {
        let path = self.config_file();
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// A `seek` command with a clean environment pointing into the sandbox.
    pub fn seek(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seek"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_DATA_HOME", self.path("data"))
            // The models dir (seek's own files) beside the others, not inside the home folder.
            .env("XDG_CACHE_HOME", self.path("cache"))
            // The scripted replies are the coder's; under the default `auto` the router would
            // hand prompts like "hello" to casual. A test of routing passes `--agent auto`.
            .env("SEEK_AGENT", "coder")
            .current_dir(self.path("cwd"))
            .stdin(Stdio::null());
        cmd
    }
}

impl Sandbox {
    /// The flags that point seek at a model server on `url` (llama.cpp's wire, the fake model's
    /// name) and at the sandbox's work dir.
    pub fn model_args(&self, url: &str) -> Vec<String> {
        let work = self.path("work");
        vec![
            "--provider".into(),
            "llama.cpp".into(),
            "--base-url".into(),
            url.into(),
            "--model".into(),
            "fake-coder:7b".into(),
            "--work-dir".into(),
            work.to_string_lossy().into_owned(),
        ]
    }

    /// `seek` with `model_args(url)` and then `extra`.
    pub fn seek_at(&self, url: &str, extra: &[&str]) -> Command {
        let mut cmd = self.seek();
        cmd.args(self.model_args(url)).args(extra);
        cmd
    }
}

/// Reads `--json` event lines until a `block_output` event carrying `text` has arrived (the
/// block is running); fails if the stream ends first.
pub fn until_block_prints(lines: &mut impl Iterator<Item = std::io::Result<String>>, text: &str) {
    for line in lines.by_ref() {
        let line = line.expect("an event line");
        if line.contains("\"block_output\"") && line.contains(text) {
            return;
        }
    }
    panic!("the event stream ended before a block printed {text:?}");
}

/// Runs `cmd` to its end and returns its output; a run still going after `bound` (hung, or
/// stopped by a block) is continued, killed, and the test fails.
pub fn run_within(cmd: &mut Command, bound: std::time::Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn seek");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match ended.recv_timeout(bound) {
        Ok(out) => out.expect("seek's output"),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("seek did not finish within {bound:?}: it hung or was stopped");
        }
    }
}

/// Runs a command and returns its output.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run seek")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// The real SmolLM2-135M file for tests of the built-in engine: `SEEK_TEST_GGUF` (set by
/// `scripts/test`, which pulls it with `seek pull`; it must exist), else the developer cache of
/// `local-model.sh`. A machine with neither fails the test and says how to get the file: no
/// engine test passes by skipping.
pub fn real_model() -> PathBuf {
    if let Some(path) = std::env::var_os("SEEK_TEST_GGUF") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "SEEK_TEST_GGUF={} is not a file",
            path.display()
        );
        return path;
    }
    let dev = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        dev.is_file(),
        "this test needs the real default model: run scripts/test (it pulls it), or \
         `seek pull smollm2-135m` and set SEEK_TEST_GGUF to the path it prints ({} is absent)",
        dev.display()
    );
    dev
}

/// A test binary holds the tests of many modules, and some of them run blocks in the test process
/// itself (`seek::exec::run`, the agent runtime): a block's end sweeps this process's children
/// that seek did not start (they could be the block's orphans: seek is a child subreaper). The
/// children the tests start in this process's own group are never swept (seek's rule: nothing
/// in its own group is a block's); those started in a group of their own (a pseudo-terminal's
/// seek, a server) are held apart with `hold_apart` while they live.
///
/// Holds process group `pgid` (a child this test started as a group leader) apart from the
/// sweeps of blocks run in this process, until `release`.
pub fn hold_apart(pgid: u32) {
    seek::exec::hold_group_apart(i32::try_from(pgid).expect("pid fits"));
}

/// Ends `hold_apart(pgid)`: the group is gone.
pub fn release(pgid: u32) {
    seek::exec::release_group(i32::try_from(pgid).expect("pid fits"));
}

/// Set in a child that runs one test of its binary alone (`run_alone!`).
const ALONE: &str = "SEEK_TEST_ALONE";

/// The name libtest knows test `name` of the calling module by, as `--exact` wants it: the
/// module's path without the test binary's own first segment, then the name
/// (`planner::a_failed_step_is_replanned_once_and_the_new_step_runs`).
#[allow(unused_macros)]
macro_rules! test_name {
    ($name:expr $(,)?) => {
        $crate::support::name_in_binary(module_path!(), $name)
    };
}
#[allow(unused_imports)]
pub(crate) use test_name;

/// `test_name!`'s work: `module_path` is the caller's `module_path!()`.
pub fn name_in_binary(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    }
}

/// Runs test `name` of the calling module in a child process of its own (the same test binary,
/// `--exact`), with `env` added, and says whether this is the parent (which then has nothing more
/// to do). A macro, so that the name is the one libtest knows the test by in this binary
/// (`test_name!`). For tests where the process itself matters:
/// - memory measures: a child's `ru_maxrss` includes the peak of the memory it was forked from
///   (the kernel saves the old image's high-water mark at `exec`), so in a test process that
///   other tests made large, a small seek would be measured as large;
/// - a variable in the environment from the start (setting one in a running multi-threaded
///   process is not sound);
/// - bystander processes that another test's block end would count as its own (seek claims the
///   children it did not register while a block runs).
#[allow(unused_macros)]
macro_rules! run_alone {
    ($name:expr, $env:expr $(,)?) => {
        $crate::support::run_exactly_alone(&$crate::support::test_name!($name), $env)
    };
}
#[allow(unused_imports)]
pub(crate) use run_alone;

/// `run_alone!`'s work: `exact` is the test's whole name in this binary.
pub fn run_exactly_alone(exact: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return false;
    }
    let exe = std::env::current_exe().expect("own test binary");
    let out = Command::new(exe)
        .args(["--exact", exact, "--nocapture", "--test-threads=1"])
        .env(ALONE, "1")
        .envs(env.iter().copied())
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}
