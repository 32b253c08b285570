//! seek's log file (in the data dir): what went wrong out of sight, for the user to read later.
//! The terminal UI owns the screen, so nothing may be printed while it runs; this is where
//! warnings and panics go.
//!
//! Owns where the log is and what a line may hold: every message goes through the masker
//! (`crate::secrets::Masker`) and loses what would drive a terminal (`crate::terminal_safe`), so
//! `cat seek.log` shows no secret and obeys no escape sequence. Lines are written by the
//! background writer (`files`), so logging never waits on a disk; a log that cannot be written is
//! dropped, never a reason to stop.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::files::{FileWrite, in_background};
use crate::secrets::Masker;

struct Log {
    path: PathBuf,
    masker: Arc<Masker>,
}

static LOG: OnceLock<Log> = OnceLock::new();

/// Starts logging to `path`, masking with `masker`, checking now (before any screen is taken)
/// that it can be written.
pub fn open(path: &Path, masker: Arc<Masker>) -> std::io::Result<()> {
    FileWrite::Append {
        path: path.to_owned(),
        text: String::new(),
    }
    .perform()?;
    let _ = LOG.set(Log {
        path: path.to_owned(),
        masker,
    });
    Ok(())
}

/// Whether `path` is the log (whose own failures are not logged).
pub fn is_log(path: &Path) -> bool {
    LOG.get().is_some_and(|log| log.path == path)
}

/// Appends one line with a UTC timestamp; a no-op before `open`.
pub fn write(level: &str, message: &str) {
    let Some(log) = LOG.get() else { return };
    in_background(FileWrite::Append {
        path: log.path.clone(),
        text: line(SystemTime::now(), level, message, &log.masker),
    });
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
