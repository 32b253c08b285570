//! The `[tui]` section: how the terminal UI tells an unfocused user that a long task ended
//! (`notify`: a bell, an OSC 9 desktop notification, or nothing) and after how long a task
//! counts as long (`notify_after_secs`).
//!
//! Owns the `Notify` choice, the default threshold, the choice `auto` makes from the terminal
//! the environment names, and the note on its `seek config` line (the keys, and `TuiSettings`
//! they land in, are the settings table's, which names this file). It must not write to the
//! terminal.

use std::fmt;
use std::str::FromStr;

use super::setting::{Choice, choice_value};
use super::{Config, Env};

/// How the end of a long task is signalled while the terminal is not focused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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
        super::setting::parse_choice(s)
    }
}

impl Choice for Notify {
    fn word(self) -> &'static str {
        self.as_str()
    }
}

choice_value!(Notify);

/// What is actually sent (what `auto` became here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifySignal {
    /// `BEL`: every terminal knows it (a sound, a flash or an urgent window).
    Bell,
    /// `ESC ] 9 ; text BEL`: a desktop notification with a text.
    Osc9,
}

/// Default seconds a task must take before its end is signalled.
pub const DEFAULT_NOTIFY_AFTER_SECS: u64 = 10;

/// The signal `notify` sends, `None` when notifications are off; `osc9_terminal`: whether the
/// terminal is known to show OSC 9.
pub(super) fn signal(notify: Notify, osc9_terminal: bool) -> Option<NotifySignal> {
    match notify {
        Notify::Off => None,
        Notify::Bell => Some(NotifySignal::Bell),
        Notify::Osc9 => Some(NotifySignal::Osc9),
        Notify::Auto if osc9_terminal => Some(NotifySignal::Osc9),
        Notify::Auto => Some(NotifySignal::Bell),
    }
}

/// Whether the terminal seek runs in shows OSC 9 notifications, by what it says of itself.
/// Terminals that do not understand OSC 9 may print its text, so only known ones get it.
pub(super) fn osc9_terminal(env: &Env) -> bool {
    let program = env.get("TERM_PROGRAM").unwrap_or_default();
    ["iTerm.app", "WezTerm", "ghostty"].contains(&program)
        || env.get("TERM") == Some("xterm-kitty")
        || env.get("KITTY_WINDOW_ID").is_some()
}

/// The note on `notify`'s line in `seek config`: what `auto` sends in this terminal.
pub(super) fn notify_note(config: &Config) -> Option<String> {
    let tui = &config.tui;
    match (
        tui.notify.value,
        signal(tui.notify.value, tui.osc9_terminal),
    ) {
        (Notify::Auto, Some(NotifySignal::Osc9)) => Some("OSC 9 in this terminal".to_owned()),
        (Notify::Auto, _) => Some("the bell in this terminal".to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    use super::super::Origin;
    use super::super::tests::resolve_in as resolve;
    use std::time::Duration;

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
