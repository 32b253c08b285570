//! Asking before a block runs: the approval policy (`auto`, `ask`, `never`), the user's
//! decisions (run, decline, always, edit) and what the model is told when a block is declined.
//!
//! Owns the wait for a decision. Each question has an id (`ApprovalRequested { id, .. }`) and
//! only an answer carrying that id (`Approve { id, .. }`) settles it, so an answer given late
//! or twice cannot decide another block. It must not run blocks or draw the question.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::events::EventSink;
use crate::config::Approval;
use crate::protocol::Block;
use crate::wire::{ApprovalId, Event, NotRun};

use crate::wire::ApprovalDecision;

/// Why an answer settled nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("no block is waiting for approval (the answer to approval {given} came too late)")]
    NothingWaiting { given: ApprovalId },
    #[error("approval {given} is not the question waiting (approval {waiting}): answer that one")]
    NotWaiting {
        given: ApprovalId,
        waiting: ApprovalId,
    },
}

/// What happens to one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run this code (the block's own or the user's edit).
    Run(String),
    /// Do not run it: `Declined` or `ShownOnly`.
    Refused(NotRun),
    /// Stopped while waiting.
    Stopped,
}

/// The policy and the question waiting for an answer, shared by every task of a runtime. One
/// question waits at a time (blocks run one by one).
#[derive(Debug, Clone)]
pub struct ApprovalGate {
    policy: Arc<Mutex<Approval>>,
    waiting: Arc<Mutex<Option<Waiting>>>,
    last_id: Arc<AtomicU64>,
}

/// The question waiting for an answer.
#[derive(Debug)]
struct Waiting {
    id: ApprovalId,
    answer: oneshot::Sender<ApprovalDecision>,
}

/// Why a declined block did not run, for the model.
pub(crate) const DECLINED: &str = "the user declined to run this block: do not run it again; ask the user or do the task another way";
/// Why blocks do not run under `never`.
pub const SHOWN_ONLY: &str = "blocks are shown, not run (approval = never)";

impl ApprovalGate {
    pub fn new(policy: Approval) -> Self {
        Self {
            policy: Arc::new(Mutex::new(policy)),
            waiting: Arc::default(),
            last_id: Arc::default(),
        }
    }

    pub fn policy(&self) -> Approval {
        *self.policy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Settles question `id` with `decision`, if it is the one waiting.
    pub fn answer(&self, id: ApprovalId, decision: ApprovalDecision) -> Result<(), AnswerError> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.take() {
            Some(question) if question.id == id => question
                .answer
                .send(decision)
                // The asking task stopped waiting (the turn was stopped) just now.
                .map_err(|_| AnswerError::NothingWaiting { given: id }),
            Some(other) => {
                let waiting_id = other.id;
                *waiting = Some(other);
                Err(AnswerError::NotWaiting {
                    given: id,
                    waiting: waiting_id,
                })
            }
            None => Err(AnswerError::NothingWaiting { given: id }),
        }
    }

    /// Puts question `id` up; it is withdrawn when the returned guard drops.
    fn ask(&self, id: ApprovalId) -> (Asked<'_>, oneshot::Receiver<ApprovalDecision>) {
        let (answer, answered) = oneshot::channel();
        *self.waiting.lock().unwrap_or_else(PoisonError::into_inner) = Some(Waiting { id, answer });
        (Asked { gate: self, id }, answered)
    }

    /// Decides `block`'s fate under the policy, asking the user (through `events`) if needed.
    pub(crate) async fn verdict(
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
        let id = self.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (_asked, answered) = self.ask(id);
        events.emit(Event::ApprovalRequested {
            id,
            round,
            index: block.index,
            tool: block.tag.clone(),
            code: block.code.clone(),
            save_path: block.save_path.clone(),
        });
        let decision = tokio::select! {
            () = cancel.cancelled() => return Verdict::Stopped,
            decision = answered => decision.ok(),
        };
        match decision {
            Some(ApprovalDecision::Run) => Verdict::Run(block.code.clone()),
            Some(ApprovalDecision::Edit { code }) => Verdict::Run(code),
            Some(ApprovalDecision::Always) => {
                *self.policy.lock().unwrap_or_else(PoisonError::into_inner) = Approval::Auto;
                events.emit(Event::ApprovalChanged {
                    approval: Approval::Auto,
                });
                Verdict::Run(block.code.clone())
            }
            Some(ApprovalDecision::Decline) | None => Verdict::Refused(NotRun::Declined),
        }
    }
}

