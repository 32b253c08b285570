//! Large pastes kept out of sight: a paste of many lines goes into the prompt box as a short
//! label (`[pasted 4,000 lines]`); the label becomes the pasted text again when the prompt is
//! sent, so the model gets all of it, while the transcript (and the copy printed on exit) keeps
//! the label.
//!
//! Owns the labels, the texts behind them and which sent prompts are shown by their labels.
//! It must not edit the prompt box or send anything: the app does, with what this returns.

/// A paste of at least this many lines is shown as a label.
pub(crate) const COLLAPSE_LINES: usize = 20;
/// A paste of at least this many bytes is shown as a label, however few its lines.
pub(crate) const COLLAPSE_BYTES: usize = 8 * 1024;
/// Sent prompts remembered for the transcript (a prompt's task starts soon after it is sent).
const REMEMBERED: usize = 16;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pastes {
    /// Labels in the prompt box now, and the text each stands for.
    held: Vec<(String, String)>,
    /// Prompts sent with labels expanded, and how the transcript shows them.
    sent: Vec<(String, String)>,
}

impl Pastes {
    /// The label to put in the prompt box instead of `text` (already cleaned as the box cleans
    /// it), or `None` when it is small enough to show.
    pub fn hold(&mut self, text: &str) -> Option<String> {
        let lines = text.lines().count();
        if lines < COLLAPSE_LINES && text.len() < COLLAPSE_BYTES {
            return None;
        }
        let size = if lines > 1 {
            format!("{} lines", thousands(lines))
        } else {
            format!("{} characters", thousands(text.chars().count()))
        };
        let mut label = format!("[pasted {size}]");
        // Two pastes of the same size get labels of their own.
        let mut n = 1;
        while self.held.iter().any(|(held, _)| *held == label) {
            n += 1;
            label = format!("[pasted {size} #{n}]");
        }
        self.held.push((label.clone(), text.to_owned()));
        Some(label)
    }

    /// `typed` with each held label (its first occurrence) replaced by the text it stands for.
    /// A label the user edited away stands for nothing.
    pub(crate) fn expand(&self, typed: &str) -> String {
        let mut full = typed.to_owned();
        for (label, text) in &self.held {
            if let Some(at) = full.find(label.as_str()) {
                full.replace_range(at..at + label.len(), text);
            }
        }
        full
    }

    /// The prompt box was emptied: its labels stand for nothing any more.
    pub(crate) fn forget_held(&mut self) {
        self.held.clear();
    }

    /// `full` was sent; its task's prompt is shown as `shown` (when they differ).
    pub fn sent(&mut self, full: &str, shown: &str) {
        if full == shown {
            return;
        }
        if self.sent.len() >= REMEMBERED {
            self.sent.remove(0);
        }
        self.sent.push((full.to_owned(), shown.to_owned()));
    }

    /// How to show a task's `prompt`: by its labels if it was sent with them (once).
    pub fn shown(&mut self, prompt: &str) -> Option<String> {
        let at = self.sent.iter().position(|(full, _)| full == prompt)?;
        Some(self.sent.remove(at).1)
    }
}

/// `4000` as `4,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_paste_is_a_label_that_expands_to_all_of_it() {
        let mut pastes = Pastes::default();
        assert_eq!(pastes.hold("a few\nlines\n"), None);
        let big: String = (0..4000).map(|i| format!("line {i}\n")).collect();
        let label = pastes.hold(&big).expect("collapsed");
        assert_eq!(label, "[pasted 4,000 lines]");
        let again = pastes.hold(&big).expect("collapsed");
        assert_eq!(again, "[pasted 4,000 lines #2]");
        let long_line = "x".repeat(COLLAPSE_BYTES);
        assert_eq!(
            pastes.hold(&long_line).as_deref(),
            Some("[pasted 8,192 characters]")
        );
        let typed = format!("explain {label} and {again}");
        let full = pastes.expand(&typed);
        assert_eq!(full, format!("explain {big} and {big}"));
        pastes.sent(&full, &typed);
        assert_eq!(pastes.shown(&full), Some(typed.clone()));
        assert_eq!(pastes.shown(&full), None, "once");
        pastes.forget_held();
        assert_eq!(pastes.expand(&typed), typed, "nothing is held any more");
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(4000), "4,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
