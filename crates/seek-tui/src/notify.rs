//! Telling a user who looks elsewhere that a long task ended: a terminal bell or an OSC 9
//! desktop notification, sent when a task that took at least `[tui] notify_after_secs` ends
//! while the terminal is not focused.
//!
//! Owns that decision and the bytes sent. Focus is what the terminal reports (focus events);
//! a terminal that never reports counts as focused, so it is never notified. It must not write
//! to the terminal itself (the event loop writes what `take` gives) nor read the clock.

use std::time::Duration;

use crate::agent::Outcome;
use crate::config::NotifySignal;
use crate::terminal_safe::terminal_safe;

/// The longest text sent in a notification.
const TEXT_MAX: usize = 80;

#[derive(Debug, Clone)]
pub struct Notifier {
    /// What to send (`None`: notifications are off).
    signal: Option<NotifySignal>,
    /// A task at least this long is worth a notification.
    after: Duration,
    /// The terminal said it lost the focus (and has not said it got it back).
    unfocused: bool,
    /// Bytes to write to the terminal, once.
    pending: Option<String>,
}

impl Default for Notifier {
    /// Off: nothing is ever sent.
    fn default() -> Self {
        Self::new(
            None,
            Duration::from_secs(crate::config::DEFAULT_NOTIFY_AFTER_SECS),
        )
    }
}

impl Notifier {
    pub fn new(signal: Option<NotifySignal>, after: Duration) -> Self {
        Self {
            signal,
            after,
            unfocused: false,
            pending: None,
        }
    }

    /// The terminal reported that it gained (`true`) or lost the focus.
    pub(crate) fn focus_changed(&mut self, focused: bool) {
        self.unfocused = !focused;
    }

    /// A task that took `took` ended with `outcome`.
    pub(crate) fn task_ended(&mut self, took: Duration, outcome: Outcome) {
        let Some(signal) = self.signal else { return };
        if !self.unfocused || took < self.after {
            return;
        }
        self.pending = Some(sequence(signal, &message(outcome, took)));
    }

    /// What to write to the terminal now, if anything (given once).
    pub fn take(&mut self) -> Option<String> {
        self.pending.take()
    }
}

/// The notification's text: how the task ended and how long it took.
fn message(outcome: Outcome, took: Duration) -> String {
    let how = match outcome {
        Outcome::Done => "task done",
        Outcome::NeedsClarification => "the model asks you something",
        Outcome::GaveUp => "task failed: gave up",
        Outcome::RoundLimit => "task failed: round limit",
        Outcome::Stopped => "task stopped",
        Outcome::ModelError => "task failed: model server error",
    };
    format!(
        "seek: {how} ({})",
        crate::render::cells::format_duration(took)
    )
}

/// The bytes of `signal` carrying `text` (which cannot end the sequence or start another: it
/// is made terminal-safe, kept to one line and cut short).
pub fn sequence(signal: NotifySignal, text: &str) -> String {
    match signal {
        NotifySignal::Bell => "\x07".to_owned(),
        NotifySignal::Osc9 => {
            let safe = terminal_safe(text).replace(['\n', '\t'], " ");
            let short: String = safe.chars().take(TEXT_MAX).collect();
            format!("\x1b]9;{short}\x07")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(12);

    #[test]
    fn only_a_long_task_ending_while_unfocused_notifies_once() {
        let mut n = Notifier::new(Some(NotifySignal::Osc9), Duration::from_secs(10));
        n.task_ended(LONG, Outcome::Done);
        assert_eq!(n.take(), None, "focused (or never reported): nothing");
        n.focus_changed(false);
        n.task_ended(Duration::from_secs(9), Outcome::Done);
        assert_eq!(n.take(), None, "a short task: nothing");
        n.task_ended(LONG, Outcome::Done);
        assert_eq!(
            n.take().as_deref(),
            Some("\x1b]9;seek: task done (12.0 s)\x07")
        );
        assert_eq!(n.take(), None, "once");
        n.focus_changed(true);
        n.task_ended(LONG, Outcome::GaveUp);
        assert_eq!(n.take(), None, "focused again: nothing");
    }

    #[test]
    fn the_bell_is_one_byte_and_off_is_nothing() {
        let mut bell = Notifier::new(Some(NotifySignal::Bell), Duration::ZERO);
        bell.focus_changed(false);
        bell.task_ended(Duration::ZERO, Outcome::Stopped);
        assert_eq!(bell.take().as_deref(), Some("\x07"));
        let mut off = Notifier::default();
        off.focus_changed(false);
        off.task_ended(LONG, Outcome::Done);
        assert_eq!(off.take(), None);
    }

    #[test]
    fn the_text_cannot_end_the_sequence_or_start_another() {
        let sent = sequence(NotifySignal::Osc9, "a\x07b\x1b]9;x\x1b\\c\nd");
        let inner = sent
            .strip_prefix("\x1b]9;")
            .and_then(|s| s.strip_suffix('\x07'))
            .expect("one OSC 9");
        assert!(!inner.chars().any(char::is_control), "{inner:?}");
        let long = sequence(NotifySignal::Osc9, &"x".repeat(500));
        assert!(long.chars().count() <= TEXT_MAX + 5, "{}", long.len());
    }
}