/// A question put up; dropping it withdraws the question if it is still waiting, so a stopped
/// turn leaves nothing an answer could settle.
struct Asked<'a> {
    gate: &'a ApprovalGate,
    id: ApprovalId,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        let mut waiting = self
            .gate
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if waiting.as_ref().is_some_and(|w| w.id == self.id) {
            *waiting = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;

    fn block() -> Block {
        Block {
            index: 0,
            tag: "bash".into(),
            info: "bash".into(),
            save_path: None,
            code: "ls\n".into(),
            closed: true,
            span: 0..0,
        }
    }

    /// Asks about `block()` on a task of its own; returns the question's id and the verdict.
    async fn ask(
        gate: &ApprovalGate,
        cancel: &CancellationToken,
    ) -> (ApprovalId, tokio::task::JoinHandle<Verdict>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (asking, cancel) = (gate.clone(), cancel.clone());
        let verdict = tokio::spawn(async move {
            asking
                .verdict(1, &block(), &EventSink::new(tx), &cancel)
                .await
        });
        match rx.recv().await {
            Some(Event::ApprovalRequested { id, tool, .. }) => {
                assert_eq!(tool, "bash");
                (id, verdict)
            }
            other => panic!("expected a question, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn only_an_answer_with_the_questions_id_settles_it() {
        let gate = ApprovalGate::new(Approval::Ask);
        let cancel = CancellationToken::new();
        assert_eq!(
            gate.answer(1, ApprovalDecision::Run),
            Err(AnswerError::NothingWaiting { given: 1 }),
            "an answer before any question decides nothing"
        );
        let (id, verdict) = ask(&gate, &cancel).await;
        assert_eq!(
            gate.answer(id + 1, ApprovalDecision::Run),
            Err(AnswerError::NotWaiting {
                given: id + 1,
                waiting: id
            })
        );
        let edited = ApprovalDecision::Edit {
            code: "pwd\n".into(),
        };
        assert_eq!(gate.answer(id, edited), Ok(()));
        assert_eq!(
            verdict.await.expect("verdict"),
            Verdict::Run("pwd\n".into())
        );
        assert_eq!(
            gate.answer(id, ApprovalDecision::Run),
            Err(AnswerError::NothingWaiting { given: id }),
            "a second answer to the same question"
        );

        // The next question has a new id: the old one cannot answer it.
        let (next, verdict) = ask(&gate, &cancel).await;
        assert_ne!(next, id);
        assert!(gate.answer(id, ApprovalDecision::Run).is_err());
        assert_eq!(gate.answer(next, ApprovalDecision::Decline), Ok(()));
        assert_eq!(
            verdict.await.expect("verdict"),
            Verdict::Refused(NotRun::Declined)
        );
    }

    #[tokio::test]
    async fn a_stopped_question_is_withdrawn() {
        let gate = ApprovalGate::new(Approval::Ask);
        let cancel = CancellationToken::new();
        let (id, verdict) = ask(&gate, &cancel).await;
        cancel.cancel();
        assert_eq!(verdict.await.expect("verdict"), Verdict::Stopped);
        assert_eq!(
            gate.answer(id, ApprovalDecision::Run),
            Err(AnswerError::NothingWaiting { given: id })
        );
    }

    #[tokio::test]
    async fn always_runs_this_block_and_turns_asking_off() {
        let gate = ApprovalGate::new(Approval::Ask);
        let cancel = CancellationToken::new();
        let (id, verdict) = ask(&gate, &cancel).await;
        assert_eq!(gate.answer(id, ApprovalDecision::Always), Ok(()));
        assert_eq!(verdict.await.expect("verdict"), Verdict::Run("ls\n".into()));
        assert_eq!(gate.policy(), Approval::Auto);
    }
}
