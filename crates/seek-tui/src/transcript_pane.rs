//! An execution pane of the transcript: the block it shows, its output as it streams, and where
//! it is in its life.
//!
//! Pure state; it must not draw. The transcript decides when a pane changes.

use std::time::Instant;

use crate::agent::BlockRecord;

use super::{Abandoned, ReplyCut, rounds};

/// Output kept per running pane for display; the finished record carries the full result.
pub(super) const LIVE_OUTPUT_LIMIT: usize = 64 * 1024;

/// Where a pane is in its life.
#[derive(Debug, Clone, PartialEq)]
pub enum PaneState {
    /// Found in the answer, not started yet.
    Pending,
    /// Waiting for the user to allow it (approval = ask).
    AwaitingApproval,
    Running {
        since: Instant,
    },
    Finished(Box<BlockRecord>),
    /// It ended with no record of its block: it never ran (or never finished).
    Abandoned(Abandoned),
}

/// One execution pane.
#[derive(Debug, Clone, PartialEq)]
pub struct Pane {
    /// The plan step whose sub-agent ran it (`None`: the task's own agent). Panes of different
    /// steps have the same round and index numbers.
    pub step: Option<String>,
    pub round: u32,
    pub index: usize,
    pub tool: String,
    pub code: String,
    pub save_path: Option<String>,
    /// Output as it streams (bounded); replaced by the record's output when finished.
    pub output: String,
    pub state: PaneState,
    pub expanded: bool,
    /// Its reply was cut (the words of a `ReplyCut` record or an abandoned pane say how).
    pub cut: Option<ReplyCut>,
}

impl Pane {
    /// The pane of a block found in an answer, before anything about it is known.
    pub(super) fn pending(step: Option<String>, round: u32, index: usize, expanded: bool) -> Self {
        Self {
            step,
            round,
            index,
            tool: String::new(),
            code: String::new(),
            save_path: None,
            output: String::new(),
            state: PaneState::Pending,
            expanded,
            cut: None,
        }
    }

    pub fn succeeded(&self) -> bool {
        matches!(&self.state, PaneState::Finished(r) if r.success)
    }

    /// Its block never ran (not run, declined, shown only, refused, cut, abandoned).
    pub(crate) fn did_not_run(&self) -> bool {
        match &self.state {
            PaneState::Finished(record) => rounds::did_not_run(record),
            PaneState::Abandoned(_) => true,
            _ => false,
        }
    }

    /// Still waits for its block to start, run or be decided on.
    pub(super) fn is_open(&self) -> bool {
        matches!(
            self.state,
            PaneState::Pending | PaneState::AwaitingApproval | PaneState::Running { .. }
        )
    }

    /// Shows the block as it will run (the user's edit included).
    pub(super) fn show_block(&mut self, tool: &str, code: &str, save_path: &Option<String>) {
        tool.clone_into(&mut self.tool);
        code.clone_into(&mut self.code);
        self.save_path.clone_from(save_path);
    }

    /// Adds streamed output, keeping the last `LIVE_OUTPUT_LIMIT` bytes.
    pub(super) fn append_output(&mut self, text: &str) {
        self.output.push_str(text);
        if self.output.len() > LIVE_OUTPUT_LIMIT {
            let cut = self.output.len() - LIVE_OUTPUT_LIMIT;
            let cut = (cut..self.output.len())
                .find(|&i| self.output.is_char_boundary(i))
                .unwrap_or(0);
            self.output.drain(..cut);
        }
    }
}
