//! Prompt history: Up/Down recall, kept across runs in a file in seek's data dir (one JSON
//! string per line, so multi-line prompts survive).
//!
//! Owns the list and the recall position; it reads its file at start-up and says what to write
//! to it, for the event loop to write off the UI thread. A history file that cannot be read or
//! written costs the history, never the session.

use std::path::PathBuf;

use crate::files::FileWrite;

/// Prompts kept.
const LIMIT: usize = 1_000;

#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    /// While recalling: the entry shown, and the draft typed before recall began.
    recall: Option<(usize, String)>,
    file: Option<PathBuf>,
}

impl History {
    /// Loads the history at `file` (missing is empty; unreadable lines are skipped).
    pub fn load(file: PathBuf) -> (Self, Option<String>) {
        let mut problem = None;
        let entries = match std::fs::read_to_string(&file) {
            Ok(text) => text
                .lines()
                .filter_map(|line| serde_json::from_str::<String>(line).ok())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                problem = Some(format!("history {}: {e}", file.display()));
                Vec::new()
            }
        };
        let mut history = History {
            entries,
            recall: None,
            file: Some(file),
        };
        history.trim();
        (history, problem)
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a sent prompt (not a repeat of the last one), ends any recall, and returns the
    /// write that keeps the file in step.
    pub fn push(&mut self, prompt: &str) -> Option<FileWrite> {
        self.recall = None;
        if prompt.trim().is_empty() || self.entries.last().is_some_and(|l| l == prompt) {
            return None;
        }
        self.entries.push(prompt.to_owned());
        let line = |e: &str| format!("{}\n", serde_json::Value::from(e));
        let path = self.file.clone()?;
        // The file is appended to, and rewritten with the newest entries when it doubles.
        if self.entries.len() > LIMIT * 2 {
            self.trim();
            let text = self.entries.iter().map(|e| line(e)).collect();
            return Some(FileWrite::Replace { path, text });
        }
        Some(FileWrite::Append {
            path,
            text: line(prompt),
        })
    }

    /// The previous prompt, given what the box holds now (kept as the draft on first recall).
    pub fn older(&mut self, current: &str) -> Option<&str> {
        let next = match &self.recall {
            None => self.entries.len().checked_sub(1)?,
            Some((0, _)) => return None,
            Some((i, _)) => i - 1,
        };
        let draft = match self.recall.take() {
            Some((_, draft)) => draft,
            None => current.to_owned(),
        };
        self.recall = Some((next, draft));
        self.entries.get(next).map(String::as_str)
    }

    /// The next prompt, or the draft when recall walks past the newest.
    pub fn newer(&mut self) -> Option<String> {
        let (i, draft) = self.recall.take()?;
        if i + 1 < self.entries.len() {
            let entry = self.entries[i + 1].clone();
            self.recall = Some((i + 1, draft));
            Some(entry)
        } else {
            Some(draft)
        }
    }

    fn trim(&mut self) {
        if self.entries.len() > LIMIT {
            self.entries.drain(..self.entries.len() - LIMIT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_walks_back_and_returns_to_the_draft() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history");
        let (mut h, problem) = History::load(file.clone());
        assert!(problem.is_none());
        for prompt in ["one", "two\nlines"] {
            h.push(prompt).expect("a write").perform().unwrap();
        }
        assert_eq!(h.push("two\nlines"), None, "a repeat is not kept");
        assert_eq!(h.older("draft"), Some("two\nlines"));
        assert_eq!(h.older("ignored"), Some("one"));
        assert_eq!(h.older("ignored"), None);
        assert_eq!(h.newer().as_deref(), Some("two\nlines"));
        assert_eq!(h.newer().as_deref(), Some("draft"));
        assert_eq!(h.newer(), None);
        let (again, _) = History::load(file);
        assert_eq!(again.entries(), ["one", "two\nlines"], "kept across runs");
    }

    #[test]
    fn the_file_is_rewritten_with_the_newest_when_it_doubles() {
        let (mut h, _) = History::load(PathBuf::from("/nonexistent/history"));
        let mut last = None;
        for i in 0..=LIMIT * 2 {
            last = h.push(&format!("p{i}"));
        }
        assert_eq!(h.entries().len(), LIMIT);
        match last {
            Some(FileWrite::Replace { text, .. }) => {
                assert_eq!(text.lines().count(), LIMIT);
                assert!(text.ends_with(&format!("\"p{}\"\n", LIMIT * 2)));
            }
            other => panic!("expected a rewrite, got {other:?}"),
        }
    }
}
