//! seek's log file (in the data dir): what went wrong out of sight, for the user to read later.
//! The terminal UI owns the screen, so nothing may be printed while it runs; this is where
//! warnings and panics go. Code logs with `tracing` (`tracing::warn!(…)`); `open` installs the
//! one subscriber, which takes the events of seek's own crates at `SEEK_LOG`'s level and up
//! (`error`, `warn`, `info` (the default), `debug`, `trace`) and writes them here (`layer.rs`).
//!
//! Owns where the log is and what a line may hold: every message goes through the masker
//! (`crate::secrets::Masker`) and loses what would drive a terminal (`crate::terminal_safe`), so
//! `cat seek.log` shows no secret and obeys no escape sequence. Lines are written by the
//! background writer (`files`), so logging never waits on a disk; a log that cannot be written is
//! dropped, never a reason to stop.

mod layer;

pub use layer::PANIC_FIELD;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::files::FileWrite;
use crate::secrets::Masker;

/// The log's path, once `open` has installed the subscriber (the first call wins).
static LOG: OnceLock<PathBuf> = OnceLock::new();

/// The crates whose events go to the log (dependencies' own events, rmcp's or hyper's, do not).
const SEEK_CRATES: [&str; 6] = [
    "seek",
    "seek_core",
    "seek_engine",
    "seek_serve",
    "seek_tui",
    "seek_wire",
];

/// Starts logging to `path`, masking with `masker`, checking now (before any screen is taken)
/// that it can be written. The first call in a process wins.
pub fn open(path: &Path, masker: Arc<Masker>) -> std::io::Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;
    FileWrite::Append {
        path: path.to_owned(),
        text: String::new(),
    }
    .perform()?;
    if LOG.set(path.to_owned()).is_ok() {
        let level = level_from(std::env::var("SEEK_LOG").ok().as_deref());
        let targets = tracing_subscriber::filter::Targets::new()
            .with_targets(SEEK_CRATES.map(|name| (name, level)));
        let file = layer::FileLayer {
            path: path.to_owned(),
            masker,
        };
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::Layer::with_filter(file, targets));
        // Another subscriber set first (a program embedding seek's crates) keeps its place.
        let _ = tracing::subscriber::set_global_default(subscriber);
    }
    Ok(())
}

/// `SEEK_LOG`'s level; `info` when unset or not a level.
fn level_from(setting: Option<&str>) -> tracing::level_filters::LevelFilter {
    use tracing::level_filters::LevelFilter;
    match setting.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Some("off") => LevelFilter::OFF,
        Some("error") => LevelFilter::ERROR,
        Some("warn") => LevelFilter::WARN,
        Some("debug") => LevelFilter::DEBUG,
        Some("trace") => LevelFilter::TRACE,
        _ => LevelFilter::INFO,
    }
}

/// One log line: timestamp, level, the message masked and made terminal-safe.
fn line(now: SystemTime, level: &str, message: &str, masker: &Masker) -> String {
    let masked = masker.mask(message);
    let safe = crate::terminal_safe::terminal_safe(&masked);
    format!("{} {level} {safe}\n", timestamp(now))
}

/// `2026-11-30T14:24:24.123Z`.
fn timestamp(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// `2026-11-30 14:24` (UTC) for a time in milliseconds since the epoch.
pub fn utc_minutes(ms: u64) -> String {
    let stamp = timestamp(UNIX_EPOCH + std::time::Duration::from_millis(ms));
    stamp.get(..16).unwrap_or(&stamp).replace('T', " ")
}

/// Days since 1970-01-01 to a calendar date (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_049_864_123);
        assert_eq!(timestamp(t), "2026-11-30T14:44:24.123Z");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn events_of_every_level_and_a_panic_are_lines_with_their_fields() {
        use tracing_subscriber::layer::SubscriberExt as _;
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("seek.log");
        let layer = layer::FileLayer {
            path: path.clone(),
            masker: Arc::new(Masker::new(["sk-live-0123".to_owned()])),
        };
        let targets = tracing_subscriber::filter::Targets::new()
            .with_targets(SEEK_CRATES.map(|name| (name, level_from(Some("debug")))));
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::Layer::with_filter(layer, targets));
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(server = "time", "key sk-live-0123 \x1b[2Jgone");
            tracing::info!("start: {}", "model");
            tracing::debug!("seen at debug");
            tracing::trace!("not seen below debug");
            tracing::error!(panic = true, "it broke");
            tracing::warn!(target: "rmcp::service", "a dependency's event");
            let task = tracing::info_span!("task", turn = 3_u64, agent = "coder");
            task.in_scope(|| {
                let step = tracing::info_span!("step", id = "2");
                step.in_scope(|| tracing::warn!("inside a step"));
            });
        });
        crate::files::flush(Duration::from_secs(5));
        let log = std::fs::read_to_string(&path).expect("the log");
        let lines: Vec<&str> = log
            .lines()
            .map(|l| l.split_once(' ').expect("a stamp").1)
            .collect();
        assert_eq!(
            lines,
            [
                "WARN key [redacted] gone server=\"time\"",
                "INFO start: model",
                "DEBUG seen at debug",
                "PANIC it broke",
                "WARN task{turn=3 agent=coder}: step{id=2}: inside a step",
            ]
        );
    }

    #[test]
    fn the_level_comes_from_seek_log_and_defaults_to_info() {
        use tracing::level_filters::LevelFilter;
        assert_eq!(level_from(None), LevelFilter::INFO);
        assert_eq!(level_from(Some(" WARN ")), LevelFilter::WARN);
        assert_eq!(level_from(Some("off")), LevelFilter::OFF);
        assert_eq!(level_from(Some("nonsense")), LevelFilter::INFO);
    }

    #[test]
    fn lines_are_masked_and_terminal_safe() {
        let masker = Masker::new(["sk-live-0123".to_owned()]);
        let text = line(
            UNIX_EPOCH,
            "WARN",
            "key sk-live-0123 at https://u:pw@h \x1b]52;c;eA==\x07done",
            &masker,
        );
        assert_eq!(
            text,
            "1970-01-01T00:00:00.000Z WARN key [redacted] at https://u:***@h done\n"
        );
    }
}
