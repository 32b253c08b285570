//! The `[tui]` section: how the terminal UI tells an unfocused user that a long task ended
//! (`notify`: a bell, an OSC 9 desktop notification, or nothing) and after how long a task
//! counts as long (`notify_after_secs`).
//!
//! Owns these keys, their defaults, their validation, the choice `auto` makes from the terminal
//! the environment names, and their lines in `seek config`. It must not write to the terminal.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;

use super::file::{FileConfig, FileValue};
use super::{ConfigError, Env, Origin, Resolver, Sourced, invalid};

/// `[tui]` as read from the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiFile {
    pub notify: FileValue<String>,
    pub notify_after_secs: FileValue<i64>,
}

/// How the end of a long task is signalled while the terminal is not focused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// OSC 9 in terminals known to show it, else the bell.
    Auto,
    Bell,
    Osc9,
    Off,
}

impl Notify {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Bell => "bell",
            Self::Osc9 => "osc9",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Notify {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "bell" => Ok(Self::Bell),
            "osc9" => Ok(Self::Osc9),
            "off" => Ok(Self::Off),
            _ => Err("expected one of: auto, bell, osc9, off".into()),
        }
    }
}

/// What is actually sent (what `auto` became here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifySignal {
    /// `BEL`: every terminal knows it (a sound, a flash or an urgent window).
    Bell,
    /// `ESC ] 9 ; text BEL`: a desktop notification with a text.
    Osc9,
}

/// The effective `[tui]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiSettings {
    pub notify: Sourced<Notify>,
    /// A task that took at least this long is worth a notification.
    pub notify_after_secs: Sourced<u64>,
    /// The environment names a terminal known to show OSC 9 notifications.
    osc9_terminal: bool,
}

/// Default seconds a task must take before its end is signalled.
pub const DEFAULT_NOTIFY_AFTER_SECS: u64 = 10;

impl TuiSettings {
    /// The signal to send, `None` when notifications are off.
    pub fn signal(&self) -> Option<NotifySignal> {
        match self.notify.value {
            Notify::Off => None,
            Notify::Bell => Some(NotifySignal::Bell),
            Notify::Osc9 => Some(NotifySignal::Osc9),
            Notify::Auto if self.osc9_terminal => Some(NotifySignal::Osc9),
            Notify::Auto => Some(NotifySignal::Bell),
        }
    }

    pub fn notify_after(&self) -> Duration {
        Duration::from_secs(self.notify_after_secs.value)
    }
}

impl Default for TuiSettings {
    fn default() -> Self {
        Self {
            notify: Sourced::new(Notify::Auto, Origin::Default),
            notify_after_secs: Sourced::new(DEFAULT_NOTIFY_AFTER_SECS, Origin::Default),
            osc9_terminal: false,
        }
    }
}

/// Whether the terminal seek runs in shows OSC 9 notifications, by what it says of itself.
/// Terminals that do not understand OSC 9 may print its text, so only known ones get it.
fn osc9_terminal(env: &Env) -> bool {
    let program = env.get("TERM_PROGRAM").unwrap_or_default();
    ["iTerm.app", "WezTerm", "ghostty"].contains(&program)
        || env.get("TERM") == Some("xterm-kitty")
        || env.get("KITTY_WINDOW_ID").is_some()
}

pub(super) fn resolve(
    r: &Resolver<'_>,
    cfg: Option<&FileConfig>,
) -> Result<TuiSettings, ConfigError> {
    let file = cfg.map(|c| &c.tui);
    let notify = match r.file_value(file.and_then(|t| t.notify.as_ref())) {
        Some(s) => {
            let notify = s
                .value
                .parse::<Notify>()
                .map_err(|expected| invalid(&s, "tui.notify", &expected))?;
            Sourced::new(notify, s.origin)
        }
        None => Sourced::new(Notify::Auto, Origin::Default),
    };
    let notify_after_secs = r.number(
        file.and_then(|t| t.notify_after_secs.as_ref()),
        "tui.notify_after_secs",
        0..=86_400,
        DEFAULT_NOTIFY_AFTER_SECS,
    )?;
    Ok(TuiSettings {
        notify,
        notify_after_secs,
        osc9_terminal: osc9_terminal(r.env),
    })
}

