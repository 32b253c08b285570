//! Running a command and reading what it cost from the kernel: its peak resident memory and its
//! CPU time, for that one child (`wait4`), not the test process nor its other children.
//!
//! The peak is the kernel's high-water mark of the process's resident set, the number
//! `/proc/<pid>/status` shows as `VmHWM` while it lives. A process that has exited has no `VmHWM`
//! line any more, so the number is taken where the kernel hands it over at the end: `wait4`'s
//! `ru_maxrss` (the larger of the child's own mark and its reaped children's, so a block's process
//! counts too).

#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What a finished child cost.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// Peak resident set size (`ru_maxrss`), in bytes.
    pub peak_rss: u64,
    /// User plus system CPU time.
    pub cpu: Duration,
    /// Wall time from the spawn to the reaping.
    pub elapsed: Duration,
}

/// Runs `cmd` to the end, collecting its output, and reaps it with `wait4` to read its cost.
// The child is reaped, by `wait4` rather than `Child::wait`, which would not return the usage.
#[allow(clippy::zombie_processes)]
pub fn run_measured(cmd: &mut Command) -> (Output, Cost) {
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child (std never waited for it); `status` and
        // `usage` are valid for writes for the duration of the call.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted, "wait4: {err}");
    }
    let output = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    let cost = Cost {
        // Linux reports kilobytes.
        peak_rss: usage.ru_maxrss as u64 * 1024,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        elapsed: started.elapsed(),
    };
    (output, cost)
}

/// A finished run of the binary, as the hostile-stream tests read it.
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

/// `run_measured`, its result gathered in one value.
pub fn measured(cmd: &mut Command) -> Measured {
    let (output, cost) = run_measured(cmd);
    Measured {
        code: output.status.code(),
        peak_rss: cost.peak_rss,
        stdout: output.stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: cost.elapsed,
    }
}
