//! Asking before a block runs: the approval policy (`auto`, `ask`, `never`), the user's
//! decisions (run, decline, always, edit) and what the model is told when a block is declined.
//!
//! Owns the wait for a decision; it must not run blocks or draw the question.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::event::{Event, NotRun};
use super::execute::EventSink;
use crate::config::Approval;
use crate::protocol::Block;

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Run,
    Decline,
    /// Run this and every later block of the session without asking.
    Always,
    /// Run this code instead.
    Edit {
        code: String,
    },
}

/// What happens to one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run this code (the block's own or the user's edit).
    Run(String),
    /// Do not run it: `Declined` or `ShownOnly`.
    Refused(NotRun),
    /// Stopped while waiting.
    Stopped,
}

/// The policy and the channel decisions arrive on, shared by every task of a runtime.
#[derive(Debug, Clone)]
pub struct ApprovalGate {
    policy: Arc<Mutex<Approval>>,
    decisions: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Decision>>>,
}

/// Why a declined block did not run, for the model.
pub const DECLINED: &str = "the user declined to run this block: do not run it again; ask the user or do the task another way";
/// Why blocks do not run under `never`.
pub const SHOWN_ONLY: &str = "blocks are shown, not run (approval = never)";

impl ApprovalGate {
    pub fn new(policy: Approval) -> (Self, mpsc::UnboundedSender<Decision>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                policy: Arc::new(Mutex::new(policy)),
                decisions: Arc::new(tokio::sync::Mutex::new(rx)),
            },
            tx,
        )
    }

    pub fn policy(&self) -> Approval {
        self.policy.lock().map_or(Approval::Ask, |p| *p)
    }

    /// Decides `block`'s fate under the policy, asking the user (through `events`) if needed.
    pub async fn verdict(
        &self,
        round: u32,
        block: &Block,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Verdict {
        match self.policy() {
            Approval::Auto => return Verdict::Run(block.code.clone()),
            Approval::Never => return Verdict::Refused(NotRun::ShownOnly),
            Approval::Ask => {}
        }
        let mut decisions = self.decisions.lock().await;
        // An answer sent when nothing was asked must not answer this question.
        while decisions.try_recv().is_ok() {}
        events.emit(Event::ApprovalRequested {
            round,
            index: block.index,
            tool: block.tag.clone(),
            code: block.code.clone(),
            save_path: block.save_path.clone(),
        });
        let decision = tokio::select! {
            () = cancel.cancelled() => return Verdict::Stopped,
            decision = decisions.recv() => decision,
        };
        match decision {
            Some(Decision::Run) => Verdict::Run(block.code.clone()),
            Some(Decision::Edit { code }) => Verdict::Run(code),
            Some(Decision::Always) => {
                if let Ok(mut policy) = self.policy.lock() {
                    *policy = Approval::Auto;
                }
                events.emit(Event::ApprovalChanged {
                    approval: Approval::Auto,
                });
                Verdict::Run(block.code.clone())
            }
            Some(Decision::Decline) | None => Verdict::Refused(NotRun::Declined),
        }
    }
}
