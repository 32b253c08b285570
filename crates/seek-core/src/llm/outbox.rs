//! Batching deltas: everything decoded from one network chunk goes to the reader in one hand-off,
//! adjacent text merged, so a chunk costs one wake-up however many tokens it carries.

use tokio::sync::mpsc;

use super::{Delta, LlmError};

/// Deltas decoded from one network chunk, adjacent text merged, sent together.
#[derive(Default)]
pub(crate) struct Outbox {
    deltas: Vec<Delta>,
}

impl Outbox {
    pub fn push(&mut self, delta: Delta) {
        match (self.deltas.last_mut(), delta) {
            (Some(Delta::Answer(last)), Delta::Answer(more))
            | (Some(Delta::Reasoning(last)), Delta::Reasoning(more)) => {
                last.push_str(&more);
            }
            (_, delta) => self.deltas.push(delta),
        }
    }

    /// Sends everything; `false` when the reader has gone.
    pub async fn send(self, tx: &mpsc::Sender<Result<Delta, LlmError>>) -> bool {
        for delta in self.deltas {
            if tx.send(Ok(delta)).await.is_err() {
                return false;
            }
        }
        true
    }
}
