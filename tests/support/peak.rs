//! Running the real binary to its end and reading what it cost: its exit status, its peak
//! resident memory and how much it wrote.
//!
//! The peak is the kernel's high-water mark of the process's resident set, the number
//! `/proc/<pid>/status` shows as `VmHWM` while it lives. A process that has exited has no `VmHWM`
//! line any more, so the number is taken where the kernel hands it over at the end: `wait4`'s
//! `ru_maxrss` (the larger of the child's own mark and its reaped children's, so a block's process
//! counts too). Reading `/proc` while the child runs could miss the last moments.

#![allow(dead_code)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run cost.
#[derive(Debug)]
pub struct Measured {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Peak resident set, bytes.
    pub peak_rss: u64,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Measured {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The `--json` lines that parse.
    pub fn events(&self) -> Vec<serde_json::Value> {
        self.stdout_text()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub fn peak_mib(&self) -> f64 {
        self.peak_rss as f64 / f64::from(1u32 << 20)
    }
}

/// Runs `cmd` to its end, its output going to files in `scratch` (a pipe nobody reads would stall
/// it), and measures it.
pub fn run_measured(cmd: &mut Command, scratch: &std::path::Path) -> Measured {
    let out_path = scratch.join("measured.stdout");
    let err_path = scratch.join("measured.stderr");
    let out = std::fs::File::create(&out_path).expect("stdout file");
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let started = Instant::now();
    let child = cmd
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .expect("spawn seek");
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let mut status = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills in; zeroed is a valid value of it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped (the `Child` handle is dropped without
    // waiting, and nothing else waits for it); both pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let elapsed = started.elapsed();
    drop(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured {
        code,
        // Linux reports kibibytes.
        peak_rss: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
        stdout: std::fs::read(&out_path).expect("read stdout"),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        elapsed,
    }
}
