//! seek's log file (in the data dir): what went wrong out of sight, for the user to read later.
//! The terminal UI owns the screen, so nothing may be printed while it runs; this is where
//! warnings and panics go.
//!
//! Owns where the log is. Lines are written by the background writer (`files`), so logging
//! never waits on a disk; a log that cannot be written is dropped, never a reason to stop.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::files::{FileWrite, in_background};

static LOG: OnceLock<PathBuf> = OnceLock::new();

/// Starts logging to `path`, checking now (before any screen is taken) that it can be written.
pub fn open(path: &Path) -> std::io::Result<()> {
    FileWrite::Append {
        path: path.to_owned(),
        text: String::new(),
    }
    .perform()?;
    let _ = LOG.set(path.to_owned());
    Ok(())
}

/// Whether `path` is the log (whose own failures are not logged).
pub fn is_log(path: &Path) -> bool {
    LOG.get().is_some_and(|log| log == path)
}

/// Appends one line with a UTC timestamp; a no-op before `open`.
pub fn write(level: &str, message: &str) {
    let Some(path) = LOG.get() else { return };
    let text = format!("{} {level} {message}\n", timestamp(SystemTime::now()));
    in_background(FileWrite::Append {
        path: path.clone(),
        text,
    });
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
}