/// The `[tui]` lines of `seek config`.
pub(super) fn render(out: &mut String, tui: &TuiSettings) {
    let _ = writeln!(out, "\n[tui]");
    let note = match (tui.notify.value, tui.signal()) {
        (Notify::Auto, Some(NotifySignal::Osc9)) => Some("OSC 9 in this terminal"),
        (Notify::Auto, _) => Some("the bell in this terminal"),
        _ => None,
    };
    super::show::line(
        out,
        "notify",
        &super::show::toml_str(tui.notify.value.as_str()),
        &tui.notify.origin,
        note,
    );
    super::show::line(
        out,
        "notify_after_secs",
        &tui.notify_after_secs.value.to_string(),
        &tui.notify_after_secs.origin,
        None,
    );
}

#[cfg(test)]
mod tests {

    use super::*;

    use super::super::tests::resolve_in as resolve;

    #[test]
    fn auto_picks_osc9_only_in_terminals_known_to_show_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let plain = resolve(dir.path(), None, &[("TERM", "xterm-256color")]).expect("defaults");
        assert_eq!(plain.tui.notify.value, Notify::Auto);
        assert_eq!(plain.tui.signal(), Some(NotifySignal::Bell));
        assert_eq!(plain.tui.notify_after(), Duration::from_secs(10));
        for env in [
            ("TERM_PROGRAM", "iTerm.app"),
            ("TERM_PROGRAM", "WezTerm"),
            ("TERM_PROGRAM", "ghostty"),
            ("TERM", "xterm-kitty"),
            ("KITTY_WINDOW_ID", "1"),
        ] {
            let config = resolve(dir.path(), None, &[env]).expect("defaults");
            assert_eq!(config.tui.signal(), Some(NotifySignal::Osc9), "{env:?}");
        }
    }

    #[test]
    fn the_file_sets_the_signal_and_the_threshold() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "[tui]\nnotify = \"osc9\"\nnotify_after_secs = 0\n";
        let tui = resolve(dir.path(), Some(text), &[]).expect("file").tui;
        assert_eq!(tui.signal(), Some(NotifySignal::Osc9));
        assert_eq!(tui.notify_after(), Duration::ZERO);
        assert!(matches!(tui.notify.origin, Origin::File { line: 2, .. }));
        let off = resolve(
            dir.path(),
            Some("[tui]\nnotify = \"OFF\"\n"),
            &[("TERM_PROGRAM", "WezTerm")],
        )
        .expect("off")
        .tui;
        assert_eq!(off.signal(), None);
    }

    #[test]
    fn bad_values_name_the_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (text, key) in [
            ("[tui]\nnotify = \"loud\"\n", "tui.notify"),
            ("[tui]\nnotify_after_secs = -1\n", "tui.notify_after_secs"),
            ("[tui]\nnotify_after = 3\n", "notify_after"),
        ] {
            let err = resolve(dir.path(), Some(text), &[])
                .expect_err(text)
                .to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    #[test]
    fn seek_config_shows_the_section_with_origins() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "[tui]\nnotify_after_secs = 30\n";
        let config = resolve(dir.path(), Some(text), &[]).expect("file");
        let shown = super::super::render(&config, &Env::default());
        assert!(shown.contains("\n[tui]\n"), "{shown}");
        assert!(shown.contains("notify = \"auto\""), "{shown}");
        assert!(shown.contains("the bell in this terminal"), "{shown}");
        assert!(shown.contains("notify_after_secs = 30"), "{shown}");
        assert!(shown.contains("config.toml:2"), "{shown}");
        toml::from_str::<toml::Value>(&shown).expect("seek config stays valid TOML");
    }
}
