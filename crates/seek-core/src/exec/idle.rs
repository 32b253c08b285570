//! Telling a stuck block from a slow one: a block that has printed nothing and used no CPU (its
//! whole process tree) for the idle limit is waiting for something that will not come — input
//! it cannot get, a prompt nobody answers — and is ended as stuck. A block that computes silently
//! or prints slowly is never ended by this.
//!
//! Owns reading a block's CPU use (its v2 cgroup's `cpu.stat` where the block is in one, else
//! `/proc` of every process in its process group or session) and the clock of its quiet time.
//! It must not kill anything or read output: the runner tells it of output and asks it whether
//! the block is stuck.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a block's CPU use is read.
#[derive(Debug, Clone)]
pub(crate) enum CpuSource {
    /// The block's v2 cgroup folder: `cpu.stat`'s `usage_usec` counts every process that was
    /// ever in the group, however it detached.
    Cgroup(PathBuf),
    /// `/proc`: CPU ticks of every process in the block's process group or session (its
    /// leader's pid), its own and its reaped children's.
    Processes { leader: i32 },
}

impl CpuSource {
    /// The CPU used so far, in the source's own unit (only changes are compared); `None` when it
    /// cannot be read.
    pub fn read(&self) -> Option<u64> {
        match self {
            CpuSource::Cgroup(dir) => {
                let stat = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
                usage_usec(&stat)
            }
            CpuSource::Processes { leader } => process_ticks(*leader),
        }
    }
}

/// `usage_usec` from a v2 `cpu.stat`.
fn usage_usec(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|line| line.strip_prefix("usage_usec "))
        .and_then(|n| n.trim().parse().ok())
}

/// The summed CPU ticks (user and system, with those of reaped children) of every process whose
/// process group or session is `leader`'s; `None` when `/proc` cannot be listed.
fn process_ticks(leader: i32) -> Option<u64> {
    let mut total = 0u64;
    for pid in super::reaper::proc_pids()? {
        // A process gone between the listing and the read simply does not count.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((pgrp, session, ticks)) = stat_ticks(&stat)
            && (pgrp == leader || session == leader)
        {
            total = total.saturating_add(ticks);
        }
    }
    Some(total)
}

/// Process group, session and CPU ticks (utime, stime, cutime, cstime) from a `/proc/PID/stat`
/// line. The command name is in parentheses and may hold anything; fields follow the last `)`.
fn stat_ticks(stat: &str) -> Option<(i32, i32, u64)> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
    let ticks = [11, 12, 13, 14]
        .iter()
        .map(|&i| number(i).map(|t| t.max(0).unsigned_abs()))
        .sum::<Option<u64>>()?;
    Some((
        i32::try_from(number(2)?).ok()?,
        i32::try_from(number(3)?).ok()?,
        ticks,
    ))
}

/// The quiet time of one running block.
#[derive(Debug)]
pub(crate) struct IdleWatch {
    limit: Duration,
    source: CpuSource,
    last_cpu: Option<u64>,
    quiet_since: Instant,
}

impl IdleWatch {
    pub fn new(limit: Duration, source: CpuSource) -> Self {
        Self {
            limit,
            source,
            last_cpu: None,
            quiet_since: Instant::now(),
        }
    }

    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// How often the CPU is sampled: a quarter of the limit, between 50 ms and 1 s, so the block
    /// is ended within a quarter of the limit after it, at little cost.
    pub(crate) fn period(&self) -> Duration {
        (self.limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
    }

    /// The block printed something.
    pub(crate) fn output_seen(&mut self) {
        self.quiet_since = Instant::now();
    }

    /// Samples the CPU use; true once the block has been quiet (no output, no CPU) for the
    /// limit. CPU use that cannot be read counts as activity: a block is never ended on a guess.
    pub fn stuck(&mut self) -> bool {
        let now = Instant::now();
        match self.source.read() {
            Some(cpu) if self.last_cpu == Some(cpu) => {}
            cpu => {
                self.last_cpu = cpu;
                self.quiet_since = now;
                return false;
            }
        }
        now.duration_since(self.quiet_since) >= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_and_proc_stat_are_read() {
        assert_eq!(
            usage_usec("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n"),
            Some(1234)
        );
        assert_eq!(usage_usec("nr_periods 0\n"), None);
        let stat = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 99 0 0";
        assert_eq!(stat_ticks(stat), Some((42, 42, 13)));
        assert_eq!(stat_ticks("garbage"), None);
    }

    #[test]
    fn unreadable_cpu_use_never_counts_as_stuck() {
        let mut watch = IdleWatch::new(
            Duration::ZERO,
            CpuSource::Cgroup(PathBuf::from("/nonexistent/seek-group")),
        );
        assert!(!watch.stuck());
        assert!(!watch.stuck());
    }

    #[test]
    fn unchanged_cpu_use_past_the_limit_is_stuck() {
        // This test's own process group: it exists, and is read the same way a block's is.
        let leader = nix::unistd::getpgrp().as_raw();
        let mut watch = IdleWatch::new(Duration::ZERO, CpuSource::Processes { leader });
        assert!(watch.last_cpu.is_none());
        assert!(!watch.stuck(), "the first sample is a change");
        // With a zero limit, the next sample that sees the same use is stuck; one that sees
        // more (this process keeps running) starts the quiet time again.
        let mut samples = 0;
        while !watch.stuck() {
            samples += 1;
            assert!(samples < 10_000, "the CPU use never stayed the same");
        }
    }
}
