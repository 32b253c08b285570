//! Prompt history: Up/Down recall, kept across runs in a file in seek's data dir (one JSON
//! string per line, so multi-line prompts survive).
//!
//! Owns the list, the recall position and the file. A history file that cannot be read or
//! written costs the history, never the session: errors are returned for the log.

use std::io::Write;
use std::path::PathBuf;

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

    /// Records a sent prompt (not a repeat of the last one) and ends any recall.
    pub fn push(&mut self, prompt: &str) -> Result<(), String> {
        self.recall = None;
        if prompt.trim().is_empty() || self.entries.last().is_some_and(|l| l == prompt) {
            return Ok(());
        }
        self.entries.push(prompt.to_owned());
        let rewrite = self.entries.len() > LIMIT * 2;
        if rewrite {
            self.trim();
        }
        let Some(file) = &self.file else {
            return Ok(());
        };
        let result = (|| -> std::io::Result<()> {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            if rewrite {
                let text: String = self
                    .entries
                    .iter()
                    .map(|e| format!("{}\n", serde_json::Value::from(e.as_str())))
                    .collect();
                return std::fs::write(file, text);
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)?;
            writeln!(f, "{}", serde_json::Value::from(prompt))
        })();
        result.map_err(|e| format!("history {}: {e}", file.display()))
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
        h.push("one").unwrap();
        h.push("two\nlines").unwrap();
        h.push("two\nlines").unwrap();
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
    fn an_unwritable_history_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let (mut h, _) = History::load(blocker.join("history"));
        assert!(h.push("x").unwrap_err().contains("history"));
        assert_eq!(h.entries(), ["x"], "kept for this session");
    }
}
